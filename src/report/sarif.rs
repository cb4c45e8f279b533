//! SARIF 2.1.0 for `scan --format sarif`, so code hosts can show findings inline.

use serde_json::{json, Value};

use crate::finding::Rule;
use crate::outcome::FileOutcome;

pub fn render(files: &[FileOutcome], rules: &[&Rule]) -> String {
    let rules: Vec<Value> = rules
        .iter()
        .map(|r| json!({"id": r.code, "name": r.name, "shortDescription": {"text": r.summary}}))
        .collect();
    let results: Vec<Value> = files
        .iter()
        .flat_map(|file| {
            file.findings.iter().map(move |f| {
                let level = match f.severity.as_str() {
                    "violation" => "error",
                    "review" => "warning",
                    _ => "note",
                };
                json!({
                    "ruleId": f.rule,
                    "level": level,
                    "message": {"text": f.message},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": file.path},
                        "region": {"startLine": f.line, "startColumn": f.column}
                    }}]
                })
            })
        })
        .collect();
    let doc = json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {
                "name": "gpu-homogenize",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules
            }},
            "results": results
        }]
    });
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}
