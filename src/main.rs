use clap::Parser;

/// Parsing allocates a tree of small nodes per file on every worker at once, and frees it
/// as soon as the file is done: mimalloc's per-thread free lists suit that better than
/// glibc's arenas (the scan of the benchmark corpus spends a quarter of its time in malloc
/// and free with glibc).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Before anything else: a Ctrl-C during the walk must still end with a summary.
    gpu_homogenize::engine::run::cpu::install_signal_flag();
    let cli = gpu_homogenize::cli::Cli::parse();
    std::process::exit(gpu_homogenize::commands::run(cli));
}
