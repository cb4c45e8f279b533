use clap::Parser;

fn main() {
    // Before anything else: a Ctrl-C during the walk must still end with a summary.
    gpu_homogenize::run::cpu::install_signal_flag();
    let cli = gpu_homogenize::cli::Cli::parse();
    std::process::exit(gpu_homogenize::commands::run(cli));
}
