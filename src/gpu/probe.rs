pub fn run(_args: &crate::cli::ProbeArgs) -> i32 {
    2
}
