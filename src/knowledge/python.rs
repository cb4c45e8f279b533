//! What Python's GPU frameworks are, as data.

/// Modules that initialise (or may initialise) CUDA when imported.
pub const GPU_FRAMEWORKS: &[&str] = &[
    "torch",
    "torchaudio",
    "torchvision",
    "tensorflow",
    "jax",
    "jaxlib",
    "cupy",
    "numba",
    "pycuda",
    "transformers",
    "faster_whisper",
    "whisper",
    "TTS",
    "llama_cpp",
    "onnxruntime",
    "accelerate",
    "ctranslate2",
    "diffusers",
    "sentence_transformers",
    "vllm",
    "tensorrt",
];
