//! Rule by rule, on small sources: what is found, what the fix makes of it, and that the fix
//! is stable. Each case is a source a user could write.

use crate::common;

use gpu_homogenize::base::edit::apply;
use gpu_homogenize::lang::python::header::PythonHeader;
use gpu_homogenize::lang::python::Python;
use gpu_homogenize::lang::{Analysis, FileInfo, LanguageSupport};
use gpu_homogenize::model::policy::Policy;

/// The seed's template: these cases exercise its docstring marker and banner too (the default
/// template is neutral and has no marker; see `a_tree_without_a_config_gets_the_neutral_header`).
fn python() -> Python {
    let policy = Policy {
        python_template: Some(gpu_homogenize::lang::template::BUILTIN_SEED.into()),
        ..Policy::default()
    };
    let header = PythonHeader::load(&policy, std::path::Path::new(".")).unwrap();
    Python::new(policy, header)
}

fn analyze(py: &Python, source: &str) -> Box<dyn Analysis> {
    let info = FileInfo {
        path: std::path::Path::new("module.py"),
        rel: "module.py",
        in_phase: false,
    };
    py.analyze(&info, source).expect("parses")
}

/// Violation codes found in `source`, sorted.
fn codes(source: &str) -> Vec<&'static str> {
    codes_with(&python(), source)
}

fn codes_with(py: &Python, source: &str) -> Vec<&'static str> {
    let mut codes: Vec<_> = analyze(py, source)
        .findings()
        .iter()
        .filter(|f| f.rule.severity != gpu_homogenize::model::finding::Severity::Info)
        .map(|f| f.rule.code)
        .collect();
    codes.sort();
    codes
}

/// The fixed text, checked to be a fixed point (fixing it again changes nothing).
fn fixed(source: &str) -> String {
    let py = python();
    let mut first = analyze(&py, source);
    // The whole fix, as `--unsafe-fixes` applies it (the validation call included).
    first.settle_unsafe_edits(true);
    let new = apply(source, first.edits()).unwrap();
    let info = FileInfo {
        path: std::path::Path::new("module.py"),
        rel: "module.py",
        in_phase: false,
    };
    let problems = py.verify(&info, source, &new, first.as_ref());
    assert!(problems.is_empty(), "{problems:?}\n{new}");
    let again = analyze(&py, &new);
    assert!(again.edits().is_empty(), "second fix would change:\n{new}");
    new
}

const HEADER_LINE: &str = "os.environ['CUDA_VISIBLE_DEVICES'] = '1'  # RTX 3090 EXCLUSIVEMENT\n";

#[test]
fn aliases_are_followed() {
    assert!(codes("import torch as t\nt.cuda.set_device(1)\n").contains(&"GH102"));
    assert!(codes("from torch import cuda\ncuda.set_device(1)\n").contains(&"GH102"));
    assert!(
        codes("import os as _os\n_os.environ['CUDA_VISIBLE_DEVICES'] = '0'\n").contains(&"GH002")
    );
    let out =
        fixed("from os import environ\nimport torch\nenviron['CUDA_VISIBLE_DEVICES'] = '0'\n");
    assert!(
        !out.contains("environ['CUDA_VISIBLE_DEVICES'] = '0'"),
        "{out}"
    );
}

#[test]
fn prose_is_not_a_device_literal() {
    let src = "\"\"\"Utilise cuda:1.\"\"\"\nimport torch\n# cuda:1 est la RTX 3090\nMSG = \"le GPU cuda:1 est la RTX 3090\"\n";
    let found = codes(src);
    assert!(!found.contains(&"GH101"), "{found:?}");
}

#[test]
fn device_strings_keep_their_quotes_and_prefix() {
    let out = fixed("import torch\nA = torch.zeros(1, device='cuda:1')\nB = A.to(r\"cuda:1\")\nC = torch.device(\"cuda\", 1)\nD = x.cuda(1)\nE = 'cuda:1'\n");
    assert!(
        out.contains(
            "A = torch.zeros(1, device='cuda:0')\nB = A.to(r\"cuda:0\")\nC = torch.device(\"cuda\", 0)\nD = x.cuda(0)\nE = 'cuda:1'\n"
        ),
        "{out}"
    );
}

#[test]
fn keywords_dicts_and_tables() {
    let src = "import torch\nfrom llama_cpp import Llama\nimport sounddevice as sd\nm = Llama(path, main_gpu=1)\nopts = {\"device_id\": 1}\nrec = sd.rec(10, device=1)\ngpu_map = {\"3090\": 1, \"5060\": 0}\ntorch.cuda.set_device(gpu_map.get(\"3090\", 1))\ndef f(gpu_id=1):\n    torch.cuda.synchronize(gpu_id)\n";
    let found = codes(src);
    // main_gpu, the table's value and default, the parameter default: four literals.
    assert_eq!(
        found.iter().filter(|c| c.starts_with("GH10")).count(),
        4,
        "{found:?}"
    );
    let out = fixed(src);
    assert!(
        out.contains("main_gpu=0")
            && out.contains("\"device_id\": 1")
            && out.contains("sd.rec(10, device=1)")
            && out.contains("{\"3090\": 0, \"5060\": 0}")
            && out.contains("get(\"3090\", 0)"),
        "{out}"
    );
    assert!(out.contains("def f(gpu_id=0):"), "{out}");
}

/// A library API whose device index is not its first argument: faiss's `index_cpu_to_gpu(res,
/// device, index)` (the knowledge table's row: the call, the index's position). Under the mask
/// the target card is device 0; a look-alike of another module is left alone.
#[test]
fn an_index_in_a_later_argument_of_a_gpu_library_is_remapped() {
    let src = "import faiss\nres = faiss.StandardGpuResources()\ngpu_index = faiss.index_cpu_to_gpu(res, 1, cpu_index)\n";
    let found = codes(src);
    assert!(
        found.contains(&"GH001") && found.contains(&"GH102"),
        "{found:?}"
    );
    let out = fixed(src);
    assert!(
        out.contains("gpu_index = faiss.index_cpu_to_gpu(res, 0, cpu_index)\n")
            && out.contains("CUDA_VISIBLE_DEVICES"),
        "{out}"
    );
    let other = "import faiss\nimport mylib\nx = mylib.index_cpu_to_gpu(res, 1, cpu_index)\n";
    assert!(!codes(other).contains(&"GH102"));
    assert!(fixed(other).contains("mylib.index_cpu_to_gpu(res, 1, cpu_index)"));
}

#[test]
fn code_that_adapts_to_the_visible_cards_is_information_and_gets_the_header() {
    let src = "import torch\nif torch.cuda.device_count() < 2:\n    pass\nfor i in range(torch.cuda.device_count()):\n    pass\n";
    let all: Vec<_> = analyze(&python(), src)
        .findings()
        .iter()
        .map(|f| f.rule.code)
        .collect();
    assert_eq!(all.iter().filter(|c| **c == "GH201").count(), 2, "{all:?}");
    assert_eq!(
        codes(src),
        ["GH001"],
        "nothing for review: it runs on the policy's card"
    );
    let out = fixed(src);
    assert!(
        out.contains("if torch.cuda.device_count() < 2:\n")
            && out.contains("range(torch.cuda.device_count())")
    );
}

#[test]
fn a_device_per_index_of_a_literal_range_is_multi_gpu() {
    // Loops and comprehensions over range(2): two cards where the policy allows one, a
    // violation left as written (it names the line and what to change).
    let src = "import torch\nmodels = [torch.nn.Linear(1, 1).to(f'cuda:{i}') for i in range(2)]\nfor k in range(0, 2):\n    torch.zeros(1, device=f'cuda:{k}')\n";
    // The header is still missing (GH001, withheld while GH203 stands): no rule hides another.
    assert_eq!(codes(src), ["GH001", "GH203", "GH203"]);
    // A policy that allows two cards: the same code stays inside them.
    let policy = Policy {
        visible_devices: "0,1".into(),
        ..Policy::default()
    };
    let header = PythonHeader::load(&policy, std::path::Path::new(".")).unwrap();
    let two = Python::new(policy, header);
    assert!(
        !codes_with(&two, src).contains(&"GH203"),
        "{:?}",
        codes_with(&two, src)
    );
    assert_eq!(fixed(src), src, "multi-GPU by design: left as written");
    // One index, or a name that is not the loop's: a single card, rewritten as usual.
    let single = "import torch\nfor i in range(1):\n    torch.zeros(1, device=f'cuda:{i}')\nj = 1\nfor k in range(2):\n    torch.zeros(1, device=f'cuda:{j}')\n";
    assert!(!codes(single).contains(&"GH201"), "{:?}", codes(single));
    assert!(codes(single).contains(&"GH104"), "{:?}", codes(single));
}

/// Two device indices that run together in one function are two cards by design (timm's
/// cache-key test builds `cuda:0` and `cuda:1` and counts two entries): remapping the second
/// would merge them, so it is GH203, left as written. The alternatives of one choice (branches
/// of an `if`, a conditional expression, a `try` and its handler, an early `return`, code under
/// a test of the GPU count, other functions) are one card each, and remapped as before.
#[test]
fn device_indices_used_together_are_several_cards_and_alternatives_are_one() {
    let together = "import torch\n\n\ndef test_cache():\n    a = torch.device('cuda:0')\n    b = torch.device('cuda:1')\n    assert {a: 1, b: 2}\n";
    assert_eq!(codes(together), ["GH001", "GH203"]);
    let found = analyze(&python(), together);
    let gh203 = found
        .findings()
        .iter()
        .find(|f| f.rule.code == "GH203")
        .map(|f| f.message.clone());
    assert_eq!(
        gh203.as_deref(),
        Some("torch.device(…) selects device 1 where line 5 selects device 0: needs 2 cards, mask '1' allows 1 card")
    );
    assert_eq!(
        fixed(together),
        together,
        "two cards by design: left as written"
    );
    // At module level, and through a `.to()` of a model: the same.
    let script =
        "import torch\nx = torch.zeros(1).to('cuda:0')\ny = torch.zeros(1, device='cuda:1')\n";
    assert!(codes(script).contains(&"GH203"), "{:?}", codes(script));
    // A file whose own mask already leaves one card never had two: its `cuda:1` is the invalid
    // ordinal of a half-done migration, which the remap repairs.
    let masked = format!("import os\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n\n{script}");
    assert!(!codes(&masked).contains(&"GH203"), "{:?}", codes(&masked));
    assert!(fixed(&masked).contains("device='cuda:0'"));

    let alternatives = [
        "def pick(n):\n    return torch.device('cuda:1' if n > 1 else 'cuda:0')\n",
        "def pick(n):\n    if n > 1:\n        d = torch.device('cuda:1')\n    else:\n        d = torch.device('cuda:0')\n    return d\n",
        "def pick(n):\n    if n > 1:\n        return torch.device('cuda:1')\n    return torch.device('cuda:0')\n",
        "def pick(x):\n    try:\n        return x.to(torch.device('cuda:1'))\n    except RuntimeError:\n        return x.to(torch.device('cuda:0'))\n",
        "def pick(x):\n    a = torch.device('cuda:0')\n    if torch.cuda.device_count() > 1:\n        b = torch.device('cuda:1')\n",
        "def one():\n    return torch.device('cuda:0')\n\n\ndef two():\n    return torch.device('cuda:1')\n",
    ];
    for body in alternatives {
        let src = format!("import torch\n\n\n{body}");
        let found = codes(&src);
        assert!(!found.contains(&"GH203"), "{src}\n{found:?}");
        assert!(found.contains(&"GH101"), "{src}\n{found:?}");
        let out = fixed(&src);
        assert!(!out.contains("cuda:1"), "remapped:\n{out}");
    }
}

#[test]
fn a_count_of_cards_asked_of_a_framework_is_several_cards() {
    // Each asks a framework (or a child it starts) for two cards: the header would leave one,
    // and the engine would refuse to start. Left as written, GH203 naming what asks.
    let asks = [
        ("from vllm import LLM\n\nllm = LLM('m', tensor_parallel_size=2)\n", "`tensor_parallel_size=2`"),
        ("import sglang as sgl\n\nTP = 2\nengine = sgl.Engine(model_path='m', tp_size=TP)\n", "`tp_size=2`"),
        ("import lmdeploy\n\ncfg = lmdeploy.TurbomindEngineConfig(tp=2)\n", "`tp=2`"),
        ("import lightning as L\n\ntrainer = L.Trainer(accelerator='gpu', devices=2)\n", "`devices=2`"),
        ("import pytorch_lightning as pl\n\ntrainer = pl.Trainer(gpus=4)\n", "`devices=4`"),
        // A command-line trainer: what the code asks is in its `trainer_defaults`.
        ("from lightning.pytorch.cli import LightningCLI\n\nLightningCLI(trainer_defaults={'devices': 2})\n", "`devices=2`"),
        // A test case that describes a run on two cards, whatever its class.
        ("class Case:\n    def __init__(self, num_gpus=1):\n        self.num_gpus = num_gpus\n\n\nTWO = [Case(num_gpus=2)]\n", "`num_gpus=2`"),
        // Parallel sizes multiply; a number of GPUs is the whole.
        ("from vllm import LLM\n\nllm = LLM('m', tensor_parallel_size=2, pipeline_parallel_size=2)\n", "needs 4 cards"),
        ("import sglang as sgl\n\nengine = sgl.Engine(num_gpus=2, tp_size=2)\n", "needs 2 cards"),
        ("import subprocess\n\nsubprocess.run(['python', '-m', 'sglang.launch_server', '--tp-size', '2'])\n", "`--tp-size 2`"),
    ];
    for (src, what) in asks {
        let found = analyze(&python(), src);
        let gh203: Vec<&str> = found
            .findings()
            .iter()
            .filter(|f| f.rule.code == "GH203")
            .map(|f| f.message.as_str())
            .collect();
        assert!(gh203.iter().any(|m| m.contains(what)), "{src}\n{gh203:?}");
        assert_eq!(fixed(src), src, "several cards by design: left as written");
    }
    // One card, a computed count, another accelerator, a CPU tool's own `tp` and a count
    // reassigned from what the machine has: no finding of several cards.
    let one = [
        "from vllm import LLM\n\nllm = LLM('m', tensor_parallel_size=1)\n",
        "import sglang as sgl\nimport sys\n\nengine = sgl.Engine(model_path='m', tp_size=int(sys.argv[1]))\n",
        "import lightning as L\n\ntrainer = L.Trainer(accelerator='cpu', devices=4)\n",
        "from lightning.pytorch.cli import LightningCLI\n\nLightningCLI(trainer_defaults={'accelerator': 'cpu', 'devices': 4})\n",
        "import mylib\n\nmylib.split(tp=2)\n",
        "import torch\n\n\ndef run(slots):\n    n = 100\n    for s in slots:\n        n = min(len(s), n)\n    return launch(num_gpus_per_node=n)\n",
    ];
    for src in one {
        assert!(!codes(src).contains(&"GH203"), "{src}\n{:?}", codes(src));
    }
    // Lightning's list of devices holds card indices, remapped like `device_ids`.
    let listed = "import lightning as L\n\nif __name__ == '__main__':\n    L.Trainer(accelerator='gpu', devices=[1]).fit(None)\n";
    assert!(fixed(listed).contains("devices=[0]"), "{}", fixed(listed));
}

/// From a trial on lmdeploy: its executor starts one worker per rank and each worker calls
/// `torch.cuda.set_device(proc_id)`; it was compliant. A worker's index among its siblings
/// (`proc_id`, `process_index`) is a rank: one card per process, GH204.
#[test]
fn a_workers_process_index_is_its_rank() {
    for name in ["proc_id", "process_idx"] {
        let src = format!(
            "import torch\n\n\ndef main_loop({name}):\n    torch.cuda.set_device({name})\n"
        );
        assert!(codes(&src).contains(&"GH204"), "{src}\n{:?}", codes(&src));
    }
    let src = "import torch\n\n\ndef main_loop(device_id):\n    torch.cuda.set_device(device_id)\n";
    assert!(!codes(src).contains(&"GH204"), "{:?}", codes(src));
}

#[test]
fn env_after_import_is_moved_into_the_header() {
    let src = "import torch\nimport os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n";
    assert!(codes(src).contains(&"GH005"));
    let out = fixed(src);
    assert!(
        out.find(HEADER_LINE).unwrap() < out.find("import torch").unwrap(),
        "{out}"
    );
    assert_eq!(out.matches("CUDA_VISIBLE_DEVICES'] =").count(), 1, "{out}");
    assert_eq!(
        out.matches("import os\n").count(),
        1,
        "import os moved, not duplicated:\n{out}"
    );
}

/// From a trial on sahi: a fixture that saves `CUDA_VISIBLE_DEVICES` and puts it back (or
/// removes it when it was not set) leaves the variable as it found it: no write against the
/// policy (it was GH006, and its test file got the header in place of the suite's conftest).
#[test]
fn a_fixture_that_puts_back_the_mask_it_read_writes_nothing() {
    let restore = "import os\n\nimport pytest\nimport torch\n\n\n@pytest.fixture\ndef keep_mask():\n    original = os.environ.get(\"CUDA_VISIBLE_DEVICES\")\n    yield\n    if original is None:\n        os.environ.pop(\"CUDA_VISIBLE_DEVICES\", None)\n    else:\n        os.environ[\"CUDA_VISIBLE_DEVICES\"] = original\n\n\ndef test_a(keep_mask):\n    assert torch.zeros(1).cuda().sum() == 0\n";
    assert!(!codes(restore).contains(&"GH006"), "{:?}", codes(restore));
    // Another variable's value, or a removal with nothing put back, is a write all the same.
    let other = restore.replace(
        "os.environ.get(\"CUDA_VISIBLE_DEVICES\")",
        "os.environ.get(\"GPU\")",
    );
    assert_eq!(
        codes(&other).iter().filter(|c| **c == "GH006").count(),
        2,
        "{:?}",
        codes(&other)
    );
    let removed =
        "import os\n\n\ndef reset():\n    os.environ.pop(\"CUDA_VISIBLE_DEVICES\", None)\n";
    assert!(codes(removed).contains(&"GH006"), "{:?}", codes(removed));
}

#[test]
fn writes_in_functions_go_only_when_they_contradict_the_policy() {
    let src = "import os\nimport torch\ndef a():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'  # ancien\ndef b():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n    return 1\n";
    let found = codes(src);
    assert_eq!(
        found.iter().filter(|c| **c == "GH006").count(),
        1,
        "{found:?}"
    );
    let out = fixed(src);
    assert!(
        out.contains("def a():\n    pass\n"),
        "an emptied body keeps `pass`:\n{out}"
    );
    assert!(
        out.contains("def b():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n"),
        "{out}"
    );
    assert!(
        !out.contains("ancien"),
        "the trailing comment goes with the write"
    );
}

#[test]
fn update_with_other_keys_keeps_them() {
    let out = fixed("import os\nos.environ.update({\"CUDA_VISIBLE_DEVICES\": \"0\", \"OMP_NUM_THREADS\": \"4\"})\nimport torch\n");
    assert!(
        out.contains("os.environ.update({\"OMP_NUM_THREADS\": \"4\"})"),
        "{out}"
    );
    let out = fixed("import os\nos.environ.update(OMP_NUM_THREADS=\"4\", CUDA_DEVICE_ORDER=\"FASTEST_FIRST\")\nimport torch\n");
    assert!(
        out.contains("os.environ.update(OMP_NUM_THREADS=\"4\")"),
        "{out}"
    );
}

#[test]
fn setdefault_and_putenv_are_writes() {
    for src in [
        "import os\nos.environ.setdefault('CUDA_VISIBLE_DEVICES', '0')\nimport torch\n",
        "import os\nos.putenv('CUDA_DEVICE_ORDER', 'FASTEST_FIRST')\nimport torch\n",
    ] {
        let out = fixed(src);
        assert!(
            !out.contains("setdefault") && !out.contains("putenv"),
            "{out}"
        );
    }
}

#[test]
fn a_write_sharing_its_line_goes_with_its_separator() {
    let src = "import os; os.environ['CUDA_VISIBLE_DEVICES'] = '0'\nimport torch\n";
    let out = fixed(src);
    assert!(!out.contains("= '0'"), "{out}");
    assert!(out.contains("import os\n"), "{out}");
    // Inside an expression the write cannot go: the fix is withheld and says why.
    let src = "import os\nimport torch\nprint(os.environ.pop('CUDA_VISIBLE_DEVICES'))\n";
    let py = python();
    let analysis = analyze(&py, src);
    assert!(analysis.edits().is_empty());
    assert!(analysis.findings().iter().any(|f| !f.fixable
        && f.help
            .as_deref()
            .is_some_and(|h| h.contains("cannot be taken out safely"))));
}

#[test]
fn docstring_shapes_get_the_marker() {
    let out = fixed("\"\"\"One line.\"\"\"\nimport torch\n");
    assert!(
        out.starts_with(
            "\"\"\"One line.\n🚨 CONFIGURATION GPU: RTX 3090 (CUDA:1) OBLIGATOIRE\n\"\"\"\n"
        ),
        "{out}"
    );
    let out = fixed("'Single quotes.'\nimport torch\n");
    assert!(
        out.starts_with("'Single quotes. 🚨 CONFIGURATION GPU"),
        "{out}"
    );
    let out = fixed("from __future__ import annotations\nimport torch\n");
    assert!(out.starts_with("\"\"\"\n🚨 CONFIGURATION GPU: RTX 3090 (CUDA:1) OBLIGATOIRE\n\"\"\"\nfrom __future__ import annotations\n"), "{out}");
}

#[test]
fn a_marker_written_under_another_policy_is_replaced_not_doubled() {
    const MARKER: &str = "🚨 CONFIGURATION GPU: RTX 3090 (CUDA:1) OBLIGATOIRE";
    // Another card and mask (the policy changed since the last fix), twice (a file fixed by
    // an earlier version): one current marker, in the first one's place.
    let out = fixed("\"\"\"Doc.\n🚨 CONFIGURATION GPU: RTX 4090 (CUDA:0) OBLIGATOIRE\n  🚨 CONFIGURATION GPU: GPU 00000000:19:00.0 (CUDA:0) OBLIGATOIRE\nMore.\n\"\"\"\nimport torch\n");
    assert!(
        out.starts_with(&format!("\"\"\"Doc.\n{MARKER}\nMore.\n\"\"\"\n")),
        "{out}"
    );
    // On the lines that open and close the literal: the quotes stay.
    let out =
        fixed("\"\"\"🚨 CONFIGURATION GPU: RTX 4090 (CUDA:0) OBLIGATOIRE\"\"\"\nimport torch\n");
    assert!(out.starts_with(&format!("\"\"\"{MARKER}\"\"\"\n")), "{out}");
    // A one-line docstring holds the marker after its own text.
    let out = fixed(
        "'Single quotes. 🚨 CONFIGURATION GPU: RTX 4090 (CUDA:0) OBLIGATOIRE'\nimport torch\n",
    );
    assert!(
        out.starts_with(&format!("'Single quotes. {MARKER}'\n")),
        "{out}"
    );
    // Prose that only shares words with the marker is the project's own.
    let out = fixed("\"\"\"CONFIGURATION GPU: see the README.\n\"\"\"\nimport torch\n");
    assert!(
        out.starts_with(&format!(
            "\"\"\"CONFIGURATION GPU: see the README.\n{MARKER}\n\"\"\"\n"
        )),
        "{out}"
    );
}

#[test]
fn a_check_of_the_value_the_file_sets_follows_the_header() {
    // The file sets '0' and validates '0': the header sets the policy's '1', and the check
    // would then raise. Its literal follows; the message text is the project's own.
    let src = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nimport torch\n\n\ndef check():\n    mask = os.environ.get('CUDA_VISIBLE_DEVICES', '')\n    if mask != '0':\n        raise RuntimeError(f\"mask {mask}, not '0'\")\n    assert os.environ[\"CUDA_VISIBLE_DEVICES\"] == \"0\"\n    if os.getenv('CUDA_VISIBLE_DEVICES') == '':\n        print('cpu')\n";
    assert!(codes(src).contains(&"GH018"), "{:?}", codes(src));
    let out = fixed(src);
    assert!(
        out.contains("os.environ['CUDA_VISIBLE_DEVICES'] = '1'"),
        "{out}"
    );
    assert!(
        out.contains(
            "    if mask != '1':\n        raise RuntimeError(f\"mask {mask}, not '0'\")\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("assert os.environ[\"CUDA_VISIBLE_DEVICES\"] == \"1\"\n"),
        "{out}"
    );
    // A value the file never sets is a question the program asks, left alone.
    assert!(
        out.contains("if os.getenv('CUDA_VISIBLE_DEVICES') == '':"),
        "{out}"
    );
    assert!(!codes(&out).contains(&"GH018"), "{out}");
    // A table of expected values checked in a loop: each managed key's value is a check.
    let src = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'\nimport torch\n\nEXPECTED = {\n    \"CUDA_VISIBLE_DEVICES\": \"0\",\n    \"OMP_NUM_THREADS\": \"0\",\n}\n\n\ndef check():\n    for key, want in EXPECTED.items():\n        now = os.environ.get(key)\n        if now != want:\n            return False\n    return True\n";
    assert!(codes(src).contains(&"GH018"), "{:?}", codes(src));
    let out = fixed(src);
    assert!(
        out.contains("EXPECTED = {\n    \"CUDA_VISIBLE_DEVICES\": \"1\",\n    \"OMP_NUM_THREADS\": \"0\",\n}"),
        "{out}"
    );
    // The same table never compared with the env is data, left alone.
    let unread = src.replace("now != want", "now is None");
    assert!(!codes(&unread).contains(&"GH018"), "{:?}", codes(&unread));
    // Checking the policy's own value is not a finding.
    let src = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nimport torch\nassert os.environ['CUDA_VISIBLE_DEVICES'] == '1'\n";
    assert!(!codes(src).contains(&"GH018"), "{:?}", codes(src));
}

#[test]
fn main_block_calls_the_validation_first() {
    let out = fixed(
        "import torch\n\ndef main():\n    torch.zeros(1).cuda()\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    assert!(out.contains("def validate_rtx3090_mandatory():"), "{out}");
    assert!(
        out.contains(
            "if __name__ == \"__main__\":\n    validate_rtx3090_mandatory()\n    main()\n"
        ),
        "{out}"
    );
}

#[test]
fn no_validation_where_it_would_change_what_the_program_does() {
    // A CPU path (a "cpu" device, an is_available() check, a --device option), no CUDA use at
    // all, or worker processes: the validator would raise or poison the workers.
    for src in [
        "import torch\nDEV = 'cuda' if torch.cuda.is_available() else 'cpu'\nif __name__ == \"__main__\":\n    torch.zeros(1).to(DEV)\n",
        "import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--device', default='cuda')\nif __name__ == \"__main__\":\n    torch.zeros(1).cuda()\n",
        "import torch\nif __name__ == \"__main__\":\n    print(torch.tensor([1]) + 1)\n",
        "import multiprocessing\nimport torch\nif __name__ == \"__main__\":\n    torch.zeros(1).cuda()\n    multiprocessing.Pool(2)\n",
    ] {
        let out = fixed(src);
        assert!(!out.contains("def validate_"), "{out}");
        assert!(out.contains("os.environ['CUDA_VISIBLE_DEVICES'] = '1'"), "{out}");
    }
}

#[test]
fn a_compliant_file_has_no_edits() {
    let once = fixed(
        "#!/usr/bin/env python3\n\"\"\"Doc.\"\"\"\nimport torch\nx = torch.zeros(1).cuda(1)\n",
    );
    assert!(codes(&once).is_empty(), "{:?}", codes(&once));
}

#[test]
fn a_misplaced_header_moves_whole() {
    let once = fixed("\"\"\"Doc.\"\"\"\nimport torch\n");
    // A standard-library import above the header changes nothing: still compliant.
    let stdlib = once.replacen("import os\n", "import sys\nimport os\n", 1);
    assert!(codes(&stdlib).is_empty(), "{:?}", codes(&stdlib));
    // A GPU import above it does: the header comes back above it, once, in place of the old one.
    let moved = once.replacen("import os\n", "import torch\nimport os\n", 1);
    assert!(codes(&moved).contains(&"GH002"), "{:?}", codes(&moved));
    let out = fixed(&moved);
    assert_eq!(out.matches(HEADER_LINE).count(), 1, "{out}");
    assert!(
        out.find(HEADER_LINE).unwrap() < out.find("import torch").unwrap(),
        "{out}"
    );
}

#[test]
fn files_without_gpu_code_are_left_alone() {
    assert!(codes("import wave\nprint('device')\n").is_empty());
}

#[test]
fn writes_that_cannot_raise_are_not_undone_by_their_try() {
    let src = "import os\ntry:\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\n    os.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\n    os.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\nexcept Exception:\n    pass\nimport torch\n";
    assert!(codes(src).is_empty(), "{:?}", codes(src));
}

#[test]
fn a_hand_written_setdefault_guard_is_a_setdefault() {
    let src = "import os\nif 'CUDA_VISIBLE_DEVICES' not in os.environ:\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\nimport torch\n";
    // The policy wants the mask forced: the guard goes whole, no `if …: pass` is left.
    assert!(codes(src).contains(&"GH002"), "{:?}", codes(src));
    let out = fixed(src);
    assert!(
        !out.contains("not in os.environ") && !out.contains("pass"),
        "{out}"
    );
    // Under a scheduler the guard is the expected form.
    let policy = Policy {
        respect_scheduler: true,
        ..Policy::default()
    };
    let header = PythonHeader::load(&policy, std::path::Path::new(".")).unwrap();
    let py = Python::new(policy, header);
    let scheduled = "import os\nif 'CUDA_VISIBLE_DEVICES' not in os.environ:\n    os.environ['CUDA_VISIBLE_DEVICES'] = '1'\nif not os.environ.get('CUDA_DEVICE_ORDER'):\n    os.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ.setdefault('PYTORCH_CUDA_ALLOC_CONF', 'max_split_size_mb:1024')\nimport torch\n";
    let found: Vec<_> = analyze(&py, scheduled)
        .findings()
        .iter()
        .filter(|f| f.is_violation())
        .map(|f| f.message.clone())
        .collect();
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn an_env_default_is_the_index_used_when_the_variable_is_unset() {
    let out = fixed("import os\nimport torch\ntorch.cuda.set_device(int(os.environ.get('GPU_ID', '1')))\nx = torch.zeros(1).to(os.getenv('DEV', 'cuda:1'))\n");
    assert!(out.contains("os.environ.get('GPU_ID', '0')"), "{out}");
    assert!(out.contains("os.getenv('DEV', 'cuda:0')"), "{out}");
}

#[test]
fn an_environment_replaced_after_the_header_is_reported_not_fixed() {
    for late in [
        "os.environ = dict(os.environ)\n",
        "from dotenv import load_dotenv\nload_dotenv(override=True)\n",
        "os.environ.clear()\n",
    ] {
        let src = format!("{}import torch\n{late}", HEADER_SRC);
        let py = python();
        let analysis = analyze(&py, &src);
        assert!(analysis.edits().is_empty(), "{late}");
        assert!(
            analysis.findings().iter().any(|f| f.is_violation()
                && !f.fixable
                && f.help
                    .as_deref()
                    .is_some_and(|h| h.contains("not fixed automatically"))),
            "{late}: {:?}",
            analysis
                .findings()
                .iter()
                .map(|f| &f.message)
                .collect::<Vec<_>>()
        );
    }
}

const HEADER_SRC: &str = "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nos.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nos.environ['PYTORCH_CUDA_ALLOC_CONF'] = 'max_split_size_mb:1024'\n";

#[test]
fn update_with_a_dict_and_keywords_keeps_the_other_keys() {
    // The last key of the dict and the first keyword are managed: each list loses its own.
    let out = fixed("import os\nos.environ.update({\"OMP_NUM_THREADS\": \"4\", \"CUDA_VISIBLE_DEVICES\": \"0\"}, CUDA_DEVICE_ORDER=\"FASTEST_FIRST\", HF_HOME=\"/m\")\nimport torch\n");
    assert!(
        out.contains("os.environ.update({\"OMP_NUM_THREADS\": \"4\"}, HF_HOME=\"/m\")\n"),
        "{out}"
    );
    // Every key of the dict managed: the dict empties, the keywords stay; and the other way.
    let out = fixed("import os\nos.environ.update({\"CUDA_VISIBLE_DEVICES\": \"0\",}, HF_HOME=\"/m\")\nimport torch\n");
    assert!(
        out.contains("os.environ.update({}, HF_HOME=\"/m\")\n"),
        "{out}"
    );
    let out = fixed("import os\nos.environ.update({\"HF_HOME\": \"/m\"}, CUDA_VISIBLE_DEVICES=\"0\")\nimport torch\n");
    assert!(
        out.contains("os.environ.update({\"HF_HOME\": \"/m\"})\n"),
        "{out}"
    );
}

#[test]
fn a_docstring_joined_to_the_gpu_import_gets_the_header_between_them() {
    let out = fixed("\"\"\"Doc.\"\"\"; import torch\nx = torch.zeros(1).cuda(1)\n");
    assert!(
        out.starts_with("\"\"\"Doc.\n🚨 CONFIGURATION GPU: RTX 3090 (CUDA:1) OBLIGATOIRE\n\"\"\"\n\nimport os\n"),
        "{out}"
    );
    assert!(
        out.find(HEADER_LINE).unwrap() < out.find("\nimport torch\n").unwrap(),
        "{out}"
    );
    assert!(
        out.ends_with("\nimport torch\nx = torch.zeros(1).cuda(0)\n"),
        "{out}"
    );
    // A standard-library import on the line stays above the header with the docstring.
    let out = fixed("\"\"\"Doc.\"\"\"; import sys; import torch\n");
    assert!(out.contains("\"\"\"; import sys\n\nimport os\n"), "{out}");
    assert!(out.ends_with("mémoire\n\nimport torch\n"), "{out}");
}

/// CPython compiles `source` (written to a temp file, read back as bytes).
fn compiles(source: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.py"), source).unwrap();
    common::python_compiles(dir.path(), &["m.py"])
}

#[cfg_attr(
    windows,
    ignore = "it runs the Linux python3, which a Windows program under Wine cannot start"
)]
#[test]
fn a_header_put_above_from_future_by_hand_is_repaired_by_moving_the_future_up() {
    let once = fixed("\"\"\"Doc.\"\"\"\nfrom __future__ import annotations\nimport torch\n");
    // A hand migration put the header between the docstring and the future import.
    let broken = once
        .replacen("from __future__ import annotations\n", "", 1)
        .replacen(
            "import torch\n",
            "from __future__ import annotations\nimport torch\n",
            1,
        );
    assert!(compiles(&broken).is_err(), "{broken}");
    assert_eq!(codes(&broken), ["GH015"]);
    assert_eq!(fixed(&broken), once);
    // Above everything, with no docstring: the future goes first, with its comment, and the
    // hand-written header is completed in place.
    let top = format!("import os\n{HEADER_LINE}os.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID'\nfrom __future__ import annotations  # typing\nimport torch\n");
    assert_eq!(codes(&top), ["GH002", "GH015"]);
    let out = fixed(&top);
    assert!(
        out.contains("\"\"\"\nfrom __future__ import annotations  # typing\nimport os\n"),
        "{out}"
    );
    assert_eq!(compiles(&out), Ok(()), "{out}");
    // A future import that no move of whole statements can place is still refused.
    let info = FileInfo {
        path: std::path::Path::new("module.py"),
        rel: "module.py",
        in_phase: false,
    };
    let nested = "import torch\nif True:\n    from __future__ import annotations\n";
    let err = python().analyze(&info, nested).err().expect("refused");
    assert!(
        err.message.contains("CPython refuses this file"),
        "{}",
        err.message
    );
}

#[test]
fn class_attributes_and_dataclass_defaults_carry_devices() {
    let src = "import torch\nfrom dataclasses import dataclass, field\n\nclass Runner:\n    device = \"cuda:1\"\n\n    def run(self, x):\n        return x.to(self.device)\n\n@dataclass\nclass Args:\n    gpu: str = field(default=\"cuda:1\")\n    name: str = \"cuda:1 is the big card\"\n\ndef main(args: Args):\n    return torch.zeros(1).to(args.gpu)\n";
    assert_eq!(codes(src), ["GH001", "GH104", "GH104"]);
    let out = fixed(src);
    assert!(
        out.contains("    device = \"cuda:0\"\n")
            && out.contains("field(default=\"cuda:0\")")
            && out.contains("\"cuda:1 is the big card\""),
        "{out}"
    );
}

#[test]
fn a_callable_passed_with_its_device_is_a_device_use() {
    let src = "import asyncio\nimport torch\n\nasync def load(model):\n    await asyncio.to_thread(model.to, \"cuda:1\")\n    await loop.run_in_executor(None, torch.cuda.set_device, 1)\n";
    assert_eq!(codes(src), ["GH001", "GH101", "GH102"]);
    let out = fixed(src);
    assert!(
        out.contains("to_thread(model.to, \"cuda:0\")")
            && out.contains("torch.cuda.set_device, 0)"),
        "{out}"
    );
}

/// The child-process findings (GH016: a forbidden card, GH011: another value) with their lines.
fn child_env_findings(found: &dyn Analysis, src: &str) -> Vec<(&'static str, usize)> {
    found
        .findings()
        .iter()
        .filter(|f| f.rule.code == "GH016" || f.rule.code == "GH011")
        .map(|f| (f.rule.code, src[..f.range.start].lines().count()))
        .collect()
}

#[test]
fn a_child_given_a_forbidden_card_is_a_violation_wherever_its_env_is_built() {
    let src = "import os\nimport subprocess\nimport torch\n\ndef launch(gpu):\n    env = os.environ.copy()\n    env[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\n    subprocess.run([\"python\", \"w.py\"], env=env)\n    os.system(\"CUDA_VISIBLE_DEVICES=0 python w.py\")\n    subprocess.run([\"env\", \"CUDA_VISIBLE_DEVICES=0\", \"python\", \"w.py\"])\n    subprocess.run(f\"CUDA_VISIBLE_DEVICES={gpu} python w.py\", shell=True)\n    subprocess.run(\"CUDA_VISIBLE_DEVICES=1 python w.py\", shell=True)\n";
    let py = python();
    let found = analyze(&py, src);
    let child = child_env_findings(&*found, src);
    // The dict built in a variable, the shell prefix, the `env` argument list; a computed
    // value is for review; the policy's own card is fine.
    assert_eq!(
        child,
        [("GH016", 7), ("GH016", 9), ("GH016", 10), ("GH011", 11)]
    );
    assert!(found.findings().iter().all(|f| f.edits.is_empty()));
}

/// Trial 60 (ultralytics' tests): a child env that leaves CUDA_VISIBLE_DEVICES out (a
/// comprehension that filters it, `pop`, `del`) starts the child on every card, the forbidden
/// one too: a violation, never compliant. Another variable left out is for review.
#[test]
fn a_child_env_that_drops_the_mask_is_a_violation() {
    let src = "import os\nimport subprocess\nimport torch\n\n\ndef cold():\n    env = {k: v for k, v in os.environ.items() if k != \"CUDA_VISIBLE_DEVICES\"}\n    subprocess.run([\"yolo\", \"train\"], check=True, env=env)\n\n\ndef popped():\n    env = os.environ.copy()\n    env.pop(\"CUDA_VISIBLE_DEVICES\", None)\n    subprocess.run([\"python\", \"w.py\"], env=env)\n\n\ndef deleted():\n    env = dict(os.environ)\n    del env[\"CUDA_DEVICE_ORDER\"]\n    subprocess.run([\"python\", \"w.py\"], env=env)\n\n\ndef kept():\n    env = {k: v for k, v in os.environ.items() if k != \"HOME\"}\n    subprocess.run([\"python\", \"w.py\"], env=env)\n    torch.zeros(1).cuda()\n";
    let py = python();
    let found = analyze(&py, src);
    assert_eq!(
        child_env_findings(&*found, src),
        [("GH016", 7), ("GH016", 13), ("GH011", 19)]
    );
    assert!(found
        .findings()
        .iter()
        .all(|f| f.edits.is_empty() || f.rule.code == "GH001"));
}

/// Issue 35: a launcher whose helper builds the child's env or command line was "without GPU
/// code", green, while it started its worker on card 0. The helper's `return` is followed from
/// the call that starts the child; each write is judged once, where the helper writes it.
#[test]
fn a_child_env_or_command_built_by_a_helper_is_judged_where_the_helper_writes_it() {
    let src = "import subprocess\n\n\ndef env_for(i):\n    return {\"CUDA_VISIBLE_DEVICES\": str(i)}\n\n\ndef pinned():\n    env = dict(PATH=\"/usr/bin\")\n    env[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\n    return env\n\n\ndef command(i, script):\n    return \"CUDA_VISIBLE_DEVICES=%d python %s\" % (i, script)\n\n\nclass Pool:\n    def line(self):\n        return \"CUDA_VISIBLE_DEVICES=0 python w.py\"\n\n    def start(self):\n        subprocess.Popen(self.line(), shell=True)\n\n\nif __name__ == \"__main__\":\n    subprocess.run([\"python\", \"w.py\"], env=env_for(0))\n    subprocess.run([\"python\", \"w.py\"], env=env_for(1))\n    subprocess.run([\"python\", \"w.py\"], env=pinned())\n    subprocess.Popen(command(0, \"w.py\"), shell=True)\n    print(command(1, \"w.py\"))\n";
    let py = python();
    let found = analyze(&py, src);
    let child = child_env_findings(&*found, src);
    // `env_for` (computed, called twice: one finding), `pinned` (card 0 in a dict built in a
    // variable), `command` (a `%` format: computed), the method's literal card 0.
    assert_eq!(
        child,
        [("GH011", 5), ("GH016", 10), ("GH011", 15), ("GH016", 20)]
    );
    // The launcher is not a file "without GPU code": it starts a child on the forbidden card.
    let tree = common::tree();
    common::write(tree.path(), "launch.py", src);
    let out = common::run(common::gh(tree.path()).args(["scan", "--format", "json", "."]));
    assert_eq!(
        common::statuses(&out.stdout)["launch.py"],
        "non_compliant",
        "{}",
        out.stdout
    );
}

#[test]
fn env_helpers_are_env_writes() {
    // `import setGPU` picks the least busy card at import: it goes, the header decides.
    let out = fixed("import setGPU\nimport torch\nx = torch.zeros(1).cuda()\n");
    assert!(
        !out.contains("setGPU") && out.contains(HEADER_LINE),
        "{out}"
    );
    // pytest's monkeypatch and mock.patch.dict in a test contradict the policy.
    let src = "import os\nfrom unittest import mock\nimport torch\n\ndef test_a(monkeypatch):\n    monkeypatch.setenv(\"CUDA_VISIBLE_DEVICES\", \"0\")\n\n@mock.patch.dict(os.environ, {\"CUDA_VISIBLE_DEVICES\": \"0\"})\ndef test_b():\n    pass\n";
    let found = codes(src);
    assert_eq!(
        found.iter().filter(|c| **c == "GH006").count(),
        2,
        "{found:?}"
    );
}

#[test]
fn nvml_indices_are_judged_by_pci_bus() {
    let src = "import pynvml\nimport torch\n\npynvml.nvmlInit()\nbad = pynvml.nvmlDeviceGetHandleByIndex(0)\ngood = pynvml.nvmlDeviceGetHandleByIndex(1)\ncuda = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())\nevery = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]\n";
    let py = python();
    let found = analyze(&py, src);
    let nvml: Vec<(&str, usize)> = found
        .findings()
        .iter()
        .filter(|f| f.rule.code.starts_with("GH11") || f.rule.code == "GH109")
        .map(|f| (f.rule.code, src[..f.range.start].lines().count()))
        .collect();
    assert_eq!(nvml, [("GH109", 5), ("GH110", 7)]);
    // The index becomes the policy's card, as an unsafe fix.
    let out = fixed(src);
    assert!(
        out.contains("bad = pynvml.nvmlDeviceGetHandleByIndex(1)")
            && out.contains("good = pynvml.nvmlDeviceGetHandleByIndex(1)"),
        "{out}"
    );
}

#[test]
fn a_device_read_from_a_config_file_is_for_review_with_its_file_and_key() {
    let src = "import json\nimport torch\nimport yaml\n\ncfg = yaml.safe_load(open(\"conf/train.yaml\"))\nmodel = torch.nn.Linear(1, 1).to(cfg[\"train\"][\"device\"])\nwith open(p) as f:\n    opts = json.load(f)\ntorch.cuda.set_device(opts.get(\"gpu\"))\n";
    let py = python();
    let messages: Vec<String> = analyze(&py, src)
        .findings()
        .iter()
        .filter(|f| f.rule.code == "GH111")
        .map(|f| f.message.clone())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].contains("key `train.device` of `conf/train.yaml`")
            && messages[1].contains("key `gpu` of a JSON file"),
        "{messages:?}"
    );
}

#[test]
fn a_device_constant_imported_from_a_tree_module_is_followed_to_its_definition() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app");
    std::fs::create_dir(&app).unwrap();
    std::fs::write(app.join("__init__.py"), "from .config import DEVICE\n").unwrap();
    std::fs::write(app.join("config.py"), "DEVICE = \"cuda:1\"\nGPU_ID = 1\n").unwrap();
    std::fs::write(
        app.join("__main__.py"),
        "import torch\nfrom app import DEVICE as D\nimport app.config as cfg\n\nmodel = torch.nn.Linear(1, 1).to(D)\ntorch.cuda.set_device(cfg.GPU_ID)\n",
    )
    .unwrap();
    let out = common::run(common::gh(dir.path()).args(["scan", "--format", "json", "."]));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let main = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "app/__main__.py")
        .expect("the program");
    assert_eq!(main["status"], "non_compliant");
    let messages: Vec<&str> = main["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "GH104")
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    // Through the package's re-export, and as a module attribute: both named where to change.
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].contains("`DEVICE = \"cuda:1\"` in `app/config.py` line 1")
            && messages[1].contains("`GPU_ID = 1` in `app/config.py` line 2"),
        "{messages:?}"
    );
}

#[test]
fn a_removed_write_takes_its_banner_and_echoes_but_not_unrelated_prose() {
    let src = "import os\nimport torch\n\n\ndef setup_gpu():\n    # Force the second card\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\n    print(f\"Using GPU {os.environ['CUDA_VISIBLE_DEVICES']}\")\n    return torch.cuda.is_available()\n\n\ndef reset():\n    # Clean state for each run.\n    # Called by the scheduler between jobs,\n    # see docs/runs.md.\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"\n    return 1\n";
    let out = fixed(src);
    assert!(
        out.contains("def setup_gpu():\n    return torch.cuda.is_available()\n"),
        "{out}"
    );
    // Prose that is not about the GPU documents the function, not the write: it stays.
    assert!(
        out.contains("def reset():\n    # Clean state for each run.\n    # Called by the scheduler between jobs,\n    # see docs/runs.md.\n    return 1\n"),
        "{out}"
    );
}

#[test]
fn a_library_write_goes_with_its_banner_and_echo_under_unsafe_fixes() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"pkg\"\nversion = \"1\"\n[project.scripts]\npkg = \"pkg.cli:main\"\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("model.py"),
        "import os\n\n# Use the second GPU\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nprint(\"GPU:\", os.environ[\"CUDA_VISIBLE_DEVICES\"])\nimport torch\n\n\ndef load():\n    return torch.zeros(1).cuda()\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("cli.py"),
        "from pkg.model import load\n\n\ndef main():\n    load()\n",
    )
    .unwrap();
    // Held back without --unsafe-fixes: the library stays non-compliant, and says so.
    let plain = common::run(common::gh(dir.path()).args(["fix", "."]));
    assert_eq!(plain.code, 1, "{}", plain.stdout);
    assert!(
        plain
            .stdout
            .contains(&format!("{}:4:1: GH013", common::shown("pkg/model.py"))),
        "{}",
        plain.stdout
    );
    let out = common::run(common::gh(dir.path()).args(["fix", "--unsafe-fixes", "."]));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(
        std::fs::read_to_string(pkg.join("model.py")).unwrap(),
        "import os\n\nimport torch\n\n\ndef load():\n    return torch.zeros(1).cuda()\n"
    );
}

#[test]
fn a_tree_without_a_config_gets_the_neutral_header() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.py"),
        "\"\"\"Train.\"\"\"\n\nimport json\nimport sys\n\nimport torch\n\nx = torch.zeros(1).cuda(json.loads(sys.argv[1]))\n",
    )
    .unwrap();
    let out =
        common::run(common::gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // The docstring is the project's own; `import os` joins the standard-library imports at its
    // sorted place; short English comments, double quotes, no emoji.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("m.py")).unwrap(),
        "\"\"\"Train.\"\"\"\n\nimport json\nimport os\nimport sys\n\n# GPU selection (gpu-homogenize): the RTX 3090 only.\n# Never the RTX 5060 Ti.\n# PCI bus order, then the mask: the RTX 3090 becomes cuda:0.\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\nos.environ[\"CUDA_DEVICE_ORDER\"] = \"PCI_BUS_ID\"\nos.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"max_split_size_mb:1024\"\n\nimport torch\n\nx = torch.zeros(1).cuda(json.loads(sys.argv[1]))\n"
    );
}

#[test]
fn a_flake8_gated_project_gets_noqa_e402_on_the_imports_after_the_header() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("setup.cfg"),
        "[flake8]\nmax-line-length = 88\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("m.py"),
        "import sys\n\nimport numpy as np\nimport torch  # the framework\n\nx = torch.zeros(1).cuda(int(sys.argv[1]))\nimport json\n",
    )
    .unwrap();
    let out =
        common::run(common::gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(dir.path().join("m.py")).unwrap();
    // The imports the header now precedes, not the one after code (E402 already).
    assert!(
        text.ends_with("\n\nimport numpy as np  # noqa: E402\nimport torch  # noqa: E402  # the framework\n\nx = torch.zeros(1).cuda(int(sys.argv[1]))\nimport json\n"),
        "{text}"
    );
    let again =
        common::run(common::gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert!(again.stdout.contains("Fixed 0 files"), "{}", again.stdout);
}

/// From the trial (realesrgan): a flake8 project whose `import os` comes after a third-party
/// import; the header brings `import os` up and the old one goes, with no noqa planned on it
/// (the edits conflicted and the file was left unfixed).
#[test]
fn a_later_import_os_that_goes_gets_no_noqa() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("setup.cfg"), "[flake8]\n").unwrap();
    std::fs::write(
        dir.path().join("m.py"),
        "import argparse\nimport cv2\nimport os\n\nimport torch\n\nx = torch.zeros(1).cuda(1)\nprint(argparse, cv2)\n",
    )
    .unwrap();
    let out =
        common::run(common::gh(dir.path()).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(dir.path().join("m.py")).unwrap();
    assert!(
        text.starts_with("import argparse\nimport os\n\n# GPU selection"),
        "{text}"
    );
    assert!(
        text.contains("\nimport cv2  # noqa: E402\n\nimport torch  # noqa: E402\n"),
        "{text}"
    );
    assert_eq!(text.matches("import os").count(), 1, "{text}");
}

/// `import torch.distributed` in a library module (collectives, a rank check) is information;
/// in a script run under a launcher (a `__main__` block) it is one process per GPU (GH204).
#[test]
fn torch_distributed_is_per_rank_in_a_script_and_information_in_a_library() {
    let library = "import torch\nimport torch.distributed as dist\n\n\ndef reduce(x):\n    if dist.is_initialized():\n        dist.all_reduce(x)\n    return x\n";
    let codes_of_library = codes(library);
    assert!(!codes_of_library.contains(&"GH204"), "{codes_of_library:?}");
    let info: Vec<&str> = analyze(&python(), library)
        .findings()
        .iter()
        .map(|f| f.rule.code)
        .collect();
    assert!(info.contains(&"GH201"), "{info:?}");
    let script = "import torch\nimport torch.distributed as dist\n\nif __name__ == \"__main__\":\n    dist.init_process_group(\"nccl\")\n    x = torch.zeros(1).cuda()\n";
    assert!(codes(script).contains(&"GH204"), "{:?}", codes(script));
}

/// A mask taken from a command-line option (`-g 0`) lets whoever runs the program pick the
/// card, the forbidden one included: its own violation (GH017) whatever else the file does. A
/// file that also starts `torch.distributed` (GH204) still gets it, and its env findings too:
/// one rule never hides another.
#[test]
fn a_mask_from_an_option_is_its_own_violation_whatever_else_the_file_does() {
    let launcher = "import argparse\nimport os\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"-g\", \"--gpu\", default=\"0\")\nargs = parser.parse_args()\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = args.gpu\n\nimport torch\nimport torch.distributed as dist\n\n\ndef main():\n    dist.init_process_group(\"nccl\")\n    torch.nn.Linear(2, 2).cuda()\n\n\nif __name__ == \"__main__\":\n    main()\n";
    let found = codes(launcher);
    for code in ["GH017", "GH002", "GH204"] {
        assert!(found.contains(&code), "{code} missing: {found:?}");
    }
    // Every way a program reads its command line: an option through a local name or a call,
    // `sys.argv`, a namespace whose parser lives elsewhere, a write inside `main()`.
    for write in [
        "gpu = args.gpu\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = str(gpu)\n",
        "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \",\".join(map(str, args.gpu))\n",
        "os.environ.setdefault(\"CUDA_VISIBLE_DEVICES\", f\"{args.gpu}\")\n",
        "os.environ.update({\"CUDA_VISIBLE_DEVICES\": args.gpu})\n",
        "os.environ[\"CUDA_VISIBLE_DEVICES\"] = sys.argv[1]\n",
    ] {
        let src = format!("import argparse\nimport os\nimport sys\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"--gpu\")\nargs = parser.parse_args()\n{write}\nimport torch\n\ntorch.zeros(1).cuda()\n");
        assert!(codes(&src).contains(&"GH017"), "{src}\n{:?}", codes(&src));
    }
    let elsewhere = "import os\n\nfrom opts import get_parser\n\n\ndef main():\n    opt = get_parser().parse_args()\n    os.environ[\"CUDA_VISIBLE_DEVICES\"] = opt.gpu_ids\n    import torch\n    torch.zeros(1).cuda()\n\n\nif __name__ == \"__main__\":\n    main()\n";
    assert!(
        codes(elsewhere).contains(&"GH017"),
        "{:?}",
        codes(elsewhere)
    );
    // A value from elsewhere (the caller's env) is no option.
    let inherited = "import os\n\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = os.environ.get(\"GPU\", \"1\")\n\nimport torch\n\ntorch.zeros(1).cuda()\n";
    assert!(
        !codes(inherited).contains(&"GH017"),
        "{:?}",
        codes(inherited)
    );
    // Where the header replaces the write, the plan fixes it: the option no longer selects.
    let plain = launcher
        .replace("import torch.distributed as dist\n", "")
        .replace("    dist.init_process_group(\"nccl\")\n", "");
    let findings = analyze(&python(), &plain).findings().to_vec();
    let own = findings
        .iter()
        .find(|f| f.rule.code == "GH017")
        .expect("GH017");
    assert!(own.fixable, "{own:?}");
    let out = fixed(&plain);
    assert!(!out.contains("= args.gpu"), "{out}");
}

/// `# noqa: GH204` (the launcher starts one process per allowed card) accepts that finding
/// only: the mask the file takes from `-g` is still a violation, and a program without the
/// header still needs it — the fix then writes it (the accepted finding no longer holds the
/// plan back), replacing the mask from `-g` by the policy's.
#[test]
fn a_noqa_on_one_rule_silences_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    common::write(
        root,
        "launch.py",
        "import argparse\nimport os\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"-g\", default=\"0\")\nargs = parser.parse_args()\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = args.g\n\nimport torch\nimport torch.distributed as dist  # noqa: GH204\n\nif __name__ == \"__main__\":\n    dist.init_process_group(\"nccl\")\n    torch.zeros(1).cuda()\n",
    );
    common::write(
        root,
        "ddp.py",
        "import os\n\nimport torch\nimport torch.distributed as dist  # noqa: GH204\n\n\ndef main():\n    torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))  # noqa: GH204\n    dist.init_process_group(\"nccl\")\n\n\nif __name__ == \"__main__\":\n    main()\n",
    );
    let scan = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let status = common::statuses(&scan.stdout);
    assert_eq!(status["launch.py"], "non_compliant", "{}", scan.stdout);
    assert_eq!(status["ddp.py"], "non_compliant", "{}", scan.stdout);
    assert!(scan.stdout.contains("\"GH017\""), "{}", scan.stdout);
    let fix =
        common::run(common::gh(root).args(["fix", "--gpu", "off", "--no-journal", "--no-cache"]));
    let ddp = std::fs::read_to_string(root.join("ddp.py")).unwrap();
    assert!(
        ddp.contains("os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\""),
        "{}{}\n{ddp}",
        fix.stdout,
        fix.stderr
    );
    let launch = std::fs::read_to_string(root.join("launch.py")).unwrap();
    assert!(
        !launch.contains("= args.g\n") && launch.contains("= \"PCI_BUS_ID\""),
        "{launch}"
    );
}

/// A device string that only reaches output (a log message, an f-string printed), a
/// comparison or a validator's list of accepted strings chooses no card: no finding, and alone
/// it makes no GPU code.
#[test]
fn a_device_string_only_shown_or_compared_is_no_device_choice() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    common::write(
        root,
        "log_only.py",
        "import logging\n\nlogger = logging.getLogger(__name__)\ndev = \"cuda:1\"\nlogger.info(\"on cuda:1\")\nlogger.info(\"using %s\", \"cuda:1\")\nlogger.info(f\"running on {dev}\")\nprint(f\"device cuda:1 is {dev}\")\n",
    );
    common::write(
        root,
        "compare_only.py",
        "import sys\n\n\ndef check(dev):\n    if dev == \"cuda:1\":\n        print(\"second card\")\n    return dev in (\"cuda:0\", \"cuda:1\")\n\n\nif __name__ == \"__main__\":\n    check(sys.argv[1])\n",
    );
    common::write(
        root,
        "validator.py",
        "import re\n\nACCEPTED = [\"cpu\", \"cuda\", \"cuda:0\", \"cuda:1\", \"mps\"]\nPATTERNS = [r\"^cuda:\\d+$\", \"cuda:1\"]\n\n\ndef valid(value):\n    return value in ACCEPTED or any(re.match(p, value) for p in PATTERNS)\n\n\nif __name__ == \"__main__\":\n    print(valid(\"x\"))\n",
    );
    // The same string reaching a device is a choice.
    common::write(
        root,
        "uses.py",
        "import torch\n\ndev = \"cuda:1\"\nprint(f\"on {dev}\")\nx = torch.zeros(1).to(dev)\n",
    );
    let out = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let status = common::statuses(&out.stdout);
    for file in ["log_only.py", "compare_only.py", "validator.py"] {
        assert_eq!(status[file], "no_gpu_code", "{file}: {}", out.stdout);
    }
    assert_eq!(status["uses.py"], "non_compliant", "{}", out.stdout);
    assert!(!out.stdout.contains("\"GH108\""), "{}", out.stdout);
}

/// A device string a test puts in a plain data container and asserts back is test data (trial
/// 58: lm_eval's CLI tests, `Namespace(device="cuda:1")` … `assert cfg.device == "cuda:1"`, were
/// given the header and `"cuda:0"`, and failed). The same container in a program, a string not
/// asserted back, or a file that imports a GPU framework keeps its remap.
#[test]
fn a_device_string_a_test_asserts_back_is_data_not_a_device_choice() {
    let dir = common::tree();
    let root = dir.path();
    let test = "from argparse import Namespace\nfrom types import SimpleNamespace\n\n\ndef test_cli_device_is_kept():\n    ns = Namespace(model=\"hf\", device=\"cuda:1\")\n    assert ns.device == \"cuda:1\"\n\n\ndef test_config():\n    cfg = dict(device=\"cuda:2\")\n    assert cfg[\"device\"] in (\"cuda:2\", \"cpu\")\n\n\ndef test_simple(self):\n    self.assertEqual(SimpleNamespace(device=\"cuda:1\").device, \"cuda:1\")\n";
    common::write(root, "tests/test_config.py", test);
    // A program handing a namespace's device to a model; one asserting its own (a GPU framework
    // imported); a namespace whose device is not asserted back.
    common::write(root, "train.py", "from argparse import Namespace\n\nimport torch\n\nargs = Namespace(device=\"cuda:1\")\nmodel = torch.nn.Linear(1, 1).to(args.device)\n");
    common::write(root, "check.py", "from argparse import Namespace\n\nimport torch\n\nargs = Namespace(device=\"cuda:1\")\nassert args.device == \"cuda:1\"\nx = torch.zeros(1, device=args.device)\n");
    common::write(root, "run.py", "from argparse import Namespace\n\nfrom engine import main\n\nmain(Namespace(device=\"cuda:1\"))\n");
    let out = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let status = common::statuses(&out.stdout);
    assert_eq!(
        status["tests/test_config.py"], "no_gpu_code",
        "{}",
        out.stdout
    );
    for file in ["train.py", "check.py", "run.py"] {
        assert_eq!(status[file], "non_compliant", "{file}: {}", out.stdout);
    }
    let out =
        common::run(common::gh(root).args(["fix", "--no-cache", "--no-journal", "--gpu", "off"]));
    assert_eq!(
        std::fs::read_to_string(root.join("tests/test_config.py")).unwrap(),
        test
    );
    for file in ["train.py", "check.py", "run.py"] {
        let fixed = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(
            fixed.contains("Namespace(device=\"cuda:0\")"),
            "{file}: {fixed}\n{}",
            out.stdout
        );
    }
}

/// A dict of parameters splatted into a GPU call holds its keywords: `main_gpu` there is a device
/// index (remapped, unless the dict is also used for something else), `n_gpu_layers=-1` puts the
/// model on a GPU (GPU code, the header is due).
#[test]
fn a_dict_splatted_into_a_gpu_call_chooses_its_device() {
    let splat = "from llama_cpp import Llama\n\nparams = {\"model_path\": \"m.gguf\", \"main_gpu\": 1, \"n_gpu_layers\": -1}\nllm = Llama(**params)\n";
    assert!(codes(splat).contains(&"GH104"), "{:?}", codes(splat));
    let out = fixed(splat);
    assert!(out.contains("\"main_gpu\": 0,"), "{out}");
    let through_dict =
        "from llama_cpp import Llama\n\nllm = Llama(**dict(model_path=\"m.gguf\", main_gpu=1))\n";
    assert!(
        fixed(through_dict).contains("main_gpu=0"),
        "{}",
        fixed(through_dict)
    );
    // The same dict written to a file: rewriting it would change that too.
    let shared = "import json\n\nfrom llama_cpp import Llama\n\nparams = {\"model_path\": \"m.gguf\", \"main_gpu\": 1}\nllm = Llama(**params)\njson.dump(params, open(\"p.json\", \"w\"))\n";
    assert!(codes(shared).contains(&"GH106"), "{:?}", codes(shared));
    let offload =
        "from llama_cpp import Llama\n\nllm = Llama(model_path=\"m.gguf\", n_gpu_layers=-1)\n";
    assert!(codes(offload).contains(&"GH001"), "{:?}", codes(offload));
}

/// A list of device indices (ctranslate2's and faster-whisper's `device_index`, any index
/// keyword) is several cards: more than the policy allows is GH203; one index is remapped.
#[test]
fn a_list_of_device_indices_is_several_cards() {
    let two = "from faster_whisper import WhisperModel\n\nmodel = WhisperModel(\"small\", device=\"cuda\", device_index=[0, 1])\n";
    assert!(codes(two).contains(&"GH203"), "{:?}", codes(two));
    assert_eq!(fixed(two), two, "left as written while GH203 stands");
    let one = "from faster_whisper import WhisperModel\n\nmodel = WhisperModel(\"small\", device=\"cuda\", device_index=[1])\n";
    assert!(fixed(one).contains("device_index=[0]"), "{}", fixed(one));
    let splat = "import ctranslate2\n\nopts = {\"device\": \"cuda\", \"device_index\": [0, 1]}\ntranslator = ctranslate2.Translator(\"m\", **opts)\n";
    assert!(codes(splat).contains(&"GH203"), "{:?}", codes(splat));
}

/// `tc = torch.cuda` (or any name bound once to what an import binds) is `torch.cuda`.
#[test]
fn an_assigned_alias_of_torch_cuda_is_followed() {
    let src = "import torch as t\n\ntc = t.cuda\ntc.set_device(1)\nx = t.zeros(1).cuda()\n";
    assert!(codes(src).contains(&"GH102"), "{:?}", codes(src));
    assert!(fixed(src).contains("tc.set_device(0)"), "{}", fixed(src));
    // Bound twice: nothing is known of it.
    let rebound = "import torch\n\ntc = torch.cuda\ntc = None\ntc.set_device(1)\n";
    assert!(!codes(rebound).contains(&"GH102"), "{:?}", codes(rebound));
}

/// A `# noqa: E402` the fix adds to an import that already carries a comment goes after it:
/// mypy reads `# type: ignore` only as the first comment of a line (CPython's
/// `ast.parse(type_comments=True).type_ignores` sees it then), and a `# pragma`/`# fmt:` comment
/// keeps its place too.
#[cfg_attr(
    windows,
    ignore = "it runs the Linux python3, which a Windows program under Wine cannot start"
)]
#[test]
fn a_noqa_marker_goes_after_the_comments_tools_read_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    common::write(root, "setup.cfg", "[flake8]\nmax-line-length = 120\n");
    common::write(
        root,
        "m.py",
        "import numpy as np  # type: ignore\nimport torch  # pragma: no cover\n\nx = torch.zeros(1).cuda(1)\nprint(np)\n",
    );
    let out = common::run(common::gh(root).args(["fix", "--gpu", "off", "--no-journal", "."]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(root.join("m.py")).unwrap();
    assert!(
        text.contains("import numpy as np  # type: ignore  # noqa: E402\n")
            && text.contains("import torch  # pragma: no cover  # noqa: E402\n"),
        "{text}"
    );
    let check = std::process::Command::new("python3")
        .args([
            "-c",
            "import ast, sys; print(len(ast.parse(open(sys.argv[1]).read(), type_comments=True).type_ignores))",
        ])
        .arg(root.join("m.py"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "1", "{text}");
}

/// From the trial (insanely-fast-whisper's CLI): `device=f"cuda:{args.device_id}"` is a CUDA
/// device whatever the option's value: the program is GPU code and gets the header.
#[test]
fn a_cuda_f_string_is_cuda_use_whatever_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    common::write(
        root,
        "cli.py",
        "import argparse\n\nfrom transformers import pipeline\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"--device-id\", default=\"0\")\nargs = parser.parse_args()\npipe = pipeline(\"automatic-speech-recognition\", device=\"mps\" if args.device_id == \"mps\" else f\"cuda:{args.device_id}\")\n",
    );
    common::write(
        root,
        "log.py",
        "import logging\n\ni = 1\nlogging.info(f\"cuda:{i} is busy\")\n",
    );
    let out = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let status = common::statuses(&out.stdout);
    assert_eq!(status["cli.py"], "non_compliant", "{}", out.stdout);
    assert_eq!(status["log.py"], "no_gpu_code", "{}", out.stdout);
}

/// A file with a validator of its own under another name (`validate_mask`, `check_visible_env`)
/// gets no second one from the template with `--unsafe-fixes`: the header goes in, and the
/// file's own check stays the only one.
#[test]
fn a_validator_of_the_files_own_is_not_doubled_by_the_templates() {
    for name in ["validate_mask", "check_visible_env", "verify_card"] {
        let source = format!(
            "import os\n\nimport torch\n\n\ndef {name}():\n    if \"3090\" not in torch.cuda.get_device_name(0):\n        raise RuntimeError(\"wrong card\")\n\n\nif __name__ == \"__main__\":\n    {name}()\n    print(torch.zeros(1).cuda())\n"
        );
        let new = fixed(&source);
        assert!(new.contains("CUDA_VISIBLE_DEVICES"), "{new}");
        assert_eq!(
            new.matches("\ndef ").count(),
            1,
            "{name}: a second validator\n{new}"
        );
    }
}

/// From a trial on openrlhf and xtuner: `from_pretrained(…, device_map="auto")`, or a wrapper's
/// `get_llm(…, device_map="auto")`, puts the model on the cards the process sees, and the
/// programs doing only that were "without GPU code". It is GPU use (the header then leaves it
/// the policy's card); `device_map="cpu"` is not.
#[test]
fn an_automatic_device_map_is_gpu_use() {
    let dir = common::tree();
    let root = dir.path();
    common::write(root, "convert.py", "from transformers import AutoModelForCausalLM\n\nif __name__ == \"__main__\":\n    model = AutoModelForCausalLM.from_pretrained(\"gpt2\", device_map=\"auto\")\n");
    common::write(root, "serve_rm.py", "from rm.models import get_llm\n\nif __name__ == \"__main__\":\n    model = get_llm(\"gpt2\", device_map=\"balanced\")\n");
    common::write(root, "cpu.py", "from transformers import AutoModelForCausalLM\n\nif __name__ == \"__main__\":\n    model = AutoModelForCausalLM.from_pretrained(\"gpt2\", device_map=\"cpu\")\n");
    let out = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let status = common::statuses(&out.stdout);
    assert_eq!(status["convert.py"], "non_compliant", "{}", out.stdout);
    assert_eq!(status["serve_rm.py"], "non_compliant", "{}", out.stdout);
    assert_eq!(status["cpu.py"], "no_gpu_code", "{}", out.stdout);
}

/// From the trial's applications (Real-ESRGAN's `-g/--gpu-id`, insanely-fast-whisper's
/// `--device-id`): a card index read from a command-line option with no default was reported
/// nowhere, and the fixed program was compliant while every launch script passing the old
/// number (`--gpu-id 1`) selected no device. An option with a default is remapped where the
/// default is written (GH104); one that holds a whole device (`--device cpu`) is the user's
/// choice of CPU or GPU, not an index.
#[test]
fn a_card_index_from_an_option_without_default_is_for_review() {
    let head = "import argparse\n\nimport torch\n\nparser = argparse.ArgumentParser()\n";
    for (option, use_) in [
        ("parser.add_argument(\"-g\", \"--gpu-id\", type=int, default=None)", "x = torch.zeros(1).to(f\"cuda:{args.gpu_id}\" if args.gpu_id is not None else \"cuda\")"),
        ("parser.add_argument(\"--device-id\", type=int)", "x = torch.zeros(1).to(torch.device(\"cuda\", args.device_id))"),
        ("parser.add_argument(\"--gpu\", type=int)", "torch.cuda.set_device(args.gpu)"),
        ("parser.add_argument(\"--gpu\")", "x = torch.zeros(1).to(\"cuda:\" + args.gpu)"),
    ] {
        let source = format!("{head}{option}\nargs = parser.parse_args()\n{use_}\n");
        let found = analyze(&python(), &source);
        assert!(
            found.findings().iter().any(|f| f.rule.code == "GH112"
                && f.message.contains("takes its card index from the command line (`args.")),
            "{source}\n{:?}",
            found.findings()
        );
    }
    for (option, use_) in [
        (
            "parser.add_argument(\"--gpu-id\", type=int, default=1)",
            "x = torch.zeros(1).to(torch.device(\"cuda\", args.gpu_id))",
        ),
        (
            "parser.add_argument(\"--device\")",
            "x = torch.zeros(1).to(args.device)",
        ),
        (
            "parser.add_argument(\"--device\")",
            "torch.cuda.set_device(args.device)",
        ),
    ] {
        let source = format!("{head}{option}\nargs = parser.parse_args()\n{use_}\n");
        let found = analyze(&python(), &source);
        assert!(
            !found.findings().iter().any(|f| f.rule.code == "GH112"),
            "{source}\n{:?}",
            found.findings()
        );
    }
    // A default of digits in a string is the index `f"cuda:{…}"` builds: remapped there.
    let source = format!("{head}parser.add_argument(\"--device-id\", default=\"1\", type=str)\nargs = parser.parse_args()\nx = torch.zeros(1).to(f\"cuda:{{args.device_id}}\")\n");
    let out = fixed(&source);
    assert!(
        out.contains("parser.add_argument(\"--device-id\", default=\"0\", type=str)"),
        "{out}"
    );
}

/// A parameter that chooses the card makes each call's argument there a device choice: a
/// function, a class's `__init__`, a method called on `self` or on an instance of its class, a function that hands its
/// parameter on to another, by position or keyword. A comparison with `None` is no other use;
/// a truth test is (GH106), an `isinstance` test is not. A suffix appended to `"cuda"` carries
/// the index (`"cuda" + gpu_str`). Not followed: a nested function, an argument after `*args`.
#[test]
fn an_index_handed_to_a_parameter_that_chooses_the_card_is_a_device_choice() {
    let source = "import torch\n\n\ndef place(x, *, card=None):\n    if card is None:\n        return x.cuda()\n    return x.to(torch.device(\"cuda\", card))\n\n\ndef outer(x, gpu):\n    return place(x, card=gpu)\n\n\nclass Runner:\n    def __init__(self, device_id):\n        self.device_id = device_id\n\n    def start(self, gpu):\n        torch.cuda.set_device(gpu)\n\n    def go(self):\n        self.start(1)\n\n\ndef main():\n    outer(torch.zeros(1), 1)\n    Runner(0).go()\n    runner = Runner(0)\n    runner.start(1)\n    args = [1]\n    place(torch.zeros(1), *args)\n\n    def inner(g):\n        torch.cuda.set_device(g)\n\n    inner(1)\n\n\nmain()\n";
    let out = fixed(source);
    for moved in [
        "outer(torch.zeros(1), 0)",
        "self.start(0)",
        "runner.start(0)",
    ] {
        assert!(out.contains(moved), "{moved}\n{out}");
    }
    // `inner` is nested: its call is not followed (its literal is left as written).
    assert!(out.contains("    inner(1)\n"), "{out}");
    // basicsr's `get_device`: the suffix appended to "cuda" carries the index, and an
    // `isinstance` test is no other use of it (0 is an int as 1 is).
    let steps = "import torch\n\n\ndef get_device(gpu_id=None):\n    if gpu_id is None:\n        gpu_str = \"\"\n    elif isinstance(gpu_id, int):\n        gpu_str = f\":{gpu_id}\"\n    else:\n        raise TypeError(\"int\")\n    return torch.device(\"cuda\" + gpu_str if torch.cuda.is_available() else \"cpu\")\n\n\nprint(get_device(1), torch.device(\"cuda\" + \":1\"))\n";
    let out = fixed(steps);
    assert!(
        out.contains("print(get_device(0), torch.device(\"cuda\" + \":0\"))"),
        "{out}"
    );
    let truthy = "import torch\n\n\ndef pick(gpu):\n    if gpu:\n        return torch.device(f\"cuda:{gpu}\")\n    return None\n\n\npick(1)\n";
    let found = analyze(&python(), truthy);
    assert!(
        found.findings().iter().any(|f| f.rule.code == "GH106"
            && f.message == "pick(…) selects device 1, device 0 under mask '1', but `pick`'s `gpu` is also used for something else"),
        "{:?}",
        found.findings()
    );
    // A `device=` keyword that fills such a parameter is one sink, one finding.
    let config = "import tomllib\n\nimport torch\n\nwith open(\"c.toml\", \"rb\") as f:\n    cfg = tomllib.load(f)\n\n\ndef load(device):\n    return torch.zeros(1).to(device)\n\n\nload(device=cfg[\"device\"])\n";
    let found = analyze(&python(), config);
    assert_eq!(
        found
            .findings()
            .iter()
            .filter(|f| f.rule.code == "GH111")
            .count(),
        1,
        "{:?}",
        found.findings()
    );
}

/// A `"cuda"` default of a parameter that no code reads chooses no device (from a trial on
/// RealtimeSTT: its websocket client keeps `device: str = "cuda"` in `self.device`, read only in
/// commented code; the client script that builds it got a header). A parameter that is read,
/// even through the attribute it is kept in, still makes the file GPU code; a read that is only
/// printed is no use.
#[test]
fn a_cuda_default_no_code_reads_chooses_no_device() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    common::write(
        root,
        "client.py",
        "class Client:\n    def __init__(self, url, device: str = \"cuda\"):\n        self.url = url\n        self.device = device\n        print(f\"device {device}\")\n\n    def send(self):\n        return self.url\n\n\nif __name__ == \"__main__\":\n    print(Client(\"ws://x\").send())\n",
    );
    common::write(
        root,
        "model.py",
        "import torch\n\n\nclass Model:\n    def __init__(self, device=\"cuda\"):\n        self.device = device\n\n    def run(self):\n        return torch.zeros(1).to(self.device)\n\n\nif __name__ == \"__main__\":\n    print(Model().run())\n",
    );
    let out = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let status = common::statuses(&out.stdout);
    assert_eq!(status["client.py"], "no_gpu_code", "{}", out.stdout);
    assert_eq!(status["model.py"], "non_compliant", "{}", out.stdout);
}

/// A card picked from `nvidia-smi`'s list (clearvoice's freest card) or GPUtil's counts every
/// card in PCI order, the mask ignored: given to CUDA it is for review (GH110), never green.
#[test]
fn a_card_number_from_nvidia_smi_given_to_cuda_is_for_review() {
    let source = "import subprocess\n\nimport GPUtil\nimport torch\n\n\ndef freest_gpu():\n    out = subprocess.run([\"nvidia-smi\", \"--query-gpu=memory.free\", \"--format=csv\"], stdout=subprocess.PIPE).stdout.split()\n    return max(range(len(out)), key=lambda i: int(out[i]))\n\n\ntorch.cuda.set_device(freest_gpu())\nx = torch.zeros(1).to(GPUtil.getFirstAvailable()[0])\n";
    let found = analyze(&python(), source);
    let smi: Vec<&str> = found
        .findings()
        .iter()
        .filter(|f| f.rule.code == "GH110")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(
        smi,
        [
            "torch.cuda.set_device(…) is given a card number as NVML and nvidia-smi count cards (all of them, PCI order): CUDA has only device 0 under mask '1'",
            ".to(…) is given a card number as NVML and nvidia-smi count cards (all of them, PCI order): CUDA has only device 0 under mask '1'",
        ],
        "{:?}",
        found.findings()
    );
}

/// From a trial on torch-fidelity: a mask option read as `vars(parser.parse_args())["gpu"]`
/// was no command-line mask; its write went as a safe GH002/GH005 fix, leaving `--gpu` parsed
/// and ignored, and the file green. Every way of reading an option's value is one read: the
/// write is GH017, and after the fix the option that selects nothing is GH014, for review.
#[test]
fn a_mask_option_read_through_a_dict_of_the_namespace_is_from_the_command_line() {
    let reads = [
        ("args = vars(parser.parse_args())", "args[\"gpu\"]"),
        (
            "args = parser.parse_args()\n    opts = vars(args)",
            "opts.get(\"gpu\")",
        ),
        ("args = parser.parse_args()", "getattr(args, \"gpu\")"),
        ("args = parser.parse_args()", "args.__dict__[\"gpu\"]"),
        ("args = parser.parse_args()", "vars(args)[\"gpu\"]"),
    ];
    for (parse, read) in reads {
        let dir = common::tree();
        let root = dir.path();
        common::write(
            root,
            "cli.py",
            &format!("import argparse\nimport os\n\nimport torch\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"-g\", \"--gpu\", default=None, type=str)\n    {parse}\n    if {read} is not None:\n        os.environ[\"CUDA_VISIBLE_DEVICES\"] = {read}\n    print(torch.zeros(1, device=\"cuda\"))\n\n\nif __name__ == \"__main__\":\n    main()\n"),
        );
        let scan = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
        let report: serde_json::Value = serde_json::from_str(&scan.stdout).unwrap();
        assert!(
            common::rules_of(&report, "cli.py").contains(&"GH017".to_string()),
            "{read}: {}",
            scan.stdout
        );
        let fix = common::run(common::gh(root).args([
            "fix",
            "--gpu",
            "off",
            "--no-cache",
            "--no-journal",
            ".",
        ]));
        assert_eq!(fix.code, 1, "{read}: {}{}", fix.stdout, fix.stderr);
        let rescan = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
        let report: serde_json::Value = serde_json::from_str(&rescan.stdout).unwrap();
        assert_eq!(rescan.code, 1, "{read}: {}", rescan.stdout);
        assert_eq!(
            common::file_in(&report, "cli.py")["status"],
            "needs_review",
            "{read}: {}",
            rescan.stdout
        );
        assert_eq!(
            common::rules_of(&report, "cli.py"),
            ["GH014"],
            "{read}: {}",
            rescan.stdout
        );
    }
}

/// A keyed read of a card option with no default (`vars(args)["gpu_id"]`, `.get`,
/// `getattr`) given to CUDA is a card index from the command line (GH112), as `args.gpu_id` is.
#[test]
fn a_keyed_read_of_a_card_option_is_an_index_from_the_command_line() {
    for read in [
        "args.gpu_id",
        "vars(args)[\"gpu_id\"]",
        "vars(args).get(\"gpu_id\")",
        "getattr(args, \"gpu_id\")",
    ] {
        let source = format!("import argparse\n\nimport torch\n\nif __name__ == \"__main__\":\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"--gpu-id\", type=int)\n    args = parser.parse_args()\n    torch.cuda.set_device({read})\n");
        assert!(
            codes(&source).contains(&"GH112"),
            "{read}: {:?}",
            codes(&source)
        );
    }
}

/// From the trial reruns (f5-tts's `infer_cli.py`: `device = args.device or
/// config.get("device", device)`, `config` a TOML file's table): a key of another dict that
/// shares an option's name is the file's value, not the option: GH111 for review, as before
/// the namespace's dict (`vars(args)["gpu"]`) was read as the namespace.
#[test]
fn a_config_key_named_like_an_option_is_the_config_files() {
    let source = "import argparse\n\nimport tomli\n\nfrom f5.utils import device, load_vocoder\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"-c\", \"--config\", default=\"c.toml\")\nparser.add_argument(\"--device\", type=str)\nargs = parser.parse_args()\nconfig = tomli.load(open(args.config, \"rb\"))\ndevice = args.device or config.get(\"device\", device)\nvocoder = load_vocoder(device=device)\n";
    assert!(codes(source).contains(&"GH111"), "{:?}", codes(source));
}

/// From a trial on ultralytics' tests: cards picked by NVML index (`nvmlDeviceGetHandleByIndex`
/// over `range(nvmlDeviceGetCount())`, every card in PCI order) used as CUDA indices were
/// green. A list or loop over NVML's count is nvidia-smi's numbering: GH110, for review.
#[test]
fn a_card_number_counted_by_nvml_given_to_cuda_is_for_review() {
    let dir = common::tree();
    let root = dir.path();
    common::write(root, "tests/conftest.py", "import torch\n");
    common::write(
        root,
        "tests/test_cuda.py",
        "import pynvml\nimport torch\n\npynvml.nvmlInit()\nIDLE = [i for i in range(pynvml.nvmlDeviceGetCount()) if pynvml.nvmlDeviceGetUtilizationRates(pynvml.nvmlDeviceGetHandleByIndex(i)).gpu < 30][:2]\n\n\ndef test_one():\n    torch.zeros(1, device=f\"cuda:{IDLE[0]}\")\n\n\ndef test_each():\n    for i in range(pynvml.nvmlDeviceGetCount()):\n        torch.cuda.set_device(i)\n",
    );
    let scan = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    let report: serde_json::Value = serde_json::from_str(&scan.stdout).unwrap();
    let test = common::file_in(&report, "tests/test_cuda.py");
    assert_eq!(test["status"], "needs_review", "{}", scan.stdout);
    let lines: Vec<(String, u64)> = test["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        [("GH110".to_string(), 9), ("GH110".to_string(), 14)],
        "{}",
        scan.stdout
    );
    // A CUDA enumeration is CUDA's numbering.
    let cuda = "import torch\n\nif __name__ == \"__main__\":\n    for i in range(torch.cuda.device_count()):\n        torch.cuda.set_device(i)\n";
    assert!(!codes(cuda).contains(&"GH110"), "{:?}", codes(cuda));
}

/// From trial 61 (flair's `FLAIR_DEVICE`): a card index read from an environment variable with
/// no default (`os.environ.get`, `os.getenv`, `os.environ[…]`) is the user's at run time, as an
/// option with no default is: for review (GH112), where before nothing was found and the fixed
/// tree was compliant while `MYLIB_DEVICE=1` selected a card the mask hides. A literal default
/// is judged by its default; the header's variables, a rank and a whole device are not indices.
#[test]
fn a_card_index_from_an_environment_variable_without_default_is_for_review() {
    let head = "import os\n\nimport torch\n\n";
    for (read, use_) in [
        (
            "os.environ.get(\"MYLIB_DEVICE\")",
            "x = torch.zeros(1).to(torch.device(f\"cuda:{d}\") if d else torch.device(\"cuda:0\"))",
        ),
        (
            "os.getenv(\"MYLIB_DEVICE\")",
            "torch.cuda.set_device(int(d))",
        ),
        (
            "os.environ.get(\"MYLIB_DEVICE\", None)",
            "x = torch.zeros(1).to(torch.device(\"cuda\", int(d)))",
        ),
        (
            "os.environ[\"MYLIB_DEVICE\"]",
            "x = torch.zeros(1).to(\"cuda:\" + d)",
        ),
        (
            "os.getenv(\"MYLIB_GPU\")",
            "x = torch.zeros(1).to(torch.device(d))",
        ),
    ] {
        let source = format!("{head}d = {read}\n{use_}\n");
        let found = analyze(&python(), &source);
        assert!(
            found.findings().iter().any(|f| f.rule.code == "GH112"
                && f.message.contains(&format!(
                    "takes its card index from the environment (`{read}`, no default)"
                ))),
            "{source}\n{:?}",
            found.findings()
        );
    }
    for (read, use_) in [
        (
            "os.environ.get(\"MYLIB_DEVICE\", \"1\")",
            "x = torch.zeros(1).to(f\"cuda:{d}\")",
        ),
        (
            "os.environ.get(\"LOCAL_RANK\")",
            "torch.cuda.set_device(int(d))",
        ),
        (
            "os.environ.get(\"CUDA_VISIBLE_DEVICES\")",
            "x = torch.zeros(1).to(f\"cuda:{d}\")",
        ),
        (
            "os.getenv(\"MYLIB_DEVICE\")",
            "x = torch.zeros(1).to(torch.device(d))",
        ),
    ] {
        let source = format!("{head}d = {read}\n{use_}\n");
        let found = analyze(&python(), &source);
        assert!(
            !found.findings().iter().any(|f| f.rule.code == "GH112"),
            "{source}\n{:?}",
            found.findings()
        );
    }
}

/// The same through the binary: after `fix` the tree is not green while its library takes the
/// card from the environment.
#[test]
fn a_tree_whose_library_reads_the_card_from_the_environment_is_not_green_after_fix() {
    let dir = common::tree();
    let root = dir.path();
    common::write(root, "lib/__init__.py", "");
    common::write(root, "lib/dev.py", "import os\n\nimport torch\n\ndevice_id = os.environ.get(\"MYLIB_DEVICE\")\nif torch.cuda.is_available() and device_id != \"cpu\":\n    device = torch.device(f\"cuda:{device_id}\") if device_id else torch.device(\"cuda:0\")\nelse:\n    device = torch.device(\"cpu\")\n");
    common::write(root, "train.py", "import torch\n\nfrom lib.dev import device\n\nif __name__ == \"__main__\":\n    x = torch.zeros(1).to(device)\n");
    common::run(common::gh(root).args(["fix", "--gpu", "off", "--no-journal"]));
    let out = common::run(common::gh(root).args(["scan", "--no-cache", "--format", "json"]));
    assert_eq!(out.code, 1, "{}", out.stdout);
    let status = common::statuses(&out.stdout);
    assert_eq!(status["lib/dev.py"], "needs_review", "{}", out.stdout);
    assert_eq!(status["train.py"], "compliant", "{}", out.stdout);
}
