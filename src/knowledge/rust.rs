//! What Rust's GPU crates are, as data: one row per crate (how it reaches CUDA, the APIs
//! through which it picks a card, whether it computes on the device it is handed), the device
//! constructors that take an index, and the names of CPU devices. The crate graph, the facts
//! and the prefilter read their lists from here; `tests` below check that they agree.

const KALOSM_WHY: &str =
    "its local models run on candle's CUDA device 0 when it is built with CUDA";

/// Kalosm's local models that take their device from kalosm-common's
/// `accelerated_device_if_available()`: its cloud clients (`OpenAICompatibleChatModel`,
/// `AnthropicCompatibleChatModel`), crawler, chunkers and parsers run no model of their own, and
/// `SegmentAnything` (segment-anything-rs 0.4, the only 0.4 release) builds on `Device::Cpu`.
const KALOSM_MODELS: &[(&str, &str)] = &[
    (
        "Llama",
        "a local language model, on CUDA when built with it",
    ),
    (
        "Bert",
        "a local embedding model, on CUDA when built with it",
    ),
    (
        "Whisper",
        "a local transcription model, on CUDA when built with it",
    ),
    (
        "Wuerstchen",
        "a local image model, on CUDA when built with it",
    ),
    ("Ocr", "a local vision model, on CUDA when built with it"),
    // Each model's builder (`WhisperBuilder::default().build()`) builds the same model.
    ("LlamaBuilder", "builds a local language model"),
    ("BertBuilder", "builds a local embedding model"),
    ("WhisperBuilder", "builds a local transcription model"),
    ("WuerstchenBuilder", "builds a local image model"),
    ("OcrBuilder", "builds a local vision model"),
    ("BertDistance", "embeds with a local Bert model"),
    ("SemanticChunker", "embeds with a local Bert model"),
    (
        "document_table_builder",
        "a document table embeds with a local Bert model unless given another",
    ),
];

/// How a crate reaches CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cuda {
    /// By any use.
    Always,
    /// Only where the code selects it (`Device::cuda_if_available()`, `Device::Cuda(0)`): tch
    /// builds CPU tensors by default.
    WhenSelected,
    /// When one of these features of it is on.
    Feature(&'static [&'static str]),
    /// Never: its types name cards (NVML) without a CUDA context.
    Never,
}

/// One GPU crate of the registry (its name as Rust sees it: `-` is `_`).
#[derive(Debug)]
pub struct Crate {
    pub name: &'static str,
    pub cuda: Cuda,
    /// Why it reaches CUDA, as the touchpoint map says it.
    pub why: &'static str,
    /// The APIs (a path segment or a method) through which it picks a card by itself: a program
    /// that links it reaches CUDA only when its code names one, or chooses a CUDA device itself
    /// (a tool that uses rust-bert for its error type, ONNX Runtime on the CPU provider, cudarc's
    /// `nvrtc` only). Empty: any use reaches CUDA once its CUDA feature is on.
    pub entry_points: &'static [(&'static str, &'static str)],
    /// It computes on the device its caller hands it (candle's tensors, layers and models): in
    /// a library that a program runs, it reaches CUDA only where that code chooses a CUDA
    /// device itself.
    pub handed_device: bool,
    /// It reaches CUDA through libtorch.
    pub libtorch: bool,
    /// Names code gives it through a renamed dependency (`candle = { package = "candle-core" }`).
    pub aliases: &'static [&'static str],
    /// What its own features turn on in other registry crates (its `[features]` table on
    /// crates.io, transitively): `cuda = ["candle/cuda", "candle-nn/cuda"]`. Cargo unifies a
    /// crate's features in a build, so a sibling dependency of the same package gets CUDA
    /// too (`candle-core = "0.9"` next to `candle-transformers` with `cuda`).
    pub features_enable: &'static [(&'static str, &'static [&'static str])],
    /// Features of other registry crates that make this one reach CUDA when they are on in the
    /// same build, though it has no CUDA feature of its own: kalosm-common's device chooser
    /// returns candle's CUDA device whenever candle is built with `cuda`. Such a crate's row
    /// has `Cuda::Feature(&["cuda"])`, and `cuda` is on for it when one of these is.
    pub cuda_with: &'static [&'static str],
    /// Registry crates whose device chooser its models call (kalosm's `Llama` picks its device
    /// through kalosm-common): it reaches CUDA whenever theirs `cuda_with` is on in the build,
    /// though it is built without its own CUDA feature (a dev-dependency `kalosm` with
    /// `language` only, next to a package feature that turns `candle-core/cuda` on).
    pub device_from: &'static [&'static str],
}

impl Crate {
    const DEFAULT: Crate = Crate {
        name: "",
        cuda: Cuda::Always,
        why: "",
        entry_points: &[],
        handed_device: false,
        libtorch: false,
        aliases: &[],
        features_enable: &[],
        cuda_with: &[],
        device_from: &[],
    };
}

/// The GPU crates. A new wrapper crate is one row here and a package in
/// `tests/it/rust_programs.rs`.
pub const CRATES: &[Crate] = &[
    Crate {
        name: "cudarc",
        cuda: Cuda::Always,
        why: "the CUDA driver API",
        entry_points: &[
            ("driver", "the driver API: contexts, streams, device memory"),
            ("runtime", "the runtime API"),
            ("cublas", "cuBLAS, on a context's stream"),
            ("cublaslt", "cuBLASLt, on a context's stream"),
            ("cudnn", "cuDNN, on a context's stream"),
            ("curand", "cuRAND, on a context's stream"),
            ("cusparse", "cuSPARSE, on a context's stream"),
            ("cusolver", "cuSOLVER, on a context's stream"),
            ("nccl", "NCCL: one communicator per card"),
            ("cufile", "cuFile: GPUDirect storage"),
            ("cupti", "CUPTI: profiling a context"),
        ],
        ..Crate::DEFAULT
    },
    Crate {
        name: "cust",
        cuda: Cuda::Always,
        why: "Rust-CUDA's `Device::get_device`",
        ..Crate::DEFAULT
    },
    Crate {
        name: "rustacuda",
        cuda: Cuda::Always,
        why: "`Device::get_device`",
        ..Crate::DEFAULT
    },
    Crate {
        name: "cubecl_cuda",
        cuda: Cuda::Always,
        why: "the CUDA runtime of CubeCL",
        ..Crate::DEFAULT
    },
    Crate {
        name: "burn_cuda",
        cuda: Cuda::Always,
        why: "burn's `Cuda` backend",
        ..Crate::DEFAULT
    },
    Crate {
        name: "tch",
        cuda: Cuda::WhenSelected,
        why: "libtorch, on the CUDA device its code chooses (`Device::Cuda(n)`, `Device::cuda_if_available()`)",
        entry_points: &[(
            "cuda_if_available",
            "libtorch's CUDA device 0 when one is there",
        )],
        libtorch: true,
        ..Crate::DEFAULT
    },
    Crate {
        name: "burn_tch",
        cuda: Cuda::WhenSelected,
        why: "burn's libtorch backend",
        libtorch: true,
        ..Crate::DEFAULT
    },
    Crate {
        name: "rust_bert",
        cuda: Cuda::Always,
        why: "tch: its pipelines default to `Device::cuda_if_available()`",
        entry_points: &[
            (
                "pipelines",
                "every pipeline's default config is `Device::cuda_if_available()`",
            ),
            (
                "VarStore",
                "a model built by hand takes the device of its `VarStore`",
            ),
        ],
        libtorch: true,
        ..Crate::DEFAULT
    },
    Crate {
        name: "candle_core",
        cuda: Cuda::Feature(&["cuda", "cudnn"]),
        why: "`Device::new_cuda`",
        entry_points: &[(
            "Device",
            "candle's `Device` (its CUDA constructors are found by name)",
        )],
        handed_device: true,
        aliases: &["candle"],
        ..Crate::DEFAULT
    },
    Crate {
        name: "kalosm",
        cuda: Cuda::Feature(&["cuda"]),
        why: KALOSM_WHY,
        entry_points: KALOSM_MODELS,
        device_from: &["kalosm_common"],
        ..Crate::DEFAULT
    },
    // The same models, from the crates `kalosm` re-exports (its own examples use them).
    Crate {
        name: "kalosm_language",
        cuda: Cuda::Feature(&["cublas", "cuda"]),
        why: KALOSM_WHY,
        entry_points: KALOSM_MODELS,
        device_from: &["kalosm_common"],
        ..Crate::DEFAULT
    },
    Crate {
        name: "kalosm_vision",
        cuda: Cuda::Feature(&["cublas", "cuda"]),
        why: KALOSM_WHY,
        entry_points: KALOSM_MODELS,
        device_from: &["kalosm_common"],
        ..Crate::DEFAULT
    },
    Crate {
        name: "kalosm_sound",
        cuda: Cuda::Feature(&["cuda"]),
        why: KALOSM_WHY,
        entry_points: KALOSM_MODELS,
        device_from: &["kalosm_common"],
        ..Crate::DEFAULT
    },
    Crate {
        name: "kalosm_common",
        cuda: Cuda::Feature(&["cuda"]),
        why: "`accelerated_device_if_available()` returns candle's CUDA device 0 when candle is built with CUDA",
        entry_points: &[(
            "accelerated_device_if_available",
            "candle's CUDA device 0 when candle has CUDA, else Metal, else the CPU",
        )],
        cuda_with: &["candle_core/cuda", "candle_core/cudnn"],
        ..Crate::DEFAULT
    },
    Crate {
        name: "candle_nn",
        cuda: Cuda::Feature(&["cuda", "cudnn"]),
        why: "candle with CUDA",
        handed_device: true,
        features_enable: &[
            ("cuda", &["candle_core/cuda"]),
            ("cudnn", &["candle_core/cudnn"]),
        ],
        ..Crate::DEFAULT
    },
    Crate {
        name: "candle_transformers",
        cuda: Cuda::Feature(&["cuda", "cudnn", "flash-attn"]),
        why: "candle with CUDA",
        handed_device: true,
        features_enable: &[
            ("cuda", &["candle_core/cuda", "candle_nn/cuda"]),
            ("cudnn", &["candle_core/cudnn", "candle_nn/cudnn"]),
            ("flash-attn", &["candle_core/cuda", "candle_nn/cuda"]),
        ],
        ..Crate::DEFAULT
    },
    Crate {
        name: "burn",
        cuda: Cuda::Feature(&["cuda", "cuda-jit", "tch"]),
        why: "burn's `Cuda` (or `LibTorch`) backend",
        entry_points: &[(
            "Cuda",
            "burn's CUDA backend (`Cuda`, `CudaDevice`, the `LibTorch` backend)",
        )],
        ..Crate::DEFAULT
    },
    Crate {
        name: "cubecl",
        cuda: Cuda::Feature(&["cuda"]),
        why: "CubeCL's CUDA runtime",
        ..Crate::DEFAULT
    },
    Crate {
        name: "ort",
        cuda: Cuda::Feature(&["cuda", "tensorrt"]),
        why: "ONNX Runtime's CUDA execution provider",
        entry_points: &[
            (
                "CUDAExecutionProvider",
                "ONNX Runtime's CUDA provider (`device_id` picks the card)",
            ),
            ("CUDA", "`ep::CUDA`, the CUDA provider in ort 2.x"),
            (
                "TensorRTExecutionProvider",
                "ONNX Runtime's TensorRT provider (CUDA underneath)",
            ),
            ("TensorRT", "`ep::TensorRT` in ort 2.x"),
        ],
        ..Crate::DEFAULT
    },
    Crate {
        name: "llama_cpp_2",
        cuda: Cuda::Feature(&["cuda", "cublas"]),
        why: "llama.cpp with CUDA (its default layer split uses every visible GPU)",
        ..Crate::DEFAULT
    },
    Crate {
        name: "llama_cpp",
        cuda: Cuda::Feature(&["cuda", "cublas"]),
        why: "llama.cpp with CUDA",
        ..Crate::DEFAULT
    },
    Crate {
        name: "whisper_rs",
        cuda: Cuda::Feature(&["cuda"]),
        why: "whisper.cpp with CUDA",
        ..Crate::DEFAULT
    },
    Crate {
        name: "mistralrs",
        cuda: Cuda::Feature(&["cuda", "cudnn", "flash-attn"]),
        why: "mistral.rs with CUDA",
        // Through mistralrs-core's own features.
        features_enable: &[
            ("cuda", &["candle_core/cuda", "candle_nn/cuda"]),
            ("cudnn", &["candle_core/cudnn"]),
            ("flash-attn", &["candle_core/cuda", "candle_nn/cuda"]),
        ],
        ..Crate::DEFAULT
    },
    Crate {
        name: "fastembed",
        cuda: Cuda::Feature(&["cuda"]),
        why: "ONNX Runtime with CUDA",
        // fastembed 5+ runs its candle models with CUDA under `cuda`.
        features_enable: &[
            ("cuda", &["candle_core/cuda", "candle_nn/cuda"]),
            ("cudnn", &["candle_core/cudnn", "candle_nn/cudnn"]),
        ],
        entry_points: &[(
            "CUDAExecutionProvider",
            "fastembed run on ONNX Runtime's CUDA provider",
        )],
        ..Crate::DEFAULT
    },
    Crate {
        name: "burn_candle",
        cuda: Cuda::Feature(&["cuda"]),
        why: "burn's candle backend with CUDA",
        ..Crate::DEFAULT
    },
    // TensorFlow's C library built for the GPU: a session places its ops on `/GPU:0` and takes
    // memory on every visible card.
    Crate {
        name: "tensorflow",
        cuda: Cuda::Feature(&["tensorflow_gpu"]),
        why: "TensorFlow built for the GPU (a session takes every visible card)",
        ..Crate::DEFAULT
    },
    Crate {
        name: "tensorflow_sys",
        cuda: Cuda::Feature(&["tensorflow_gpu"]),
        why: "TensorFlow built for the GPU (a session takes every visible card)",
        ..Crate::DEFAULT
    },
    Crate {
        name: "cuda_runtime_sys",
        cuda: Cuda::Always,
        why: "the raw CUDA runtime API (`cudaSetDevice`)",
        ..Crate::DEFAULT
    },
    // The raw driver API (Rust-CUDA's and the older `cuda-sys`), and the crates built on it
    // alone: CUDA is all they do.
    Crate {
        name: "cuda_driver_sys",
        cuda: Cuda::Always,
        why: "the raw CUDA driver API (`cuDeviceGet`, `cuCtxCreate`)",
        ..Crate::DEFAULT
    },
    Crate {
        name: "cuda_sys",
        cuda: Cuda::Always,
        why: "the raw CUDA driver and runtime APIs",
        ..Crate::DEFAULT
    },
    Crate {
        name: "accel",
        cuda: Cuda::Always,
        why: "accel's CUDA contexts (`Device::nth(i)`) on the driver API",
        ..Crate::DEFAULT
    },
    // TensorRT runs only on NVIDIA GPUs, in a CUDA context.
    Crate {
        name: "tensorrt_sys",
        cuda: Cuda::Always,
        why: "TensorRT, which runs on a CUDA device",
        ..Crate::DEFAULT
    },
    Crate {
        name: "tensorrt_rs",
        cuda: Cuda::Always,
        why: "TensorRT, which runs on a CUDA device",
        ..Crate::DEFAULT
    },
    // ArrayFire's default backend is CUDA where its library finds CUDA (then OpenCL, then the
    // CPU); `set_device(i)` picks the card.
    Crate {
        name: "arrayfire",
        cuda: Cuda::Always,
        why: "ArrayFire, whose default backend is CUDA where CUDA is installed",
        ..Crate::DEFAULT
    },
    Crate {
        name: "nvml_wrapper",
        cuda: Cuda::Never,
        why: "NVML: cards by physical (PCI) index; no CUDA context",
        ..Crate::DEFAULT
    },
];

/// Feature names that mean CUDA whatever the crate (`mistralrs-core/cuda`, `whisper-rs-sys/cuda`).
/// A feature is read through [`cuda_feature`], which also takes their word parts.
pub const CUDA_FEATURES: &[&str] = &["cuda", "cudnn", "cublas", "flash-attn", "nccl", "tensorrt"];

/// Words of a feature's name that turn CUDA off (`no-cuda`, `without_cuda`).
const FEATURE_NEGATIONS: &[&str] = &["no", "not", "without", "disable", "disabled"];

/// Whether a feature's name says CUDA: one of [`CUDA_FEATURES`], or a name one of whose word
/// parts (split at `-`/`_`) starts with `cuda` (opencv's `cudaimgproc`, `cudaarithm`, `cuda12`,
/// `cuda-12`) or is one of them (`candle-cudnn`, `with_tensorrt`) — unless a word negates it
/// (`no-cuda`).
pub fn cuda_feature(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if CUDA_FEATURES.contains(&name.as_str()) {
        return true;
    }
    let words: Vec<&str> = name.split(['-', '_']).collect();
    !words.iter().any(|w| FEATURE_NEGATIONS.contains(w))
        && words
            .iter()
            .any(|w| w.starts_with("cuda") || CUDA_FEATURES.contains(w))
}

/// Struct fields that hold a CUDA ordinal, by name: the keywords Python's GPU APIs take an
/// index by (`python::INDEX_KEYWORDS`: `device_id`, `gpu_id`, `device_index`, …) and
/// `device_ordinal`, each also in the plural (`device_ids`, `device_indices`), which holds a
/// list of cards (CTranslate2's `Config { device_indices: vec![0] }`). Each name says device,
/// GPU or CUDA: a record's bare `ordinal` (mistral.rs' `DeviceInfo { ordinal: Some(ord) }`
/// reports a card, it opens none) is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexField {
    /// One card; `named_index`: its name says index or id (`device_id`), so a value the tool
    /// does not follow is still one (`cuda_device` may hold a device).
    One { named_index: bool },
    /// A list of cards.
    List { named_index: bool },
}

/// The ordinal field names besides Python's keywords.
const ORDINAL_FIELDS: &[&str] = &["device_ordinal", "gpu_ordinal", "cuda_ordinal"];

/// A struct field whose name says it holds device ordinals (see [`IndexField`]).
pub fn index_field(name: &str) -> Option<IndexField> {
    let singular = super::python::INDEX_KEYWORDS
        .iter()
        .chain(ORDINAL_FIELDS)
        .copied();
    let named = |n: &str| {
        n.split('_').any(|w| {
            matches!(
                w,
                "id" | "ids" | "index" | "indices" | "ordinal" | "ordinals"
            )
        })
    };
    for one in singular {
        let plural = match one.strip_suffix("index") {
            Some(stem) => format!("{stem}indices"),
            None => format!("{one}s"),
        };
        if name == one {
            return Some(IndexField::One {
                named_index: named(name),
            });
        }
        if name == plural {
            return Some(IndexField::List {
                named_index: named(name),
            });
        }
    }
    None
}

/// Device constructors whose first argument is a CUDA device index, by the end of their path.
pub const INDEX_CALLS: &[&str] = &[
    "CudaContext::new",
    "CudaDevice::new",
    "Device::new_cuda",
    "Device::cuda_if_available",
    "Device::Cuda",
    // cust and rustacuda (Rust-CUDA): `Device::get_device(ordinal)`.
    "Device::get_device",
    "Device::new_cuda_with_stream",
    // The CUDA runtime API (`cuda-runtime-sys`, cudarc's `runtime::sys`).
    "cudaSetDevice",
    // accel: `Device::nth(ordinal)`.
    "Device::nth",
    // ArrayFire: the card of its CUDA (or OpenCL) backend.
    "arrayfire::set_device",
    // OpenCV's CUDA modules (`cv::cuda::setDevice`, bound as `opencv::core::set_device`).
    "opencv::core::set_device",
];

/// The entry of [`INDEX_CALLS`] a call resolves to: `path` as the file's `use` lines resolve
/// it, else one of `globbed` (the call's path under each glob the file imports, `use
/// arrayfire::*` making `set_device` `arrayfire::set_device`). An entry that starts with its
/// crate (`arrayfire::set_device`, `opencv::core::set_device`) is matched under a glob of that
/// crate by its last segment, wherever the crate re-exports it (`use opencv::prelude::*`).
pub fn index_call_resolved(path: &str, globbed: &[String]) -> Option<&'static str> {
    if let Some(call) = INDEX_CALLS.iter().copied().find(|n| path.ends_with(n)) {
        return Some(call);
    }
    globbed.iter().find_map(|full| {
        INDEX_CALLS.iter().copied().find(|call| {
            let krate = call.split("::").next().unwrap_or(call);
            ends_as(full, call)
                || (krate.starts_with(|c: char| c.is_ascii_lowercase())
                    && call.contains("::")
                    && full.split("::").next() == Some(krate)
                    && full.rsplit("::").next() == call.rsplit("::").next())
        })
    })
}

/// `path` ends with `call`, segment by segment.
fn ends_as(path: &str, call: &str) -> bool {
    path == call
        || path
            .strip_suffix(call)
            .is_some_and(|head| head.ends_with("::"))
}

/// Words of a crate's name (split at `_`) that say it drives CUDA: a crate the table does not
/// know whose name has one (`kn-cuda-sys`, `cudnn`) is taken to, as its own row would.
pub const CUDA_NAME_WORDS: &[&str] = &[
    "cuda", "cudnn", "cublas", "cublaslt", "cufft", "curand", "cusparse", "cusolver", "cutensor",
    "cudart", "nvrtc", "nccl",
];

/// Words that make such a name a tool for building or writing CUDA code rather than one that
/// opens a card (`cuda_builder`, `cuda_std`, the kernels' own library).
const CUDA_TOOLING_WORDS: &[&str] = &["build", "builder", "config", "std", "macros", "derive"];

/// A crate the table does not know whose name says it drives CUDA (see [`CUDA_NAME_WORDS`]).
pub fn named_for_cuda(package: &str) -> bool {
    let words: Vec<&str> = package.split(['_', '-']).collect();
    by_package(package).is_none()
        && words.iter().any(|w| CUDA_NAME_WORDS.contains(w))
        && !words.iter().any(|w| CUDA_TOOLING_WORDS.contains(w))
}

/// Command-line options that select several cards, by their name with `-`/`_` taken out and
/// lower-cased: a list of devices (any option whose name says device or GPU and whose type is
/// a list, or whose default lists several) and counts of cards, multi-GPU when their default
/// is above 1.
pub const DEVICE_WORDS: &[&str] = &["device", "gpu", "cuda"];
pub const CARD_COUNT_OPTIONS: &[&str] = &[
    "numgpus",
    "ngpus",
    "gpus",
    "gpucount",
    "numdevices",
    "ndevices",
    "devicecount",
    "worldsize",
    "tensorparallelsize",
    "tpsize",
    "numshards",
];

/// Names of CPU devices and backends (candle's `Device::Cpu`, burn's `NdArray`, `Flex`).
pub const CPU_DEVICES: &[&str] = &["Cpu", "NdArray", "Flex", "NdArrayDevice", "CpuDevice"];

/// Devices of other accelerators (candle's `Device::new_metal(0)`, `Device::Metal`, tch's and
/// burn-tch's `Device::Mps`, `LibTorchDevice::Vulkan`): the CUDA mask does not select them,
/// so code that chooses only these and CPU devices is no CUDA code.
pub const OTHER_DEVICES: &[&str] = &["new_metal", "Metal", "MetalDevice", "Mps", "Vulkan"];

/// A call that chooses a GPU through an API the CUDA mask does not govern: the card it picks
/// is not the one `CUDA_VISIBLE_DEVICES` leaves, in a program that also runs CUDA (Vulkan
/// buffers shared with a CUDA encoder, an OpenCL kernel beside a CUDA one).
#[derive(Debug)]
pub struct ForeignChoice {
    /// The method or function, as the code calls it.
    pub call: &'static str,
    /// The API, for the message.
    pub api: &'static str,
    /// What picks the same card as CUDA's.
    pub help: &'static str,
}

pub const FOREIGN_CHOICES: &[ForeignChoice] = &[
    // ash and vulkano: every card the Vulkan loader finds, in its own order.
    ForeignChoice {
        call: "enumerate_physical_devices",
        api: "Vulkan",
        help: "pick the physical device whose `deviceUUID` (VkPhysicalDeviceIDProperties) equals the CUDA device's UUID (`cuDeviceGetUuid`), or whose PCI bus id is the policy's card",
    },
    // wgpu: an adapter by power preference (Vulkan, DX12 or Metal underneath).
    ForeignChoice {
        call: "request_adapter",
        api: "wgpu",
        help: "choose among `enumerate_adapters` the adapter whose `AdapterInfo` (`device`, `name`) is the policy's card",
    },
    ForeignChoice {
        call: "enumerate_adapters",
        api: "wgpu",
        help: "choose the adapter whose `AdapterInfo` (`device`, `name`) is the policy's card",
    },
    // OpenCL (opencl3, cl-sys): the platform's devices, in the platform's order.
    ForeignChoice {
        call: "get_all_devices",
        api: "OpenCL",
        help: "choose the device whose PCI bus id (`CL_DEVICE_PCI_BUS_ID_NV`) is the policy's card",
    },
    ForeignChoice {
        call: "clGetDeviceIDs",
        api: "OpenCL",
        help: "choose the device whose PCI bus id (`CL_DEVICE_PCI_BUS_ID_NV`) is the policy's card",
    },
];

/// The row of a call that chooses a GPU the CUDA mask does not govern.
pub fn foreign_choice(call: &str) -> Option<usize> {
    FOREIGN_CHOICES.iter().position(|c| c.call == call)
}

/// A path segment that names a device CUDA does not run: a CPU one or another accelerator's.
pub fn non_cuda_device(segment: &str) -> bool {
    CPU_DEVICES.contains(&segment) || OTHER_DEVICES.contains(&segment)
}

/// A macro of a GPU crate that writes `#[test]` functions, one per device: its name, and each
/// test it writes, as the argument that names the test and the test's code, `$f`
/// standing for the first argument (the function the tests hand their device to).
#[derive(Debug)]
pub struct TestMacro {
    pub name: &'static str,
    pub tests: &'static [(usize, &'static str)],
}

/// The test-writing macros the crate graph expands before it reads a file.
pub const TEST_MACROS: &[TestMacro] = &[TestMacro {
    // candle's `test_device!(f, f_cpu, f_gpu, f_metal)` (`candle_core::test_utils`).
    name: "test_device",
    tests: &[
        (1, "#[test] fn $name() -> Result<()> { $f(&Device::Cpu) }"),
        (
            2,
            "#[cfg(feature = \"cuda\")] #[test] fn $name() -> Result<()> { $f(&Device::new_cuda(0)?) }",
        ),
        (
            3,
            "#[cfg(feature = \"metal\")] #[test] fn $name() -> Result<()> { $f(&Device::new_metal(0)?) }",
        ),
    ],
}];

/// The row of a crate by its package name, if it is a GPU crate.
pub fn by_package(package: &str) -> Option<&'static Crate> {
    CRATES.iter().find(|c| c.name == package)
}

/// The features of other registry crates that make `row` reach CUDA when they are on in the
/// build: its own `cuda_with`, and that of every crate it takes its device from, transitively.
pub fn cuda_with(row: &Crate) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = row.cuda_with.to_vec();
    let mut from: Vec<&'static str> = row.device_from.to_vec();
    let mut i = 0;
    while i < from.len() {
        if let Some(other) = by_package(from[i]) {
            for t in other.cuda_with {
                if !out.contains(t) {
                    out.push(t);
                }
            }
            for f in other.device_from {
                if !from.contains(f) {
                    from.push(f);
                }
            }
        }
        i += 1;
    }
    out
}

/// The row of a crate that can reach CUDA (not NVML alone).
pub fn cuda_crate(package: &str) -> Option<&'static Crate> {
    by_package(package).filter(|c| c.cuda != Cuda::Never)
}

/// Whether code that names `first` (a path's first segment, or a package) uses GPU types: a
/// row's name or one of its aliases.
pub fn is_gpu_crate(first: &str) -> bool {
    CRATES
        .iter()
        .any(|c| c.name == first || c.aliases.contains(&first))
        || named_for_cuda(first)
}

/// The last segments of [`INDEX_CALLS`] (`new`, `new_cuda`, …): a call named otherwise is never
/// resolved.
/// The entry of [`INDEX_CALLS`] a path ends as, segment by segment (`accel::Device::nth` is
/// `Device::nth`; `MyDevice::nth` is none).
pub fn index_call_of<S: AsRef<str>>(segments: &[S]) -> Option<&'static str> {
    INDEX_CALLS.iter().copied().find(|call| {
        let mut path = segments.iter().rev();
        call.rsplit("::")
            .all(|part| path.next().is_some_and(|s| s.as_ref() == part))
    })
}

pub fn index_call_names() -> impl Iterator<Item = &'static str> {
    let mut seen: Vec<&'static str> = Vec::new();
    INDEX_CALLS.iter().filter_map(move |call| {
        let last = call.rsplit("::").next().unwrap_or(call);
        (!seen.contains(&last)).then(|| {
            seen.push(last);
            last
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crate_has_one_row_and_says_why() {
        let mut names: Vec<&str> = CRATES
            .iter()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a crate or alias is listed twice");
        for c in CRATES {
            assert!(!c.why.is_empty(), "{} says no why", c.name);
            assert!(
                !c.name.contains('-'),
                "{}: names are as Rust sees them",
                c.name
            );
            // A crate whose code computes on a handed device picks no card by itself.
            if c.handed_device {
                assert_ne!(c.cuda, Cuda::Never, "{}", c.name);
            }
            if c.cuda == Cuda::Never {
                assert!(
                    c.entry_points.is_empty(),
                    "{} reaches no CUDA through an API",
                    c.name
                );
            }
            if let Cuda::Feature(features) = c.cuda {
                assert!(
                    !features.is_empty(),
                    "{}: a CUDA feature list is empty",
                    c.name
                );
            }
        }
    }

    #[test]
    fn a_path_is_an_index_call_by_its_last_segments() {
        let of = |p: &str| index_call_of(&p.split("::").collect::<Vec<_>>());
        assert_eq!(of("accel::Device::nth"), Some("Device::nth"));
        assert_eq!(of("Device::nth"), Some("Device::nth"));
        assert_eq!(of("MyDevice::nth"), None);
        assert_eq!(of("nth"), None);
    }

    #[test]
    fn a_crate_is_named_for_cuda_by_a_word_of_its_name() {
        for name in ["kn_cuda_sys", "cudnn", "rcublas_sys", "my_nccl"] {
            assert_eq!(named_for_cuda(name), name != "rcublas_sys", "{name}");
        }
        // A row of the table, a tool for writing CUDA code, a word that only contains one.
        for name in [
            "cudarc",
            "cuda_builder",
            "cuda_std",
            "barracuda",
            "wgpu",
            "nvml_wrapper",
        ] {
            assert!(!named_for_cuda(name), "{name}");
        }
    }

    #[test]
    fn a_feature_says_cuda_by_a_word_part() {
        for name in [
            "cuda",
            "cudaimgproc",
            "cudaarithm",
            "cuda12",
            "cuda-12",
            "candle-cudnn",
            "with_tensorrt",
            "flash-attn",
        ] {
            assert!(cuda_feature(name), "{name}");
        }
        for name in [
            "no-cuda",
            "without_cuda",
            "barracuda",
            "cpu",
            "metal",
            "opencl",
        ] {
            assert!(!cuda_feature(name), "{name}");
        }
    }

    #[test]
    fn a_field_holds_ordinals_by_its_name() {
        let one = |named_index| Some(IndexField::One { named_index });
        let list = |named_index| Some(IndexField::List { named_index });
        assert_eq!(index_field("device_id"), one(true));
        assert_eq!(index_field("cuda_device"), one(false));
        assert_eq!(index_field("device_ordinal"), one(true));
        assert_eq!(index_field("ordinal"), None);
        assert_eq!(index_field("device_indices"), list(true));
        assert_eq!(index_field("device_ids"), list(true));
        assert_eq!(index_field("gpu_devices"), list(false));
        assert_eq!(index_field("device"), None);
        assert_eq!(index_field("batch_size"), None);
    }

    #[test]
    fn a_glob_import_resolves_an_index_call_of_its_crate() {
        let globbed = |p: &str| vec![p.to_string()];
        assert_eq!(
            index_call_resolved("set_device", &globbed("arrayfire::set_device")),
            Some("arrayfire::set_device")
        );
        assert_eq!(
            index_call_resolved("set_device", &globbed("opencv::prelude::set_device")),
            Some("opencv::core::set_device")
        );
        assert_eq!(
            index_call_resolved("set_device", &globbed("mylib::set_device")),
            None
        );
        assert_eq!(index_call_resolved("set_device", &[]), None);
    }

    #[test]
    fn the_constructor_names_are_derived() {
        let names: Vec<&str> = index_call_names().collect();
        assert_eq!(
            names,
            [
                "new",
                "new_cuda",
                "cuda_if_available",
                "Cuda",
                "get_device",
                "new_cuda_with_stream",
                "cudaSetDevice",
                "nth",
                "set_device",
            ]
        );
    }
}
