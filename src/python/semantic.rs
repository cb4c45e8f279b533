//! Which local names stand for which modules: `import torch as t`, `from torch import cuda`,
//! `import os as _os`, `from os import environ`. Scopes are merged: a name bound by an import
//! anywhere in the file resolves everywhere, which errs towards finding more.

use std::collections::HashMap;

use ruff_python_ast::visitor::{walk_stmt, Visitor};
use ruff_python_ast::{Expr, Stmt};

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

/// True for `torch`, `torch.cuda`, `TTS.api`, … but not for `torchmetrics_like`.
pub fn is_gpu_module(module: &str) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    GPU_FRAMEWORKS.contains(&top)
}

#[derive(Debug, Default)]
pub struct Bindings {
    names: HashMap<String, String>,
}

impl Bindings {
    pub fn collect(body: &[Stmt]) -> Bindings {
        let mut collector = Collector::default();
        collector.visit_body(body);
        Bindings {
            names: collector.names,
        }
    }

    /// The dotted name an expression refers to: `t.cuda.set_device` → `torch.cuda.set_device`.
    /// Names not bound by an import resolve to themselves, so builtins and locals still match
    /// by their plain name.
    pub fn qualified(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Name(name) => {
                let id = name.id.as_str();
                Some(
                    self.names
                        .get(id)
                        .cloned()
                        .unwrap_or_else(|| id.to_string()),
                )
            }
            Expr::Attribute(attr) => {
                let base = self.qualified(&attr.value)?;
                Some(format!("{base}.{}", attr.attr.as_str()))
            }
            _ => None,
        }
    }
}

#[derive(Default)]
struct Collector {
    names: HashMap<String, String>,
}

impl<'a> Visitor<'a> for Collector {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let module = alias.name.as_str();
                    match &alias.asname {
                        Some(asname) => {
                            self.names.insert(asname.as_str().into(), module.into());
                        }
                        None => {
                            let top = module.split('.').next().unwrap_or(module);
                            self.names.insert(top.into(), top.into());
                        }
                    }
                }
            }
            Stmt::ImportFrom(from) if from.level == 0 => {
                if let Some(module) = &from.module {
                    for alias in &from.names {
                        let local = alias.asname.as_ref().unwrap_or(&alias.name).as_str();
                        let full = format!("{}.{}", module.as_str(), alias.name.as_str());
                        self.names.insert(local.into(), full);
                    }
                }
            }
            _ => {}
        }
        walk_stmt(self, stmt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_ast::Stmt;

    fn qualified_of_last_expr(src: &str) -> Option<String> {
        let parsed = ruff_python_parser::parse_module(src).unwrap();
        let body = &parsed.syntax().body;
        let bindings = Bindings::collect(body);
        match body.last() {
            Some(Stmt::Expr(e)) => match e.value.as_ref() {
                Expr::Call(call) => bindings.qualified(&call.func),
                other => bindings.qualified(other),
            },
            _ => None,
        }
    }

    #[test]
    fn follows_aliases() {
        assert_eq!(
            qualified_of_last_expr("import torch as t\nt.cuda.set_device(1)\n").as_deref(),
            Some("torch.cuda.set_device")
        );
        assert_eq!(
            qualified_of_last_expr("from torch import cuda\ncuda.set_device(1)\n").as_deref(),
            Some("torch.cuda.set_device")
        );
        assert_eq!(
            qualified_of_last_expr("import os as _os\n_os.putenv('A', 'b')\n").as_deref(),
            Some("os.putenv")
        );
        assert_eq!(
            qualified_of_last_expr("def f():\n    import torch.cuda\ntorch.cuda.device(1)\n")
                .as_deref(),
            Some("torch.cuda.device")
        );
    }

    #[test]
    fn gpu_modules_match_on_the_top_package() {
        assert!(is_gpu_module("torch.cuda"));
        assert!(is_gpu_module("TTS.api"));
        assert!(!is_gpu_module("torchmetrics"));
        assert!(!is_gpu_module("os"));
    }
}
