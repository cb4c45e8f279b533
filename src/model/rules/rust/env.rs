//! The process env of a Rust program: the header in `fn main`, writes elsewhere, async and macro mains, children.

use crate::model::finding::{FixSafety, Rule, RuleEdits, Severity, Subject};

pub static HEADER_MISSING: Rule = Rule {
    code: "GH501",
    name: "rust-header-missing",
    severity: Severity::Violation,
    summary: "a GPU binary's entry point without the standard GPU comment header",
    why: "A GPU binary's fn main must set the GPU variables as its first statements, before any thread or CUDA context exists.",
    example: "fn main() {\n    let dev = Device::new_cuda(0)?;\n}",
    fix: FixSafety::Safe,
    fix_why: "The header is inserted at the top of main.",
    rewrite: "comment header inserted (GPU binaries only)",
    subject: Subject::Header,
    ..Rule::DEFAULT
};

pub static MAIN_ENV_MISSING: Rule = Rule {
    code: "GH502",
    name: "rust-main-env-missing",
    severity: Severity::Violation,
    summary: "fn main does not set the GPU env variables as its first statements",
    why: "A GPU binary's fn main must set the GPU variables as its first statements, before any thread or CUDA context exists.",
    example: "fn main() {\n    let dev = Device::new_cuda(0)?;\n}",
    fix: FixSafety::Safe,
    fix_why: "The header is inserted at the top of main.",
    rewrite: "env block inserted at the top of the chosen `main`",
    env: true,
    subject: Subject::Header,
    ..Rule::DEFAULT
};

pub static ENV_WRITE: Rule = Rule {
    code: "GH503",
    name: "rust-env-write",
    severity: Severity::Violation,
    summary: "a GPU env variable is set outside the header of fn main, or with a value other than the policy's",
    why: "A GPU variable set elsewhere than the header, or to another value, changes the card for what runs after it.",
    example: "std::env::set_var(\"CUDA_VISIBLE_DEVICES\", \"0\");",
    fix: FixSafety::Safe,
    fix_why: "The value is set to the policy's where the write is the header's own.",
    rewrite: "write removed (in `main` outside the header; elsewhere when it contradicts the policy); inside an expression or macro: reported, not fixable",
    env: true,
    ..Rule::DEFAULT
};

pub static ENV_IN_ASYNC_MAIN: Rule = Rule {
    code: "GH504",
    name: "rust-env-in-async-main",
    severity: Severity::Violation,
    summary: "an async main cannot set the GPU env safely: the runtime's threads already run when its body starts",
    why: "A runtime attribute (`#[tokio::main]`, `#[async_std::main]`, `#[actix_web::main]`) starts worker threads before the body runs: a GPU variable set there is set after other threads exist (unsound since edition 2024), and a thread may already have initialised CUDA.",
    example: "#[tokio::main]\nasync fn main() {}",
    fix: FixSafety::Unsafe,
    fix_why: "`main` becomes a sync function that sets the env first and builds the same runtime to run the body unchanged: the program's shape changes, so only `--unsafe-fixes` applies it; or set the env before the process starts (a launcher, the service's environment).",
    rewrite: "`#[tokio::main]` (with `flavor`, `worker_threads`), `#[async_std::main]`, `#[actix_web::main]`/`#[actix_rt::main]` become a sync `main` that sets the env first and then builds the same runtime to run the async function unchanged, renamed (`async fn async_main() { … }`, its body not moved, so rustfmt-clean stays clean; then `fn main() { …; Builder::new_multi_thread()…block_on(async_main()) }`); other options: none, the file stays `non_compliant`. Held back, it holds back the whole plan (an index remapped without the env would select the forbidden card)",
    edits: RuleEdits::SetsEnv,
    env: true,
    ..Rule::DEFAULT
};

pub static ENV_UNSAFE_FORBIDDEN: Rule = Rule {
    code: "GH505",
    name: "rust-env-unsafe-forbidden",
    severity: Severity::Violation,
    summary: "edition 2024 and the crate forbids unsafe code: main cannot call set_var; set the env before the process starts",
    why: "The env cannot be set safely from this main; set it before the process starts.",
    example: "#[tokio::main]\nasync fn main() {}",
    fix: FixSafety::None,
    fix_why: "Display only: in edition 2024 `set_var` needs `unsafe`, and the file or its `[lints]` forbid or deny `unsafe_code`, so no `unsafe` block is inserted; set the env in a launcher.",
    env: true,
    ..Rule::DEFAULT
};

pub static ENV_REMOVE: Rule = Rule {
    code: "GH506",
    name: "rust-env-remove",
    severity: Severity::Violation,
    summary: "a GPU env variable is removed (std::env::remove_var)",
    why: "Removing a GPU variable lets the inherited mask decide the card.",
    example: "std::env::remove_var(\"CUDA_VISIBLE_DEVICES\");",
    fix: FixSafety::Safe,
    fix_why: "The removal is taken out.",
    rewrite: "`remove_var` of a managed variable removed",
    env: true,
    ..Rule::DEFAULT
};

pub static CHILD_ENV: Rule = Rule {
    code: "GH507",
    name: "rust-child-env",
    severity: Severity::Violation,
    summary: "a child process gets a GPU env variable other than the policy's (Command::env / envs / env_remove / env_clear)",
    why: "A child process given another GPU variable runs on another card.",
    example: "Command::new(\"x\").env(\"CUDA_VISIBLE_DEVICES\", \"0\")",
    fix: FixSafety::Unsafe,
    fix_why: "Changing the child's env changes the card the child runs on.",
    rewrite: "`Command::env(K, \"0\")` / `envs([(K, \"0\")])` → the policy's value (unsafe fix); `env_remove(K)`, `env_clear()`: reported",
    ..Rule::DEFAULT
};

pub static MACRO_MAIN: Rule = Rule {
    code: "GH508",
    name: "rust-macro-main",
    severity: Severity::Review,
    summary: "a GPU program whose `main` a macro, libtest or rustdoc generates (`criterion_main!`, a test binary, a library's own `#[test]` functions and doc examples): the env cannot be inserted, for review",
    why: "A bench or binary whose `main` is generated by a macro (`criterion_main!`, `harness = false`), an integration test, a library's own `#[test]` functions (`cargo test` builds them into a program whose `main` libtest writes) and its doc examples (`cargo test --doc` runs each in a `main` rustdoc writes; not those marked `no_run`, `ignore` or `compile_fail`) have no `fn main` to put the env in, but their process still starts CUDA. A library file is told when its tests or examples reach CUDA through what they call: a test device type, a helper, the crate's own CUDA code (a CUDA crate's own tests and examples count where they choose a device or name the entry point that asks for CUDA).",
    example: "criterion_main!(benches);",
    fix: FixSafety::None,
    fix_why: "Display only: write a `fn main` that sets the env and calls the generated one, or set the env where it runs.",
    ..Rule::DEFAULT
};

pub static MAIN_ATTRIBUTE: Rule = Rule {
    code: "GH509",
    name: "rust-main-attribute",
    severity: Severity::Review,
    summary: "a GPU program's `main` carries an attribute that may run it off the process's first thread (`#[show_image::main]`, an unknown macro): no env block is inserted, for review",
    why: "The env is set soundly only as the first statements of a `main` that runs on the process's first thread before any other thread exists. An attribute macro on `main` may run its body elsewhere (`#[show_image::main]` runs it on a spawned thread while the event loop keeps the first one): a `set_var` there races the other threads (an `unsafe` block whose SAFETY comment would be false in edition 2024), and a thread may already have initialised CUDA.",
    example: "#[show_image::main]\nfn main() {\n    let dev = Device::new_cuda(0)?;\n}",
    fix: FixSafety::None,
    fix_why: "Display only: names the attribute; set the env before the process starts (a launcher, the service's environment), or in a plain `main` that sets it and then calls the attributed one. A device index the program selects is not remapped either (GH514).",
    env: true,
    ..Rule::DEFAULT
};
