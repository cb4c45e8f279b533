//! Device constructors and indices: what `Device::new_cuda(1)` means once the mask renumbers the cards.

use crate::model::finding::{FixSafety, Rule, Severity, Subject};

pub static DEVICE_INDEX: Rule = Rule {
    code: "GH511",
    name: "rust-device-index",
    severity: Severity::Violation,
    summary: "a device constructor selects an index that does not exist once CUDA_VISIBLE_DEVICES is applied",
    why: "Once the mask is applied the target card is device 0.",
    example: "Device::new_cuda(1)  ->  Device::new_cuda(0)",
    fix: FixSafety::Safe,
    fix_why: "The index is remapped to the one the same card has under the mask.",
    rewrite: "`CudaContext::new(1)`, `CudaDevice::new(1)`, `Device::new_cuda(1)`, `Device::new_cuda_with_stream(1)`, `Device::cuda_if_available(1)`, `Device::Cuda(1)`, `CudaDevice { index: 1 }`, `.with_device_id(1)`, `.with_main_gpu(1)`, `Device::get_device(1)` (cust, rustacuda) → `0` (through `use` aliases, consts, `let`, macros; suffixes kept); in a program only in the plan that sets its mask, in a library only when every program running it masks through its own fix (else GH514)",
    subject: Subject::DeviceIndex,
    ..Rule::DEFAULT
};

pub static DEVICE_PATTERN: Rule = Rule {
    code: "GH512",
    name: "rust-device-pattern",
    severity: Severity::Violation,
    summary: "a match pattern compares a device with an index that does not exist once CUDA_VISIBLE_DEVICES is applied: change it by hand",
    why: "Multi-GPU or physical (NVML, PCI-order) indices cannot be remapped mechanically.",
    example: "nvml.device_by_index(1)",
    fix: FixSafety::None,
    fix_why: "Display only: `Device::Cuda(1)` in a pattern matches a device built elsewhere; the file is left as written (a file is rewritten only when the rewrite makes it compliant).",
    ..Rule::DEFAULT
};

pub static MULTI_GPU: Rule = Rule {
    code: "GH513",
    name: "rust-multi-gpu",
    severity: Severity::Review,
    summary: "a function selects several device indices (or loops over them): multi-GPU by design, left as written for review",
    why: "Multi-GPU or physical (NVML, PCI-order) indices cannot be remapped mechanically.",
    example: "nvml.device_by_index(1)",
    fix: FixSafety::None,
    fix_why: "Display only: two constructors of one function, a constructor per index of a loop (`for i in 0..2`, `for i in 0..num_gpus`, a counter the loop increments: `while new_cuda(n).is_ok() { n += 1 }`), an index computed from a rank (`new_cuda(rank + 1)`), a device list (`.with_devices(&[0, 1])`) or a command-line option that selects several cards (`--devices`, `--device-ids`, a list of ordinals, `--num-gpus` with a default above 1) need a person to choose the policy's cards.",
    ..Rule::DEFAULT
};

pub static DEVICE_INDEX_IN_LIBRARY: Rule = Rule {
    code: "GH514",
    name: "rust-device-index-in-library",
    severity: Severity::Review,
    summary: "a device index no mask set by a fix makes safe to remap: in a library a program of the tree runs without setting the mask (or that none runs), or in a program that sets none (judged CPU, `main` under an attribute): what it selects is the caller's mask's choice; or an index the tool follows to no card it can remap (a struct literal's field, a function's return, a parsed `\"cuda:1\"`, a method's parameter, a call it does not know)",
    why: "A library's `Device::new_cuda(1)` means card 1 of whatever mask its caller set: remapping it is right only when every program of the tree that runs it sets the policy's mask, each through its own fix (a program whose fix is withheld, opening several cards (GH513), forbidding unsafe code in edition 2024 (GH505) or running `main` under an attribute (GH509) sets none). An index moved without its mask selects the forbidden card.",
    example: "// lib.rs, run by an async-main server\npub fn best_device() -> Device { Device::new_cuda(1).unwrap() }",
    fix: FixSafety::None,
    fix_why: "Display only: names the programs that do not mask, or why this program sets no mask; remap by hand once they do.",
    ..Rule::DEFAULT
};

pub static NVML_INDEX: Rule = Rule {
    code: "GH521",
    name: "rust-nvml-index",
    severity: Severity::Review,
    summary: "an NVML index is a physical PCI-order index that CUDA_VISIBLE_DEVICES does not remap: select by UUID or PCI bus id",
    why: "Multi-GPU or physical (NVML, PCI-order) indices cannot be remapped mechanically.",
    example: "nvml.device_by_index(1)",
    fix: FixSafety::None,
    fix_why: "Display only: `device_by_index(N)` is a physical (PCI-order) index that the mask does not renumber; select the card by UUID or PCI bus id.",
    ..Rule::DEFAULT
};

pub static FOREIGN_DEVICE: Rule = Rule {
    code: "GH522",
    name: "rust-foreign-device-choice",
    severity: Severity::Review,
    summary: "a GPU program also chooses a card through Vulkan, wgpu or OpenCL, which CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER do not filter or reorder",
    why: "The mask hides the forbidden card from CUDA only: Vulkan, wgpu and OpenCL list every card in their own order, so the first discrete GPU they give may be the forbidden one while CUDA runs on the target.",
    example: "let physical = instance.enumerate_physical_devices()?.next().unwrap();",
    fix: FixSafety::None,
    fix_why: "Display only: which card the other API should take is the program's choice; match it to the CUDA device by UUID or PCI bus id.",
    ..Rule::DEFAULT
};
