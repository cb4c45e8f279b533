//! Both rule catalogues together: what `--select`, SARIF and `gpu-homogenize rule` look up.

use crate::finding::Rule;

/// Every rule, Python's then Rust's, in code order.
pub fn all() -> Vec<&'static Rule> {
    let mut rules: Vec<&'static Rule> = crate::python::rules::ALL.to_vec();
    rules.extend(crate::rust::rules());
    rules
}

/// The rule with this code (case-insensitive), if any.
pub fn by_code(code: &str) -> Option<&'static Rule> {
    all()
        .into_iter()
        .find(|r| r.code.eq_ignore_ascii_case(code))
}
