//! Header templates: text in `@@ name` sections with `{{placeholders}}` for the policy's
//! values, rendered the same way for every language.

use crate::model::policy::Policy;

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("{path}: cannot read the {language} header template: {why}")]
    Read {
        path: String,
        language: &'static str,
        why: String,
    },
    #[error("Python header template: {0}")]
    Invalid(String),
}

/// The text of the template the policy names: a file inside the tree root (never through a
/// link, never `..` or an absolute path: the tree's config must not make the tool copy a file
/// from outside into diffs and rewrites), read through the confined reader.
pub fn read_template(
    root: &std::path::Path,
    path: &std::path::Path,
    language: &'static str,
) -> Result<String, TemplateError> {
    let fail = |why: String| TemplateError::Read {
        path: crate::model::outcome::display_path(path),
        language,
        why,
    };
    match crate::fs::tree_file::read_text(root, path, crate::fs::tree_file::SETTINGS_LIMIT) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(fail(format!(
            "no such file under the tree root {} (a template is a file of the tree, or `{BUILTIN_SEED}`)",
            crate::model::outcome::display_path(root)
        ))),
        Err(e) => Err(fail(e.why)),
    }
}

/// A template's `@@ name` sections, rendered with the policy's values.
/// `python_template` / `rust_template` naming the seed's templates, shipped in the binary.
pub const BUILTIN_SEED: &str = "builtin:seed";

pub fn render_sections(
    template: &str,
    policy: &Policy,
) -> Result<Vec<(String, Vec<String>)>, TemplateError> {
    let values = placeholder_values(policy);
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in template.lines() {
        if let Some(name) = line.strip_prefix("@@ ") {
            sections.push((name.trim().to_string(), Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut() {
            if let Some(rendered) = render_line(line, &values) {
                lines.push(rendered);
            }
        } else if !line.trim().is_empty() {
            return Err(TemplateError::Invalid(
                "text before the first `@@ section` line".into(),
            ));
        }
    }
    for (_, lines) in sections.iter_mut() {
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
    }
    Ok(sections)
}

pub fn join_lines(lines: &[String], newline: &str) -> String {
    let mut out = String::new();
    for line in lines {
        out.push_str(line);
        out.push_str(newline);
    }
    out
}

/// How the header says the mask selects the target: by index in PCI bus order, or by UUID
/// (where the order does not apply).
pub const MASK_HOW: [&str; 2] = [
    "PCI bus order, then the mask",
    "UUID mask (the order does not apply)",
];

fn placeholder_values(policy: &Policy) -> Vec<(&'static str, String)> {
    let forbidden: Vec<String> = policy.forbidden.iter().map(|c| c.label()).collect();
    let min_mem = policy.target.min_memory_gib.unwrap_or(0.0);
    vec![
        ("target_name", policy.target.label()),
        ("visible_devices", policy.visible_devices.clone()),
        ("device_order", policy.device_order.clone()),
        ("alloc_conf", policy.alloc_conf.clone()),
        ("forbidden_names", forbidden.join(", ")),
        ("min_memory_gib", format!("{min_mem}")),
        ("validate_function", policy.validate_function_name()),
        (
            "mask_how",
            MASK_HOW[usize::from(policy.mask_by_uuid())].to_string(),
        ),
    ]
}

/// Substitute `{{name}}` placeholders; a line whose placeholder is empty is dropped
/// (so `alloc_conf = ""` leaves `PYTORCH_CUDA_ALLOC_CONF` out).
fn render_line(line: &str, values: &[(&'static str, String)]) -> Option<String> {
    let mut out = line.to_string();
    for (name, value) in values {
        let placeholder = format!("{{{{{name}}}}}");
        if out.contains(&placeholder) {
            if value.is_empty() {
                return None;
            }
            out = out.replace(&placeholder, value);
        }
    }
    Some(out)
}
