//! The rule registry: both catalogues (data, one entry per rule) and what `--select`, SARIF
//! and `gpu-homogenize rule` look up. The analyses that emit the rules live with their
//! language and name them from here.

pub mod python;
pub mod rust;

use crate::model::finding::Rule;

/// Every rule, Python's then Rust's, in code order.
pub fn all() -> Vec<&'static Rule> {
    let mut rules: Vec<&'static Rule> = python::ALL.to_vec();
    rules.extend(rust::ALL.iter().copied());
    rules
}

/// The rule with this code (case-insensitive), if any.
pub fn by_code(code: &str) -> Option<&'static Rule> {
    all()
        .into_iter()
        .find(|r| r.code.eq_ignore_ascii_case(code))
}

/// How a rule's fix may be applied, as ruff says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixSafety {
    /// `fix` applies it.
    Safe,
    /// Changes what the program does: only with `--unsafe-fixes`.
    Unsafe,
    /// Partly safe: the named part needs `--unsafe-fixes`.
    SafeExcept(&'static str),
    /// Reported, never rewritten.
    None,
}

/// Why a rule matters, a short example, and the safety of its fix.
pub struct Explanation {
    pub why: &'static str,
    pub example: &'static str,
    pub safety: FixSafety,
    pub safety_why: &'static str,
}

/// The GPU touchpoint map (`--touchpoints`): Python's GPU imports (GH3xx), Rust's programs and
/// device constructors (GH531, GH532).
pub fn is_touchpoint(code: &str) -> bool {
    code.starts_with("GH3") || code.starts_with("GH53")
}

/// The explanation of every rule (`gpu-homogenize rule CODE`, SARIF's `fullDescription`).
pub fn explanation(code: &str) -> Explanation {
    use FixSafety::*;
    let (why, example, safety, safety_why) = match code {
        "GH001" => ("Without CUDA_DEVICE_ORDER=PCI_BUS_ID and CUDA_VISIBLE_DEVICES set before the first GPU import, CUDA numbers cards fastest-first and the process may land on the forbidden card.", "import torch\nmodel.to('cuda')", SafeExcept("the validation call added to the `__main__` block raises when the target card is absent, so a run that used to fall back now stops"), "Inserting the header after the prologue is the point of the tool and keeps every other byte."),
        "GH002" => ("A hand-written configuration that differs from the policy (a wrong mask, a missing variable, `setdefault` where the policy forces) selects the card inconsistently.", "os.environ['CUDA_VISIBLE_DEVICES'] = '0'\nimport torch", SafeExcept("turning `os.environ.setdefault` into an assignment (when the policy does not respect a scheduler) overrides a mask that Slurm, Ray or Kubernetes set"), "Replacing the block in place with the policy's header is safe otherwise."),
        "GH005" => ("Once a GPU framework is imported CUDA may be initialised: a later write to CUDA_VISIBLE_DEVICES is silently ignored.", "import torch\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'", Safe, "The late write is taken out and the header set before the import, which is what the write meant."),
        "GH006" => ("A function that overrides a GPU variable with another value than the policy's changes the card for whatever runs after it is called.", "def setup():\n    os.environ['CUDA_VISIBLE_DEVICES'] = '0'", Unsafe, "Removing the write changes what the function does when it is called."),
        "GH010" => ("CUDA_VISIBLE_DEVICES='' (or -1) hides every card on purpose; the tool cannot know whether that is still meant.", "os.environ['CUDA_VISIBLE_DEVICES'] = ''", None, "Display only."),
        "GH011" => ("A child process started with another GPU mask runs on another card than the policy's.", "subprocess.run(cmd, env={'CUDA_VISIBLE_DEVICES': '0'})", None, "Display only: the child may need its own card."),
        "GH012" => ("HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES that contradict the policy's mask select another card on AMD stacks.", "os.environ['HIP_VISIBLE_DEVICES'] = '0'", None, "Display only."),
        "GH016" => ("A child process started with a mask naming another card runs on that card: the parent's header does not reach a child that is given its own CUDA_VISIBLE_DEVICES (its CUDA_DEVICE_ORDER is inherited, so the number is the card's PCI bus order).", "subprocess.run(cmd, env={**os.environ, 'CUDA_VISIBLE_DEVICES': '0'})\nos.system('CUDA_VISIBLE_DEVICES=0 python worker.py')", None, "Not fixed: the command or env is the program's own choice; give the child the policy's mask or none."),
        "GH013" => ("CUDA reads the mask once per process: a library module that writes it when imported overrides the env its importer chose (an application's own mask, a scheduler's).", "# mylib/model.py\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'", Unsafe, "Taking the write out leaves the programs of the tree on their entry points' header, but an importer outside the tree loses it."),
        "GH014" => ("An option such as `--gpus` that once fed the mask (or never did anything) selects no card once the header decides it: users still pass it, and its echo (`print('Training on GPUs:', args.gpus)`) now lies.", "parser.add_argument('-g', '--gpus', default='0,1')\nprint('GPUs:', args.gpus)", None, "Display only: remove the option or make it choose among the policy's cards."),
        "GH015" => ("CPython accepts `from __future__` imports only at the top of a module, after its docstring: a header inserted above them by hand makes the whole file a SyntaxError.", "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\nfrom __future__ import annotations", Safe, "The future imports move up, whole, to just after the docstring: they are compiler directives, and nothing runs before them either way."),
        "GH101" | "GH102" | "GH103" | "GH104" => ("Once CUDA_VISIBLE_DEVICES='1' is applied only one card is visible and it is device 0: `cuda:1` is then a crash or a silent fallback.", "torch.device('cuda:1')  ->  torch.device('cuda:0')", Safe, "The index is remapped to the one the same physical card has under the mask."),
        "GH105" => ("The index selects no visible card at all once the mask is applied.", "torch.device('cuda:3')", None, "Display only: choose the device by hand."),
        "GH106" => ("The index flows through a name that is also used for something else: rewriting it would change that too.", "n = 1\ntorch.cuda.set_device(n)\nrange(n)", None, "Display only."),
        "GH107" => ("`cuda:1` in a library that no program of the tree runs: which card it is depends on the mask of the program that imports it, which the tool cannot see.", "# mylib/model.py (no entry point imports it)\ntorch.device('cuda:1')", None, "Display only: check the callers, then remap by hand or mark it accepted."),
        "GH109" => ("NVML (pynvml, nvitop's Device) numbers cards by PCI bus and ignores CUDA_VISIBLE_DEVICES: an index that is not the policy's card reads, or acts on, a card the program must not use.", "pynvml.nvmlDeviceGetHandleByIndex(0)  ->  pynvml.nvmlDeviceGetHandleByIndex(1)", Unsafe, "The index is changed to the policy's card, but the program may monitor several cards on purpose."),
        "GH110" => ("A CUDA device number is not an NVML index once the mask renumbers cards: CUDA device 0 is the policy's card, NVML index 0 is the card on the first PCI bus.", "pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())", None, "Display only: map the CUDA device to NVML by PCI bus id or UUID."),
        "GH111" => ("A device read from a YAML, TOML or JSON file (`cfg['device']`) names a card by its unmasked index: `cuda:1` there is an invalid ordinal once the header masks every other card.", "cfg = yaml.safe_load(open('train.yaml'))\nmodel.to(cfg['device'])", None, "Display only: the tool does not rewrite configuration files; check the key's value."),
        "GH531" | "GH532" => ("The GPU touchpoint map of a Rust tree: each binary that reaches CUDA (and through which crate), each device constructor.", "cargo run --bin server  # reaches CUDA through `candle_core` with its `cuda` feature", None, "Information only (`scan --touchpoints`)."),
        "GH205" => ("A module with a `__main__` block that other modules import (or that an installable package ships) is both a program and a library: a header at its top would set the env of every program that imports it.", "# pkg/transcribe.py, imported by pkg/__init__.py\nif __name__ == '__main__':\n    cli()", None, "Display only: set the env at the start of the `__main__` block, or run it through an entry point with the header."),
        "GH108" => ("A device string such as `cuda:1` that reaches code the tool does not follow (an option's default, an attribute, a call it does not know) still names the card by its unmasked index: under the header it is another card or none.", "parser.add_argument('--device', default='cuda:1')", None, "Display only: follow it by hand."),
        "GH201" => ("Code that adapts to the visible GPUs (a loop over device_count(), a branch on the count, one worker per visible GPU) or uses no more cards than the policy allows: under the header it runs on the policy's cards.", "for i in range(torch.cuda.device_count()): ...", None, "Information only."),
        "GH203" => ("Code that needs more cards than the policy allows (DataParallel(device_ids=[0, 1]), max_memory or device_map over two indices, a '0,1' mask, jax.devices()[1]) fails with an invalid device ordinal under the header, or runs on the forbidden card without it.", "nn.DataParallel(model, device_ids=[0, 1])", None, "Display only: make it use the policy's cards, or allow more cards in the policy (visible_devices = \"1,2\")."),
        "GH204" => ("One process per GPU, each taking cuda:LOCAL_RANK: a launcher that starts more processes than the policy has cards gives rank 1 an invalid ordinal (or, unmasked, the forbidden card).", "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))", None, "Display only: launch one process per allowed card, then `# noqa: GH204` with that reason."),
        "GH202" => ("The validation call is not added where the file forks workers after it: CUDA in the parent breaks forked workers.", "mp.Process(target=work).start()", None, "Information only."),
        "GH301" | "GH302" => ("A map of where GPU frameworks are imported, for the coordinator.", "import torch", None, "Information only."),
        "GH303" => ("A package __init__.py that imports a GPU framework starts the GPU stack for every importer, before their header runs.", "# pkg/__init__.py\nimport torch", None, "Display only: import it lazily."),
        "GH501" | "GH502" => ("A GPU binary's fn main must set the GPU variables as its first statements, before any thread or CUDA context exists.", "fn main() {\n    let dev = Device::new_cuda(0)?;\n}", Safe, "The header is inserted at the top of main."),
        "GH503" => ("A GPU variable set elsewhere than the header, or to another value, changes the card for what runs after it.", "std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"0\");", Safe, "The value is set to the policy's where the write is the header's own."),
        "GH504" | "GH505" => ("The env cannot be set safely from this main; set it before the process starts.", "#[tokio::main]\nasync fn main() {}", None, "Display only."),
        "GH506" => ("Removing a GPU variable lets the inherited mask decide the card.", "std::env::remove_var(\"CUDA_VISIBLE_DEVICES\");", Safe, "The removal is taken out."),
        "GH507" => ("A child process given another GPU variable runs on another card.", "Command::new(\"x\").env(\"CUDA_VISIBLE_DEVICES\", \"0\")", Unsafe, "Changing the child's env changes the card the child runs on."),
        "GH508" => ("A bench or binary whose `main` is generated by a macro (`criterion_main!`, `harness = false`) has no `fn main` to put the env in, but its process still starts CUDA.", "criterion_main!(benches);", None, "Display only: write a `fn main` that sets the env and calls the generated one, or set the env where it runs."),
        "GH514" => ("A library's `Device::new_cuda(1)` means card 1 of whatever mask its caller set: remapping it is right only when every program of the tree that runs it sets the policy's mask.", "// lib.rs, run by an async-main server\npub fn best_device() -> Device { Device::new_cuda(1).unwrap() }", None, "Display only: names the programs that do not mask; remap by hand once they do."),
        "GH511" => ("Once the mask is applied the target card is device 0.", "Device::new_cuda(1)  ->  Device::new_cuda(0)", Safe, "The index is remapped to the one the same card has under the mask."),
        "GH512" | "GH513" | "GH521" => ("Multi-GPU or physical (NVML, PCI-order) indices cannot be remapped mechanically.", "nvml.device_by_index(1)", None, "Display only."),
        _ => ("", "", None, "Display only."),
    };
    Explanation {
        why,
        example,
        safety,
        safety_why,
    }
}

/// A rule's full explanation as plain text: what, why, example, fix safety.
pub fn explain(rule: &Rule) -> String {
    let e = explanation(rule.code);
    let safety = match e.safety {
        FixSafety::Safe => format!("Fix is safe. {}", e.safety_why),
        FixSafety::Unsafe => format!(
            "Fix is unsafe (applied only with --unsafe-fixes). {}",
            e.safety_why
        ),
        FixSafety::SafeExcept(part) => format!(
            "Fix is safe, except: {part} (applied only with --unsafe-fixes). {}",
            e.safety_why
        ),
        FixSafety::None => format!("No automatic fix. {}", e.safety_why),
    };
    format!(
        "{} ({}): {}.\n\nWhy: {}\n\nExample:\n{}\n\nFix safety: {}\n",
        rule.code,
        rule.name,
        rule.summary,
        e.why,
        indent(e.example),
        safety
    )
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_rule_is_explained() {
        for rule in super::all() {
            assert!(
                !super::explanation(rule.code).why.is_empty(),
                "{} has no explanation",
                rule.code
            );
        }
    }
}
