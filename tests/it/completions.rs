//! `gpu-homogenize completions SHELL`, run in the shells themselves: the completion function
//! registered for `gpu-homogenize` is asked what it offers at the end of a command line. A shell
//! that is not installed is skipped with a note (bash is everywhere; `apt-get install zsh fish`).

use std::path::Path;

use crate::common::{gh, run};

fn installed(shell: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {shell}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        println!("note: {shell} is not installed; its completions are not tested here");
    }
    found
}

fn script(dir: &Path, shell: &str, file: &str) -> std::path::PathBuf {
    let out = run(gh(dir).args(["completions", shell]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let path = dir.join(file);
    std::fs::write(&path, out.stdout).unwrap();
    path
}

fn lines(out: std::process::Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut words: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .filter(|l| !l.is_empty())
        .collect();
    words.sort();
    words
}

/// bash: the function `complete -p gpu-homogenize` names, called as readline calls it.
const BASH: &str = r#"
source "$1"
spec=($(complete -p gpu-homogenize)) || exit 3
for ((i = 0; i < ${#spec[@]}; i++)); do [[ ${spec[i]} == -F ]] && fn=${spec[i+1]}; done
read -ra COMP_WORDS <<< "$2"
[[ $2 == *' ' ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$2; COMP_POINT=${#2}
"$fn" gpu-homogenize "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"#;

/// zsh: an interactive zsh in a pseudo-terminal types the line and a TAB; `compadd` is wrapped
/// to print each candidate (the technique of zsh-capture-completion).
const ZSH: &str = r#"
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT= ; RPROMPT= ; unsetopt beep; fpath=($1 \$fpath)"
zpty -w z 'autoload -U compinit; compinit -u -D'
zpty -w z 'compadd () { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi; typeset -a __hits; builtin compadd -A __hits "$@"; (( $#__hits )) || return; local h; for h in $__hits; do print -r -- "<""cand>$h" >&2; done; }'
zpty -w z 'comppostfuncs=(finish); finish () { print -r -- "<""done>" >&2; exit }'
zpty -w z "exec 2>&1"
zpty -n -w z "$2"$'\t'
while zpty -r z; do :; done | while IFS= read -r line; do
  line=${line%$'\r'}
  [[ $line == *'<done>'* ]] && break
  [[ $line == *'<cand>'* ]] && print -r -- "${line#*<cand>}"
done
zpty -d z 2>/dev/null
"#;

fn offered(dir: &Path, shell: &str, line: &str) -> Vec<String> {
    let out = match shell {
        "bash" => {
            let script = script(dir, "bash", "gpu-homogenize.bash");
            std::process::Command::new("bash")
                .args(["--norc", "-c", BASH, "bash"])
                .arg(&script)
                .arg(line)
                .output()
        }
        "zsh" => {
            script(dir, "zsh", "_gpu-homogenize");
            std::process::Command::new("timeout")
                .args(["60", "zsh", "-f", "-c", ZSH, "zsh"])
                .arg(dir)
                .arg(line)
                .output()
        }
        _ => {
            let script = script(dir, "fish", "gpu-homogenize.fish");
            std::process::Command::new("fish")
                .args(["--no-config", "-c"])
                .arg(format!(
                    "source {}; complete -C {}",
                    script.display(),
                    shell_quote(line)
                ))
                .output()
        }
    };
    lines(out.expect("the shell runs"))
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "\\'"))
}

fn each_shell(check: impl Fn(&str, &dyn Fn(&str) -> Vec<String>)) {
    for shell in ["bash", "zsh", "fish"] {
        if !installed(shell) {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        check(shell, &|line| offered(dir.path(), shell, line));
    }
}

#[test]
fn a_subcommand_option_completes() {
    each_shell(|shell, offered| {
        assert_eq!(
            offered("gpu-homogenize fix --un"),
            ["--unsafe-fixes"],
            "{shell}"
        );
        assert_eq!(
            offered("gpu-homogenize scan --stat"),
            ["--statistics"],
            "{shell}"
        );
    });
}

#[test]
fn subcommands_complete_without_the_hidden_ones() {
    each_shell(|shell, offered| {
        let words = offered("gpu-homogenize ");
        for visible in ["scan", "fix", "check", "report", "doctor", "completions"] {
            assert!(words.iter().any(|w| w == visible), "{shell}: {words:?}");
        }
        assert!(
            !words.iter().any(|w| w.starts_with("__")),
            "{shell}: {words:?}"
        );
    });
}

#[test]
fn option_values_complete() {
    each_shell(|shell, offered| {
        assert_eq!(
            offered("gpu-homogenize scan --format "),
            ["github", "gitlab", "json", "sarif", "text"],
            "{shell}"
        );
        assert_eq!(
            offered("gpu-homogenize fix --gpu "),
            ["auto", "off", "require"],
            "{shell}"
        );
    });
}

/// Rule codes complete from the registry (issue 34): `rule <TAB>` and `--select <TAB>` in the
/// shells installed here; every code is in the bash, zsh, fish and PowerShell scripts.
#[test]
fn rule_codes_complete() {
    each_shell(|shell, offered| {
        let nines: Vec<String> = (1..=9).map(|i| format!("GH10{i}")).collect();
        assert_eq!(offered("gpu-homogenize rule GH10"), nines, "{shell}");
        let after = offered("gpu-homogenize scan --select GH01");
        assert!(after.iter().any(|w| w == "GH013"), "{shell}: {after:?}");
        assert!(
            after.iter().all(|w| w.starts_with("GH01")),
            "{shell}: {after:?}"
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let all = run(gh(dir.path()).args(["rule", "--all"])).stdout;
    let codes: Vec<&str> = all
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            w.len() == 5 && w.starts_with("GH") && w[2..].bytes().all(|b| b.is_ascii_digit())
        })
        .collect();
    assert!(codes.len() > 40, "{all}");
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = run(gh(dir.path()).args(["completions", shell])).stdout;
        for code in &codes {
            assert!(script.contains(code), "{shell}: {code} missing");
        }
    }
    let ps = run(gh(dir.path()).args(["completions", "powershell"])).stdout;
    let rule_block = &ps[ps.find("'gpu-homogenize;rule' {").unwrap()..];
    let rule_block = &rule_block[..rule_block.find("break").unwrap()];
    assert!(
        rule_block.contains(
            "[CompletionResult]::new('GH101', 'GH101', [CompletionResultType]::ParameterValue"
        ),
        "{rule_block}"
    );
}
