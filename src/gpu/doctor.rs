pub fn run(_args: &crate::cli::DoctorArgs) -> anyhow::Result<i32> {
    anyhow::bail!("`doctor` is not available yet")
}
