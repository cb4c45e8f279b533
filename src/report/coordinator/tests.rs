//! `build` on hand-made scans and journals: the GPU side, which the CLI tests cannot reach
//! until the GPU stage journals real checks.

use serde_json::json;

use super::*;
use crate::model::outcome::FileStatus;
use crate::model::policy::{Config, PhaseSpec};

fn config() -> Config {
    Config {
        phases: vec![PhaseSpec {
            name: "Core modules".into(),
            files: vec!["a.py".into(), "b.py".into(), "gone.py".into()],
            globs: Vec::new(),
        }],
        ..Config::default()
    }
}

fn tree(config: &Config) -> Tree<'_> {
    Tree {
        root: std::path::Path::new("/tree"),
        config,
    }
}

fn scanned(path: &str, phase: Option<&str>) -> FileOutcome {
    let mut o = FileOutcome::new(std::path::Path::new(path), path);
    o.status = FileStatus::Compliant;
    o.phase = phase.map(str::to_string);
    o.content_hash = Some(format!("hash-{path}"));
    o
}

fn checked(path: &str, leak_mib: f64) -> String {
    json!({
        "type": "file", "schema": 1, "run_id": "r1", "at": "2025-01-12T09:30:00.000Z",
        "tool_version": env!("CARGO_PKG_VERSION"), "command": "check", "path": path,
        "status": "compliant", "cpu_check": "passed", "content_hash": format!("hash-{path}"),
        "gpu_check": {"status": "passed", "device_name": "RTX 3090", "leak_mib": leak_mib},
    })
    .to_string()
}

#[test]
fn gpu_checks_give_the_device_and_the_drift() {
    let text = format!(
        "{}\n{}\n{}\n",
        checked("a.py", 30.0),
        checked("b.py", 30.0),
        checked("tools/x.py", 0.0)
    );
    let journal = Journal::parse(&text, "J");
    let scan = [
        scanned("a.py", Some("Core modules")),
        scanned("b.py", Some("Core modules")),
        scanned("tools/x.py", None),
    ];
    let r = build(&tree(&config()), &scan, &journal, "now".into());
    let names: Vec<&str> = r.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Core modules", "Other"]);
    assert_eq!(
        (r.overall.total, r.overall.gpu_validated, r.overall.leaks),
        (3, 3, 0)
    );
    assert_eq!((r.mission.total, r.mission.gpu_validated), (2, 2));
    assert_eq!(r.gpu.devices.get("RTX 3090"), Some(&3));
    assert_eq!(r.gpu.drift_mib, 60.0);
    assert_eq!(
        r.mission.status,
        crate::report::progress::Status::Attention,
        "60 MiB of drift is over the 50 MiB limit"
    );
    let kinds: Vec<(AlertKind, Option<&str>)> = r
        .alerts
        .iter()
        .map(|a| (a.kind, a.path.as_deref()))
        .collect();
    assert_eq!(
        kinds,
        [
            (AlertKind::Drift, None),
            (AlertKind::Missing, Some("gone.py"))
        ]
    );
}

#[test]
fn the_json_has_the_documented_fields() {
    let r = build(
        &tree(&config()),
        &[scanned("a.py", Some("Core modules"))],
        &Journal::default(),
        "now".into(),
    );
    let v: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
    for key in ["phases", "overall", "runs", "alerts", "policy"] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    let phase = &v["phases"][0];
    for key in [
        "name",
        "total",
        "compliant",
        "fixed",
        "cpu_validated",
        "gpu_validated",
        "leaks",
        "errors",
        "remaining",
    ] {
        assert!(phase.get(key).is_some(), "phase lacks {key}");
    }
    assert_eq!(v["policy"]["env"]["CUDA_VISIBLE_DEVICES"], "1");
    assert_eq!(v["policy"]["target"]["name"], "RTX 3090");
}
