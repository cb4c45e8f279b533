use clap::Parser;

fn main() {
    let cli = gpu_homogenize::cli::Cli::parse();
    std::process::exit(gpu_homogenize::app::run(cli));
}
