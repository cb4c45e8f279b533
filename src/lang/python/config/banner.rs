//! The banner of a configuration block: the comment lines above it that only name the GPU
//! configuration, and go with it. A person's documentation above a removed write stays.

use crate::base::lines::prev_line_start;

/// The start of the banner directly above `line`. The rule: the comment lines right above it
/// (no blank line between; the shebang, pragmas and licence lines excluded), read upward while
/// each is a frame (`# ====`) or says nothing but the configuration ([`is_title`]), are its
/// banner when one of them names the GPU; the first line that says anything else, and every
/// line above it, is a person's documentation and stays.
pub(super) fn banner_start(source: &str, line: usize) -> usize {
    let mut start = line;
    let mut named = false;
    while start > 0 {
        let prev = prev_line_start(source, start);
        let text = source[prev..start].trim();
        let text = text.trim_start_matches('\u{feff}');
        let comment =
            text.starts_with('#') && !text.starts_with("#!") && !is_pragma_or_licence(text);
        if !comment || !(is_rule_line(text) || is_title(text)) {
            break;
        }
        named |= about_gpu(text);
        start = prev;
    }
    if named {
        start
    } else {
        line
    }
}

/// A comment that says nothing but the GPU configuration: once its asides in parentheses are
/// left out, every word is one of [`CONFIG_WORDS`] or holds a digit (`3090`, `cuda:1`, `24GB`).
/// `# Use the second GPU` is a title; `# Use the second card for the big model` documents why.
fn is_title(comment: &str) -> bool {
    let mut text = String::new();
    let mut depth = 0usize;
    for c in comment.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if depth == 0 => text.push(c),
            _ => {}
        }
    }
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .all(|w| w.chars().any(|c| c.is_ascii_digit()) || CONFIG_WORDS.contains(&w))
}

/// The words a comment that only names the GPU configuration is made of (English, French,
/// Spanish, as [`about_gpu`]): the cards and the variables, the verbs that select them, and
/// the small words between. Every comment line of the built-in headers is made of them.
#[rustfmt::skip]
const CONFIG_WORDS: &[&str] = &[
    // The GPU, the cards, the variables.
    "gpu", "gpus", "cuda", "rtx", "gtx", "ti", "pci", "bus", "card", "cards", "carte", "cartes",
    "tarjeta", "tarjetas", "nvidia", "geforce", "device", "devices", "visible", "order", "ordre",
    "orden", "alloc", "conf", "vram", "gb", "mb", "id", "ids", "index", "ordinal", "homogenize",
    "env", "environ", "environment", "environnement", "entorno", "variable", "variables", "mask",
    "masque", "masquée", "masqué", "masked", "hidden", "physical", "physique", "física", "uuid",
    "mig",
    // Choosing one.
    "config", "configuration", "configuración", "configure", "configured", "setup", "set", "sets",
    "setting", "settings", "select", "selected", "selection", "sélection", "selección", "choose",
    "chosen", "pick", "pin", "pinned", "force", "forced", "forcing", "forcée", "forcé", "forzar",
    "forzada", "use", "uses", "using", "utilise", "utiliser", "utilisation", "usar", "usa", "uso",
    "becomes", "devient", "only", "exclusively", "exclusivement", "uniquement", "seulement",
    "seule", "seul", "solo", "sólo", "solamente", "únicamente", "critical", "critique", "crítica",
    "mandatory", "obligatoire", "obligatoria", "required", "forbidden", "interdite", "interdit",
    "prohibida", "prohibido", "allowed", "autorisée", "autorisé", "permitida", "never", "jamais",
    "nunca", "always", "toujours", "siempre", "first", "second", "other", "premier", "première",
    "deuxième", "seconde", "autre", "primera", "segunda", "otra", "target", "cible",
    // The small words between.
    "the", "a", "an", "this", "to", "of", "for", "on", "in", "with", "and", "or", "then", "is",
    "it", "le", "la", "les", "l", "de", "du", "des", "d", "un", "une", "et", "ou", "sur", "pour",
    "avec", "est", "puis", "el", "los", "las", "del", "y", "o", "en", "para", "con", "es", "una",
    "al", "luego",
];

/// A comment that talks about the GPU configuration (in English, French or Spanish: the
/// languages of the teams this tool was built with).
fn about_gpu(comment: &str) -> bool {
    let l = comment.to_ascii_lowercase();
    [
        "gpu",
        "cuda",
        "rtx",
        "pci",
        "card",
        "carte",
        "tarjeta",
        "nvidia",
        "geforce",
        "device",
        "visible_devices",
        "alloc_conf",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// `# ====`, `# ----`, `#`: a line that only frames a banner.
fn is_rule_line(comment: &str) -> bool {
    comment
        .trim_start_matches('#')
        .chars()
        .all(|c| c.is_whitespace() || "=-*~_#+".contains(c))
}

fn is_pragma_or_licence(comment: &str) -> bool {
    let lower = comment.to_ascii_lowercase();
    [
        "coding:",
        "coding=",
        "spdx",
        "copyright",
        "license",
        "licence",
        "noqa",
        "type:",
        "mypy:",
        "pylint:",
        "ruff:",
        "fmt:",
        "pyright:",
        "isort:",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_comment_line_of_the_built_in_headers_is_a_banner_line() {
        for template in [
            crate::lang::python::header::DEFAULT_TEMPLATE,
            crate::lang::python::header::SEED_TEMPLATE,
        ] {
            // Both ways the mask is told: by index (PCI order), by UUID.
            for mask_how in crate::lang::template::MASK_HOW {
                let rendered = template
                    .replace("{{target_name}}", "RTX 3090")
                    .replace("{{forbidden_names}}", "RTX 5060 Ti")
                    .replace("{{visible_devices}}", "1")
                    .replace("{{mask_how}}", mask_how);
                for line in rendered.lines().map(str::trim) {
                    if line.starts_with("# ") || line == "#" {
                        assert!(is_rule_line(line) || is_title(line), "{line}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_title_names_the_configuration_and_nothing_else() {
        for title in [
            "# Use the second GPU",
            "# Force the second card",
            "# Configuration GPU RTX 3090 (collée ici lors de la migration)",
            "# --- GPU : RTX 3090 uniquement (bus PCI 1) ---",
            "# ---- RTX 3090 seule (bus PCI 1), la 5060 Ti est masquée ----",
        ] {
            assert!(is_title(title), "{title}");
        }
        for prose in [
            "# Use the second card for the big model",
            "# Clean state for each run.",
            "# Essai sur l'autre carte pendant le débogage du 12/03 (à retirer)",
            "# The scheduler gives each worker its own card.",
        ] {
            assert!(!is_title(prose), "{prose}");
        }
    }

    #[test]
    fn the_banner_stops_at_the_first_line_that_says_something_else() {
        fn banner(src: &str) -> &str {
            let at = src.find("os.environ").unwrap();
            &src[banner_start(src, at)..at]
        }
        assert_eq!(
            banner("x = 1\n# Use the second GPU\nos.environ"),
            "# Use the second GPU\n"
        );
        assert_eq!(
            banner("# Use the second card for the big model\nos.environ"),
            ""
        );
        assert_eq!(
            banner("# The big model needs 24 GB.\n# ====\n# GPU: RTX 3090\n# ====\nos.environ"),
            "# ====\n# GPU: RTX 3090\n# ====\n"
        );
        // Frames and titles alone, without the GPU named, are not the configuration's.
        assert_eq!(banner("# Setup\nos.environ"), "");
    }
}
