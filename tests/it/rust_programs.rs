//! Rust programs judged through the crate graph: which binaries reach CUDA (through their
//! modules, their library, a crate of the tree or a wrapper crate), which are CPU programs,
//! and which programs run a library's device index.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{self, gh, write};

/// The binary's run, the locations of its text output `/`-joined on Windows too (the
/// assertions quote the Linux form; the messages name files with `/` everywhere).
fn run(cmd: &mut assert_cmd::Command) -> common::Run {
    let mut out = common::run(cmd);
    out.stdout = common::unix_locations(&out.stdout);
    out
}

fn statuses(root: &Path) -> (BTreeMap<String, String>, String) {
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let text = run(gh(root).args(["scan", "."])).stdout;
    (common::statuses(&out.stdout), text)
}

#[test]
fn binaries_reach_cuda_through_modules_wrappers_and_features() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A binary whose device is in a sibling module: `main.rs` has no GPU word.
    write(root, "render/Cargo.toml", "[package]\nname = \"render\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncust = \"0.3\"\n");
    write(
        root,
        "render/src/main.rs",
        "mod renderer;\n\nfn main() {\n    renderer::draw();\n}\n",
    );
    write(
        root,
        "render/src/renderer.rs",
        "use cust::device::Device;\n\npub fn draw() {\n    let _d = Device::get_device(0);\n}\n",
    );
    // A wrapper crate whose default device is CUDA (rust-bert: `cuda_if_available`).
    write(root, "nlp/Cargo.toml", "[package]\nname = \"nlp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nrust-bert = \"0.22\"\n");
    write(root, "nlp/src/main.rs", "use rust_bert::pipelines::sentiment::SentimentModel;\n\nfn main() {\n    let _m = SentimentModel::new(Default::default());\n}\n");
    // The same wrapper, told to run on the CPU: a CPU program, left alone.
    write(root, "nlp/examples/cpu.rs", "use rust_bert::pipelines::sentiment::SentimentModel;\nuse tch::Device;\n\nfn main() {\n    let _m = SentimentModel::new(Default::default());\n    let _d = Device::Cpu;\n}\n");
    // candle without its `cuda` feature: a CPU build, left alone.
    write(root, "convert/Cargo.toml", "[package]\nname = \"convert\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n");
    write(
        root,
        "convert/src/main.rs",
        "use candle_core::Tensor;\n\nfn main() {\n    let _t: Option<Tensor> = None;\n}\n",
    );
    // candle with `cuda` turned on by a package feature, and a criterion bench with
    // `harness = false`: its main is the macro's.
    write(root, "bench/Cargo.toml", "[package]\nname = \"bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n[features]\ncuda = [\"candle-core/cuda\"]\n[[bench]]\nname = \"matmul\"\nharness = false\n");
    write(root, "bench/src/lib.rs", "use candle_core::Device;\n\npub fn device() -> Device {\n    Device::new_cuda(0).unwrap()\n}\n");
    write(root, "bench/benches/matmul.rs", "use criterion::{criterion_group, criterion_main, Criterion};\n\nfn bench(c: &mut Criterion) {\n    let _d = bench::device();\n    c.bench_function(\"m\", |b| b.iter(|| 1));\n}\n\ncriterion_group!(benches, bench);\ncriterion_main!(benches);\n");
    let (status, text) = statuses(root);
    let want: BTreeMap<String, String> = [
        ("bench/benches/matmul.rs", "needs_review"),
        ("bench/src/lib.rs", "compliant"),
        ("convert/src/main.rs", "no_gpu_code"),
        ("nlp/examples/cpu.rs", "no_gpu_code"),
        ("nlp/src/main.rs", "non_compliant"),
        ("render/src/main.rs", "non_compliant"),
        ("render/src/renderer.rs", "compliant"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(status, want, "{text}");
    assert!(
        text.contains("bench/benches/matmul.rs:9:1: GH508 [review] this GPU program gets its `main` from `criterion_main!`: the env cannot go into it\n  help: it reaches CUDA through its package's library `bench` → `candle_core` with its `cuda` feature"),
        "{text}"
    );
    assert!(text.contains("render/src/main.rs:1:1: GH501"), "{text}");
    assert!(text.contains("nlp/src/main.rs:1:1: GH501"), "{text}");
}

#[test]
fn a_library_index_is_remapped_only_when_every_program_running_it_masks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"core\", \"cli\"]\n",
    );
    write(root, "core/Cargo.toml", "[package]\nname = \"core-gpu\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.16\"\n");
    write(root, "core/src/lib.rs", "use cudarc::driver::CudaContext;\n\npub fn open() {\n    let _c = CudaContext::new(1);\n}\n");
    write(root, "cli/Cargo.toml", "[package]\nname = \"cli\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncore-gpu = { path = \"../core\" }\n");
    write(
        root,
        "cli/src/main.rs",
        "fn main() {\n    core_gpu::open();\n}\n",
    );
    let (_, text) = statuses(root);
    assert!(
        text.contains("core/src/lib.rs:4:31: GH511 [*] CudaContext::new(…) selects device 1, device 0 under mask '1'\n  help: every program of the tree that runs this library sets the mask in its main (an async one once `fix --unsafe-fixes` makes it sync): `cli/src/main.rs`"),
        "{text}"
    );
    // Without any program, the same index is the caller's business: review, no fix.
    std::fs::remove_dir_all(root.join("cli")).unwrap();
    write(root, "Cargo.toml", "[workspace]\nmembers = [\"core\"]\n");
    let (status, text) = statuses(root);
    assert_eq!(status["core/src/lib.rs"], "needs_review", "{text}");
    assert!(text.contains("GH514 [review]"), "{text}");
}

#[test]
fn the_header_goes_below_a_licence_and_an_earlier_block_is_not_written_twice() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\ncudarc = \"0.16\"\n");
    write(root, "src/main.rs", "// Copyright 2025 Example Corp.\n// SPDX-License-Identifier: Apache-2.0\n\nuse cudarc::driver::CudaContext;\n\nfn main() {\n    let _c = CudaContext::new(0);\n}\n");
    // A main an earlier version fixed: no SAFETY line, the allocator variable set anyway.
    write(root, "src/bin/old.rs", "use cudarc::driver::CudaContext;\n\nfn main() {\n    unsafe {\n        std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n        std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n        std::env::set_var(\"PYTORCH_CUDA_ALLOC_CONF\", \"max_split_size_mb:1024\");\n    }\n    let _c = CudaContext::new(0);\n}\n");
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let main = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    assert!(
        main.starts_with(
            "// Copyright 2025 Example Corp.\n// SPDX-License-Identifier: Apache-2.0\n\n// GPU selection (gpu-homogenize)"
        ),
        "{main}"
    );
    assert!(
        main.contains("fn main() {\n    unsafe {\n        // SAFETY: the first statements of `main`, before any thread starts:\n        // nothing reads or writes the environment concurrently.\n        std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n        std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n    }\n"),
        "{main}"
    );
    let old = std::fs::read_to_string(root.join("src/bin/old.rs")).unwrap();
    assert_eq!(
        old.matches("set_var(\"CUDA_VISIBLE_DEVICES\"").count(),
        1,
        "{old}"
    );
    let again = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert!(again.stdout.contains("Fixed 0 files"), "{}", again.stdout);
}

#[test]
fn respect_scheduler_sets_only_what_the_launcher_left_unset() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "gpu-homogenize.toml",
        "[policy]\nrespect_scheduler = true\n",
    );
    write(root, "Cargo.toml", "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\ncudarc = \"0.16\"\n");
    write(
        root,
        "src/main.rs",
        "use cudarc::driver::CudaContext;\n\nfn main() {\n    let _c = CudaContext::new(0);\n}\n",
    );
    // A forced mask overrides what Slurm assigned: not the policy's form here.
    write(root, "src/bin/forced.rs", "use cudarc::driver::CudaContext;\n\nfn main() {\n    unsafe {\n        std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n        std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n    }\n    let _c = CudaContext::new(0);\n}\n");
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "src/main.rs"]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let main = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    assert!(
        main.contains("concurrently.\n        if std::env::var_os(\"CUDA_VISIBLE_DEVICES\").is_none() {\n            std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n        }\n        if std::env::var_os(\"CUDA_DEVICE_ORDER\").is_none() {\n            std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n        }\n    }\n"),
        "{main}"
    );
    // rustfmt leaves it as it is.
    let rustfmt = std::process::Command::new("rustfmt")
        .args(["--check", "--edition", "2024"])
        .arg(root.join("src/main.rs"))
        .output();
    if let Ok(out) = rustfmt {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // The one-line form the previous version wrote is recognised: never written twice.
    write(root, "src/bin/earlier.rs", "use cudarc::driver::CudaContext;\n\nfn main() {\n    unsafe {\n        // SAFETY: the first statements of `main`, before any thread starts: nothing reads or writes the environment concurrently.\n        if std::env::var_os(\"CUDA_VISIBLE_DEVICES\").is_none() { std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\"); }\n        if std::env::var_os(\"CUDA_DEVICE_ORDER\").is_none() { std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\"); }\n    }\n    let _c = CudaContext::new(0);\n}\n");
    let scan = run(gh(root).args(["scan", "."]));
    assert!(!scan.stdout.contains("src/main.rs:"), "{}", scan.stdout);
    assert!(
        scan.stdout.contains("src/bin/forced.rs:"),
        "{}",
        scan.stdout
    );
    assert!(
        !scan.stdout.contains("src/bin/earlier.rs:3:1: GH502"),
        "{}",
        scan.stdout
    );
    let again = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "src/main.rs"]));
    assert!(again.stdout.contains("Fixed 0 files"), "{}", again.stdout);
}

#[test]
fn env_clear_in_a_crate_a_gpu_program_runs_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"sandbox\", \"server\"]\n",
    );
    write(
        root,
        "sandbox/Cargo.toml",
        "[package]\nname = \"sandbox\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(root, "sandbox/src/lib.rs", "use std::process::Command;\n\npub fn spawn_worker() {\n    let _ = Command::new(\"worker\").env_clear().spawn();\n}\n");
    write(root, "server/Cargo.toml", "[package]\nname = \"server\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nsandbox = { path = \"../sandbox\" }\ncudarc = \"0.16\"\n");
    write(root, "server/src/main.rs", "use cudarc::driver::CudaContext;\n\nfn main() {\n    let _c = CudaContext::new(0);\n    sandbox::spawn_worker();\n}\n");
    let (_, text) = statuses(root);
    assert!(
        text.contains("sandbox/src/lib.rs:4:13: GH507 the child process is started with a cleared env (env_clear)"),
        "{text}"
    );
}

/// From the trial on 11 real crates: wrappers the table does not know (a `cuda` feature says
/// so), a CUDA crate's own examples, tests (integration and unit), tch for CPU tensors only,
/// NVML-only programs, and providers the CUDA mask does not renumber.
#[test]
fn wrappers_own_examples_tests_and_cpu_uses_are_judged_as_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // An unknown wrapper whose `cuda` feature is on: its user is a GPU program.
    write(root, "chat/Cargo.toml", "[package]\nname = \"chat\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nkalosm = { version = \"0.4\", features = [\"language\", \"cuda\"] }\n");
    write(
        root,
        "chat/src/main.rs",
        "use kalosm::language::*;\n\nfn main() {\n    let _m = Llama::new();\n}\n",
    );
    // A CUDA crate's own example.
    write(
        root,
        "cu/Cargo.toml",
        "[package]\nname = \"cust\"\nversion = \"0.3.2\"\nedition = \"2021\"\n",
    );
    write(root, "cu/src/lib.rs", "pub mod device {}\n");
    write(
        root,
        "cu/examples/launch.rs",
        "use cust::device;\n\nfn main() {\n    let _ = 1;\n}\n",
    );
    // tch for CPU tensors, NVML alone: not GPU programs.
    write(root, "conv/Cargo.toml", "[package]\nname = \"conv\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ntch = \"0.17\"\nnvml-wrapper = \"0.10\"\n");
    write(
        root,
        "conv/src/main.rs",
        "use tch::Tensor;\n\nfn main() {\n    let _t = Tensor::from(1.0);\n}\n",
    );
    write(root, "conv/src/bin/mon.rs", "use nvml_wrapper::Nvml;\n\nfn main() {\n    let nvml = Nvml::init().unwrap();\n    let _d = nvml.device_by_index(1);\n}\n");
    // Tests that build CUDA devices: libtest writes their main, no mask.
    write(root, "t/Cargo.toml", "[package]\nname = \"t\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.16\"\n");
    write(root, "t/src/lib.rs", "pub fn open() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn second() {\n        let _c = cudarc::driver::CudaContext::new(1);\n    }\n}\n");
    write(root, "t/tests/gpu.rs", "use cudarc::driver::CudaContext;\n\n#[test]\nfn opens() {\n    let _c = CudaContext::new(0);\n}\n");
    // whisper-rs' index, and a DirectML provider (its own numbering).
    write(root, "w/Cargo.toml", "[package]\nname = \"w\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nwhisper-rs = { version = \"0.16\", features = [\"cuda\"] }\nort = { version = \"2.0.0-rc.10\", features = [\"cuda\", \"directml\"] }\n");
    write(root, "w/src/main.rs", "use ort::execution_providers::DirectMLExecutionProvider;\nuse whisper_rs::WhisperContextParameters;\n\nfn main() {\n    let mut p = WhisperContextParameters::default();\n    p.gpu_device(1);\n    let _d = DirectMLExecutionProvider::default().with_device_id(1);\n}\n");
    let (status, text) = statuses(root);
    for (file, want) in [
        ("chat/src/main.rs", "non_compliant"),
        ("cu/examples/launch.rs", "non_compliant"),
        ("conv/src/main.rs", "no_gpu_code"),
        ("conv/src/bin/mon.rs", "no_gpu_code"),
        ("t/src/lib.rs", "needs_review"),
        ("t/tests/gpu.rs", "needs_review"),
        ("w/src/main.rs", "non_compliant"),
    ] {
        assert_eq!(status[file], want, "{file}\n{text}");
    }
    assert!(text.contains("chat/src/main.rs:1:1: GH501"), "{text}");
    assert!(text.contains("t/tests/gpu.rs:1:1: GH508 [review] this GPU program gets its `main` from libtest (a test binary): the env cannot go into it\n  help: it reaches CUDA through `cudarc`: the CUDA driver API"), "{text}");
    assert!(text.contains("t/src/lib.rs:7:51: GH514 [review]"), "{text}");
    assert!(
        text.contains("w/src/main.rs:6:18: GH511 [*] .gpu_device(…) selects device 1"),
        "{text}"
    );
    assert_eq!(text.matches("w/src/main.rs:7:").count(), 0, "{text}");
}

/// A package whose library reaches CUDA in one module: a tool shipped beside it that uses only
/// the library's error type is not a GPU program; one that uses the pipeline is, through the
/// module the pipeline calls (`super::config`) and a re-export of the root. ONNX Runtime with
/// its `cuda` feature reaches CUDA only through its CUDA provider.
#[test]
fn a_program_runs_only_the_library_modules_its_paths_reach() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "nlp/Cargo.toml", "[package]\nname = \"nlp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ntch = \"0.17\"\nort = { version = \"2.0.0-rc.10\", features = [\"cuda\"] }\n[[bin]]\nname = \"convert\"\npath = \"src/convert.rs\"\n");
    write(root, "nlp/src/lib.rs", "mod error;\npub mod pipelines;\npub use error::NlpError;\npub use pipelines::sentiment::Sentiment;\n");
    write(
        root,
        "nlp/src/error.rs",
        "#[derive(Debug)]\npub struct NlpError;\n",
    );
    write(
        root,
        "nlp/src/pipelines/mod.rs",
        "pub mod config;\npub mod sentiment;\n",
    );
    write(
        root,
        "nlp/src/pipelines/config.rs",
        "pub fn device() -> tch::Device {\n    tch::Device::cuda_if_available()\n}\n",
    );
    write(root, "nlp/src/pipelines/sentiment.rs", "pub struct Sentiment;\nimpl Sentiment {\n    pub fn new() -> Self {\n        let _d = super::config::device();\n        Sentiment\n    }\n}\n");
    write(root, "nlp/src/convert.rs", "use nlp::NlpError;\n\nfn main() -> Result<(), NlpError> {\n    let _t = tch::Tensor::from(1.0);\n    Ok(())\n}\n");
    write(
        root,
        "nlp/examples/classify.rs",
        "use nlp::Sentiment;\n\nfn main() {\n    let _s = Sentiment::new();\n}\n",
    );
    write(
        root,
        "nlp/examples/onnx_cpu.rs",
        "use ort::session::Session;\n\nfn main() {\n    let _s = Session::builder();\n}\n",
    );
    write(root, "nlp/examples/onnx_gpu.rs", "use ort::execution_providers::CUDAExecutionProvider;\nuse ort::session::Session;\n\nfn main() {\n    let _s = Session::builder().with_execution_providers([CUDAExecutionProvider::default().build()]);\n}\n");
    let (status, text) = statuses(root);
    for (file, want) in [
        ("nlp/src/convert.rs", "no_gpu_code"),
        ("nlp/examples/classify.rs", "non_compliant"),
        ("nlp/examples/onnx_cpu.rs", "no_gpu_code"),
        ("nlp/examples/onnx_gpu.rs", "non_compliant"),
    ] {
        assert_eq!(status[file], want, "{file}\n{text}");
    }
    let before = std::fs::read(root.join("nlp/src/convert.rs")).unwrap();
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    assert_eq!(
        std::fs::read(root.join("nlp/src/convert.rs")).unwrap(),
        before
    );
    let classify = std::fs::read_to_string(root.join("nlp/examples/classify.rs")).unwrap();
    assert!(
        classify.contains("fn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\""),
        "{classify}"
    );
}

/// One module of a library holds a cloud client and a local model whose constructor picks the
/// CUDA device: the program that builds only the client, and calls methods both share, runs
/// no device code; the one that loads the model does. A benchmark that imports a type it never
/// uses runs nothing of the library; a custom op written for CUDA tensors chooses no device.
#[test]
fn a_program_runs_only_the_library_items_it_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "emb/Cargo.toml", "[package]\nname = \"emb\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n[[bench]]\nname = \"placeholder\"\nharness = false\n");
    write(
        root,
        "emb/src/lib.rs",
        "pub mod embed;\nmod device;\nmod ops;\npub use embed::Embedder;\n",
    );
    write(
        root,
        "emb/src/device.rs",
        "use candle_core::Device;\n\npub fn select() -> Device {\n    Device::cuda_if_available(0).unwrap_or(Device::Cpu)\n}\n",
    );
    write(root, "emb/src/ops.rs", "use candle_core::{CudaDevice, Storage};\n\npub fn on_cuda(s: &Storage, _d: &CudaDevice) -> Option<Storage> {\n    match s {\n        Storage::Cuda(c) => Some(Storage::Cuda(c.clone())),\n        _ => None,\n    }\n}\n");
    write(root, "emb/src/embed.rs", "use crate::device::select;\nuse candle_core::{Device, Tensor};\n\npub enum Embedder {\n    Cloud(Cloud),\n    Local(Local),\n}\n\npub struct Cloud;\npub struct Local(Device);\n\nimpl Embedder {\n    pub fn cloud() -> Self {\n        Embedder::Cloud(Cloud)\n    }\n    pub fn local() -> Self {\n        Embedder::Local(Local::load())\n    }\n    pub fn embed(&self, text: &str) -> Vec<f32> {\n        match self {\n            Embedder::Cloud(c) => c.embed(text),\n            Embedder::Local(l) => l.embed(text),\n        }\n    }\n}\n\nimpl Cloud {\n    fn embed(&self, _text: &str) -> Vec<f32> {\n        vec![0.0]\n    }\n}\n\nimpl Local {\n    fn load() -> Self {\n        Local(select())\n    }\n    fn embed(&self, _text: &str) -> Vec<f32> {\n        let _t = Tensor::zeros(1, candle_core::DType::F32, &self.0);\n        crate::ops::on_cuda;\n        vec![0.0]\n    }\n}\n");
    write(
        root,
        "emb/examples/cloud.rs",
        "use emb::Embedder;\n\nfn main() {\n    let e = Embedder::cloud();\n    let _v = e.embed(\"hi\");\n}\n",
    );
    write(
        root,
        "emb/examples/local.rs",
        "use emb::embed::Embedder;\n\nfn main() {\n    let e = Embedder::local();\n    let _v = e.embed(\"hi\");\n}\n",
    );
    write(root, "emb/benches/placeholder.rs", "use criterion::{criterion_group, criterion_main, Criterion};\nuse emb::Embedder;\n\nfn bench(c: &mut Criterion) {\n    c.bench_function(\"p\", |b| b.iter(|| 1));\n}\n\ncriterion_group!(benches, bench);\ncriterion_main!(benches);\n");
    let (status, text) = statuses(root);
    for (file, want) in [
        ("emb/examples/cloud.rs", "no_gpu_code"),
        ("emb/examples/local.rs", "non_compliant"),
        ("emb/benches/placeholder.rs", "no_gpu_code"),
    ] {
        assert_eq!(status[file], want, "{file}\n{text}");
    }
    assert!(text.contains("emb/examples/local.rs:1:1: GH501"), "{text}");
}

/// The same through a crate of the tree: the CLI crate's `remote` program calls only the
/// engine crate's HTTP client, its `local` program the engine's model loader.
#[test]
fn a_program_runs_only_the_items_it_reaches_in_another_crate_of_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"engine\", \"cli\"]\n",
    );
    write(root, "engine/Cargo.toml", "[package]\nname = \"engine\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.19\"\n");
    write(root, "engine/src/lib.rs", "pub mod backends;\n");
    write(root, "engine/src/backends.rs", "pub struct Remote;\npub struct Local(std::sync::Arc<cudarc::driver::CudaContext>);\n\nimpl Remote {\n    pub fn connect() -> Self {\n        Remote\n    }\n    pub fn run(&self) {}\n}\n\nimpl Local {\n    pub fn load() -> Self {\n        Local(cudarc::driver::CudaContext::new(0).unwrap())\n    }\n    pub fn run(&self) {}\n}\n");
    write(root, "cli/Cargo.toml", "[package]\nname = \"cli\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nengine = { path = \"../engine\" }\n[[bin]]\nname = \"remote\"\npath = \"src/remote.rs\"\n[[bin]]\nname = \"local\"\npath = \"src/local.rs\"\n");
    write(
        root,
        "cli/src/remote.rs",
        "use engine::backends::Remote;\n\nfn main() {\n    Remote::connect().run();\n}\n",
    );
    write(
        root,
        "cli/src/local.rs",
        "use engine::backends::Local;\n\nfn main() {\n    Local::load().run();\n}\n",
    );
    let (status, text) = statuses(root);
    assert_eq!(status["cli/src/remote.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["cli/src/local.rs"], "non_compliant", "{text}");
}

/// A device index handed across crates: the server's `--gpu` default and a literal reach
/// `Device::new_cuda(ordinal)` in the engine crate through `load` and `Engine::open`; they are
/// remapped where they are written, in the program that masks.
#[test]
fn a_command_line_default_is_followed_into_another_crates_constructor() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"engine\", \"server\"]\n",
    );
    write(root, "engine/Cargo.toml", "[package]\nname = \"engine\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    write(root, "engine/src/lib.rs", "use candle_core::Device;\n\npub fn load(path: &str, ordinal: usize) -> Device {\n    println!(\"{path}\");\n    Device::new_cuda(ordinal).unwrap()\n}\n\npub struct Engine;\n\nimpl Engine {\n    pub fn open(gpu: usize) -> Device {\n        load(\"default\", gpu)\n    }\n}\n");
    write(root, "server/Cargo.toml", "[package]\nname = \"server\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nengine = { path = \"../engine\" }\nclap = { version = \"4\", features = [\"derive\"] }\n");
    write(root, "server/src/main.rs", "use clap::Parser;\n\n#[derive(Parser)]\nstruct Args {\n    #[arg(long, default_value_t = 1)]\n    gpu: usize,\n    #[arg(long, default_value_t = 1)]\n    workers: usize,\n}\n\nfn main() {\n    let args = Args::parse();\n    let d = engine::load(\"model.bin\", args.gpu);\n    println!(\"{d:?} {}\", args.workers);\n}\n");
    write(root, "server/src/bin/spare.rs", "fn main() {\n    let d = engine::load(\"model.bin\", 1);\n    let e = engine::Engine::open(1);\n    println!(\"{d:?} {e:?}\");\n}\n");
    let (_, text) = statuses(root);
    assert!(
        text.contains("server/src/main.rs:13:39: GH511 [*] load(…), whose argument 2 is the index of `Device::new_cuda` (engine/src/lib.rs:5), selects device 1 through the default of the `gpu` option (line 5)"),
        "{text}"
    );
    assert!(
        text.contains("server/src/bin/spare.rs:2:39: GH511"),
        "{text}"
    );
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let main = std::fs::read_to_string(root.join("server/src/main.rs")).unwrap();
    assert!(
        main.contains("    #[arg(long, default_value_t = 0)]\n    gpu: usize,\n    #[arg(long, default_value_t = 1)]\n    workers: usize,"),
        "{main}"
    );
    let spare = std::fs::read_to_string(root.join("server/src/bin/spare.rs")).unwrap();
    assert!(spare.contains("engine::load(\"model.bin\", 0)"), "{spare}");
    assert!(spare.contains("engine::Engine::open(0)"), "{spare}");
    // The engine's own code is left as it is: its index is its callers'.
    let (status, text) = statuses(root);
    assert_eq!(status["server/src/main.rs"], "compliant", "{text}");
    assert_eq!(status["server/src/bin/spare.rs"], "compliant", "{text}");
}

/// A main fixed by the previous version (its `// SAFETY:` comment on one line) is compliant:
/// the block is never written twice.
#[test]
fn a_block_written_by_the_previous_version_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"o\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\ncudarc = \"0.19\"\n");
    write(root, "src/main.rs", "// GPU selection (gpu-homogenize): the RTX 3090 only.\n// Never the RTX 5060 Ti.\n// main() sets CUDA_VISIBLE_DEVICES=1 and CUDA_DEVICE_ORDER=PCI_BUS_ID first:\n// once masked, the RTX 3090 is device 0, the only one visible.\n\nfn main() {\n    unsafe {\n        // SAFETY: the first statements of `main`, before any thread starts: nothing reads or writes the environment concurrently.\n        std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n        std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n    }\n    let _c = cudarc::driver::CudaContext::new(0);\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["src/main.rs"], "compliant", "{text}");
}

/// From the trial on unseen crates: a device chosen by the program's library is not undone by
/// the program's own `Device::Cpu` copy-back; a program that only compiles kernels with NVRTC
/// opens no device; a program that opens two cards by design is not masked to one.
#[test]
fn library_devices_nvrtc_and_multi_gpu_programs_are_judged_as_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "sd/Cargo.toml", "[package]\nname = \"sd\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    write(root, "sd/src/lib.rs", "use candle_core::Device;\n\npub fn select_device() -> Device {\n    Device::cuda_if_available(0).unwrap()\n}\n");
    write(root, "sd/examples/render.rs", "use candle_core::{Device, Tensor};\n\nfn main() {\n    let device = sd::select_device();\n    let image = Tensor::zeros(4, candle_core::DType::F32, &device).unwrap();\n    let _saved = image.to_device(&Device::Cpu).unwrap();\n}\n");
    // The same library, told to run on the CPU by a binding of the program's own.
    write(root, "sd/examples/cpu.rs", "use candle_core::Device;\n\nfn main() {\n    let device = Device::Cpu;\n    let _d = sd::select_device;\n    println!(\"{device:?}\");\n}\n");
    write(root, "kern/Cargo.toml", "[package]\nname = \"kern\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = { version = \"0.19\", features = [\"nvrtc\", \"driver\"] }\n");
    write(root, "kern/src/bin/compile.rs", "use cudarc::nvrtc::compile_ptx;\n\nfn main() {\n    let ptx = compile_ptx(\"__global__ void k() {}\").unwrap();\n    println!(\"{ptx:?}\");\n}\n");
    write(root, "kern/src/bin/copy.rs", "use cudarc::driver::CudaContext;\n\nfn main() {\n    let a = CudaContext::new(0).unwrap();\n    let b = CudaContext::new(1).unwrap();\n    println!(\"{} {}\", a.ordinal, b.ordinal);\n}\n");
    let (status, text) = statuses(root);
    for (file, want) in [
        ("sd/examples/render.rs", "non_compliant"),
        ("sd/examples/cpu.rs", "no_gpu_code"),
        // It chooses the CUDA device: GPU code (it was labelled "without GPU code").
        ("sd/src/lib.rs", "compliant"),
        ("kern/src/bin/compile.rs", "no_gpu_code"),
        ("kern/src/bin/copy.rs", "non_compliant"),
    ] {
        assert_eq!(status[file], want, "{file}\n{text}");
    }
    assert!(text.contains("kern/src/bin/copy.rs:3:1: GH502 fn main does not set CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER first\n  help: not fixed automatically: this program selects several devices (GH513)"), "{text}");
    let before = std::fs::read(root.join("kern/src/bin/copy.rs")).unwrap();
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    assert_eq!(
        std::fs::read(root.join("kern/src/bin/copy.rs")).unwrap(),
        before
    );
    let render = std::fs::read_to_string(root.join("sd/examples/render.rs")).unwrap();
    assert!(
        render.contains("fn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\""),
        "{render}"
    );
}

/// A Python file a Rust program embeds (`include_str!` handed to pyo3) runs in that program's
/// process: it is not a program of its own (no Python header, no second mask), and a device
/// index in it is for review, naming the Rust program.
#[test]
fn python_a_rust_program_embeds_is_judged_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"srv\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\npyo3 = \"0.22\"\n");
    write(root, "src/main.rs", "use candle_core::Device;\n\npub const WORKER_PY: &str = include_str!(\"../py/worker.py\");\n\nfn main() {\n    let _d = Device::new_cuda(0);\n    println!(\"{}\", WORKER_PY.len());\n}\n");
    write(root, "py/worker.py", "import torch\n\nDEVICE = torch.device(\"cuda:1\")\n\n\ndef step(x):\n    return torch.tensor(x, device=DEVICE).sum().item()\n");
    write(
        root,
        "py/plain.py",
        "import torch\n\nDEVICE = torch.device(\"cuda:1\")\n",
    );
    let (status, text) = statuses(root);
    assert_eq!(status["py/worker.py"], "needs_review", "{text}");
    assert!(
        text.contains("it runs inside the Rust program of `src/main.rs`, which embeds it"),
        "{text}"
    );
    // Not embedded: a script of its own, as before.
    assert_eq!(status["py/plain.py"], "non_compliant", "{text}");
    let before = std::fs::read(root.join("py/worker.py")).unwrap();
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    assert_eq!(std::fs::read(root.join("py/worker.py")).unwrap(), before);
}

/// An options struct defined in one file whose field another file hands to a device index:
/// the default is remapped where it is written (every program running the library masks).
#[test]
fn an_options_field_is_followed_from_its_default_to_the_index_it_feeds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"tool\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\nclap = { version = \"4\", features = [\"derive\"] }\n");
    write(root, "src/lib.rs", "use candle_core::Device;\n\n#[derive(clap::Parser, Debug)]\npub struct Args {\n    /// GPU device index.\n    #[arg(long, default_value_t = 1)]\n    pub device: usize,\n    #[arg(long, default_value_t = 1)]\n    pub batch: usize,\n}\n\npub fn get_device(ordinal: usize) -> candle_core::Result<Device> {\n    Device::new_cuda(ordinal)\n}\n");
    write(root, "src/main.rs", "use clap::Parser;\n\nfn main() {\n    let args = tool::Args::parse();\n    let dev = tool::get_device(args.device).unwrap();\n    println!(\"{dev:?} {}\", args.batch);\n}\n");
    let (_, text) = statuses(root);
    assert!(text.contains("src/lib.rs:6:35: GH511 [*] `Device::new_cuda` (src/lib.rs:13) through `get_device` (src/main.rs:5), selects device 1 through the default of the `device` option (line 6)"), "{text}");
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("#[arg(long, default_value_t = 0)]\n    pub device: usize,\n    #[arg(long, default_value_t = 1)]\n    pub batch: usize,"),
        "{lib}"
    );
    let (status, text) = statuses(root);
    assert_eq!(status["src/lib.rs"], "compliant", "{text}");
    assert_eq!(status["src/main.rs"], "compliant", "{text}");
}

/// A wrapper crate is one row of `knowledge/rust.rs`: the raw CUDA runtime bindings
/// (`cuda-runtime-sys`), whose `cudaSetDevice(1)` selects a card by index. The program gets the
/// header and its index becomes the one the mask keeps; a program that only links the crate
/// for its types is left alone.
#[test]
fn raw_cuda_runtime_bindings_are_a_wrapper_row() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"kern\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncuda-runtime-sys = \"0.3.0-alpha.1\"\n");
    write(
        root,
        "src/main.rs",
        "use cuda_runtime_sys::cudaSetDevice;\n\nfn main() {\n    unsafe {\n        cudaSetDevice(1);\n    }\n}\n",
    );
    let (status, text) = statuses(root);
    assert_eq!(status["src/main.rs"], "non_compliant", "{text}");
    assert!(text.contains("GH511"), "{text}");
    let out = run(gh(root).args(["fix", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let fixed = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    assert!(
        fixed.contains("cudaSetDevice(0);") && fixed.contains("CUDA_VISIBLE_DEVICES"),
        "{fixed}"
    );
}

/// From a trial on accel and tensorrt-rs: crates that are CUDA and nothing else (the raw driver
/// API `cuda-driver-sys`, accel on it, TensorRT) were not in the table, and their programs were
/// "without GPU code". A crate of the tree built on the driver API (accel's `extern crate
/// cuda_driver_sys as cuda;`) makes its own examples GPU programs; accel's `Device::nth(1)`
/// moves with the mask.
#[test]
fn cuda_only_crates_are_wrapper_rows() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"accel\", \"app\", \"trt\"]\nresolver = \"2\"\n",
    );
    write(root, "accel/Cargo.toml", "[package]\nname = \"accel\"\nversion = \"0.1.0\"\nedition = \"2018\"\n[dependencies]\ncuda-driver-sys = \"0.3\"\n");
    write(
        root,
        "accel/src/lib.rs",
        "extern crate cuda_driver_sys as cuda;\n\npub struct Device(i32);\n\nimpl Device {\n    pub fn nth(id: usize) -> Device {\n        let mut d = 0;\n        unsafe { cuda::cuDeviceGet(&mut d, id as i32) };\n        Device(d)\n    }\n}\n",
    );
    write(
        root,
        "accel/examples/add.rs",
        "use accel::Device;\n\nfn main() {\n    let _d = Device::nth(1);\n}\n",
    );
    write(root, "app/Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2018\"\n[dependencies]\naccel = \"0.3\"\n");
    write(
        root,
        "app/src/main.rs",
        "use accel::Device;\n\nfn main() {\n    let _d = Device::nth(1);\n}\n",
    );
    write(root, "trt/Cargo.toml", "[package]\nname = \"trt\"\nversion = \"0.1.0\"\nedition = \"2018\"\n[dependencies]\ntensorrt-rs = \"0.3\"\n");
    write(
        root,
        "trt/src/main.rs",
        "use tensorrt_rs::runtime::Logger;\n\nfn main() {\n    let _l = Logger::new();\n}\n",
    );
    let (status, text) = statuses(root);
    assert_eq!(status["accel/examples/add.rs"], "non_compliant", "{text}");
    assert_eq!(status["app/src/main.rs"], "non_compliant", "{text}");
    assert_eq!(status["trt/src/main.rs"], "non_compliant", "{text}");
    let out = run(gh(root).args(["fix", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for file in ["accel/examples/add.rs", "app/src/main.rs"] {
        let fixed = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            fixed.contains("Device::nth(0)") && fixed.contains("CUDA_VISIBLE_DEVICES"),
            "{file}: {fixed}"
        );
    }
}

/// Issue 36: an index is remapped only in the plan that sets the program's mask, or where every
/// program running it is masked by its own fix. A library run by an edition-2024 program that
/// forbids unsafe code (in its file or its `[lints]`), or by one that opens several cards (its
/// fix is withheld), keeps its index for review; a program judged CPU gets no index edit; a
/// `use` inside `cfg_if!` is the program's import, so the program gets the mask with its index.
#[test]
fn an_index_is_never_moved_without_its_mask() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let lib = "use candle_core::Device;\n\npub fn open() -> Device {\n    Device::new_cuda(1).unwrap()\n}\n";
    let core = |name: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = {{ version = \"0.9\", features = [\"cuda\"] }}\n")
    };
    let cli = |name: &str, dep: &str, extra: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\n{dep} = {{ path = \"../{dep}\" }}\ncandle-core = {{ version = \"0.9\", features = [\"cuda\"] }}\n{extra}")
    };
    // `#![forbid(unsafe_code)]` in the program's file.
    write(root, "a/Cargo.toml", &core("a"));
    write(root, "a/src/lib.rs", lib);
    write(root, "acli/Cargo.toml", &cli("acli", "a", ""));
    write(
        root,
        "acli/src/main.rs",
        "#![forbid(unsafe_code)]\n\nfn main() {\n    let _d = a::open();\n}\n",
    );
    // `[lints.rust] unsafe_code = "deny"` in its manifest.
    write(root, "b/Cargo.toml", &core("b"));
    write(root, "b/src/lib.rs", lib);
    write(
        root,
        "bcli/Cargo.toml",
        &cli("bcli", "b", "[lints.rust]\nunsafe_code = \"deny\"\n"),
    );
    write(
        root,
        "bcli/src/main.rs",
        "fn main() {\n    let _d = b::open();\n}\n",
    );
    // A program that opens two cards: its fix is withheld (GH513), it sets no mask.
    write(root, "c/Cargo.toml", &core("c"));
    write(root, "c/src/lib.rs", lib);
    write(root, "ccli/Cargo.toml", &cli("ccli", "c", ""));
    write(root, "ccli/src/main.rs", "use candle_core::Device;\n\nfn main() {\n    let _a = Device::new_cuda(0).unwrap();\n    let _b = Device::new_cuda(1).unwrap();\n    let _d = c::open();\n}\n");
    // A program judged CPU (candle built without `cuda`) that names a CUDA index.
    write(root, "conv/Cargo.toml", "[package]\nname = \"conv\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n");
    write(
        root,
        "conv/src/main.rs",
        "use candle_core::Device;\n\nfn main() {\n    let _d = Device::new_cuda(1);\n}\n",
    );
    // The CUDA import inside `cfg_if!`: the visible one (candle, no `cuda`) is CPU.
    write(root, "hidden/Cargo.toml", "[package]\nname = \"hidden\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\ncudarc = { version = \"0.16\", optional = true }\ncfg-if = \"1\"\n[features]\ncuda = [\"dep:cudarc\"]\n");
    write(root, "hidden/src/main.rs", "use candle_core::Tensor;\n\ncfg_if::cfg_if! {\n    if #[cfg(feature = \"cuda\")] {\n        use cudarc::driver::CudaContext;\n    }\n}\n\nfn main() {\n    let _t: Option<Tensor> = None;\n    #[cfg(feature = \"cuda\")]\n    let _c = CudaContext::new(1);\n}\n");
    let (status, text) = statuses(root);
    for lib in ["a/src/lib.rs", "b/src/lib.rs", "c/src/lib.rs"] {
        assert_eq!(status[lib], "needs_review", "{lib}\n{text}");
        assert!(
            text.contains(&format!("{lib}:4:22: GH514 [review]")),
            "{lib}\n{text}"
        );
    }
    assert!(text.contains("acli/src/main.rs:3:1: GH505"), "{text}");
    assert!(text.contains("bcli/src/main.rs:1:1: GH505"), "{text}");
    assert!(text.contains("conv/src/main.rs:4:31: GH514 [review] Device::new_cuda(…) selects device 1, device 0 under mask '1'; not remapped\n  help: this program is judged a CPU program (`candle_core` is built without its CUDA feature), so no mask is set in it: an index moved"), "{text}");
    assert!(text.contains("hidden/src/main.rs:9:1: GH502 [*]"), "{text}");
    assert!(text.contains("hidden/src/main.rs:1:1: GH501 [*]"), "{text}");
    let diff = run(gh(root).args(["fix", "--diff", "--unsafe-fixes", "."])).stdout;
    for untouched in [
        "a/src/lib.rs",
        "b/src/lib.rs",
        "c/src/lib.rs",
        "conv/src/main.rs",
    ] {
        assert!(
            !diff.contains(&format!("+++ b/{untouched}")),
            "{untouched}\n{diff}"
        );
    }
    // The index moves with the mask, in one plan.
    assert!(diff.contains("+++ b/hidden/src/main.rs"), "{diff}");
    assert!(
        diff.contains("+    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");")
            && diff.contains("+    let _c = CudaContext::new(0);"),
        "{diff}"
    );
}

/// Issue 36: only an attribute known to keep `main` on the process's first thread lets the fix
/// insert the env (an `unsafe` block in edition 2024, whose SAFETY comment says no other thread
/// exists yet). `#[show_image::main]` runs `main` on a spawned thread: a finding for review that
/// names it, no block, its index and its library's left for review too.
#[test]
fn an_attribute_that_may_run_main_off_the_first_thread_gets_no_env_block() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"viewer\", \"engine\"]\nresolver = \"2\"\n",
    );
    write(root, "engine/Cargo.toml", "[package]\nname = \"engine\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    write(root, "engine/src/lib.rs", "use candle_core::Device;\n\npub fn open() -> Device {\n    Device::new_cuda(1).unwrap()\n}\n");
    write(root, "viewer/Cargo.toml", "[package]\nname = \"viewer\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\nengine = { path = \"../engine\" }\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\nshow-image = \"0.14\"\n");
    write(root, "viewer/src/main.rs", "use candle_core::Device;\n\n#[show_image::main]\nfn main() {\n    let _d = Device::new_cuda(1).unwrap();\n    let _e = engine::open();\n}\n");
    // Lint and tool attributes leave main where it is: the env goes in.
    write(root, "viewer/src/bin/plain.rs", "use candle_core::Device;\n\n#[allow(clippy::unwrap_used)]\n#[cfg_attr(feature = \"x\", rustfmt::skip)]\nfn main() {\n    let _d = Device::new_cuda(1).unwrap();\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["viewer/src/main.rs"], "needs_review", "{text}");
    assert_eq!(status["engine/src/lib.rs"], "needs_review", "{text}");
    assert!(
        text.contains("viewer/src/main.rs:3:1: GH509 [review] `main` runs under `#[show_image::main]`, maybe not on the first thread"),
        "{text}"
    );
    assert!(
        text.contains("viewer/src/main.rs:5:31: GH514 [review]"),
        "{text}"
    );
    assert!(!text.contains("viewer/src/main.rs:4:1: GH502"), "{text}");
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--unsafe-fixes", "."]));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let main = std::fs::read_to_string(root.join("viewer/src/main.rs")).unwrap();
    assert!(!main.contains("unsafe"), "{main}");
    assert!(main.contains("new_cuda(1)"), "{main}");
    let lib = std::fs::read_to_string(root.join("engine/src/lib.rs")).unwrap();
    assert!(lib.contains("new_cuda(1)"), "{lib}");
    let plain = std::fs::read_to_string(root.join("viewer/src/bin/plain.rs")).unwrap();
    assert!(
        plain.contains("fn main() {\n    unsafe {\n        // SAFETY:")
            && plain.contains("new_cuda(0)"),
        "{plain}"
    );
}

/// Issue 36: the build as cargo makes it. A CUDA wrapper vendored in the tree (a path
/// dependency the table knows) reaches CUDA with the feature its dependent forwards
/// (`cuda = ["llama-cpp-2/cuda"]`); a crate of the tree whose CUDA is its build script's (a
/// `cuda` feature turned on for it) reaches CUDA; and a feature one package of a build turns on
/// for a registry crate is on for every package of that build (cargo unifies features), so a
/// library's `cuda_if_available()` picks CUDA in the example whose package turns `cuda` on.
#[test]
fn wrappers_vendored_in_the_tree_and_unified_features_reach_cuda() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[workspace]\nmembers = [\"llama-cpp-2\", \"llama-cpp-sys-2\", \"examples/simple\", \"mysys\", \"mywrap\", \"chat\", \"core\", \"ex\"]\nresolver = \"2\"\n");
    write(root, "llama-cpp-sys-2/Cargo.toml", "[package]\nname = \"llama-cpp-sys-2\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[features]\ncuda = []\n");
    write(
        root,
        "llama-cpp-sys-2/src/lib.rs",
        "pub fn llama_backend_init() {}\n",
    );
    write(root, "llama-cpp-2/Cargo.toml", "[package]\nname = \"llama-cpp-2\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nllama-cpp-sys-2 = { path = \"../llama-cpp-sys-2\" }\n[features]\ncuda = [\"llama-cpp-sys-2/cuda\"]\n");
    write(root, "llama-cpp-2/src/lib.rs", "pub mod model {\n    pub struct LlamaModel;\n    impl LlamaModel {\n        pub fn load_from_file() -> Self {\n            llama_cpp_sys_2::llama_backend_init();\n            LlamaModel\n        }\n    }\n}\n");
    write(root, "examples/simple/Cargo.toml", "[package]\nname = \"simple\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nllama-cpp-2 = { path = \"../../llama-cpp-2\" }\n[features]\ncuda = [\"llama-cpp-2/cuda\"]\n");
    write(root, "examples/simple/src/main.rs", "use llama_cpp_2::model::LlamaModel;\n\nfn main() {\n    let _m = LlamaModel::load_from_file();\n}\n");
    write(root, "mysys/Cargo.toml", "[package]\nname = \"mysys\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[features]\ncuda = []\n");
    write(root, "mysys/src/lib.rs", "pub fn init() {}\n");
    write(root, "mywrap/Cargo.toml", "[package]\nname = \"mywrap\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nmysys = { path = \"../mysys\", features = [\"cuda\"] }\n");
    write(
        root,
        "mywrap/src/lib.rs",
        "pub fn start() {\n    mysys::init();\n}\n",
    );
    write(root, "chat/Cargo.toml", "[package]\nname = \"chat\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nmywrap = { path = \"../mywrap\" }\n");
    write(
        root,
        "chat/src/main.rs",
        "fn main() {\n    mywrap::start();\n}\n",
    );
    write(root, "core/Cargo.toml", "[package]\nname = \"core-lib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n");
    write(root, "core/src/lib.rs", "use candle_core::Device;\n\npub fn accelerated_device_if_available() -> Device {\n    Device::cuda_if_available(0).unwrap()\n}\n");
    write(root, "ex/Cargo.toml", "[package]\nname = \"ex\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncore-lib = { path = \"../core\" }\n[dev-dependencies]\ncandle = { package = \"candle-core\", version = \"0.9\" }\n[features]\n_cuda = [\"candle/cuda\"]\n");
    write(
        root,
        "ex/examples/run.rs",
        "fn main() {\n    let _d = core_lib::accelerated_device_if_available();\n}\n",
    );
    // The same library in a build that turns nothing on: CPU (candle without `cuda`).
    write(root, "ex2/Cargo.toml", "[package]\nname = \"ex2\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncore-lib = { path = \"../core\" }\n");
    write(
        root,
        "ex2/src/main.rs",
        "fn main() {\n    let _d = core_lib::accelerated_device_if_available();\n}\n",
    );
    let (status, text) = statuses(root);
    for program in [
        "examples/simple/src/main.rs",
        "chat/src/main.rs",
        "ex/examples/run.rs",
    ] {
        assert_eq!(status[program], "non_compliant", "{program}\n{text}");
    }
    assert_eq!(status["ex2/src/main.rs"], "no_gpu_code", "{text}");
    let touch = run(gh(root).args(["scan", "--touchpoints", "."])).stdout;
    assert!(touch.contains("examples/simple/src/main.rs:1:1: GH531 [info] this program reaches CUDA through `llama_cpp_2` with its `cuda` feature"), "{touch}");
    assert!(touch.contains("chat/src/main.rs:1:1: GH531 [info] this program reaches CUDA through `mywrap` (a crate of this tree) → `mysys` (a crate of this tree) with its `cuda` feature"), "{touch}");
    assert!(touch.contains("ex/examples/run.rs:1:1: GH531 [info] this program reaches CUDA through `core_lib` (a crate of this tree) → `candle_core` with its `cuda` feature: `Device::new_cuda` (turned on for the whole build by `ex`"), "{touch}");
}

/// Issue 36, from a trial on ct2rs and tensorflow: a package whose own feature builds it with
/// CUDA (`cuda = []`, read by its build script; no CUDA crate in its Rust code) runs its examples
/// on a GPU where they ask for its CUDA device (`Device::CUDA`), and one left on the library's
/// default stays CPU; a wrapper whose GPU feature is not named `cuda` (tensorflow's
/// `tensorflow_gpu`) reaches CUDA by its row in the table.
#[test]
fn a_package_built_with_cuda_by_its_own_feature_runs_its_examples_on_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"ct\", \"tf\"]\nresolver = \"2\"\n",
    );
    write(root, "ct/Cargo.toml", "[package]\nname = \"ct\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[features]\ndefault = []\ncuda = []\ncudnn = [\"cuda\"]\n");
    write(root, "ct/src/lib.rs", "#[derive(Default)]\npub enum Device {\n    #[default]\n    CPU,\n    CUDA,\n}\n\n#[derive(Default)]\npub struct Config {\n    pub device: Device,\n}\n\npub fn translate(_c: Config) {}\n");
    write(root, "ct/examples/gpu.rs", "use ct::{Config, Device};\n\nfn main() {\n    let cuda = std::env::args().any(|a| a == \"--cuda\");\n    let device = if cuda { Device::CUDA } else { Device::CPU };\n    ct::translate(Config { device });\n}\n");
    write(
        root,
        "ct/examples/plain.rs",
        "fn main() {\n    ct::translate(ct::Config::default());\n}\n",
    );
    write(root, "tf/Cargo.toml", "[package]\nname = \"tf\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ntensorflow = { version = \"0.21\", features = [\"tensorflow_gpu\"] }\n");
    write(root, "tf/src/main.rs", "use tensorflow::{Graph, Session, SessionOptions};\n\nfn main() {\n    let graph = Graph::new();\n    let _s = Session::new(&SessionOptions::new(), &graph).unwrap();\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["ct/examples/gpu.rs"], "non_compliant", "{text}");
    assert_eq!(status["ct/examples/plain.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["ct/src/lib.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["tf/src/main.rs"], "non_compliant", "{text}");
    let touch = run(gh(root).args(["scan", "--touchpoints", "."])).stdout;
    assert!(touch.contains("ct/examples/gpu.rs:1:1: GH531 [info] this program reaches CUDA through its package's library `ct` with its own `cuda` feature"), "{touch}");
    assert!(touch.contains("tf/src/main.rs:1:1: GH531 [info] this program reaches CUDA through `tensorflow` with its `tensorflow_gpu` feature"), "{touch}");
}

/// Issue 36, from a trial on whisper-rs and rust-bert: a CPU choice the code hands a wrapper
/// is the program's choice, as a binding is — whisper-rs's `params.set_use_gpu(false)`, a
/// pipeline config's `device: Device::Cpu` — and a test binary is judged test by test in an
/// inline `mod tests` too: a CPU test there does not make its sibling, which keeps the
/// library's default config (CUDA when there is one), CPU.
#[test]
fn a_cpu_choice_handed_to_a_wrapper_is_the_programs_and_tests_are_judged_apart() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nwhisper-rs = { version = \"0.16\", features = [\"cuda\"] }\nrust-bert = \"0.23\"\ntch = \"0.20\"\n");
    write(root, "src/lib.rs", "");
    write(root, "examples/vad.rs", "use whisper_rs::{WhisperVadContext, WhisperVadContextParams};\n\nfn main() {\n    let mut params = WhisperVadContextParams::default();\n    params.set_use_gpu(false);\n    let _ctx = WhisperVadContext::new(\"m.bin\", params);\n}\n");
    write(root, "examples/transcribe.rs", "use whisper_rs::{WhisperContext, WhisperContextParameters};\n\nfn main() {\n    let mut params = WhisperContextParameters::default();\n    params.use_gpu(true);\n    let _ctx = WhisperContext::new_with_params(\"m.bin\", params);\n}\n");
    write(root, "examples/summarize.rs", "use rust_bert::pipelines::summarization::{SummarizationConfig, SummarizationModel};\nuse tch::Device;\n\nfn main() {\n    let config = SummarizationConfig {\n        device: Device::Cpu,\n        ..Default::default()\n    };\n    let _m = SummarizationModel::new(config);\n}\n");
    write(root, "tests/pipelines.rs", "mod tests {\n    use rust_bert::pipelines::question_answering::QuestionAnsweringModel;\n    use rust_bert::pipelines::summarization::{SummarizationConfig, SummarizationModel};\n    use tch::Device;\n\n    #[test]\n    fn on_cpu() {\n        let config = SummarizationConfig {\n            device: Device::Cpu,\n            ..Default::default()\n        };\n        let _m = SummarizationModel::new(config);\n    }\n\n    #[test]\n    fn default_config() {\n        let _m = QuestionAnsweringModel::new(Default::default());\n    }\n}\n");
    write(root, "tests/cpu.rs", "mod tests {\n    use rust_bert::pipelines::summarization::{SummarizationConfig, SummarizationModel};\n    use tch::Device;\n\n    #[test]\n    fn on_cpu() {\n        let config = SummarizationConfig {\n            device: Device::Cpu,\n            ..Default::default()\n        };\n        let _m = SummarizationModel::new(config);\n    }\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["examples/vad.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["examples/transcribe.rs"], "non_compliant", "{text}");
    assert_eq!(status["examples/summarize.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["tests/pipelines.rs"], "needs_review", "{text}");
    assert_eq!(status["tests/cpu.rs"], "no_gpu_code", "{text}");
}

/// From a trial on rust-bert: `tests/nllb.rs` hands `Device::Cpu` to a config's constructor as
/// a positional argument (`TranslationConfig::new(…, Device::Cpu)`), and the test was GH508,
/// as if the library's CUDA default applied. A CPU device handed to a `…Config`/`…Options`/
/// `…Params`/`…Settings` constructor is the code's choice; the default config stays GPU.
#[test]
fn a_cpu_device_handed_to_a_configs_constructor_is_the_tests_choice() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"bert\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ntch = \"0.20\"\n");
    write(root, "src/lib.rs", "use tch::Device;\n\npub struct TranslationConfig {\n    pub device: Device,\n}\n\nimpl TranslationConfig {\n    pub fn new(_n: i32, device: Device) -> Self {\n        TranslationConfig { device }\n    }\n}\n\nimpl Default for TranslationConfig {\n    fn default() -> Self {\n        TranslationConfig { device: Device::cuda_if_available() }\n    }\n}\n\npub struct Model;\n\nimpl Model {\n    pub fn new(config: TranslationConfig) -> Model {\n        let _d = match config.device {\n            Device::Cpu => Device::Cpu,\n            _ => Device::cuda_if_available(),\n        };\n        Model\n    }\n}\n");
    write(root, "tests/nllb.rs", "use bert::{Model, TranslationConfig};\nuse tch::Device;\n\n#[test]\nfn nllb() {\n    let _m = Model::new(TranslationConfig::new(1, Device::Cpu));\n}\n");
    write(root, "tests/dflt.rs", "use bert::TranslationConfig;\n\n#[test]\nfn default() {\n    let _c = TranslationConfig::default();\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["tests/nllb.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["tests/dflt.rs"], "needs_review", "{text}");
}

/// Index provenance across modules and crates: a `const` of a settings crate imported under
/// another name, a `static` named through `super::` and a command-line default written in a
/// library's options struct (`default_value = "1"`) reach `Device::new_cuda` in other files.
/// Each is remapped where it is written, since every program running it masks; the fixed
/// workspace type-checks against the stub crates and its program opens device 0 under the
/// mask. Where one program running the definition sets no mask (an edition-2024 program that
/// forbids unsafe code), the definition is for review, naming it.
#[test]
#[cfg_attr(
    windows,
    ignore = "it builds the fixed workspace with the Linux cargo, which a Windows program under Wine cannot start"
)]
fn an_index_written_in_another_module_or_crate_is_remapped_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let root = root.as_path();
    let layout = |root: &Path| {
        write(
            root,
            "Cargo.toml",
            "[workspace]\nmembers = [\"conf\", \"engine\", \"app\"]\nresolver = \"2\"\n",
        );
        write(
            root,
            "conf/Cargo.toml",
            "[package]\nname = \"conf\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        );
        write(root, "conf/src/lib.rs", "pub mod settings;\n");
        write(root, "conf/src/settings.rs", "/// The card the engine opens.\npub const GPU_INDEX: usize = 1;\npub const WORKERS: usize = 1;\n");
        write(root, "engine/Cargo.toml", "[package]\nname = \"engine\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nconf = { path = \"../conf\" }\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
        write(root, "engine/src/lib.rs", "pub mod dev;\npub mod limits;\n");
        write(
            root,
            "engine/src/limits.rs",
            "pub static SPARE: usize = 1;\n",
        );
        write(root, "engine/src/dev.rs", "use candle_core::Device;\nuse conf::settings::GPU_INDEX as IDX;\n\npub fn open() -> Device {\n    Device::new_cuda(IDX).unwrap()\n}\n\npub fn spare() -> Device {\n    Device::new_cuda(super::limits::SPARE).unwrap()\n}\n");
        write(root, "app/Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nengine = { path = \"../engine\" }\nconf = { path = \"../conf\" }\n");
        write(root, "app/src/main.rs", "fn main() {\n    let a = engine::dev::open();\n    let b = engine::dev::spare();\n    println!(\"{a:?} {b:?} {}\", conf::settings::WORKERS);\n}\n");
    };
    layout(root);
    let (_, text) = statuses(root);
    assert!(text.contains("conf/src/settings.rs:2:11: GH511 [*] `Device::new_cuda` (engine/src/dev.rs:5), selects device 1 through `GPU_INDEX` (line 2)"), "{text}");
    assert!(text.contains("engine/src/limits.rs:1:12: GH511 [*] `Device::new_cuda` (engine/src/dev.rs:9), selects device 1 through `SPARE` (line 1)"), "{text}");
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let settings = std::fs::read_to_string(root.join("conf/src/settings.rs")).unwrap();
    assert_eq!(settings, "/// The card the engine opens.\npub const GPU_INDEX: usize = 0;\npub const WORKERS: usize = 1;\n");
    let limits = std::fs::read_to_string(root.join("engine/src/limits.rs")).unwrap();
    assert_eq!(limits, "pub static SPARE: usize = 0;\n");
    let (status, text) = statuses(root);
    for f in [
        "conf/src/settings.rs",
        "engine/src/limits.rs",
        "app/src/main.rs",
    ] {
        assert_eq!(status[f], "compliant", "{f}: {text}");
    }
    let out = common::cargo_with_stubs(
        root,
        &dir.path().join("target"),
        &["candle-core"],
        &["run", "-p", "app"],
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("candle Device::new_cuda(0) sees CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID")).count(),
        2,
        "{out}"
    );

    // A second program runs the settings without a mask: the definition is for review.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    layout(root);
    write(
        root,
        "app/src/bin/strict.rs",
        "#![forbid(unsafe_code)]\n\nfn main() {\n    let _d = engine::dev::open();\n}\n",
    );
    std::fs::write(root.join("app/Cargo.toml"), "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\nengine = { path = \"../engine\" }\nconf = { path = \"../conf\" }\n").unwrap();
    let (_, text) = statuses(root);
    assert!(text.contains("conf/src/settings.rs:2:11: GH514 [review] `Device::new_cuda` (engine/src/dev.rs:5), selects device 1 through `GPU_INDEX` (line 2)"), "{text}");
    assert!(
        text.contains("`app/src/bin/strict.rs` run(s) this library without a mask"),
        "{text}"
    );
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let settings = std::fs::read_to_string(root.join("conf/src/settings.rs")).unwrap();
    assert!(settings.contains("GPU_INDEX: usize = 1;"), "{settings}");
}

/// A library's options struct whose default another crate hands to a device index, in a file
/// with no GPU word: remapped where it is written.
#[test]
fn an_options_default_in_a_library_crate_reaches_another_crates_constructor() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"cli\", \"app\"]\n",
    );
    write(root, "cli/Cargo.toml", "[package]\nname = \"cli\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nclap = { version = \"4\", features = [\"derive\"] }\n");
    write(root, "cli/src/lib.rs", "#[derive(clap::Parser, Debug)]\npub struct Args {\n    #[arg(long, default_value = \"1\")]\n    pub gpu: usize,\n    #[arg(long, default_value_t = 1)]\n    pub batch: usize,\n}\n");
    write(root, "app/Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncli = { path = \"../cli\" }\nclap = \"4\"\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    write(root, "app/src/main.rs", "use clap::Parser;\n\nfn main() {\n    let args = cli::Args::parse();\n    let d = candle_core::Device::new_cuda(args.gpu).unwrap();\n    println!(\"{d:?} {}\", args.batch);\n}\n");
    let (_, text) = statuses(root);
    assert!(text.contains("cli/src/lib.rs:3:34: GH511 [*] `Device::new_cuda` (app/src/main.rs:5), selects device 1 through the default of the `gpu` option (line 3)"), "{text}");
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let lib = std::fs::read_to_string(root.join("cli/src/lib.rs")).unwrap();
    assert!(lib.contains("default_value = \"0\")]\n    pub gpu: usize,\n    #[arg(long, default_value_t = 1)]\n    pub batch"), "{lib}");
    let (status, text) = statuses(root);
    assert_eq!(status["cli/src/lib.rs"], "compliant", "{text}");
    assert_eq!(status["app/src/main.rs"], "compliant", "{text}");
}

/// Command-line options that select several cards (`--devices`/`--device-ids` lists, a
/// `--gpus "0,1"` default, `--num-gpus 2`) make a GPU program multi-GPU (GH513): no mask is
/// written into it. A count of cards whose default is 1, and a `--devices` list in a CPU tool
/// (audio devices), are no finding.
#[test]
fn multi_gpu_command_line_options_get_the_multi_gpu_finding() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"mg\", \"audio\"]\n",
    );
    write(root, "mg/Cargo.toml", "[package]\nname = \"mg\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\nclap = { version = \"4\", features = [\"derive\"] }\n");
    write(root, "mg/src/bin/shard.rs", "use candle_core::Device;\nuse clap::Parser;\n\n#[derive(Parser)]\nstruct Args {\n    /// Devices to shard over.\n    #[arg(long, value_delimiter = ',')]\n    devices: Vec<usize>,\n}\n\nfn main() {\n    let args = Args::parse();\n    let devs: Vec<Device> = args.devices.iter().map(|d| Device::new_cuda(*d).unwrap()).collect();\n    println!(\"{}\", devs.len());\n}\n");
    write(root, "mg/src/bin/ids.rs", "use candle_core::Device;\n\n#[derive(clap::Parser)]\nstruct Args {\n    device_ids: Option<Vec<u32>>,\n    #[clap(long = \"gpus\", default_value = \"0,1\")]\n    gpu_list: String,\n}\n\nfn main() {\n    let d = Device::new_cuda(0).unwrap();\n    println!(\"{d:?}\");\n}\n");
    write(root, "mg/src/bin/count.rs", "use candle_core::Device;\nuse clap::Parser;\n\n#[derive(Parser)]\nstruct Args {\n    #[arg(long, default_value_t = 2)]\n    num_gpus: usize,\n}\n\nfn main() {\n    let args = Args::parse();\n    let mut devs = Vec::new();\n    for i in 0..args.num_gpus {\n        devs.push(Device::new_cuda(i).unwrap());\n    }\n    println!(\"{}\", devs.len());\n}\n");
    write(root, "mg/src/bin/one.rs", "use candle_core::Device;\nuse clap::Parser;\n\n#[derive(Parser)]\nstruct Args {\n    #[arg(long, default_value_t = 1)]\n    world_size: usize,\n}\n\nfn main() {\n    let args = Args::parse();\n    let d = Device::new_cuda(0).unwrap();\n    println!(\"{d:?} {}\", args.world_size);\n}\n");
    write(root, "audio/Cargo.toml", "[package]\nname = \"audio\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nclap = { version = \"4\", features = [\"derive\"] }\n");
    write(root, "audio/src/main.rs", "use clap::Parser;\n\n#[derive(Parser)]\nstruct Args {\n    /// Sound devices to record from (a GPU is nowhere here).\n    #[arg(long)]\n    devices: Vec<String>,\n}\n\nfn main() {\n    println!(\"{:?}\", Args::parse().devices);\n}\n");
    let (status, text) = statuses(root);
    for (at, option, what) in [
        (
            "mg/src/bin/shard.rs:8:5",
            "devices",
            "takes a list of devices",
        ),
        (
            "mg/src/bin/ids.rs:5:5",
            "device-ids",
            "takes a list of devices",
        ),
        ("mg/src/bin/ids.rs:7:5", "gpus", "takes a list of devices"),
        (
            "mg/src/bin/count.rs:7:5",
            "num-gpus",
            "opens 2 cards by default",
        ),
    ] {
        assert!(
            text.contains(&format!("{at}: GH513 [review] the command-line option `--{option}` {what}: several cards by design")),
            "{at}: {text}"
        );
    }
    assert!(!text.contains("one.rs:7"), "{text}");
    assert_eq!(status["audio/src/main.rs"], "no_gpu_code", "{text}");
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    for bin in ["shard", "ids", "count"] {
        let src = std::fs::read_to_string(root.join(format!("mg/src/bin/{bin}.rs"))).unwrap();
        assert!(!src.contains("CUDA_VISIBLE_DEVICES"), "{bin}: {src}");
    }
    let one = std::fs::read_to_string(root.join("mg/src/bin/one.rs")).unwrap();
    assert!(
        one.contains("std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");"),
        "{one}"
    );
}

/// Tests and benches as programs: a test binary is judged test by test (a `Device::Cpu` test
/// next to one that builds a default config, whose library picks CUDA, is a GPU test binary:
/// GH508), a test reaching CUDA through a helper of the library is one, a bench with a
/// harness is one, an integration test with `harness = false` has a real `main` and is fixed
/// like a binary; tests whose every function binds the CPU, or that use no device, get nothing.
#[test]
fn tests_and_benches_are_programs_judged_test_by_test() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"mdl\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n[features]\ncuda = [\"candle-core/cuda\"]\n[[test]]\nname = \"standalone\"\nharness = false\n");
    write(root, "src/lib.rs", "use candle_core::Device;\n\npub struct Config {\n    pub device: Device,\n}\n\nimpl Default for Config {\n    fn default() -> Self {\n        Config {\n            device: Device::cuda_if_available(0).unwrap(),\n        }\n    }\n}\n\npub fn helper_device() -> Device {\n    Device::cuda_if_available(0).unwrap()\n}\n\npub fn add(a: usize, b: usize) -> usize {\n    a + b\n}\n");
    write(root, "tests/mixed.rs", "use candle_core::Device;\nuse mdl::Config;\n\n#[test]\nfn runs_with_default_config() {\n    let c = Config::default();\n    let _ = c.device;\n}\n\n#[test]\nfn on_cpu() {\n    let d = Device::Cpu;\n    let _ = d;\n}\n");
    write(
        root,
        "tests/helper.rs",
        "#[test]\nfn via_helper() {\n    let _d = mdl::helper_device();\n}\n",
    );
    write(root, "tests/cpu_only.rs", "use candle_core::Device;\n\n#[test]\nfn a() {\n    let dev = Device::Cpu;\n    let _ = dev;\n}\n\n#[test]\nfn b() {\n    let d: Device = Device::Cpu;\n    let _ = d;\n}\n");
    write(
        root,
        "tests/math.rs",
        "#[test]\nfn adds() {\n    assert_eq!(mdl::add(1, 2), 3);\n}\n",
    );
    write(
        root,
        "tests/standalone.rs",
        "fn main() {\n    let _d = mdl::helper_device();\n}\n",
    );
    write(root, "benches/speed.rs", "#![feature(test)]\nextern crate test;\n\n#[bench]\nfn speed(b: &mut test::Bencher) {\n    b.iter(mdl::helper_device);\n}\n");
    let (status, text) = statuses(root);
    for gpu_test in ["tests/mixed.rs", "tests/helper.rs", "benches/speed.rs"] {
        assert!(
            text.contains(&format!("{gpu_test}:1:1: GH508 [review] this GPU program")),
            "{gpu_test}: {text}"
        );
        assert_eq!(status[gpu_test], "needs_review", "{gpu_test}: {text}");
    }
    for cpu_test in ["tests/cpu_only.rs", "tests/math.rs"] {
        assert_eq!(status[cpu_test], "no_gpu_code", "{cpu_test}: {text}");
    }
    assert!(
        text.contains("tests/standalone.rs:1:1: GH502 [*]"),
        "{text}"
    );
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let standalone = std::fs::read_to_string(root.join("tests/standalone.rs")).unwrap();
    assert!(
        standalone.contains("fn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");"),
        "{standalone}"
    );
    let (status, text) = statuses(root);
    assert_eq!(status["tests/standalone.rs"], "compliant", "{text}");
}

#[test]
fn a_program_that_chooses_only_metal_or_cpu_devices_is_no_cuda_program() {
    // candle-nn's `tests/sdpa.rs`: Metal tests in a crate whose `cuda` feature turns on
    // candle's. CUDA_VISIBLE_DEVICES selects no Metal device: no header, no finding.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"mtl\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.11\"\n[features]\ncuda = [\"candle-core/cuda\"]\nmetal = [\"candle-core/metal\"]\n");
    write(root, "src/lib.rs", "pub fn x() {}\n");
    write(root, "examples/metal_main.rs", "use candle_core::{Device, Tensor};\n\nfn main() -> candle_core::Result<()> {\n    let device = Device::new_metal(0)?;\n    let t = Tensor::zeros(4, candle_core::DType::F32, &device)?;\n    println!(\"{t}\");\n    Ok(())\n}\n");
    write(root, "tests/metal_only.rs", "#[cfg(feature = \"metal\")]\nmod metal_tests {\n    use candle_core::{Device, Result, Tensor};\n\n    #[test]\n    fn on_metal() -> Result<()> {\n        let device = Device::new_metal(0)?;\n        let t = Tensor::zeros(4, candle_core::DType::F32, &device)?;\n        assert_eq!(t.dims(), &[4]);\n        Ok(())\n    }\n}\n");
    // The same program on CUDA: a GPU program.
    write(root, "examples/cuda_main.rs", "use candle_core::{Device, Tensor};\n\nfn main() -> candle_core::Result<()> {\n    let device = Device::new_cuda(0)?;\n    let t = Tensor::zeros(4, candle_core::DType::F32, &device)?;\n    println!(\"{t}\");\n    Ok(())\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["examples/metal_main.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["tests/metal_only.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["examples/cuda_main.rs"], "non_compliant", "{text}");
    assert!(!text.contains("metal_"), "{text}");
}

#[test]
fn the_cuda_test_a_test_macro_writes_is_not_hidden_by_a_cpu_test_beside_it() {
    // candle-nn's `tests/ops.rs`: `test_device!(f, f_cpu, f_gpu, f_metal)` writes a test on
    // `Device::new_cuda(0)` under the `cuda` feature; one plain test on `Device::Cpu` beside
    // it does not make it a CPU test.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"ops\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle = { package = \"candle-core\", version = \"0.11\" }\n[features]\ncuda = [\"candle/cuda\"]\n");
    write(root, "src/lib.rs", "pub fn x() {}\n");
    let helper = "use candle::{test_device, Device, Result, Tensor};\n\nfn zeros(device: &Device) -> Result<()> {\n    let t = Tensor::zeros(4, candle::DType::F32, device)?;\n    assert_eq!(t.dims(), &[4]);\n    Ok(())\n}\n\ntest_device!(zeros, zeros_cpu, zeros_gpu, zeros_metal);\n";
    write(root, "tests/mixed.rs", &format!("{helper}\n#[test]\nfn plain_cpu() -> Result<()> {{\n    let dev = &Device::Cpu;\n    zeros(dev)\n}}\n"));
    write(root, "tests/in_module.rs", "mod ops {\n    use candle::{Device, Result};\n\n    fn ok(_d: &Device) -> Result<()> {\n        Ok(())\n    }\n\n    candle::test_device!(ok, ok_cpu, ok_gpu, ok_metal);\n\n    #[test]\n    fn plain_cpu() -> Result<()> {\n        ok(&Device::Cpu)\n    }\n}\n");
    write(root, "tests/cpu_only.rs", "use candle::{Device, Result};\n\n#[test]\nfn plain_cpu() -> Result<()> {\n    let dev = &Device::Cpu;\n    let _ = dev;\n    Ok(())\n}\n");
    let (status, text) = statuses(root);
    for gpu_test in ["tests/mixed.rs", "tests/in_module.rs"] {
        assert!(
            text.contains(&format!(
                "{gpu_test}:1:1: GH508 [review] this GPU program gets its `main` from libtest"
            )),
            "{gpu_test}: {text}"
        );
        assert_eq!(status[gpu_test], "needs_review", "{gpu_test}: {text}");
    }
    assert_eq!(status["tests/cpu_only.rs"], "no_gpu_code", "{text}");
}

/// A CUDA crate's own unit tests that call its own device constructor (accel's
/// `Device::nth(0)`, whose last segment alone chooses nothing) open a card: GH508, never
/// green, though its library reaches the driver only through an `extern crate … as` alias;
/// a crate the table does not know, reaching its `-sys` crate the same way, is one too.
#[test]
fn a_cuda_crates_unit_tests_calling_its_own_device_constructor_are_gh508() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let device = "pub struct Device(i32);\n\nimpl Device {\n    pub fn nth(ordinal: i32) -> Result<Device, ()> {\n        let mut d = 0;\n        unsafe { cuda::cuDeviceGet(&mut d, ordinal) };\n        Ok(Device(d))\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn zeroth() {\n        Device::nth(0).unwrap();\n    }\n}\n";
    for pkg in ["accel", "myaccel"] {
        write(root, &format!("{pkg}/Cargo.toml"), &format!("[package]\nname = \"{pkg}\"\nversion = \"0.3.1\"\nedition = \"2018\"\n[dependencies]\ncuda-driver-sys = \"0.3\"\n"));
        write(
            root,
            &format!("{pkg}/src/lib.rs"),
            "extern crate cuda_driver_sys as cuda;\n\nmod device;\npub use device::*;\n",
        );
        write(root, &format!("{pkg}/src/device.rs"), device);
        write(
            root,
            &format!("{pkg}/examples/add.rs"),
            &format!("fn main() {{\n    let _d = {pkg}::Device::nth(0).unwrap();\n}}\n"),
        );
    }
    let (status, text) = statuses(root);
    for pkg in ["accel", "myaccel"] {
        let file = format!("{pkg}/src/device.rs");
        assert_eq!(
            status.get(&file).map(String::as_str),
            Some("needs_review"),
            "{file}\n{text}"
        );
        assert!(text.contains(&format!("{file}:12:1: GH508 [review] `#[test]` functions here run on CUDA under the `main` libtest writes")), "{text}");
    }
}

/// A library's `#[test]` functions are a program of their own (`cargo test` builds them with
/// a `main` libtest writes): a file whose tests reach CUDA — through a test device type the
/// crate's own `cuda` feature makes a CUDA one, in a test module of its own file, or a CUDA
/// wrapper's tests opening a context through `crate::` — needs review, never green; tests
/// that reach no device (a shape helper, a compiler the wrapper also ships) get nothing.
#[test]
fn a_librarys_unit_tests_that_reach_cuda_are_a_program_no_main_masks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "nd/Cargo.toml", "[package]\nname = \"nd\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = { version = \"0.16\", optional = true }\n[features]\ncuda = [\"dep:cudarc\"]\n");
    write(root, "nd/src/lib.rs", "pub mod ops;\npub mod shapes;\npub mod tensor;\n\n#[cfg(test)]\npub(crate) mod tests {\n    #[cfg(not(feature = \"cuda\"))]\n    pub type TestDevice = crate::tensor::Cpu;\n    #[cfg(feature = \"cuda\")]\n    pub type TestDevice = crate::tensor::Cuda;\n}\n");
    write(root, "nd/src/tensor.rs", "#[derive(Default)]\npub struct Cpu;\n\n#[cfg(feature = \"cuda\")]\npub struct Cuda {\n    pub ctx: std::sync::Arc<cudarc::driver::CudaContext>,\n}\n\n#[cfg(feature = \"cuda\")]\nimpl Default for Cuda {\n    fn default() -> Self {\n        Cuda {\n            ctx: cudarc::driver::CudaContext::new(0).unwrap(),\n        }\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use crate::tests::TestDevice;\n\n    #[test]\n    fn builds() {\n        let _d = TestDevice::default();\n    }\n}\n");
    write(root, "nd/src/shapes.rs", "pub fn rank(s: &[usize]) -> usize {\n    s.len()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn ranks() {\n        assert_eq!(super::rank(&[1, 2]), 2);\n    }\n}\n");
    write(
        root,
        "nd/src/ops.rs",
        "pub fn relu(x: f32) -> f32 {\n    x.max(0.0)\n}\n\n#[cfg(test)]\nmod tests;\n",
    );
    write(root, "nd/src/ops/tests.rs", "use crate::tests::TestDevice;\n\n#[test]\nfn relu_on_the_test_device() {\n    let _d = TestDevice::default();\n    assert_eq!(super::relu(-1.0), 0.0);\n}\n");
    // A CUDA wrapper's own tests.
    write(
        root,
        "cu/Cargo.toml",
        "[package]\nname = \"cudarc\"\nversion = \"0.16.0\"\nedition = \"2021\"\n",
    );
    write(root, "cu/src/lib.rs", "pub mod driver;\npub mod nvrtc;\n");
    write(root, "cu/src/driver.rs", "pub struct CudaContext;\n\nimpl CudaContext {\n    pub fn new(ordinal: usize) -> Result<CudaContext, ()> {\n        let _ = ordinal;\n        Ok(CudaContext)\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn opens() {\n        let _ctx = CudaContext::new(0).unwrap();\n    }\n}\n");
    write(root, "cu/src/nvrtc.rs", "pub fn compile(src: &str) -> Vec<u8> {\n    src.as_bytes().to_vec()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn compiles() {\n        assert!(!super::compile(\"x\").is_empty());\n    }\n}\n");
    let (status, text) = statuses(root);
    for (file, want) in [
        ("nd/src/tensor.rs", "needs_review"),
        ("nd/src/ops/tests.rs", "needs_review"),
        ("nd/src/shapes.rs", "no_gpu_code"),
        ("nd/src/ops.rs", "no_gpu_code"),
        ("cu/src/driver.rs", "needs_review"),
        ("cu/src/nvrtc.rs", "no_gpu_code"),
    ] {
        assert_eq!(
            status.get(file).map(String::as_str),
            Some(want),
            "{file}\n{text}"
        );
    }
    assert!(text.contains("nd/src/tensor.rs:19:1: GH508 [review] `#[test]` functions here run on CUDA under the `main` libtest writes: no place for the env\n  help: they reach CUDA through "), "{text}");
    assert!(
        text.contains("nd/src/ops/tests.rs:4:1: GH508 [review]"),
        "{text}"
    );
    assert!(text.contains("cu/src/driver.rs:11:1: GH508 [review] `#[test]` functions here run on CUDA under the `main` libtest writes: no place for the env\n  help: they reach CUDA through `cudarc`: the CUDA driver API; set CUDA_VISIBLE_DEVICES='1' and CUDA_DEVICE_ORDER=PCI_BUS_ID in the environment `cargo test` runs in"), "{text}");
    // Review is never green: the exit status says so.
    let out = run(gh(root).args(["scan", "."]));
    assert_eq!(out.code, 1, "{}", out.stdout);
    // `--verbose` says why each Rust file is what it is (it said the tree held no program).
    // Paths as the platform prints them (`nd\src\tensor.rs` on Windows), read here with `/`.
    let verbose = run(gh(root).args(["scan", "--verbose", "."]))
        .stdout
        .replace('\\', "/");
    assert!(verbose.contains("- nd/src/tensor.rs (needs_review): module: no GPU program of this tree runs it; its `#[test]` functions reach CUDA through "), "{verbose}");
    assert!(
        verbose.contains(
            "- nd/src/shapes.rs (no_gpu_code): module: no GPU program of this tree runs it\n"
        ),
        "{verbose}"
    );
}

/// A library's doc examples are programs too (`cargo test --doc` runs each in a `main`
/// rustdoc writes): a file whose runnable examples open a context needs review, with their
/// count and the first one's line; `no_run`, `ignore` and `text` blocks, and an example that
/// shows the CPU device, run nothing on a card.
#[test]
fn a_librarys_doc_examples_that_reach_cuda_are_programs_rustdoc_writes_the_main_of() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[package]\nname = \"cudarc\"\nversion = \"0.16.0\"\nedition = \"2021\"\n",
    );
    write(root, "src/lib.rs", "//! Safe CUDA.\n//!\n//! ```\n//! # use cudarc::driver::CudaContext;\n//! let ctx = CudaContext::new(0).unwrap();\n//! ```\n\npub mod driver;\npub mod cpu;\n");
    write(root, "src/driver.rs", "pub struct CudaContext;\n\nimpl CudaContext {\n    /// Opens the context of a card.\n    ///\n    /// ```rust\n    /// # use cudarc::driver::CudaContext;\n    /// let ctx = CudaContext::new(0).unwrap();\n    /// ```\n    ///\n    /// ```no_run\n    /// let ctx = cudarc::driver::CudaContext::new(1).unwrap();\n    /// ```\n    pub fn new(ordinal: usize) -> Result<CudaContext, ()> {\n        let _ = ordinal;\n        Ok(CudaContext)\n    }\n\n    /// ```\n    /// let a = cudarc::driver::CudaContext::new(0).unwrap();\n    /// ```\n    pub fn fork(&self) -> CudaContext {\n        CudaContext\n    }\n}\n");
    write(root, "src/cpu.rs", "/// ```\n/// let dev: cudarc::cpu::Cpu = Default::default();\n/// ```\n///\n/// ```text\n/// CudaContext::new(0)\n/// ```\n#[derive(Default)]\npub struct Cpu;\n");
    let (status, text) = statuses(root);
    for (file, want) in [
        ("src/lib.rs", "needs_review"),
        ("src/driver.rs", "needs_review"),
        ("src/cpu.rs", "no_gpu_code"),
    ] {
        assert_eq!(
            status.get(file).map(String::as_str),
            Some(want),
            "{file}\n{text}"
        );
    }
    assert!(text.contains("src/lib.rs:3:1: GH508 [review] a doc example of this file runs on CUDA under the `main` rustdoc writes: no place for the env in it\n  help: the first, here, reaches CUDA through `cudarc`: the CUDA driver API; set CUDA_VISIBLE_DEVICES='1' and CUDA_DEVICE_ORDER=PCI_BUS_ID in the environment `cargo test` runs in, or mark an example that needs no run `no_run`"), "{text}");
    assert!(
        text.contains("src/driver.rs:6:5: GH508 [review] 2 doc examples of this file run on CUDA"),
        "{text}"
    );
}

/// rustfmt: an async `main` made sync keeps its body where it was (`async fn async_main`, not
/// one line re-indented) and gets a sync `main` laid out as rustfmt lays it out, so a file
/// `rustfmt --check` accepted before the fix (with the project's rustfmt.toml and edition) it
/// accepts after, even with lines at the width limit; the result type-checks against the stub
/// crates and opens device 0 under the mask.
#[test]
fn an_async_main_made_sync_stays_rustfmt_clean_with_the_projects_settings() {
    let rustfmt_ok = std::process::Command::new("rustfmt")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !rustfmt_ok {
        eprintln!("rustfmt is not installed: formatting after the fix is not checked");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let root = root.as_path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"srv\", \"narrow\", \"aligned\"]\nresolver = \"2\"\n",
    );
    // A block comment aligned by 3 spaces (tch's examples): the step stays 4, as main's body.
    write(root, "aligned/Cargo.toml", "[package]\nname = \"aligned\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    write(root, "aligned/src/main.rs", "/* Trains on CIFAR-10.\n   The data goes in data/.\n*/\nuse candle_core::Device;\n\nfn main() {\n    let d = Device::new_cuda(1).unwrap();\n    println!(\"{d:?}\");\n}\n");
    write(root, "srv/Cargo.toml", "[package]\nname = \"srv\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ntokio = { version = \"1\", features = [\"full\"] }\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    // A line of 100 columns at the body's indentation: one step deeper, rustfmt would wrap it.
    let long = format!("    let message = \"{}\";\n", "x".repeat(79));
    assert_eq!(long.len(), 101);
    write(root, "srv/src/main.rs", &format!("use candle_core::Device;\n\n#[tokio::main]\nasync fn main() -> Result<(), candle_core::Error> {{\n    let device = Device::new_cuda(1)?;\n{long}    println!(\"{{message}} {{device:?}}\");\n    Ok(())\n}}\n"));
    write(
        root,
        "narrow/rustfmt.toml",
        "max_width = 60\ntab_spaces = 2\n",
    );
    write(root, "narrow/Cargo.toml", "[package]\nname = \"narrow\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\ntokio = { version = \"1\", features = [\"full\"] }\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    write(root, "narrow/src/main.rs", "use candle_core::Device;\n\n#[tokio::main(flavor = \"current_thread\")]\nasync fn main() {\n  let d = Device::new_cuda(1).unwrap();\n  let shown = format!(\"narrow {:?} {}\", d, 1_000_000);\n  println!(\"{shown}\");\n}\n");
    let formatted = |rel: &str, edition: &str| {
        std::process::Command::new("rustfmt")
            .args(["--check", "--edition", edition])
            .arg(root.join(rel))
            .output()
            .unwrap()
    };
    for (rel, edition) in [
        ("srv/src/main.rs", "2021"),
        ("narrow/src/main.rs", "2024"),
        ("aligned/src/main.rs", "2021"),
    ] {
        let out = formatted(rel, edition);
        assert!(
            out.status.success(),
            "{rel} before: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    run(gh(root).args(["fix", "--unsafe-fixes", "--no-journal", "--gpu", "off", "."]));
    for (rel, edition) in [("srv/src/main.rs", "2021"), ("narrow/src/main.rs", "2024")] {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        assert!(text.contains("async fn async_main()"), "{rel}: {text}");
        let out = formatted(rel, edition);
        assert!(
            out.status.success(),
            "{rel} after: {}\n{text}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let srv = std::fs::read_to_string(root.join("srv/src/main.rs")).unwrap();
    assert!(srv.contains(&long), "{srv}");
    let aligned = std::fs::read_to_string(root.join("aligned/src/main.rs")).unwrap();
    assert!(
        aligned.contains("fn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");"),
        "{aligned}"
    );
    let out = formatted("aligned/src/main.rs", "2021");
    assert!(
        out.status.success(),
        "aligned after: {}\n{aligned}",
        String::from_utf8_lossy(&out.stdout)
    );
    let target = dir.path().join("target");
    for package in ["srv", "narrow", "aligned"] {
        let out = common::cargo_with_stubs(
            root,
            &target,
            &["tokio", "candle-core"],
            &["run", "-p", package],
        );
        assert!(out.contains("candle Device::new_cuda(0) sees CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID"), "{package}: {out}");
    }
}

/// Registry crates that turn on each other's features (`candle-transformers/cuda` turns on
/// `candle-core/cuda`: the knowledge table's `features_enable`), in the package itself and
/// across a path dependency of the build; a renamed dependency turned on through `dep:` and
/// `?/` syntax or a feature of any name: each program using `Device::cuda_if_available` picks
/// CUDA and is found, with the reason. Without the feature, the same program is CPU.
#[test]
fn registry_crates_turning_on_each_others_cuda_and_renamed_dependencies_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[workspace]\nmembers = [\"direct\", \"models\", \"viaLib\", \"renamed\", \"named\", \"cpu\"]\nresolver = \"2\"\n");
    let pkg = |name: &str, deps: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n{deps}")
    };
    let main = |krate: &str| {
        format!("fn main() {{\n    let d = {krate}::Device::cuda_if_available(0).unwrap();\n    println!(\"{{d:?}}\");\n}}\n")
    };
    write(root, "direct/Cargo.toml", &pkg("direct", "[dependencies]\ncandle-core = \"0.9\"\ncandle-transformers = { version = \"0.9\", features = [\"cuda\"] }\n"));
    write(root, "direct/src/main.rs", &main("candle_core"));
    write(
        root,
        "models/Cargo.toml",
        &pkg(
            "models",
            "[dependencies]\ncandle-nn = { version = \"0.9\", features = [\"cuda\"] }\n",
        ),
    );
    write(
        root,
        "models/src/lib.rs",
        "pub fn layers() -> usize {\n    1\n}\n",
    );
    write(
        root,
        "viaLib/Cargo.toml",
        &pkg(
            "via-lib",
            "[dependencies]\ncandle-core = \"0.9\"\nmodels = { path = \"../models\" }\n",
        ),
    );
    write(root, "viaLib/src/main.rs", &main("candle_core"));
    write(root, "renamed/Cargo.toml", &pkg("renamed", "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.9\", optional = true }\n[features]\ndefault = [\"gpu\"]\ngpu = [\"dep:candle\", \"candle?/cuda\"]\n"));
    write(root, "renamed/src/main.rs", &main("candle"));
    write(root, "named/Cargo.toml", &pkg("named", "[dependencies]\ncandle = { package = \"candle-core\", version = \"0.9\" }\n[features]\n_cuda = [\"candle/cuda\"]\n"));
    write(root, "named/src/main.rs", &main("candle"));
    write(
        root,
        "cpu/Cargo.toml",
        &pkg(
            "cpu",
            "[dependencies]\ncandle-core = \"0.9\"\ncandle-transformers = \"0.9\"\n",
        ),
    );
    write(root, "cpu/src/main.rs", &main("candle_core"));
    let out = run(gh(root).args(["scan", "--touchpoints", "."])).stdout;
    assert!(out.contains("direct/src/main.rs:1:1: GH531 [info] this program reaches CUDA through `candle_core` with its `cuda` feature: `Device::new_cuda` (turned on for the whole build by `candle_transformers/cuda`"), "{out}");
    assert!(out.contains("viaLib/src/main.rs:1:1: GH531 [info] this program reaches CUDA through `candle_core` with its `cuda` feature: `Device::new_cuda` (turned on for the whole build by `models`"), "{out}");
    for found in ["renamed", "named"] {
        assert!(out.contains(&format!("{found}/src/main.rs:1:1: GH531 [info] this program reaches CUDA through `candle_core` with its `cuda` feature")), "{found}: {out}");
    }
    let (status, text) = statuses(root);
    for gpu in ["direct", "viaLib", "renamed", "named"] {
        assert_eq!(
            status[&format!("{gpu}/src/main.rs")],
            "non_compliant",
            "{gpu}: {text}"
        );
    }
    // Built without CUDA: a CPU program, no finding and no fix.
    assert_eq!(status["cpu/src/main.rs"], "compliant", "{text}");
    assert!(!text.contains("cpu/src/main.rs"), "{text}");
}

/// Two misjudgements of candle's examples, as a class: a program whose own code only computes
/// with a crate that has no device of its own (`candle_nn::ops::softmax` on an image its library
/// loads on `Device::Cpu`) is a CPU program, left alone; a program that binds its device from a
/// library call that picks CUDA (`let device = lib::device(args.cpu)?`) is a GPU program though
/// one branch binds `Device::Cpu` (a quantized path).
#[test]
fn handed_device_crates_and_a_cpu_branch_next_to_a_library_device_are_judged_as_they_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"ex\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle = { package = \"candle-core\", version = \"0.9\" }\ncandle-nn = \"0.9\"\n[features]\ncuda = [\"candle/cuda\", \"candle-nn/cuda\"]\n");
    write(root, "src/lib.rs", "pub mod imagenet;\n\nuse candle::{Device, Result};\n\npub fn device(cpu: bool) -> Result<Device> {\n    if cpu {\n        Ok(Device::Cpu)\n    } else {\n        Device::new_cuda(0)\n    }\n}\n");
    write(root, "src/imagenet.rs", "use candle::{Device, Result, Tensor};\n\npub fn load_image(path: &str) -> Result<Tensor> {\n    println!(\"{path}\");\n    Tensor::zeros((3, 224), candle::DType::F32, &Device::Cpu)\n}\n");
    write(root, "examples/onnx.rs", "use candle::D;\n\nfn main() -> anyhow::Result<()> {\n    let image = ex::imagenet::load_image(\"cat.jpg\")?;\n    let prs = candle_nn::ops::softmax(&image, D::Minus1)?;\n    println!(\"{prs:?}\");\n    Ok(())\n}\n");
    write(root, "examples/blip.rs", "use candle::{Device, Tensor};\n\nfn main() -> anyhow::Result<()> {\n    let quantized = std::env::args().count() > 1;\n    let device = ex::device(false)?;\n    let image = if quantized {\n        let device = Device::Cpu;\n        ex::imagenet::load_image(\"cat.jpg\")?.to_device(&device)?\n    } else {\n        ex::imagenet::load_image(\"cat.jpg\")?.to_device(&device)?\n    };\n    let t = Tensor::zeros(1, candle::DType::F32, &device)?;\n    println!(\"{image:?} {t:?}\");\n    Ok(())\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["examples/onnx.rs"], "no_gpu_code", "{text}");
    assert!(!text.contains("examples/onnx.rs"), "{text}");
    assert!(text.contains("examples/blip.rs:1:1: GH501 [*]"), "{text}");
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let onnx = std::fs::read_to_string(root.join("examples/onnx.rs")).unwrap();
    assert!(!onnx.contains("CUDA_VISIBLE_DEVICES"), "{onnx}");
    let blip = std::fs::read_to_string(root.join("examples/blip.rs")).unwrap();
    assert!(blip.contains("fn main() -> anyhow::Result<()> {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");"), "{blip}");
}

/// From a trial (kalosm-llama 0.4.0): a registry crate with no CUDA feature of its own whose
/// function picks the device for its caller (`kalosm_common::accelerated_device_if_available()`:
/// candle's CUDA device 0 whenever candle is built with `cuda`) reaches CUDA when the build
/// turns candle's `cuda` on (a knowledge row with `cuda_with`). The example that loads through
/// the package's library is a GPU program; one that never reaches the call, and the same
/// library in a build without candle's `cuda`, are left alone.
#[test]
fn a_registry_crates_device_chooser_reaches_cuda_with_candles_feature() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"llm\", \"cpu\"]\nresolver = \"2\"\n",
    );
    let lib = "use kalosm_common::accelerated_device_if_available;\n\npub fn load() -> candle_core::Result<candle_core::Device> {\n    accelerated_device_if_available()\n}\n\npub fn version() -> &'static str {\n    \"0.1\"\n}\n";
    write(root, "llm/Cargo.toml", "[package]\nname = \"llm\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.8\"\nkalosm-common = \"0.4\"\n[features]\ncuda = [\"candle-core/cuda\"]\n");
    write(root, "llm/src/lib.rs", lib);
    write(
        root,
        "llm/examples/infer.rs",
        "fn main() {\n    let _d = llm::load();\n}\n",
    );
    write(
        root,
        "llm/examples/version.rs",
        "fn main() {\n    println!(\"{}\", llm::version());\n}\n",
    );
    write(root, "cpu/Cargo.toml", "[package]\nname = \"cpu\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.8\"\nkalosm-common = \"0.4\"\n");
    write(root, "cpu/src/main.rs", "use kalosm_common::accelerated_device_if_available;\n\nfn main() {\n    let _d = accelerated_device_if_available();\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["llm/examples/infer.rs"], "non_compliant", "{text}");
    assert!(text.contains("llm/examples/infer.rs:1:1: GH501"), "{text}");
    assert_eq!(status["llm/examples/version.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["cpu/src/main.rs"], "no_gpu_code", "{text}");
    let touch = run(gh(root).args(["scan", "--touchpoints", "."])).stdout;
    assert!(touch.contains("llm/examples/infer.rs:1:1: GH531 [info] this program reaches CUDA through its package's library `llm` → `kalosm_common`: `accelerated_device_if_available()` returns candle's CUDA device 0 when candle is built with CUDA"), "{touch}");
}

/// From a trial (kalosm-llama 0.4.4, rwhisper 0.4.1): a dev-dependency `kalosm` built without
/// its own `cuda` feature still runs its models on CUDA when a feature of the build turns
/// `candle-core/cuda` on (cargo unifies one candle for the whole build, dev-dependencies
/// included, and kalosm's models pick their device through kalosm-common). Missed before:
/// "`kalosm` is built without its CUDA feature". A build that turns nothing on stays CPU.
#[test]
fn a_wrapper_without_its_cuda_feature_reaches_cuda_when_the_build_unifies_candles() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"llm\", \"sound\", \"engine\", \"cpu\"]\nresolver = \"2\"\n",
    );
    write(root, "llm/Cargo.toml", "[package]\nname = \"llm\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n[dev-dependencies]\nkalosm = { version = \"0.4\", features = [\"language\"] }\n[features]\ncuda = [\"candle-core/cuda\"]\n");
    write(root, "llm/src/lib.rs", "pub fn hello() {}\n");
    let structured = "use kalosm::language::*;\n\nfn main() {\n    let _llm = Llama::phi_3();\n}\n";
    write(root, "llm/examples/structured.rs", structured);
    // Through a path dependency: `engine`'s feature turns candle's `cuda` on for the build.
    write(root, "sound/Cargo.toml", "[package]\nname = \"sound\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nengine = { path = \"../engine\" }\n[dev-dependencies]\nkalosm = { version = \"0.4\", features = [\"sound\"] }\n");
    write(root, "sound/src/lib.rs", "pub fn hello() {}\n");
    write(root, "sound/examples/transcribe.rs", "use kalosm::sound::*;\n\nfn main() {\n    let _m = WhisperBuilder::default().build();\n}\n");
    write(root, "engine/Cargo.toml", "[package]\nname = \"engine\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n[features]\ncuda = [\"candle-core/cuda\"]\n");
    write(root, "engine/src/lib.rs", "pub fn hello() {}\n");
    write(root, "cpu/Cargo.toml", "[package]\nname = \"cpu\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n[dev-dependencies]\nkalosm = { version = \"0.4\", features = [\"language\"] }\n");
    write(root, "cpu/src/lib.rs", "pub fn hello() {}\n");
    write(root, "cpu/examples/structured.rs", structured);
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for rel in ["llm/examples/structured.rs", "sound/examples/transcribe.rs"] {
        let file = common::file_in(&report, rel);
        assert_eq!(file["status"], "non_compliant", "{rel}: {file}");
        assert_eq!(
            common::rule_codes(&file),
            ["GH501", "GH502"],
            "{rel}: {file}"
        );
        let why = file["evidence"].as_str().unwrap();
        assert!(
            why.contains("reaches CUDA through `kalosm`")
                && why.contains("turned on for the whole build by"),
            "{rel}: {why}"
        );
    }
    let cpu = common::file_in(&report, "cpu/examples/structured.rs");
    assert_eq!(cpu["status"], "no_gpu_code", "{cpu}");
}

/// From a trial (kalosm 0.4.0 `examples/segment-image.rs`): kalosm's `SegmentAnything` builds
/// on `Device::Cpu` (segment-anything-rs 0.4), so a program that runs only it is a CPU program
/// even with kalosm's `cuda` on; it was rewritten as a CUDA one. Its `Ocr` model takes the
/// accelerated device and stays a GPU program.
#[test]
fn a_wrapper_model_that_builds_on_the_cpu_makes_no_gpu_program() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"vision\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nkalosm = { version = \"0.4.0\", features = [\"vision\"] }\n[features]\ncuda = [\"kalosm/cuda\"]\n");
    let segment = "use kalosm::vision::*;\n\nfn main() {\n    let model = SegmentAnything::builder().build().unwrap();\n    let _ = model;\n}\n";
    write(root, "examples/segment.rs", segment);
    write(
        root,
        "examples/ocr.rs",
        "use kalosm::vision::*;\n\nfn main() {\n    let _model = Ocr::builder().build();\n}\n",
    );
    let (status, text) = statuses(root);
    assert_eq!(status["examples/segment.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["examples/ocr.rs"], "non_compliant", "{text}");
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--unsafe-fixes", "."]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let after = std::fs::read_to_string(root.join("examples/segment.rs")).unwrap();
    assert_eq!(after, segment);
}

/// From a trial (mistralrs-core 0.8.1 `src/utils/tiktoken.rs`): a module that imports another
/// crate's type (`tokenizers`' `Sequence`) and calls `HashMap::insert` ran the crate's own
/// `Sequence::insert`, which builds a CUDA tensor: its CPU-only unit tests got GH508 "run on
/// CUDA". A name imported from another crate is that crate's; the crate's own type, called
/// for real in another module's test, still makes that test a GPU one.
#[test]
fn an_imported_type_of_another_crate_is_not_the_crates_own_of_that_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"r4\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\ntokenizers = \"0.21\"\n[features]\ncuda = [\"candle-core/cuda\"]\n");
    write(
        root,
        "src/lib.rs",
        "pub mod batch;\npub mod sequence;\npub mod text;\n",
    );
    write(root, "src/sequence.rs", "use candle_core::{Device, Tensor};\n\npub struct Sequence {\n    tokens: Vec<u32>,\n}\n\nimpl Sequence {\n    pub fn new_waiting() -> Self {\n        Sequence { tokens: Vec::new() }\n    }\n\n    pub fn insert(&mut self, token: u32) -> candle_core::Result<Tensor> {\n        self.tokens.push(token);\n        Tensor::new(self.tokens.as_slice(), &Device::new_cuda(0)?)\n    }\n}\n");
    write(root, "src/text.rs", "use std::collections::HashMap;\nuse tokenizers::pre_tokenizers::sequence::Sequence;\n\npub fn count_words(text: &str) -> (HashMap<String, u32>, Sequence) {\n    let mut counts = HashMap::new();\n    for w in text.split_whitespace() {\n        counts.insert(w.to_string(), 1);\n    }\n    (counts, Sequence::new(vec![]))\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn counts() {\n        assert_eq!(count_words(\"a b\").0.len(), 2);\n    }\n}\n");
    write(root, "src/batch.rs", "use crate::sequence::Sequence;\n\npub fn first(token: u32) {\n    let mut s = Sequence::new_waiting();\n    let _ = s.insert(token);\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn first() {\n        super::first(1);\n    }\n}\n");
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let text = common::file_in(&report, "src/text.rs");
    assert_eq!(text["status"], "no_gpu_code", "{text}");
    let batch = common::file_in(&report, "src/batch.rs");
    assert_eq!(batch["status"], "needs_review", "{batch}");
    assert_eq!(common::rule_codes(&batch), ["GH508"], "{batch}");
}

/// From a trial (llama-cpp-4 0.11.0 `tests/test_context_params.rs`, `test_model_params.rs`):
/// a test that only reads the defaults of an FFI crate's parameter struct
/// (`llama_context_default_params()`) starts no backend and opens no card, but any use of a
/// `-sys` crate with a `cuda` feature made it a GPU program (GH508). A test that initialises the
/// backend is still one.
#[test]
fn reading_an_ffi_crates_parameter_struct_starts_no_cuda() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"r5\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nllama-cpp-sys-4 = \"0.11\"\n[features]\ncuda = [\"llama-cpp-sys-4/cuda\"]\n");
    write(root, "src/lib.rs", "pub struct ContextParams(pub llama_cpp_sys_4::llama_context_params);\n\nimpl Default for ContextParams {\n    fn default() -> Self {\n        ContextParams(unsafe { llama_cpp_sys_4::llama_context_default_params() })\n    }\n}\n\nimpl ContextParams {\n    pub fn n_ctx(&self) -> u32 {\n        self.0.n_ctx\n    }\n}\n\npub struct Backend;\n\nimpl Backend {\n    pub fn init() -> Backend {\n        unsafe { llama_cpp_sys_4::llama_backend_init() };\n        Backend\n    }\n}\n");
    write(root, "tests/test_context_params.rs", "use r5::ContextParams;\n\n#[test]\nfn default_n_ctx() {\n    let _ = ContextParams::default().n_ctx();\n}\n");
    write(
        root,
        "tests/test_backend.rs",
        "#[test]\nfn init() {\n    let _b = r5::Backend::init();\n}\n",
    );
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let params = common::file_in(&report, "tests/test_context_params.rs");
    assert_eq!(params["status"], "no_gpu_code", "{params}");
    let backend = common::file_in(&report, "tests/test_backend.rs");
    assert_eq!(backend["status"], "needs_review", "{backend}");
    assert_eq!(common::rule_codes(&backend), ["GH508"], "{backend}");
}

/// From a trial (mistralrs-server-core 0.8.1 `src/util.rs`, `cached_responses.rs`,
/// `background_tasks.rs`): a crate of the tree given its `cuda` feature counted by any use, as a
/// `-sys` crate whose build script compiles CUDA does, though its `cuda` only turns on
/// `candle-core/cuda` and the code the tests run of it was followed item by item: CPU-only unit
/// tests got GH508. A test that runs its device code, and any use of a crate of the tree whose
/// `cuda = []` its build script reads, still get it.
#[test]
fn a_tree_crate_whose_cuda_feature_only_forwards_counts_by_the_code_reached() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"core\", \"server\", \"sys\"]\nresolver = \"2\"\n",
    );
    write(root, "core/Cargo.toml", "[package]\nname = \"core-lib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n[features]\ncuda = [\"candle-core/cuda\"]\nflash-attn = [\"cuda\"]\n");
    write(root, "core/src/lib.rs", "pub fn sanitize(s: &str) -> String {\n    s.trim().to_string()\n}\n\npub fn open() -> candle_core::Device {\n    candle_core::Device::new_cuda(0).unwrap()\n}\n");
    write(root, "sys/Cargo.toml", "[package]\nname = \"gpu-sys\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[features]\ncuda = []\n");
    write(
        root,
        "sys/src/lib.rs",
        "pub fn version() -> u32 {\n    1\n}\n",
    );
    write(root, "server/Cargo.toml", "[package]\nname = \"server\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncore-lib = { path = \"../core\" }\ngpu-sys = { path = \"../sys\" }\n[features]\ncuda = [\"core-lib/cuda\", \"gpu-sys/cuda\"]\n");
    write(
        root,
        "server/src/lib.rs",
        "pub mod util;\npub mod engine;\npub mod ffi;\n",
    );
    write(root, "server/src/util.rs", "pub fn clean(s: &str) -> String {\n    core_lib::sanitize(s)\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn clean() {\n        assert_eq!(super::clean(\" a \"), \"a\");\n    }\n}\n");
    write(root, "server/src/engine.rs", "pub fn start() {\n    let _d = core_lib::open();\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn start() {\n        super::start();\n    }\n}\n");
    write(root, "server/src/ffi.rs", "pub fn version() -> u32 {\n    gpu_sys::version()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn version() {\n        assert_eq!(super::version(), 1);\n    }\n}\n");
    let out = run(gh(root).args(["scan", "--format", "json", "."]));
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let util = common::file_in(&report, "server/src/util.rs");
    assert_eq!(util["status"], "no_gpu_code", "{util}");
    for rel in ["server/src/engine.rs", "server/src/ffi.rs"] {
        let file = common::file_in(&report, rel);
        assert_eq!(file["status"], "needs_review", "{rel}: {file}");
        assert_eq!(common::rule_codes(&file), ["GH508"], "{rel}: {file}");
    }
}

/// From a trial on oar-ocr: `examples/auto_download.rs` has a stub `main` under
/// `#[cfg(not(feature = "auto-download"))]` and the real one under the feature. Neither cfg can
/// be judged, so the env went into the first (the stub) and the file was then compliant while
/// the real main ran unmasked: a false green. Each main the build may compile needs the env.
#[test]
fn every_main_a_feature_may_select_gets_the_env() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"ocr\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\ncudarc = \"0.16\"\n[features]\nauto-download = []\n");
    write(root, "src/lib.rs", "");
    let real = "#[cfg(feature = \"auto-download\")]\nfn main() {\n    let _c = cudarc::driver::CudaContext::new(1).unwrap();\n}\n";
    let stub_fixed = "// GPU selection (gpu-homogenize): the RTX 3090 only.\n// Never the RTX 5060 Ti.\n// main() sets CUDA_VISIBLE_DEVICES=1 and CUDA_DEVICE_ORDER=PCI_BUS_ID first:\n// once masked, the RTX 3090 is device 0, the only one visible.\n\n#[cfg(not(feature = \"auto-download\"))]\nfn main() {\n    unsafe {\n        // SAFETY: the first statements of `main`, before any thread starts:\n        // nothing reads or writes the environment concurrently.\n        std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n        std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n    }\n    eprintln!(\"needs the feature\");\n}\n\n";
    write(root, "examples/auto.rs", &format!("{stub_fixed}{real}"));
    let (status, text) = statuses(root);
    assert_eq!(status["examples/auto.rs"], "non_compliant", "{text}");
    assert!(
        text.contains("examples/auto.rs:18:1: GH502")
            && text.contains("compiled instead of the other under some features"),
        "{text}"
    );
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let fixed = std::fs::read_to_string(root.join("examples/auto.rs")).unwrap();
    assert_eq!(
        fixed
            .matches("set_var(\"CUDA_VISIBLE_DEVICES\", \"1\")")
            .count(),
        2,
        "{fixed}"
    );
    assert!(
        fixed.contains("fn main() {\n    unsafe {\n        // SAFETY: the first statements of `main`, before any thread starts:\n        // nothing reads or writes the environment concurrently.\n        std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n        std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n    }\n    let _c = cudarc::driver::CudaContext::new(0).unwrap();"),
        "{fixed}"
    );
    let (status, text) = statuses(root);
    assert_eq!(status["examples/auto.rs"], "compliant", "{text}");
    // A second fix changes nothing.
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(
        std::fs::read_to_string(root.join("examples/auto.rs")).unwrap(),
        fixed
    );
}

/// From a trial on whisper-cpp-plus: an async `main` under a feature beside a sync one for the
/// other builds was never fixed, even with `--unsafe-fixes` (its help cited a GH502 on the sync
/// one that no output reported). The sync alternative gets its env (a safe fix), the async one
/// its conversion (unsafe tier); a stub that only says which feature it needs gets nothing.
#[test]
fn an_async_main_beside_a_sync_one_for_other_features_gets_both_envs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"srv\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.16\"\ntokio = { version = \"1\", features = [\"full\"], optional = true }\n[features]\nserver = [\"dep:tokio\"]\n");
    write(root, "src/lib.rs", "");
    let async_main = "#[cfg(feature = \"server\")]\n#[tokio::main]\nasync fn main() {\n    let _c = cudarc::driver::CudaContext::new(0).unwrap();\n}\n\n";
    write(root, "examples/serve.rs", &format!("{async_main}#[cfg(not(feature = \"server\"))]\nfn main() {{\n    let _c = cudarc::driver::CudaContext::new(0).unwrap();\n}}\n"));
    write(root, "examples/stub.rs", &format!("{async_main}#[cfg(not(feature = \"server\"))]\nfn main() {{\n    eprintln!(\"This example requires the `server` feature\");\n    std::process::exit(2);\n}}\n"));
    let text = run(gh(root).args(["scan", "."])).stdout;
    assert!(text.contains("examples/serve.rs:3:1: GH504 "), "{text}");
    // The sync main's env goes with the async one's (a file is fixed whole or not at all).
    assert!(text.contains("examples/serve.rs:8:1: GH502 this `fn main`, compiled instead of the other under some features, does not set the GPU env first\n  help: held back with the file's unsafe fix (GH504): `gpu-homogenize fix --unsafe-fixes` applies them together"), "{text}");
    assert_eq!(text.matches("examples/stub.rs:").count(), 2, "{text}");
    assert!(text.contains("examples/stub.rs:3:1: GH504 "), "{text}");
    let out = run(gh(root).args(["fix", "--unsafe-fixes", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let (status, text) = statuses(root);
    for file in ["examples/serve.rs", "examples/stub.rs"] {
        assert_eq!(status[file], "compliant", "{file}\n{text}");
    }
    let serve = std::fs::read_to_string(root.join("examples/serve.rs")).unwrap();
    assert!(serve.contains("#[cfg(not(feature = \"server\"))]\nfn main() {\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n    let _c"), "{serve}");
    let stub = std::fs::read_to_string(root.join("examples/stub.rs")).unwrap();
    assert_eq!(
        stub.matches("set_var(\"CUDA_VISIBLE_DEVICES\"").count(),
        1,
        "{stub}"
    );
    assert!(stub.contains("fn main() {\n    eprintln!"), "{stub}");
}

/// From a trial on coaster: `tests/framework_cuda_specs.rs` names its crate through
/// `extern crate coaster as co;` and builds `Cuda::new()` through `use crate::co::prelude::*`.
/// The crate was not seen as named, and the CUDA test binary was compliant: a false green.
/// `extern crate x as y;` binds `y` as `use x as y;` does, and a macro's arguments are code.
#[test]
fn a_crate_named_through_extern_crate_or_inside_a_macro_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"ext\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    write(root, "src/lib.rs", "pub fn cpu() {}\n");
    write(
        root,
        "tests/t.rs",
        "extern crate candle_core as cc;\n\nuse crate::cc::Device;\n\n#[test]\nfn on_gpu() {\n    let _d = Device::new_cuda(0).unwrap();\n}\n",
    );
    // A device built inside `assert!(…)` is code the test names (trial: coaster's
    // `assert!(Backend::<Cuda>::default().is_ok())`).
    write(
        root,
        "tests/in_assert.rs",
        "#[test]\nfn on_gpu() {\n    assert!(candle_core::Device::new_cuda(0).is_ok());\n}\n",
    );
    write(
        root,
        "examples/alias.rs",
        "extern crate candle_core as cc;\n\nfn main() {\n    let _d = cc::Device::new_cuda(1).unwrap();\n}\n",
    );
    let (status, text) = statuses(root);
    assert_eq!(status["tests/t.rs"], "needs_review", "{text}");
    assert_eq!(status["tests/in_assert.rs"], "needs_review", "{text}");
    assert!(
        text.contains(
            "tests/t.rs:1:1: GH508 [review] this GPU program gets its `main` from libtest"
        ),
        "{text}"
    );
    assert!(
        text.contains("examples/alias.rs:4:35: GH511 [*] Device::new_cuda(…) selects device 1"),
        "{text}"
    );
}

/// A binary's own `#[test]` functions are a program of their own (`cargo test --bin`): libtest
/// writes its `main`, so the env the fix puts in the binary's `main` never reaches them. Those
/// that reach CUDA (through the binary's own code, or its package's library) make the file
/// GH508, even once its `main` is fixed; tests that reach no card (a parser's) and a binary with
/// `test = false` get nothing. A CPU program whose tests open a context is told so too.
#[test]
fn a_binarys_own_unit_tests_that_reach_cuda_are_a_program_no_main_masks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "app/Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.19\"\n[[bin]]\nname = \"quiet\"\npath = \"src/bin/quiet.rs\"\ntest = false\n");
    write(root, "app/src/lib.rs", "use cudarc::driver::CudaContext;\n\npub fn open() -> std::sync::Arc<CudaContext> {\n    CudaContext::new(0).unwrap()\n}\n\npub fn parse(s: &str) -> usize {\n    s.len()\n}\n");
    // Its tests only parse: nothing.
    write(root, "app/src/main.rs", "fn main() {\n    let _c = app::open();\n    println!(\"{}\", app::parse(\"x\"));\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn parses() {\n        assert_eq!(app::parse(\"ab\"), 2);\n    }\n}\n");
    // Its tests open a context through the library, in a module of the binary.
    write(
        root,
        "app/src/bin/serve/main.rs",
        "mod worker;\n\nfn main() {\n    worker::run();\n}\n",
    );
    write(root, "app/src/bin/serve/worker.rs", "pub fn run() {\n    let _c = app::open();\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn runs() {\n        run();\n    }\n}\n");
    // `test = false`: `cargo test` runs none of its tests.
    write(root, "app/src/bin/quiet.rs", "fn main() {\n    let _c = app::open();\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn opens() {\n        let _c = app::open();\n    }\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["app/src/main.rs"], "non_compliant", "{text}");
    assert_eq!(
        status["app/src/bin/serve/worker.rs"], "needs_review",
        "{text}"
    );
    assert_eq!(status["app/src/bin/quiet.rs"], "non_compliant", "{text}");
    assert!(
        text.contains("app/src/bin/serve/worker.rs:6:1: GH508 [review] `#[test]` functions here run on CUDA under the `main` libtest writes: no place for the env\n  help: they reach CUDA through its package's library `app` → `cudarc`: the CUDA driver API;"),
        "{text}"
    );
    assert_eq!(text.matches("GH508").count(), 1, "{text}");
    // Fixed, the binaries' mains set the env; the tests stay for review.
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    let (status, text) = statuses(root);
    assert_eq!(status["app/src/main.rs"], "compliant", "{text}");
    assert_eq!(
        status["app/src/bin/serve/worker.rs"], "needs_review",
        "{text}"
    );
}

#[test]
fn a_wrappers_cloud_clients_reach_no_cuda_its_local_models_do() {
    // kalosm's examples: built with `cuda`, its local models run on candle's CUDA device; a
    // program that only talks to a hosted model or crawls pages runs none (trial: four of its
    // examples got the header).
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nkalosm = { version = \"0.4\", features = [\"language\", \"openai\"] }\n[features]\ncuda = [\"kalosm/cuda\"]\n");
    write(root, "src/lib.rs", "pub fn x() {}\n");
    write(root, "examples/cloud.rs", "use kalosm::language::*;\n\nfn main() {\n    let llm = OpenAICompatibleChatModel::builder().with_gpt_4o_mini().build();\n    let _ = llm;\n}\n");
    write(root, "examples/local.rs", "use kalosm::language::*;\n\nfn main() {\n    let llm = Llama::new_chat();\n    let _ = llm;\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["examples/cloud.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["examples/local.rs"], "non_compliant", "{text}");
}

#[test]
fn a_tree_package_named_like_a_table_crate_is_judged_from_its_source() {
    // rust-bert's own pipeline tests build their model from `Config::default()`, whose device
    // is `Device::cuda_if_available()`: the crate table's row for rust-bert (its pipelines and
    // `VarStore` as entry points) must not hide what its own source selects (trial: ten of its
    // pipeline files were compliant).
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"rust-bert\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ntch = \"0.20\"\n");
    write(root, "src/lib.rs", "use tch::{Device, Kind, Tensor};\n\npub struct Cfg {\n    pub device: Device,\n}\n\nimpl Default for Cfg {\n    fn default() -> Self {\n        Cfg { device: Device::cuda_if_available() }\n    }\n}\n\npub fn build(c: Cfg) -> Tensor {\n    Tensor::zeros([4], (Kind::Float, c.device))\n}\n\n#[cfg(test)]\nmod test {\n    use super::*;\n\n    #[test]\n    fn t() {\n        let c = Cfg::default();\n        let _t = build(c);\n    }\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["src/lib.rs"], "needs_review", "{text}");
    assert!(text.contains("src/lib.rs:"), "{text}");
    assert!(text.contains("GH508"), "{text}");
}

/// From a trial on unseen crates: an index that reached `Device::new_cuda` through a tuple, a
/// `const` array, a closure, a struct literal's field, a function's return, a method's
/// parameter or a parsed `"cuda:1"` was neither remapped nor reported, and the fixed program
/// was compliant while it still opened card 1. Those a byte edit moves safely are remapped
/// (GH511); the others are for review (GH514), and the values read at run time (an option's
/// default, the env, a parameter whose calls are followed) keep their treatment.
#[test]
fn an_index_moved_through_an_item_or_a_call_is_remapped_or_reviewed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    let bins: &[(&str, &str)] = &[
        ("tuple", "use candle_core::Device;\n\nfn main() {\n    let (cpu, gpu) = (Device::Cpu, 1usize);\n    let d = Device::new_cuda(gpu).unwrap();\n    println!(\"{cpu:?} {d:?}\");\n}\n"),
        ("array", "use candle_core::Device;\n\nconst GPUS: [usize; 1] = [1];\n\nfn main() {\n    let d = Device::new_cuda(GPUS[0]).unwrap();\n    println!(\"{d:?}\");\n}\n"),
        ("closure", "use candle_core::Device;\n\nfn main() {\n    let pick = |i: usize| Device::new_cuda(i).unwrap();\n    let d = pick(1);\n    println!(\"{d:?}\");\n}\n"),
        ("field", "use candle_core::Device;\n\nstruct Cfg {\n    gpu: usize,\n}\n\nfn main() {\n    let c = Cfg { gpu: 1 };\n    let d = Device::new_cuda(c.gpu).unwrap();\n    println!(\"{d:?}\");\n}\n"),
        ("returns", "use candle_core::Device;\n\nfn gpu() -> usize {\n    1\n}\n\nfn main() {\n    let d = Device::new_cuda(gpu()).unwrap();\n    println!(\"{d:?}\");\n}\n"),
        ("method", "use candle_core::Device;\n\nstruct Engine;\n\nimpl Engine {\n    fn load(&self, ordinal: usize) -> Device {\n        Device::new_cuda(ordinal).unwrap()\n    }\n}\n\nfn main() {\n    let d = Engine.load(1);\n    println!(\"{d:?}\");\n}\n"),
        ("string", "use candle_core::Device;\n\nfn main() {\n    let spec = \"cuda:1\";\n    let idx: usize = spec.trim_start_matches(\"cuda:\").parse().unwrap();\n    let d = Device::new_cuda(idx).unwrap();\n    println!(\"{d:?}\");\n}\n"),
        // Controls: read at run time, or a function whose calls are followed.
        ("env", "use candle_core::Device;\n\nfn main() {\n    let i: usize = std::env::var(\"GPU\").ok().and_then(|v| v.parse().ok()).unwrap_or(0);\n    let d = Device::new_cuda(i).unwrap();\n    println!(\"{d:?}\");\n}\n"),
        ("param", "use candle_core::Device;\n\nfn open(ordinal: usize) -> Device {\n    Device::new_cuda(ordinal).unwrap()\n}\n\nfn main() {\n    let d = open(0);\n    println!(\"{d:?}\");\n}\n"),
        ("zero", "use candle_core::Device;\n\nfn gpu() -> usize {\n    0\n}\n\nfn main() {\n    let d = Device::new_cuda(gpu()).unwrap();\n    println!(\"{d:?}\");\n}\n"),
    ];
    for (name, text) in bins {
        write(root, &format!("src/bin/{name}.rs"), text);
    }
    let (_, text) = statuses(root);
    for line in [
        "src/bin/tuple.rs:5:30: GH511 [*] Device::new_cuda(…) selects device 1 through `gpu` (line 4), device 0 under mask '1'",
        "src/bin/array.rs:3:27: GH511 [*] Device::new_cuda(…) selects device 1, device 0 under mask '1'",
        "src/bin/closure.rs:5:18: GH511 [*] the closure `pick`, whose argument 1 is the index of Device::new_cuda(…), selects device 1, device 0 under mask '1'",
        "src/bin/field.rs:9:30: GH514 [review] Device::new_cuda(…) takes the field `gpu`, which a struct literal sets to 1 (line 8): under mask '1' only device 0 exists; not remapped",
        "src/bin/returns.rs:8:30: GH514 [review] Device::new_cuda(…) takes `gpu()`, which returns 1 (line 4): under mask '1' only device 0 exists; not remapped",
        "src/bin/method.rs:7:26: GH514 [review] Device::new_cuda(…) takes `ordinal`, a parameter of the method `load`, whose calls the tool does not follow: under mask '1' only device 0 exists; not remapped",
        "src/bin/string.rs:6:30: GH514 [review] Device::new_cuda(…) takes a number parsed from the string \"cuda:1\" (line 4): under mask '1' only device 0 exists; not remapped",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    let read =
        |name: &str| std::fs::read_to_string(root.join(format!("src/bin/{name}.rs"))).unwrap();
    assert!(
        read("tuple").contains("(Device::Cpu, 0usize)"),
        "{}",
        read("tuple")
    );
    assert!(
        read("array").contains("const GPUS: [usize; 1] = [0];"),
        "{}",
        read("array")
    );
    assert!(
        read("closure").contains("let d = pick(0);"),
        "{}",
        read("closure")
    );
    let (status, text) = statuses(root);
    let want: BTreeMap<String, String> = [
        ("array", "compliant"),
        ("closure", "compliant"),
        ("env", "compliant"),
        ("field", "needs_review"),
        ("method", "needs_review"),
        ("param", "compliant"),
        ("returns", "needs_review"),
        ("string", "needs_review"),
        ("tuple", "compliant"),
        ("zero", "compliant"),
    ]
    .into_iter()
    .map(|(a, b)| (format!("src/bin/{a}.rs"), b.to_string()))
    .collect();
    assert_eq!(status, want, "{text}");
}

/// From the same trial: several literal indices iterated (`[0usize, 1].iter().map(…)`) open
/// several cards as `for i in 0..2` does: GH513, and no header (the mask would leave one).
#[test]
fn a_list_of_literal_indices_iterated_is_multi_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"pair\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = { version = \"0.9\", features = [\"cuda\"] }\n");
    let main = "use candle_core::Device;\n\nconst PAIR: [usize; 2] = [0, 1];\n\nfn main() {\n    let devs: Vec<Device> = [0usize, 1].iter().map(|&i| Device::new_cuda(i).unwrap()).collect();\n    for i in PAIR {\n        let _ = Device::new_cuda(i);\n    }\n    println!(\"{devs:?}\");\n}\n";
    write(root, "src/main.rs", main);
    let (status, text) = statuses(root);
    assert_eq!(status["src/main.rs"], "non_compliant", "{text}");
    assert!(text.contains("src/main.rs:6:74: GH513 [review] Device::new_cuda(…) is called for each of the 2 indices `i` takes in a loop: multi-GPU by design, left as written"), "{text}");
    assert!(text.contains("src/main.rs:8:34: GH513 [review] Device::new_cuda(…) is called for each of the 2 indices `i` takes in a loop"), "{text}");
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    assert_eq!(
        std::fs::read_to_string(root.join("src/main.rs")).unwrap(),
        main
    );
}

/// An index the mask does not list names no card under it (not "device 0"), and a test that
/// asserts a constructor fails (`assert!(Device::nth(129).is_err())`) probes a card that is
/// not there on purpose: no index finding.
#[test]
fn an_index_outside_the_mask_is_no_card_and_a_failing_probe_is_no_finding() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"acc\"\nversion = \"0.1.0\"\nedition = \"2018\"\n[dependencies]\naccel = \"0.3\"\n");
    write(root, "src/lib.rs", "#[cfg(test)]\nmod tests {\n    use accel::Device;\n\n    #[test]\n    fn out_of_range() {\n        assert!(Device::nth(129).is_err());\n    }\n\n    #[test]\n    fn third() {\n        let _d = Device::nth(2);\n    }\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["src/lib.rs"], "needs_review", "{text}");
    assert!(!text.contains("129"), "{text}");
    assert!(text.contains("src/lib.rs:12:30: GH514 [review] Device::nth(…) selects device 2, which is no card under mask '1' (the mask shows only its own cards, from device 0); but this is test code"), "{text}");
    assert!(!text.contains("device 0 under mask"), "{text}");
}

/// From the same trial: programs of CUDA crates the table did not know (`kn-cuda-sys`,
/// ArrayFire) were "no GPU code", a test binary that opens `CudaDevice::new(0)` was compliant,
/// and a fixed program's evidence said it reached no CUDA code. A crate whose name says CUDA
/// reaches it as a row would; ArrayFire is a row; a constructor in a test binary's own code
/// makes it GH508 whatever crate it comes from; a crate named for the GPU in general
/// (Vulkan's `gpu-allocator`) is no CUDA.
#[test]
fn crates_named_for_cuda_and_arrayfire_make_gpu_programs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nkn-cuda-sys = \"0.8\"\narrayfire = \"3.8\"\ndevkit = \"0.1\"\ngpu-allocator = \"0.27\"\n");
    write(root, "src/lib.rs", "use kn_cuda_sys::wrapper::handle::CudaDevice;\n\npub fn first_gpu() -> CudaDevice {\n    CudaDevice::new(0).unwrap()\n}\n");
    write(root, "src/bin/direct.rs", "use kn_cuda_sys::wrapper::handle::CudaDevice;\n\nfn main() {\n    let dev = CudaDevice::new(1).unwrap();\n    let _buf = dev.alloc(1024);\n}\n");
    write(
        root,
        "examples/via_lib.rs",
        "fn main() {\n    let dev = app::first_gpu();\n    let _buf = dev.alloc(1024);\n}\n",
    );
    write(root, "examples/af_cuda.rs", "use arrayfire::{randu, set_backend, set_device, Backend, Dim4};\n\nfn main() {\n    set_backend(Backend::CUDA);\n    set_device(1);\n    let a = randu::<f32>(Dim4::new(&[4, 4, 1, 1]));\n    arrayfire::print(&a);\n}\n");
    write(root, "examples/vulkan.rs", "use gpu_allocator::vulkan::Allocator;\n\nfn main() {\n    let _a: Option<Allocator> = None;\n}\n");
    write(root, "tests/gpu.rs", "use kn_cuda_sys::wrapper::handle::CudaDevice;\n\n#[test]\nfn alloc_on_gpu() {\n    let _dev = CudaDevice::new(0).unwrap();\n}\n");
    write(root, "tests/own.rs", "use devkit::CudaDevice;\n\n#[test]\nfn opens() {\n    let _dev = CudaDevice::new(0).unwrap();\n}\n");
    let (status, text) = statuses(root);
    let want: BTreeMap<String, String> = [
        ("examples/af_cuda.rs", "non_compliant"),
        ("examples/via_lib.rs", "non_compliant"),
        ("examples/vulkan.rs", "no_gpu_code"),
        ("src/bin/direct.rs", "non_compliant"),
        ("src/lib.rs", "compliant"),
        ("tests/gpu.rs", "needs_review"),
        ("tests/own.rs", "needs_review"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(status, want, "{text}");
    assert!(text.contains("examples/af_cuda.rs:5:16: GH511 [*] arrayfire::set_device(…) selects device 1, device 0 under mask '1'"), "{text}");
    assert!(text.contains("tests/own.rs:1:1: GH508 [review] this GPU program gets its `main` from libtest (a test binary): the env cannot go into it\n  help: it reaches CUDA through its own CudaDevice::new(…)"), "{text}");
    let json = run(gh(root).args(["scan", "--format", "json", "."])).stdout;
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let evidence = |path: &str| {
        doc["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == path)
            .unwrap()["evidence"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(evidence("src/bin/direct.rs"), "program: a binary that reaches CUDA through `kn_cuda_sys`, a crate whose name says CUDA (the tool does not model it)");
    // Its verdict comes from its own `CudaDevice::new(0)`: the evidence says so (trial 61 r4).
    assert_eq!(
        evidence("tests/own.rs"),
        "program: a test binary whose own code chooses a CUDA device, through no crate the tool follows to CUDA (a re-export, or a crate it does not model)"
    );
}

/// From a trial on gline-rs (`fn main() -> Result<()> {    `): the env block went right after
/// the `{`, so the line's trailing spaces moved onto the last inserted line and `git diff
/// --check` flagged the tool's own line. They stay on the brace's line, which the fix leaves
/// as it was, and a second `fix` recognises the block.
#[test]
fn the_env_block_goes_after_the_spaces_that_end_mains_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.16\"\n");
    write(
        root,
        "src/main.rs",
        "fn main() {  \t\n    let _c = cudarc::driver::CudaContext::new(0);\n}\n",
    );
    let out = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let main = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    assert!(
        main.contains("fn main() {  \t\n    std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"1\");\n    std::env::set_var(\"CUDA_DEVICE_ORDER\", \"PCI_BUS_ID\");\n    let _c"),
        "{main:?}"
    );
    let again = run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert!(again.stdout.contains("Fixed 0 files"), "{}", again.stdout);
    let (status, _) = statuses(root);
    assert_eq!(status["src/main.rs"], "compliant", "{status:?}");
}

/// From a trial on nvidia-video-codec-sdk (`importing_vulkan_buffers.rs`: the first discrete
/// GPU Vulkan lists, buffers handed to a CUDA encoder on device 0): the mask hides the
/// forbidden card from CUDA only, so a GPU program that also picks a card through Vulkan,
/// wgpu or OpenCL stays for review after its header is written. A program with no CUDA (a
/// wgpu renderer) is not this tool's to judge.
#[test]
fn a_card_chosen_through_vulkan_wgpu_or_opencl_beside_cuda_is_for_review() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.16\"\nash = \"0.38\"\nwgpu = \"25\"\nopencl3 = \"0.12\"\n");
    write(root, "src/bin/vulkan.rs", "fn main() {\n    let instance = make_instance();\n    let physical = unsafe { instance.enumerate_physical_devices() }.unwrap()[0];\n    let _c = cudarc::driver::CudaContext::new(0);\n    let _ = physical;\n}\n");
    write(root, "src/bin/opencl.rs", "use opencl3::device::{get_all_devices, CL_DEVICE_TYPE_GPU};\n\nfn main() {\n    let ids = get_all_devices(CL_DEVICE_TYPE_GPU).unwrap();\n    let _c = cudarc::driver::CudaContext::new(0);\n    println!(\"{}\", ids.len());\n}\n");
    write(root, "src/bin/render.rs", "fn main() {\n    let instance = wgpu::Instance::default();\n    let adapter = pollster::block_on(instance.request_adapter(&Default::default()));\n    println!(\"{adapter:?}\");\n}\n");
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    let (status, text) = statuses(root);
    assert_eq!(status["src/bin/vulkan.rs"], "needs_review", "{text}");
    assert_eq!(status["src/bin/opencl.rs"], "needs_review", "{text}");
    assert_eq!(status["src/bin/render.rs"], "no_gpu_code", "{text}");
    assert!(
        text.contains("src/bin/vulkan.rs:10:29: GH522 [review] `enumerate_physical_devices` chooses a card through Vulkan, which CUDA_VISIBLE_DEVICES does not filter"),
        "{text}"
    );
    // The CUDA part got its header all the same.
    let vulkan = std::fs::read_to_string(root.join("src/bin/vulkan.rs")).unwrap();
    assert!(
        vulkan.starts_with("// GPU selection (gpu-homogenize)"),
        "{vulkan}"
    );
}

/// A command-line option whose default is a device spec (`default_value = "cuda:1"`), parsed
/// into the index (`.trim_start_matches("cuda:").parse()`, a `fn parse_device(&str)` of the
/// file): the default's digits are remapped with the mask the same fix writes ("cuda:0"), and
/// reviewed where no mask is written; never a green file whose default run asks for card 1.
#[test]
fn an_options_device_spec_default_parsed_into_an_index_is_remapped_with_its_mask() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"ocr\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nclap = { version = \"4\", features = [\"derive\"] }\nort = { version = \"2.0.0-rc.10\", features = [\"cuda\"] }\ntokio = { version = \"1\", features = [\"full\"] }\n");
    let args = "use clap::Parser;\nuse ort::execution_providers::CUDAExecutionProvider;\n\n#[derive(Parser)]\nstruct Args {\n    /// Device (cpu, cuda:N)\n    #[arg(long, default_value = \"cuda:1\")]\n    device: String,\n}\n\n";
    write(root, "src/main.rs", &format!("{args}fn main() -> ort::Result<()> {{\n    let args = Args::parse();\n    let id: i32 = args.device.trim_start_matches(\"cuda:\").parse().unwrap();\n    let _s = ort::session::Session::builder()?\n        .with_execution_providers([CUDAExecutionProvider::default().with_device_id(id).build()])?\n        .commit_from_file(\"model.onnx\")?;\n    Ok(())\n}}\n"));
    let helper = "fn parse_device(device: &str) -> Option<i32> {\n    device.strip_prefix(\"cuda:\").map(|id| id.parse().unwrap())\n}\n\n";
    let body = "    let args = Args::parse();\n    let mut builder = ort::session::Session::builder()?;\n    if let Some(id) = parse_device(&args.device) {\n        builder = builder.with_execution_providers([CUDAExecutionProvider::default().with_device_id(id).build()])?;\n    }\n    let _s = builder.commit_from_file(\"model.onnx\")?;\n    Ok(())\n}\n";
    write(
        root,
        "src/bin/helper.rs",
        &format!("{args}{helper}fn main() -> ort::Result<()> {{\n{body}"),
    );
    // A main under an attribute gets no env block (GH509): its index stays, for review.
    write(
        root,
        "src/bin/served.rs",
        &format!("{args}{helper}#[show_image::main]\nfn main() -> ort::Result<()> {{\n{body}"),
    );
    // A default that names no card index chooses nothing to remap.
    write(
        root,
        "src/bin/auto.rs",
        &format!(
            "{}{helper}fn main() -> ort::Result<()> {{\n{body}",
            args.replace("cuda:1", "auto")
        ),
    );
    let (_, text) = statuses(root);
    assert!(text.contains("src/main.rs:15:84: GH511 [*] .with_device_id(…) selects device 1 through `id` (line 13), parsed from the default of the `device` option (line 7), device 0 under mask '1'"), "{text}");
    assert!(text.contains("src/bin/helper.rs:19:101: GH511 [*] .with_device_id(…) selects device 1 through `id` (line 18), parsed from the default of the `device` option (line 7)"), "{text}");
    assert!(text.contains("src/bin/served.rs:20:101: GH514 [review] .with_device_id(…) selects device 1 through `id` (line 19), parsed from the default of the `device` option (line 7), device 0 under mask '1'; not remapped\n  help: `main` runs under `#[show_image::main]`"), "{text}");
    assert!(!text.contains("src/bin/auto.rs:19"), "{text}");
    run(gh(root).args(["fix", "--no-journal", "--gpu", "off", "."]));
    for (file, default) in [
        ("src/main.rs", "cuda:0"),
        ("src/bin/helper.rs", "cuda:0"),
        ("src/bin/served.rs", "cuda:1"),
        ("src/bin/auto.rs", "auto"),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            text.contains(&format!("#[arg(long, default_value = \"{default}\")]")),
            "{file}: {text}"
        );
    }
    let (status, text) = statuses(root);
    assert_eq!(status["src/main.rs"], "compliant", "{text}");
    assert_eq!(status["src/bin/helper.rs"], "compliant", "{text}");
    assert_eq!(status["src/bin/served.rs"], "needs_review", "{text}");
    assert_eq!(status["src/bin/auto.rs"], "compliant", "{text}");
}

/// burn-tch's backend type names no card (its device is the CPU by default): a program on
/// `LibTorchDevice::Cpu` or `::Mps` is no CUDA program, as tch's `Device::Cpu` one is; one on
/// `LibTorchDevice::Cuda(0)` is. An example that names a CUDA-featured crate only in the types
/// of the library code it runs builds nothing of it; one whose library code builds its
/// session does.
#[test]
fn cpu_and_mps_devices_of_every_row_and_a_crate_named_only_in_types_choose_no_card() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "bt/Cargo.toml", "[package]\nname = \"bt\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nburn-tch = \"0.22\"\ntch = \"0.22\"\n");
    let prog = |device: &str| {
        format!("use burn_tch::{{LibTorch, LibTorchDevice}};\n\nfn main() {{\n    type B = LibTorch;\n    let device = LibTorchDevice::{device};\n    let _b: Option<B> = None;\n    println!(\"{{:?}}\", device);\n}}\n")
    };
    write(root, "bt/src/bin/cpu.rs", &prog("Cpu"));
    write(
        root,
        "bt/src/bin/mps.rs",
        &prog("Mps").replace(
            "fn main() {\n",
            "fn main() {\n    assert!(tch::utils::has_mps());\n",
        ),
    );
    write(root, "bt/src/bin/cuda.rs", &prog("Cuda(0)"));
    write(root, "ocr/Cargo.toml", "[package]\nname = \"ocr\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[features]\ncuda = [\"engine/cuda\"]\n[dependencies]\nengine = { package = \"ocr-engine-core\", version = \"0.10\" }\n");
    write(
        root,
        "ocr/src/lib.rs",
        "pub mod geometry;\npub mod pipeline;\n",
    );
    write(root, "ocr/src/geometry.rs", "use engine::processors::BoundingBox;\n\npub fn width(b: &BoundingBox) -> f32 {\n    b.x_max() - b.x_min()\n}\n");
    write(root, "ocr/src/pipeline.rs", "pub fn run(model: &str) -> engine::Result<()> {\n    let engine = engine::Engine::builder().model(model).build()?;\n    engine.predict(\"page.png\")\n}\n");
    write(
        root,
        "ocr/examples/width.rs",
        "fn main() {\n    println!(\"{}\", ocr::geometry::width(&Default::default()));\n}\n",
    );
    write(
        root,
        "ocr/examples/predict.rs",
        "fn main() {\n    ocr::pipeline::run(\"det.onnx\").unwrap();\n}\n",
    );
    let (status, text) = statuses(root);
    for (file, want) in [
        ("bt/src/bin/cpu.rs", "no_gpu_code"),
        ("bt/src/bin/mps.rs", "no_gpu_code"),
        ("bt/src/bin/cuda.rs", "non_compliant"),
        ("ocr/examples/width.rs", "no_gpu_code"),
        ("ocr/examples/predict.rs", "non_compliant"),
    ] {
        assert_eq!(
            status.get(file).map(String::as_str),
            Some(want),
            "{file}\n{text}"
        );
    }
}

/// A library's `#[test]` functions that only use a CUDA crate's types (bindgen's layout tests
/// of `#[repr(C)]` structs over `cudarc::driver::sys::*`) open no context: no GH508; a test
/// that opens one still is a GPU program no `main` masks.
#[test]
fn unit_tests_that_only_use_a_cuda_crates_types_are_no_gpu_program() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"codec\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = \"0.16\"\n");
    write(root, "src/lib.rs", "pub mod layout;\npub mod session;\n");
    write(root, "src/layout.rs", "use cudarc::driver::sys::*;\n\npub type CUvideoctxlock = *mut CUctx_st;\n\n#[repr(C)]\npub struct Caps<Storage> {\n    pub device: CUdevice,\n    pub lock: CUvideoctxlock,\n    pub storage: Storage,\n}\n\n#[test]\nfn layout_caps() {\n    const UNINIT: std::mem::MaybeUninit<Caps<u8>> = std::mem::MaybeUninit::uninit();\n    let ptr = UNINIT.as_ptr();\n    assert_eq!(std::mem::size_of::<Caps<u8>>(), 24, concat!(\"Size of \", stringify!(Caps)));\n    assert!(!ptr.is_null());\n}\n");
    write(root, "src/session.rs", "use cudarc::driver::CudaContext;\n\npub fn open() -> std::sync::Arc<CudaContext> {\n    CudaContext::new(0).unwrap()\n}\n\n#[test]\nfn opens() {\n    let _ctx = open();\n}\n");
    let (status, text) = statuses(root);
    assert_eq!(status["src/layout.rs"], "no_gpu_code", "{text}");
    assert_eq!(status["src/session.rs"], "needs_review", "{text}");
    assert!(!text.contains("src/layout.rs"), "{text}");
    assert!(
        text.contains("src/session.rs:8:1: GH508 [review]"),
        "{text}"
    );
}

/// dfdx's unit tests: `TestDevice` is an alias whose target (under `--features cuda`) opens a
/// context in its `Default`. A test that builds one — `let dev: TestDevice =
/// Default::default()`, `TestDevice::seed(1)` in another module, a generic `D::default()`
/// handed the alias, a `#[derive(Default)]` struct holding one — runs on the card: GH508. A
/// test that only names the type (`size_of::<TestDevice>()`, a signature) builds nothing.
#[test]
fn unit_tests_that_build_an_aliased_device_reach_cuda_and_those_naming_it_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"nd\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncudarc = { version = \"0.16\", optional = true }\n[features]\ncuda = [\"dep:cudarc\"]\n");
    write(root, "src/lib.rs", "pub mod device;\npub mod ops;\npub mod util;\n\n#[cfg(test)]\npub(crate) mod tests {\n    #[cfg(not(feature = \"cuda\"))]\n    pub type TestDevice = crate::device::Host;\n    #[cfg(feature = \"cuda\")]\n    pub type TestDevice = crate::device::Gpu;\n}\n");
    write(root, "src/device/mod.rs", "mod host;\n#[cfg(feature = \"cuda\")]\nmod gpu;\n\npub use host::Host;\n#[cfg(feature = \"cuda\")]\npub use gpu::Gpu;\n");
    write(root, "src/device/host.rs", "#[derive(Default)]\npub struct Host;\n\nimpl Host {\n    pub fn seed(_s: u64) -> Self {\n        Host\n    }\n}\n");
    write(root, "src/device/gpu.rs", "use cudarc::driver::{CudaContext, CudaStream};\nuse std::sync::Arc;\n\npub struct Gpu {\n    pub(crate) stream: Arc<CudaStream>,\n}\n\nimpl Default for Gpu {\n    fn default() -> Self {\n        Self::seed(0)\n    }\n}\n\nimpl Gpu {\n    pub fn seed(s: u64) -> Self {\n        let ctx = CudaContext::new(s as usize).unwrap();\n        Gpu {\n            stream: ctx.default_stream(),\n        }\n    }\n}\n");
    let test_file = |body: &str| {
        format!("pub fn relu(x: f32) -> f32 {{\n    x.max(0.0)\n}}\n\n#[cfg(test)]\nmod tests {{\n    use crate::tests::*;\n\n    #[test]\n    fn relu() {{\n{body}\n        assert_eq!(super::relu(-1.0), 0.0);\n    }}\n}}\n")
    };
    let files = [
        ("src/ops/annotated.rs", "        let _dev: TestDevice = Default::default();", "needs_review"),
        ("src/ops/seeded.rs", "        let _dev = TestDevice::seed(1);", "needs_review"),
        ("src/ops/generic.rs", "        let _dev = crate::util::make::<TestDevice>();", "needs_review"),
        ("src/ops/held.rs", "        let _h = crate::util::Holder::default();", "needs_review"),
        ("src/ops/sized.rs", "        assert!(std::mem::size_of::<TestDevice>() > 0);\n        assert_eq!(crate::util::width(None::<&TestDevice>), 0);", "no_gpu_code"),
    ];
    let mut ops = String::new();
    for (file, body, _) in files {
        write(root, file, &test_file(body));
        let name = file.trim_start_matches("src/ops/").trim_end_matches(".rs");
        ops.push_str(&format!("pub mod {name};\n"));
    }
    write(root, "src/ops/mod.rs", &ops);
    write(root, "src/util.rs", "pub fn make<D: Default>() -> D {\n    D::default()\n}\n\npub fn width<D>(_d: Option<&D>) -> usize {\n    0\n}\n\n#[derive(Default)]\npub struct Holder {\n    #[cfg(test)]\n    pub dev: crate::tests::TestDevice,\n}\n");
    let (status, text) = statuses(root);
    for (file, _, want) in files {
        assert_eq!(
            status.get(file).map(String::as_str),
            Some(want),
            "{file}\n{text}"
        );
    }
}

/// From the Rust trial of session 60 (mistralrs-cli's `--device-layers "0:10;1:20"` in
/// `src/args/model.rs`, flattened into the program's `Cli`): an option that selects several
/// cards declared in another module of the program, or in a library crate of the tree it runs,
/// is GH513 where it is declared (that file holds no GPU word), and the program's own fix is
/// withheld as when the field is in `main.rs` — sync or async `main` — never "compliant" with
/// one card.
#[test]
fn a_multi_gpu_option_of_another_module_or_crate_holds_the_programs_fix_back() {
    let dir = common::tree();
    let root = dir.path();
    let manifest = |name: &str, deps: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = {{ version = \"0.9\", features = [\"cuda\"] }}\nclap = {{ version = \"4\", features = [\"derive\"] }}\n{deps}")
    };
    let options = "use clap::Args;\n\n#[derive(Args, Clone, Default)]\npub struct DeviceOptions {\n    /// ORD:NUM;... e.g. \"0:10;1:20\"\n    #[arg(long, value_delimiter = ';')]\n    pub device_layers: Option<Vec<String>>,\n}\n";
    let main = |options: &str, head: &str, sig: &str| {
        format!("{head}use candle_core::Device;\nuse clap::Parser;\n\n#[derive(Parser)]\nstruct Cli {{\n    #[command(flatten)]\n    device: {options},\n}}\n\n{sig} {{\n    let cli = Cli::parse();\n    let _ = cli.device.device_layers;\n    let dev = Device::new_cuda(0).unwrap();\n    println!(\"{{dev:?}}\");\n}}\n")
    };
    write(root, "cli/Cargo.toml", &manifest("cli", ""));
    write(root, "cli/src/args.rs", options);
    write(
        root,
        "cli/src/main.rs",
        &main("args::DeviceOptions", "mod args;\n\n", "fn main()"),
    );
    write(root, "opts/Cargo.toml", &manifest("opts", ""));
    write(root, "opts/src/lib.rs", options);
    write(
        root,
        "server/Cargo.toml",
        &manifest(
            "server",
            "opts = { path = \"../opts\" }\ntokio = { version = \"1\", features = [\"full\"] }\n",
        ),
    );
    write(
        root,
        "server/src/main.rs",
        &main("opts::DeviceOptions", "", "#[tokio::main]\nasync fn main()"),
    );
    write(root, "plain/Cargo.toml", &manifest("plain", ""));
    write(root, "plain/src/main.rs", "use candle_core::Device;\n\nfn main() {\n    let dev = Device::new_cuda(0).unwrap();\n    println!(\"{dev:?}\");\n}\n");
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"cli\", \"opts\", \"server\", \"plain\"]\n",
    );
    let out = run(gh(root).args([
        "scan",
        "--no-cache",
        "--unsafe-fixes",
        "--format",
        "json",
        ".",
    ]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for declared in ["cli/src/args.rs", "opts/src/lib.rs"] {
        let f = common::file_in(&doc, declared);
        assert_eq!(f["status"], "needs_review", "{f}");
        assert_eq!(common::rule_codes(&f), vec!["GH513".to_string()], "{f}");
    }
    for program in ["cli/src/main.rs", "server/src/main.rs"] {
        let f = common::file_in(&doc, program);
        assert_eq!(f["status"], "non_compliant", "{f}");
        let findings = f["findings"].as_array().unwrap();
        assert!(
            !findings.is_empty() && findings.iter().all(|x| x["fixable"] == false),
            "{f}"
        );
        assert!(
            f.to_string()
                .contains("`--device-layers` takes a list of devices in `"),
            "{f}"
        );
    }
    // A program with no such option is fixed as before.
    let plain = common::file_in(&doc, "plain/src/main.rs");
    assert!(
        plain["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["fixable"] == true),
        "{plain}"
    );
    let before = std::fs::read_to_string(root.join("cli/src/main.rs")).unwrap();
    run(gh(root).args([
        "fix",
        "--gpu",
        "off",
        "--no-journal",
        "--no-cache",
        "--unsafe-fixes",
        ".",
    ]));
    assert_eq!(
        std::fs::read_to_string(root.join("cli/src/main.rs")).unwrap(),
        before
    );
    let server = std::fs::read_to_string(root.join("server/src/main.rs")).unwrap();
    assert!(!server.contains("CUDA_VISIBLE_DEVICES"), "{server}");
    let plain = std::fs::read_to_string(root.join("plain/src/main.rs")).unwrap();
    assert!(plain.contains("CUDA_VISIBLE_DEVICES"), "{plain}");
}

/// Issue 36's threads before main, from a probe of trial 60: a `#[ctor]` function (in the
/// program's file, or a library of the tree it runs) or a static in `.init_array` runs before
/// `main` and may start threads; the edition-2024 fix would insert `unsafe { set_var }` whose
/// SAFETY comment says no thread exists. Nothing is inserted, and the findings name the code.
#[test]
fn code_run_before_main_holds_the_env_block_back() {
    let dir = common::tree();
    let root = dir.path();
    let manifest = |name: &str, deps: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n[dependencies]\ncandle-core = {{ version = \"0.9\", features = [\"cuda\"] }}\nctor = \"0.2\"\n{deps}")
    };
    let body = "fn main() {\n    let dev = candle_core::Device::new_cuda(0).unwrap();\n    println!(\"{dev:?}\");\n}\n";
    write(root, "watch/Cargo.toml", &manifest("watch", ""));
    write(root, "watch/src/main.rs", &format!("#[ctor::ctor]\nfn start_watchdog() {{\n    std::thread::spawn(|| loop {{\n        std::thread::sleep(std::time::Duration::from_secs(1));\n    }});\n}}\n\n{body}"));
    write(root, "hooks/Cargo.toml", &manifest("hooks", ""));
    write(root, "hooks/src/lib.rs", "#[unsafe(link_section = \".init_array\")]\n#[used]\npub static INIT: extern \"C\" fn() = start;\n\nextern \"C\" fn start() {\n    std::thread::spawn(|| ());\n}\n\npub fn touch() {}\n");
    write(
        root,
        "app/Cargo.toml",
        &manifest("app", "hooks = { path = \"../hooks\" }\n"),
    );
    write(
        root,
        "app/src/main.rs",
        &body.replace("fn main() {\n", "fn main() {\n    hooks::touch();\n"),
    );
    write(root, "plain/Cargo.toml", &manifest("plain", ""));
    write(root, "plain/src/main.rs", body);
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"watch\", \"hooks\", \"app\", \"plain\"]\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for (program, named) in [
        ("watch/src/main.rs", "`#[ctor::ctor]` fn `start_watchdog`"),
        ("app/src/main.rs", "the static `INIT` in `.init_array`"),
    ] {
        let f = common::file_in(&doc, program);
        assert_eq!(f["status"], "non_compliant", "{f}");
        let findings = f["findings"].as_array().unwrap();
        assert!(findings.iter().all(|x| x["fixable"] == false), "{f}");
        assert!(f.to_string().contains(named), "{named}: {f}");
    }
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    for program in ["watch/src/main.rs", "app/src/main.rs"] {
        let text = std::fs::read_to_string(root.join(program)).unwrap();
        assert!(!text.contains("set_var"), "{program}: {text}");
    }
    let plain = std::fs::read_to_string(root.join("plain/src/main.rs")).unwrap();
    assert!(
        plain.contains("unsafe {") && plain.contains("SAFETY"),
        "{plain}"
    );
}

/// Trial 61's r1: a device-index function reached through a glob import (`use arrayfire::*;
/// set_device(1)`, every arrayfire example's style) is the table's `arrayfire::set_device`:
/// remapped by the fix, and two cards in one function are multi-GPU. A function of the file
/// with the same name shadows the glob's and is no index.
#[test]
fn an_index_function_reached_through_a_glob_import_is_an_index() {
    let dir = common::tree();
    let root = dir.path();
    let manifest = |name: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\narrayfire = \"3.8\"\n")
    };
    for name in ["one", "two", "own"] {
        write(root, &format!("{name}/Cargo.toml"), &manifest(name));
    }
    write(
        root,
        "one/src/main.rs",
        "use arrayfire::*;\n\nfn main() {\n    set_device(1);\n    info();\n}\n",
    );
    write(root, "two/src/main.rs", "use arrayfire::*;\n\nfn main() {\n    set_device(0);\n    let a = randu::<f32>(dim4!(4));\n    set_device(1);\n    let b = randu::<f32>(dim4!(4));\n    af_print!(\"\", a);\n    af_print!(\"\", b);\n}\n");
    write(root, "own/src/main.rs", "use arrayfire::*;\n\nfn set_device(_slot: i32) {}\n\nfn main() {\n    set_device(1);\n    info();\n}\n");
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"one\", \"two\", \"own\"]\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        common::rules_of(&doc, "one/src/main.rs").contains(&"GH511".to_string()),
        "{doc}"
    );
    assert!(
        common::rules_of(&doc, "two/src/main.rs").contains(&"GH513".to_string()),
        "{doc}"
    );
    assert!(
        !common::rules_of(&doc, "own/src/main.rs").contains(&"GH511".to_string()),
        "{doc}"
    );
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    let one = std::fs::read_to_string(root.join("one/src/main.rs")).unwrap();
    assert!(one.contains("    set_device(0);\n    info();\n"), "{one}");
    assert!(one.contains("CUDA_VISIBLE_DEVICES"), "{one}");
    // Two cards by design: no mask that would leave it one.
    let two = std::fs::read_to_string(root.join("two/src/main.rs")).unwrap();
    assert!(
        !two.contains("CUDA_VISIBLE_DEVICES") && two.contains("set_device(1)"),
        "{two}"
    );
    let own = std::fs::read_to_string(root.join("own/src/main.rs")).unwrap();
    assert!(own.contains("    set_device(1);\n    info();\n"), "{own}");
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let (status, text) = (common::statuses(&out.stdout), out.stdout);
    assert_eq!(status["one/src/main.rs"], "compliant", "{text}");
    assert_eq!(status["two/src/main.rs"], "non_compliant", "{text}");
}

/// Trial 61's r2: a struct literal's field whose name says it holds device ordinals
/// (CTranslate2's `Config { device_indices: vec![1] }`, the keywords Python's GPU APIs take an
/// index by) is an index in a GPU program: one card is remapped with the mask, two are
/// multi-GPU, a value the tool does not follow is for review. In a CPU tool the same field is
/// no finding.
#[test]
fn an_ordinal_named_struct_field_is_a_device_index_in_gpu_code() {
    let dir = common::tree();
    let root = dir.path();
    let manifest = |name: &str, dep: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\n{dep}\n")
    };
    let ct2 = "ct2rs = { version = \"0.10\", features = [\"cuda\"] }";
    let body = |indices: &str| {
        format!("use ct2rs::{{Config, Device, Translator}};\n\nfn main() -> anyhow::Result<()> {{\n    let cfg = Config {{\n        device: Device::CUDA,\n        device_indices: {indices},\n        ..Config::default()\n    }};\n    let _t = Translator::new(\"model\", &cfg)?;\n    Ok(())\n}}\n")
    };
    for (name, indices) in [
        ("one", "vec![1]"),
        ("two", "vec![0, 1]"),
        ("given", "gpus()"),
    ] {
        write(root, &format!("{name}/Cargo.toml"), &manifest(name, ct2));
        let mut text = body(indices);
        if name == "given" {
            text.push_str("\nfn gpus() -> Vec<i32> {\n    vec![2]\n}\n");
        }
        write(root, &format!("{name}/src/main.rs"), &text);
    }
    // A sound tool: its `device_id` is an audio device's.
    write(
        root,
        "audio/Cargo.toml",
        &manifest("audio", "cpal = \"0.15\""),
    );
    write(root, "audio/src/main.rs", "struct Output {\n    device_id: u32,\n}\n\nfn main() {\n    let o = Output { device_id: 1 };\n    println!(\"{}\", o.device_id);\n}\n");
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"one\", \"two\", \"given\", \"audio\"]\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        common::rules_of(&doc, "one/src/main.rs").contains(&"GH511".to_string()),
        "{doc}"
    );
    assert!(
        common::rules_of(&doc, "two/src/main.rs").contains(&"GH513".to_string()),
        "{doc}"
    );
    assert!(
        common::rules_of(&doc, "given/src/main.rs").contains(&"GH514".to_string()),
        "{doc}"
    );
    assert_eq!(
        common::file_in(&doc, "audio/src/main.rs")["status"],
        "no_gpu_code",
        "{doc}"
    );
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    let one = std::fs::read_to_string(root.join("one/src/main.rs")).unwrap();
    assert!(one.contains("        device_indices: vec![0],\n"), "{one}");
    assert!(one.contains("CUDA_VISIBLE_DEVICES"), "{one}");
    let two = std::fs::read_to_string(root.join("two/src/main.rs")).unwrap();
    assert!(
        !two.contains("CUDA_VISIBLE_DEVICES") && two.contains("vec![0, 1]"),
        "{two}"
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let status = common::statuses(&out.stdout);
    assert_eq!(status["one/src/main.rs"], "compliant", "{}", out.stdout);
    assert_eq!(status["two/src/main.rs"], "non_compliant", "{}", out.stdout);
    assert_eq!(
        status["given/src/main.rs"], "needs_review",
        "{}",
        out.stdout
    );
    assert_eq!(status["audio/src/main.rs"], "no_gpu_code", "{}", out.stdout);
}

/// Trial 61's r3: a feature whose name says CUDA by a word part (`cudaimgproc`, `cudaarithm`
/// of OpenCV, `cuda-12`) reaches CUDA as `cuda` does, and OpenCV's `core::set_device(1)` is a
/// device index; `no-cuda` is not CUDA, nor OpenCV without its CUDA modules.
#[test]
fn a_feature_named_for_cuda_by_a_word_part_reaches_cuda() {
    let dir = common::tree();
    let root = dir.path();
    let manifest = |name: &str, features: &str| {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nopencv = {{ version = \"0.101\", default-features = false, features = [{features}] }}\n")
    };
    let main = "use opencv::{core, imgcodecs, prelude::*};\n\nfn main() -> opencv::Result<()> {\n    core::set_device(1)?;\n    let img = imgcodecs::imread(\"in.png\", imgcodecs::IMREAD_COLOR)?;\n    let mut gpu = core::GpuMat::default()?;\n    gpu.upload(&img)?;\n    Ok(())\n}\n";
    let cpu = "use opencv::imgcodecs;\n\nfn main() -> opencv::Result<()> {\n    let _img = imgcodecs::imread(\"in.png\", imgcodecs::IMREAD_COLOR)?;\n    Ok(())\n}\n";
    write(
        root,
        "gpu/Cargo.toml",
        &manifest("gpu", "\"cudaimgproc\", \"cudaarithm\", \"imgcodecs\""),
    );
    write(root, "gpu/src/main.rs", main);
    write(root, "cpu/Cargo.toml", &manifest("cpu", "\"imgcodecs\""));
    write(root, "cpu/src/main.rs", cpu);
    write(
        root,
        "off/Cargo.toml",
        "[package]\nname = \"off\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\nengine = { version = \"1\", features = [\"no-cuda\"] }\n",
    );
    write(
        root,
        "off/src/main.rs",
        "fn main() {\n    engine::run();\n}\n",
    );
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"gpu\", \"cpu\", \"off\"]\n",
    );
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let status = common::statuses(&out.stdout);
    assert_eq!(status["gpu/src/main.rs"], "non_compliant", "{doc}");
    assert!(
        common::rules_of(&doc, "gpu/src/main.rs").contains(&"GH511".to_string()),
        "{doc}"
    );
    assert!(
        common::file_in(&doc, "gpu/src/main.rs")
            .to_string()
            .contains("`opencv` with its `cudaimgproc` feature"),
        "{doc}"
    );
    assert_eq!(status["cpu/src/main.rs"], "no_gpu_code", "{doc}");
    assert_eq!(status["off/src/main.rs"], "no_gpu_code", "{doc}");
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    let gpu = std::fs::read_to_string(root.join("gpu/src/main.rs")).unwrap();
    assert!(gpu.contains("    core::set_device(0)?;\n"), "{gpu}");
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    assert_eq!(
        common::statuses(&out.stdout)["gpu/src/main.rs"],
        "compliant",
        "{}",
        out.stdout
    );
}

/// Trial 61's r4: a program that reaches candle through its library's re-export (`pub use
/// candle_core as candle;`, then `ext::candle::Device::new_cuda(1)`) is a GPU program by its
/// own code; its evidence says so rather than "reaches no CUDA crate".
#[test]
fn a_program_judged_gpu_by_its_own_device_says_so_in_its_evidence() {
    let dir = common::tree();
    let root = dir.path();
    write(root, "Cargo.toml", "[package]\nname = \"ext\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\ncandle-core = \"0.9\"\n[features]\ncuda = [\"candle-core/cuda\"]\n");
    write(
        root,
        "src/lib.rs",
        "pub use candle_core as candle;\n\npub fn version() -> u32 {\n    1\n}\n",
    );
    write(root, "examples/e.rs", "use ext::candle::Device;\n\nfn main() {\n    let d = Device::new_cuda(1).unwrap();\n    println!(\"{d:?}\");\n}\n");
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let e = common::file_in(&doc, "examples/e.rs");
    assert_eq!(e["status"], "non_compliant", "{doc}");
    let evidence = e["evidence"].as_str().unwrap_or_default();
    assert!(
        evidence.contains("whose own code chooses a CUDA device")
            && !evidence.contains("reaches no CUDA crate"),
        "{e}"
    );
    run(gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache", "."]));
    let out = run(gh(root).args(["scan", "--no-cache", "--format", "json", "."]));
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let e = common::file_in(&doc, "examples/e.rs");
    assert_eq!(e["status"], "compliant", "{doc}");
    assert!(!e.to_string().contains("reaches no CUDA crate"), "{e}");
}
