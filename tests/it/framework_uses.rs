//! Where a framework that takes a GPU unasked takes it: where its code runs, not where a name
//! of it is only read. From a trial on mmpretrain (a TensorFlow checkpoint converter got the
//! header) and stable-ts (its package `__init__` was said to start CUDA at import).

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{gh, rule_codes, run, write};

/// Each file's status and its findings' rule codes, from `scan --format json`.
fn judged(root: &Path) -> BTreeMap<String, (String, Vec<String>)> {
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                (f["status"].as_str().unwrap().to_string(), rule_codes(f)),
            )
        })
        .collect()
}

fn rules(codes: &[&str]) -> Vec<String> {
    codes.iter().map(|c| c.to_string()).collect()
}

/// TensorFlow maps every visible card when its runtime makes its devices (the first op,
/// `tf.config`), not at import: a converter that only reads a checkpoint
/// (`py_checkpoint_reader`, `tf.train.load_checkpoint`, `tf.io.gfile`) reaches no card, and
/// one that also runs an op, or lists the devices, does.
#[test]
fn tensorflow_checkpoint_readers_take_no_card_and_its_ops_do() {
    let dir = crate::common::tree();
    let root = dir.path();
    let main = "\n\nif __name__ == \"__main__\":\n    main()\n";
    write(
        root,
        "reader.py",
        &format!("from tensorflow.python.training import py_checkpoint_reader\n\n\ndef main():\n    r = py_checkpoint_reader.NewCheckpointReader(\"x\")\n    print(r.get_variable_to_shape_map())\n{main}"),
    );
    write(
        root,
        "load.py",
        &format!("import tensorflow as tf\n\n\ndef main():\n    if tf.io.gfile.exists(\"x\"):\n        print(tf.train.list_variables(\"x\"), tf.train.load_checkpoint(\"x\"))\n{main}"),
    );
    write(
        root,
        "ops.py",
        &format!("import tensorflow as tf\n\n\ndef main():\n    r = tf.train.load_checkpoint(\"x\")\n    print(tf.constant(r.get_tensor(\"w\")))\n{main}"),
    );
    write(
        root,
        "probe.py",
        &format!("import tensorflow as tf\n\n\ndef main():\n    print(tf.config.list_physical_devices(\"GPU\"))\n{main}"),
    );
    let files = judged(root);
    let none = ("no_gpu_code".to_string(), rules(&[]));
    let header = ("non_compliant".to_string(), rules(&["GH001"]));
    assert_eq!(files["reader.py"], none, "{files:?}");
    assert_eq!(files["load.py"], none, "{files:?}");
    assert_eq!(files["ops.py"], header, "{files:?}");
    assert_eq!(files["probe.py"], header, "{files:?}");
}

/// From stable-ts 2.19.1: `whisper_compatibility.py`, which its package `__init__` imports,
/// reads openai-whisper's names at import (`get_func_parameters(whisper…get_tokenizer)`,
/// `LANGUAGES.items()`) and uses the card only in functions: importing it starts nothing,
/// and `python -m stable_whisper` was left for review (GH208) for it. A package whose code at
/// import asks the driver (`torch.cuda.is_available()`) or loads a model does start CUDA.
#[test]
fn a_package_that_only_reads_a_frameworks_names_at_import_starts_no_cuda() {
    let dir = crate::common::tree();
    let root = dir.path();
    let run_it = |pkg: &str| {
        format!("from {pkg} import load\n\nif __name__ == \"__main__\":\n    print(load())\n")
    };
    write(root, "quiet/__init__.py", "from quiet.compat import load\n");
    write(
        root,
        "quiet/compat.py",
        "import inspect\n\nimport torch\nimport whisper\nfrom whisper.tokenizer import LANGUAGES\n\nPARAMS = inspect.signature(whisper.load_model)\nCODES = {v: k for k, v in LANGUAGES.items()}\n\n\ndef load():\n    return whisper.load_model(\"base\").to(torch.device(\"cuda\"))\n",
    );
    write(root, "quiet/__main__.py", &run_it("quiet"));
    write(
        root,
        "asks/__init__.py",
        "import torch\n\nfrom asks.compat import load\n\nHAS_CUDA = torch.cuda.is_available()\n",
    );
    write(
        root,
        "asks/compat.py",
        "import torch\n\n\ndef load():\n    return torch.zeros(1).cuda()\n",
    );
    write(root, "asks/__main__.py", &run_it("asks"));
    write(
        root,
        "loads/__init__.py",
        "import whisper\n\nMODEL = whisper.load_model(\"base\")\n\n\ndef load():\n    return MODEL\n",
    );
    write(root, "loads/__main__.py", &run_it("loads"));
    // A class in upper case built at import (`LLM(…)`) is no constant: it starts CUDA.
    write(
        root,
        "engine/__init__.py",
        "from vllm import LLM

ENGINE = LLM(\"m\")


def load():
    return ENGINE
",
    );
    write(root, "engine/__main__.py", &run_it("engine"));
    let files = judged(root);
    assert_eq!(
        files["quiet/__main__.py"],
        ("non_compliant".to_string(), rules(&["GH001"])),
        "{files:?}"
    );
    for late in [
        "asks/__main__.py",
        "loads/__main__.py",
        "engine/__main__.py",
    ] {
        assert_eq!(
            files[late],
            ("non_compliant".to_string(), rules(&["GH001", "GH208"])),
            "{late}: {files:?}"
        );
    }
}
