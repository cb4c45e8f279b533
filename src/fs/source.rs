//! Reading a source file, and refusing what is not text we may touch.

pub mod codec;

use std::path::Path;

use aho_corasick::packed;
use aho_corasick::AhoCorasick;

use self::codec::Codec;

use crate::model::outcome::Language;

/// A file read whole, with the bytes kept to detect changes before writing.
pub struct SourceFile {
    pub bytes: Vec<u8>,
    pub text: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReadError {
    #[error("cannot read: {0}")]
    Io(String),
    /// Open files or memory ran out: the run's error, not this file's.
    #[error("{0}")]
    Exhausted(crate::fs::resources::Exhausted),
    #[error(
        "too large to analyse in the memory there is ({size} bytes, and analysing it takes \
         about {factor} times that): free memory or raise `ulimit -v` to check it, or leave it out",
        factor = crate::fs::resources::ANALYSIS_FACTOR
    )]
    NoMemory { size: u64 },
    #[error("larger than the limit ({size} bytes > {limit}); use --max-file-size to raise it")]
    TooLarge { size: u64, limit: u64 },
    #[error("binary file (NUL byte at offset {0})")]
    Binary(usize),
    #[error("not valid UTF-8 (invalid byte at offset {0})")]
    NotUtf8(usize),
    #[error("not valid {name} as its coding cookie declares (invalid byte at offset {offset})")]
    NotInDeclared { name: String, offset: usize },
    #[error(
        "declares `coding: {0}`, an encoding this tool cannot read and write back (it reads \
         utf-8, ascii, latin-1 and cp1252): convert the file to UTF-8, or leave it out"
    )]
    UnknownEncoding(String),
    #[error(
        "UTF-16 text (byte-order mark {0}), which Python and rustc do not read as source: \
         convert it to UTF-8 (iconv -f UTF-16 -t UTF-8), or leave it out"
    )]
    Utf16(&'static str),
}

/// The UTF-16 byte-order mark `bytes` start with, and their text decoded (lossily: only to
/// look for GPU words in it).
fn utf16(bytes: &[u8]) -> Option<(&'static str, String)> {
    let (mark, big) = match bytes {
        [0xFF, 0xFE, ..] => ("FF FE", false),
        [0xFE, 0xFF, ..] => ("FE FF", true),
        _ => return None,
    };
    let units = bytes[2..].chunks_exact(2).map(|p| {
        if big {
            u16::from_be_bytes([p[0], p[1]])
        } else {
            u16::from_le_bytes([p[0], p[1]])
        }
    });
    let text = char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect();
    Some((mark, text))
}

/// Read a file whole, refusing what is not a regular file or is over `limit` bytes. Opening
/// never blocks (a FIFO swapped in is refused, not waited on) and never follows a link.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = crate::fs::platform::open_nofollow(path).map_err(io_error)?;
    read_open(file, limit)
}

/// Read the file at `rel` under `root`, every component opened without following a link
/// (see [`crate::fs::confine`]): the bytes a later write compares with are the file's own.
/// A fast 64-bit hash of a file's bytes: what the content cache compares when a file's
/// metadata changed (not the SHA-256 the report keeps).
pub fn content_key(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

pub fn read_under(root: &Path, rel: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = crate::fs::confine::RootDir::open(root)
        .and_then(|r| r.open_regular(rel))
        .map_err(io_error)?;
    read_open(file, limit)
}

/// An I/O error as the read's: running out of open files or memory is the run's error.
fn io_error(e: std::io::Error) -> ReadError {
    match crate::fs::resources::Exhausted::of(&e) {
        Some(what) => ReadError::Exhausted(what),
        None => ReadError::Io(e.to_string()),
    }
}

fn read_open(mut file: std::fs::File, limit: u64) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() {
        return Err(ReadError::Io("not a regular file".into()));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    // Reserved, never assumed: a file larger than the memory there is is this file's error
    // (an allocation that fails would abort the whole run).
    let mut bytes = Vec::new();
    let no_memory = || ReadError::NoMemory { size: meta.len() };
    let len = usize::try_from(meta.len()).map_err(|_| no_memory())?;
    bytes.try_reserve_exact(len).map_err(|_| no_memory())?;
    crate::fs::resources::headroom(len).map_err(|_| no_memory())?;
    // `take`: a file growing while read is still held to the limit.
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// Accept the bytes as source text: no NUL byte, valid in the encoding its coding cookie
/// declares (PEP 263), UTF-8 without one.
pub fn decode(bytes: Vec<u8>) -> Result<SourceFile, ReadError> {
    if let Some((mark, _)) = utf16(&bytes) {
        return Err(ReadError::Utf16(mark));
    }
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        return Err(ReadError::Binary(nul));
    }
    let text = match codec::Cookie::of(&bytes) {
        codec::Cookie::None => Codec::Utf8.decode(&bytes).map_err(ReadError::NotUtf8)?,
        codec::Cookie::Known { name, codec } => {
            codec.decode(&bytes).map_err(|offset| match codec {
                Codec::Utf8 => ReadError::NotUtf8(offset),
                _ => ReadError::NotInDeclared { name, offset },
            })?
        }
        codec::Cookie::Unknown(name) => return Err(ReadError::UnknownEncoding(name)),
    };
    Ok(SourceFile { bytes, text })
}

pub fn read(path: &Path, limit: u64) -> Result<SourceFile, ReadError> {
    decode(read_bytes(path, limit)?)
}

/// Words a file must contain to be worth parsing (ripgrep-style prefilter), besides the
/// names of the GPU frameworks (`knowledge::python::FRAMEWORKS`): an import of one makes GPU code.
pub const GPU_WORDS: &[&str] = &[
    // Device selection and the env variables (`cuda:1`, `CUDA_VISIBLE_DEVICES`, `Device::Cuda`).
    "cuda",
    "CUDA",
    "Cuda",
    "gpu",
    "GPU",
    "nvml",
    "NVML",
    // Index keywords and GPU tables without a GPU word: `device_index=1`, `device_map = {..}`.
    "device",
    "Device",
    "DEVICE",
    // Options that ask for a number of processes, one per card (`torchrun --nproc_per_node`,
    // `accelerate launch --num_processes`, a console script's `--num-processes 2`).
    "nproc",
    "num_processes",
    "num-processes",
    // Rust GPU crates whose names are too short or common to match alone.
    "candle",
    "burn::",
    "burn_",
    "ort::",
    "tch::",
];

/// Every literal of the Python prefilter: the words, the frameworks, the serving engines whose
/// count of cards is read, and Lightning's modules (its trainer takes a GPU).
pub fn gpu_literals() -> Vec<&'static str> {
    use crate::knowledge::python::{ENGINES, LIGHTNING_CALLS, TAKES_A_GPU_CALLS};
    let mut literals: Vec<&'static str> = GPU_WORDS
        .iter()
        .copied()
        .chain(crate::knowledge::python::gpu_frameworks())
        .chain(ENGINES.iter().copied())
        .chain(
            LIGHTNING_CALLS
                .iter()
                .chain(TAKES_A_GPU_CALLS)
                .map(|c| c.split('.').next().unwrap_or(c)),
        )
        .collect();
    literals.sort_unstable();
    literals.dedup();
    literals
}

/// The literals that can start a Rust finding: a device constructor, an env change of the
/// managed variables (process or child), an NVML index, or an entry point's `fn main`. A
/// module that merely uses GPU types contains none of them and is never parsed.
pub const RUST_LITERALS: &[&str] = &[
    "new_cuda",
    "cuda_if_available",
    "Cuda(",
    "CudaContext::new",
    "CudaDevice::new",
    "CudaDevice {",
    "with_device_id",
    "get_device(",
    "cudaSetDevice",
    "Device::nth(",
    "set_device(",
    "set_var",
    "remove_var",
    ".env(",
    ".envs(",
    "env_remove",
    "env_clear",
    "device_by_index",
    "fn main",
];

/// One compiled literal set: Teddy (SIMD) when the CPU has it, as ripgrep does, else a plain
/// Aho-Corasick automaton.
enum Searcher {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

impl Searcher {
    fn new(literals: &[&str]) -> Searcher {
        match packed::Config::new().builder().extend(literals).build() {
            Some(searcher) => Searcher::Packed(searcher),
            None => {
                Searcher::Automaton(AhoCorasick::new(literals).expect("the literal set is valid"))
            }
        }
    }

    fn is_match(&self, bytes: &[u8]) -> bool {
        match self {
            Searcher::Packed(searcher) => searcher.find(bytes).is_some(),
            Searcher::Automaton(ac) => ac.is_match(bytes),
        }
    }

    /// The bytes of the first literal in `bytes`.
    fn first<'b>(&self, bytes: &'b [u8]) -> Option<&'b [u8]> {
        let (start, end) = match self {
            Searcher::Packed(searcher) => searcher.find(bytes).map(|m| (m.start(), m.end()))?,
            Searcher::Automaton(ac) => ac.find(bytes).map(|m| (m.start(), m.end()))?,
        };
        Some(&bytes[start..end])
    }
}

/// The prefilter of each language: [`gpu_literals`] for Python, [`RUST_LITERALS`] for Rust.
pub struct Prefilter {
    python: Searcher,
    rust: Searcher,
    /// The longest literal of each language: a chunk of a large file keeps one byte less of
    /// the chunk before it.
    longest: (usize, usize),
}

/// The most bytes of a file over the size limit [`Prefilter::large_may_have_gpu_code`] reads
/// through the prefilter; past it the file stays an error.
pub const LARGE_SCAN_LIMIT: u64 = 256 * 1024 * 1024;

impl Prefilter {
    pub fn new() -> Prefilter {
        let python = gpu_literals();
        let longest = |literals: &[&str]| literals.iter().map(|l| l.len()).max().unwrap_or(1);
        Prefilter {
            longest: (longest(&python), longest(RUST_LITERALS)),
            python: Searcher::new(&python),
            rust: Searcher::new(RUST_LITERALS),
        }
    }

    /// Whether a file over the size limit may hold GPU code, its bytes read in chunks through
    /// the prefilter, never whole (a generated file of several megabytes: TensorFlow's op
    /// wrappers). `Ok(None)` only when none of the language's words is in it and it is plain
    /// text (no NUL byte, no UTF-16 mark) of at most [`LARGE_SCAN_LIMIT`] bytes: then it holds
    /// no GPU code as surely as a small file without them, which is never parsed either. Else
    /// why it may (`` it holds `set_device(` ``).
    pub fn large_may_have_gpu_code(
        &self,
        root: &Path,
        rel: &Path,
        language: Language,
    ) -> Result<Option<String>, ReadError> {
        use std::io::Read;
        const CHUNK: usize = 1 << 20;
        let mut file = crate::fs::confine::RootDir::open(root)
            .and_then(|r| r.open_regular(rel))
            .map_err(io_error)?;
        let (searcher, longest) = match language {
            Language::Python => (&self.python, self.longest.0),
            Language::Rust => (&self.rust, self.longest.1),
        };
        let overlap = longest.saturating_sub(1);
        let mut buf = vec![0u8; CHUNK + overlap];
        let (mut kept, mut total, mut first) = (0usize, 0u64, true);
        loop {
            let n = file.read(&mut buf[kept..]).map_err(io_error)?;
            if n == 0 {
                return Ok(None);
            }
            total += n as u64;
            let window = &buf[..kept + n];
            if total > LARGE_SCAN_LIMIT {
                return Ok(Some(format!(
                    "only its first {LARGE_SCAN_LIMIT} bytes were looked at"
                )));
            }
            if first && (window.starts_with(&[0xFF, 0xFE]) || window.starts_with(&[0xFE, 0xFF])) {
                return Ok(Some("it is UTF-16".into()));
            }
            if window[kept..].contains(&0) {
                return Ok(Some("it holds a NUL byte".into()));
            }
            if let Some(word) = searcher.first(window) {
                return Ok(Some(format!(
                    "it holds `{}`",
                    String::from_utf8_lossy(word)
                )));
            }
            first = false;
            let keep = overlap.min(window.len());
            let end = window.len();
            buf.copy_within(end - keep..end, 0);
            kept = keep;
        }
    }

    pub fn may_have_gpu_code(&self, language: Language, bytes: &[u8]) -> bool {
        // A UTF-16 file with GPU code is reported (see [`decode`]), never `no_gpu_code`.
        if let Some((_, text)) = utf16(bytes) {
            return self.may_have_gpu_code(language, text.as_bytes());
        }
        match language {
            Language::Python => self.python.is_match(bytes),
            Language::Rust => self.rust.is_match(bytes),
        }
    }
}

impl Default for Prefilter {
    fn default() -> Self {
        Prefilter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prefilter never skips a file that the knowledge tables would find something in on
    /// one API alone: each device API, keyword and constructor contains one of its literals.
    #[test]
    fn the_prefilters_cover_the_knowledge_tables() {
        use crate::knowledge::{python, rust};
        let py = gpu_literals();
        let covered = |text: &str| py.iter().any(|l| text.contains(l));
        let apis = python::INDEX_CALLS
            .iter()
            .map(|(call, _, _)| call.to_string())
            .chain(python::INDEX_KEYWORDS.iter().map(|k| k.to_string()))
            // A count of cards is read in any call, and a server module in any command.
            .chain(python::GPU_COUNT_KEYWORDS.iter().map(|k| k.to_string()))
            .chain(python::GPU_SERVER_MODULES.iter().map(|m| m.to_string()))
            .chain(
                python::TORCH_CUDA_DEVICE_FUNCS
                    .iter()
                    .map(|f| format!("torch.cuda.{f}")),
            );
        for api in apis {
            assert!(covered(&api), "no Python prefilter literal in `{api}`");
        }
        // A name about a device (an option, a keyword) is read only in files the prefilter keeps.
        for word in crate::knowledge::DEVICE_WORDS {
            for case in [word.to_string(), word.to_ascii_uppercase()] {
                assert!(
                    GPU_WORDS.contains(&case.as_str()),
                    "`{case}` is no prefilter word"
                );
            }
        }
        for call in rust::INDEX_CALLS {
            let text = format!("{call}(");
            assert!(
                RUST_LITERALS.iter().any(|l| text.contains(l)),
                "no Rust prefilter literal in `{text}`"
            );
        }
    }

    #[test]
    fn utf16_with_gpu_words_is_read_and_refused_by_name() {
        let encode = |text: &str, big: bool| -> Vec<u8> {
            let mut out = if big {
                vec![0xFE, 0xFF]
            } else {
                vec![0xFF, 0xFE]
            };
            for unit in text.encode_utf16() {
                out.extend(if big {
                    unit.to_be_bytes()
                } else {
                    unit.to_le_bytes()
                });
            }
            out
        };
        let filter = Prefilter::new();
        for big in [false, true] {
            let gpu = encode("import torch\nx = torch.device('cuda:1')\n", big);
            assert!(filter.may_have_gpu_code(Language::Python, &gpu));
            assert!(!filter.may_have_gpu_code(Language::Python, &encode("x = 1\n", big)));
            let mark = if big { "FE FF" } else { "FF FE" };
            assert_eq!(decode(gpu).err(), Some(ReadError::Utf16(mark)));
        }
    }

    #[test]
    fn rejects_binary_and_latin1() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("b.py");
        std::fs::write(&bin, b"cuda\0x").unwrap();
        assert_eq!(read(&bin, 1000).err(), Some(ReadError::Binary(4)));
        let latin = dir.path().join("l.py");
        std::fs::write(&latin, b"# \xe9\nimport torch\n").unwrap();
        assert_eq!(read(&latin, 1000).err(), Some(ReadError::NotUtf8(2)));
        assert!(matches!(
            read(&latin, 3).err(),
            Some(ReadError::TooLarge { .. })
        ));
    }

    #[test]
    fn reads_the_encoding_the_cookie_declares() {
        let file = decode(b"# -*- coding: latin-1 -*-\n# r\xe9glage\n".to_vec()).unwrap();
        assert_eq!(file.text, "# -*- coding: latin-1 -*-\n# réglage\n");
        let cp = decode(b"# coding: cp1252\n# \x93x\x94\n".to_vec()).unwrap();
        assert_eq!(cp.text, "# coding: cp1252\n# \u{201c}x\u{201d}\n");
        assert_eq!(
            decode(b"# coding: cp1252\n# \x81\n".to_vec()).err(),
            Some(ReadError::NotInDeclared {
                name: "cp1252".into(),
                offset: 19
            })
        );
        assert_eq!(
            decode(b"# coding: ascii\n# \xe9\n".to_vec())
                .err()
                .unwrap()
                .to_string(),
            "not valid ascii as its coding cookie declares (invalid byte at offset 18)"
        );
        assert_eq!(
            decode(b"# coding: koi8-r\nimport torch\n".to_vec()).err(),
            Some(ReadError::UnknownEncoding("koi8-r".into()))
        );
    }

    #[test]
    fn prefilter_skips_files_without_gpu_words() {
        let p = Prefilter::new();
        assert!(p.may_have_gpu_code(Language::Python, b"import torch\n"));
        assert!(!p.may_have_gpu_code(Language::Python, b"import wave\nprint('hello')\n"));
        assert!(p.may_have_gpu_code(Language::Rust, b"let d = Device::new_cuda(1)?;"));
        // Every child-env form reaches the parser: a file may start workers and select nothing.
        for child in [
            &b"cmd.env(\"CUDA_VISIBLE_DEVICES\", \"0\");"[..],
            b"cmd.envs([(\"CUDA_VISIBLE_DEVICES\", \"0\")]);",
            b"cmd.env_remove(\"CUDA_VISIBLE_DEVICES\");",
            b"Command::new(\"w\").env_clear().spawn()?;",
        ] {
            assert!(p.may_have_gpu_code(Language::Rust, child), "{child:?}");
        }
        assert!(!p.may_have_gpu_code(
            Language::Rust,
            b"use candle_core::Device;\npub fn f(d: &Device) {}\n"
        ));
    }
}
