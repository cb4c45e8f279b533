//! Rust support (syn): not wired yet.

use std::path::Path;

use crate::finding::Rule;
use crate::lang::LanguageSupport;
use crate::policy::Policy;

pub fn support(_policy: &Policy, _root: &Path) -> Option<Box<dyn LanguageSupport>> {
    None
}

pub fn rules() -> Vec<&'static Rule> {
    Vec::new()
}
