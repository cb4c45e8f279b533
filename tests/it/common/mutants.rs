//! Mutants of the fixtures (fixed seed): what the mutation test and the cache test run.

use std::path::{Path, PathBuf};

use gpu_homogenize::engine::run::{RunInput, DEFAULT_MAX_FILE_SIZE};
use gpu_homogenize::fs::walk::language_of;

/// The whole of `root`, one job, no cache: how the in-process tests set up a run.
pub fn input(root: &Path) -> RunInput {
    RunInput {
        paths: vec![root.to_path_buf()],
        max_file_size: DEFAULT_MAX_FILE_SIZE,
        jobs: Some(1),
        no_cache: true,
        ..RunInput::default()
    }
}

/// xorshift64*: the same mutants on every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

pub fn sources() -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    collect(&root, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.ends_with("fakegpu") && !path.ends_with("target") {
            collect(&path, out);
        } else if language_of(&path).is_some() {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
}

/// One mutation: delete or duplicate a token or line, truncate, insert NUL or invalid
/// UTF-8, nest deeply.
pub fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let at = rng.below(b.len() + 1);
    let lines: Vec<usize> = std::iter::once(0)
        .chain(
            b.iter()
                .enumerate()
                .filter(|(_, &c)| c == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let line = lines[rng.below(lines.len())];
    let line_end = b[line..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| line + p + 1);
    let token_end = b[at..]
        .iter()
        .position(|c| !c.is_ascii_alphanumeric() && *c != b'_')
        .map_or(b.len(), |p| at + p.max(1))
        .min(b.len());
    match rng.below(9) {
        0 => drop(b.drain(at..token_end)),
        1 => {
            let token = b[at..token_end].to_vec();
            b.splice(at..at, token);
        }
        2 => drop(b.drain(line..line_end)),
        3 => {
            let copy = b[line..line_end].to_vec();
            b.splice(line..line, copy);
        }
        4 => b.truncate(at),
        5 => b.insert(at, 0),
        6 => b.insert(at, 0xff),
        7 => {
            let n = 150 + rng.below(400);
            let mut deep = "(".repeat(n).into_bytes();
            deep.extend(b"1");
            deep.extend(")".repeat(n).into_bytes());
            b.splice(at..at, deep);
        }
        _ => {
            let ch = [b'(', b'[', b'{', b'"', b'\'', b':', b'#'][rng.below(7)];
            b.insert(at, ch);
        }
    }
    b
}
