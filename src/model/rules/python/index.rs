//! Device indices: what `cuda:1` and its kin mean once the mask renumbers the cards.

use crate::model::finding::{FixSafety, Rule, RuleEdits, Severity, Subject};

pub static DEVICE_STRING_INDEX: Rule = Rule {
    code: "GH101",
    name: "device-string-index",
    severity: Severity::Violation,
    summary: "a device string selects an index that does not exist once CUDA_VISIBLE_DEVICES is applied",
    why: "Once CUDA_VISIBLE_DEVICES='1' is applied only one card is visible and it is device 0: `cuda:1` is then a crash or a silent fallback.",
    example: "torch.device('cuda:1')  ->  torch.device('cuda:0')",
    fix: FixSafety::Safe,
    fix_why: "The index is remapped to the one the same physical card has under the mask.",
    rewrite: "`\"cuda:1\"` → `\"cuda:0\"` where it reaches a sink (also `/gpu:N`, `/device:GPU:N`)",
    edits: RuleEdits::Own,
    subject: Subject::DeviceIndex,
    ..Rule::DEFAULT
};

pub static DEVICE_CALL_INDEX: Rule = Rule {
    code: "GH102",
    name: "device-call-index",
    severity: Severity::Violation,
    summary: "a device-selecting call uses an index that does not exist once CUDA_VISIBLE_DEVICES is applied",
    why: "Once CUDA_VISIBLE_DEVICES='1' is applied only one card is visible and it is device 0: `cuda:1` is then a crash or a silent fallback.",
    example: "torch.device('cuda:1')  ->  torch.device('cuda:0')",
    fix: FixSafety::Safe,
    fix_why: "The index is remapped to the one the same physical card has under the mask.",
    rewrite: "`set_device(1)`, `torch.device(\"cuda\", 1)`, `.cuda(1)`, `.to(1)`, `cupy.cuda.Device(1)` → `0`",
    edits: RuleEdits::Own,
    subject: Subject::DeviceIndex,
    ..Rule::DEFAULT
};

pub static DEVICE_KEYWORD_INDEX: Rule = Rule {
    code: "GH103",
    name: "device-keyword-index",
    severity: Severity::Violation,
    summary: "a device-index keyword, parameter or option selects an index that does not exist after masking",
    why: "Once CUDA_VISIBLE_DEVICES='1' is applied only one card is visible and it is device 0: `cuda:1` is then a crash or a silent fallback.",
    example: "torch.device('cuda:1')  ->  torch.device('cuda:0')",
    fix: FixSafety::Safe,
    fix_why: "The index is remapped to the one the same physical card has under the mask.",
    rewrite: "`device_index=1`, `main_gpu=1`, `device=1` of a GPU library → `0`",
    edits: RuleEdits::Own,
    subject: Subject::DeviceIndex,
    ..Rule::DEFAULT
};

pub static DEVICE_MAP_INDEX: Rule = Rule {
    code: "GH104",
    name: "device-map-index",
    severity: Severity::Violation,
    summary: "a GPU index table or variable holds an index that does not exist after masking",
    why: "Once CUDA_VISIBLE_DEVICES='1' is applied only one card is visible and it is device 0: `cuda:1` is then a crash or a silent fallback.",
    example: "torch.device('cuda:1')  ->  torch.device('cuda:0')",
    fix: FixSafety::Safe,
    fix_why: "The index is remapped to the one the same physical card has under the mask.",
    rewrite: "an index reaching a sink through a constant, default, attribute, argparse or table → `0`",
    edits: RuleEdits::Own,
    subject: Subject::DeviceIndex,
    ..Rule::DEFAULT
};

pub static DEVICE_INDEX_INVALID: Rule = Rule {
    code: "GH105",
    name: "device-index-invalid",
    severity: Severity::Violation,
    summary: "a device index selects no device at all once CUDA_VISIBLE_DEVICES is applied",
    why: "The index selects no visible card at all once the mask is applied.",
    example: "torch.device('cuda:3')",
    fix: FixSafety::None,
    fix_why: "Display only: choose the device by hand.",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static DEVICE_INDEX_SHARED: Rule = Rule {
    code: "GH106",
    name: "device-index-shared",
    severity: Severity::Review,
    summary: "a device index flows through a name that is also used for something else: rewrite by hand",
    why: "The index flows through a name that is also used for something else: rewriting it would change that too.",
    example: "n = 1\ntorch.cuda.set_device(n)\nrange(n)",
    fix: FixSafety::None,
    fix_why: "Display only: rewriting the value would change the other use of the name too; give the device its own name, then `fix` remaps it.",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static DEVICE_INDEX_IN_LIBRARY: Rule = Rule {
    code: "GH107",
    name: "device-index-in-library",
    severity: Severity::Review,
    summary: "a device index in a library no program of the tree runs: its card depends on the caller's mask",
    why: "`cuda:1` in a library that no program of the tree runs: which card it is depends on the mask of the program that imports it, which the tool cannot see.",
    example: "# mylib/model.py (no entry point imports it)\ntorch.device('cuda:1')",
    fix: FixSafety::None,
    fix_why: "Display only: check the callers, then remap by hand or mark it accepted.",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static DEVICE_LITERAL_UNTRACED: Rule = Rule {
    code: "GH108",
    name: "device-literal-untraced",
    severity: Severity::Review,
    summary: "a \"cuda:N\" the mask renumbers goes where the tool does not follow (an option, an attribute, an unknown call)",
    why: "A device string such as `cuda:1` that reaches code the tool does not follow (an option's default, an attribute, a call it does not know) still names the card by its unmasked index: under the header it is another card or none.",
    example: "parser.add_argument('--device', default='cuda:1')",
    fix: FixSafety::None,
    fix_why: "Display only: follow it by hand.",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static NVML_INDEX: Rule = Rule {
    code: "GH109",
    name: "nvml-index",
    severity: Severity::Violation,
    summary: "a card chosen by NVML index: NVML numbers cards by PCI bus and ignores CUDA_VISIBLE_DEVICES",
    why: "NVML (pynvml, nvitop's Device) numbers cards by PCI bus and ignores CUDA_VISIBLE_DEVICES: an index that is not the policy's card reads, or acts on, a card the program must not use.",
    example: "pynvml.nvmlDeviceGetHandleByIndex(0)  ->  pynvml.nvmlDeviceGetHandleByIndex(1)",
    fix: FixSafety::Unsafe,
    fix_why: "The index is changed to the policy's card, but the program may monitor several cards on purpose.",
    rewrite: "an NVML index (PCI bus order, mask ignored) that is not the policy's card → the policy's card",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static NVML_CUDA_INDEX: Rule = Rule {
    code: "GH110",
    name: "nvml-cuda-index",
    severity: Severity::Review,
    summary: "a card number of one numbering given to the other: a CUDA device number to NVML, or one NVML or nvidia-smi counts to CUDA",
    why: "A CUDA device number is not an NVML index once the mask renumbers cards: CUDA device 0 is the policy's card, NVML index 0 (and nvidia-smi's, GPUtil's) is the card on the first PCI bus. A card picked from nvidia-smi's list (the freest, the first available), or by a loop over NVML's count of cards, is a number among every card: given to CUDA under the mask it is an invalid ordinal, or without the mask a card the policy forbids.",
    example: "pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())\ntorch.cuda.set_device(GPUtil.getFirstAvailable()[0])",
    fix: FixSafety::None,
    fix_why: "Display only: map the CUDA device to NVML by PCI bus id or UUID.",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static DEVICE_FROM_CONFIG: Rule = Rule {
    code: "GH111",
    name: "device-from-config",
    severity: Severity::Review,
    summary: "a device argument takes its value from a configuration file the tool does not read",
    why: "A device read from a YAML, TOML or JSON file (`cfg['device']`) names a card by its unmasked index: `cuda:1` there is an invalid ordinal once the header masks every other card.",
    example: "cfg = yaml.safe_load(open('train.yaml'))\nmodel.to(cfg['device'])",
    fix: FixSafety::None,
    fix_why: "Display only: the tool does not rewrite configuration files; check the key's value.",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};

pub static DEVICE_FROM_COMMAND_LINE: Rule = Rule {
    code: "GH112",
    name: "device-index-from-command-line",
    severity: Severity::Review,
    summary: "a card index comes from a command-line option or an environment variable with no default: the old numbering its users pass selects no device under the mask",
    why: "`--gpu-id 1` (or `MYLIB_DEVICE=1` read by `os.environ.get(\"MYLIB_DEVICE\")`) picked the second card before the migration; once the header masks every other card only index 0 exists, so the launch scripts and habits that pass the old number break (an invalid ordinal), and nothing in the file says which number is right. A variable read with a literal default is judged by its default.",
    example: "parser.add_argument('--gpu-id', type=int)\nargs = parser.parse_args()\nmodel.to(f'cuda:{args.gpu_id}')",
    fix: FixSafety::None,
    fix_why: "Display only: the value is the user's, given at run time; make the option choose among the policy's cards (index 0 under the mask), or drop it, and update what passes it.",
    edits: RuleEdits::Own,
    ..Rule::DEFAULT
};
