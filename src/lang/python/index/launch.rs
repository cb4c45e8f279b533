//! Commands in the tree that start a Python program: `python x.py`, `python -m pkg.mod`,
//! `torchrun x.py`, `accelerate launch x.py`, `deepspeed x.py`, in shell scripts, Makefile
//! recipes, Dockerfile `RUN`/`CMD`/`ENTRYPOINT`, Procfiles, compose files, CI workflows and the
//! code blocks of a README. Each is evidence that the file it names is a program, with the
//! file and line that says so, and the cards the command asks for (`--nproc_per_node 2`,
//! `--gpu_ids 0,1`, `CUDA_VISIBLE_DEVICES=0,1`). The text is only read, never run.

/// One command that starts a Python file or module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Launch {
    /// 1-based line of the command in its file.
    pub line: usize,
    /// The command as written (on one line, shortened).
    pub command: String,
    pub target: Target,
    /// The cards asked for, and what asks (`` `--nproc_per_node 2` ``): more than one by
    /// any command, or the process count of a distributed launcher, one included
    /// (`torchrun` alone starts one; `accelerate launch` or `deepspeed` without a count or a
    /// config file one per visible card). `None`: one process that picks no count.
    pub cards: Option<(usize, String)>,
    /// A process count the command gives but does not write (`--nproc_per_node=$GPUS`):
    /// what gives it. Several processes, perhaps: never taken as one.
    pub unknown: Option<String>,
    /// The `CUDA_VISIBLE_DEVICES` the command sets for the program.
    pub mask: Option<String>,
    /// The scripts a launcher outside the tree is handed (`python -m trainer.distribute
    /// --script train.py`): started by this command when its target is no file of the tree.
    pub handed: Option<Handed>,
}

/// The `.py` words of a command whose program is a module or an executable that may not be
/// a file of the tree: each, when it is one, is started by that program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Handed {
    pub scripts: Vec<String>,
    /// Why the number of processes is unknown (a launcher that is no known single-process
    /// runner); `None`: one process (`python -m pdb x.py`, `coverage run x.py`).
    pub unknown: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A path as written (`scripts/train.py`, `./app.py`).
    File(String),
    /// A dotted module (`python -m pkg.serve`).
    Module(String),
    /// An executable that is not Python nor a launcher known here (`trainer-run`): it starts
    /// only what it is handed.
    Outside(String),
    /// A path from the folder of the file that holds the command, and from there only
    /// (`$(dirname "$0")/train.py` in a shell script).
    Here(String),
}

/// The launches a file of the tree holds; `name` is its file name, which says its kind.
pub(super) fn launches(name: &str, text: &str) -> Vec<Launch> {
    let lower = name.to_ascii_lowercase();
    let lines = if lower.starts_with("readme") {
        readme_lines(&lower, text)
    } else if lower.starts_with("dockerfile")
        || lower.starts_with("containerfile")
        || lower.ends_with(".dockerfile")
    {
        dockerfile_lines(text)
    } else if name == "Procfile" {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.split_once(':').map_or("", |(_, c)| c).to_string()))
            .collect()
    } else if lower.ends_with(".yml") || lower.ends_with(".yaml") {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i + 1, yaml_command(l)))
            .collect()
    } else if lower.ends_with("makefile") || lower.ends_with(".mk") {
        joined(text)
            .into_iter()
            .filter(|(_, l)| l.starts_with('\t'))
            .map(|(n, l)| (n, l.trim_start_matches(['\t', '@', '-', '+']).to_string()))
            .collect()
    } else {
        joined(text)
    };
    let here = script_dir_names(&lines);
    let ctx = Script {
        here: &here,
        tasks: sbatch_tasks(text),
    };
    let mut out = Vec::new();
    for (line, text) in lines {
        for command in split_commands(&text) {
            if let Some(launch) = parse(&command, line, &ctx) {
                out.push(launch);
            }
        }
    }
    out
}

/// What the launches of one file share: the variables its script sets to its own folder, and
/// the tasks a Slurm batch script's `#SBATCH` lines ask for.
struct Script<'a> {
    here: &'a [String],
    tasks: Option<(usize, String)>,
}

/// The tasks per node a Slurm batch script asks for (`#SBATCH --ntasks-per-node=4`, else
/// `--ntasks`/`-n`): one where its `#SBATCH` lines write none (Slurm's default), `None` for a
/// file that is no batch script.
fn sbatch_tasks(text: &str) -> Option<(usize, String)> {
    let mut batch = false;
    let (mut per_node, mut total) = (None, None);
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("#SBATCH") else {
            continue;
        };
        batch = true;
        let words: Vec<&str> = rest.split_whitespace().collect();
        for (k, w) in words.iter().enumerate() {
            let (option, value) = match w.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (*w, words.get(k + 1).copied()),
            };
            let n = value.and_then(|v| v.parse::<usize>().ok());
            let what = || format!("`#SBATCH {option} {}`", value.unwrap_or(""));
            match (option, n) {
                ("--ntasks-per-node", Some(n)) => per_node = Some((n, what())),
                ("--ntasks" | "-n", Some(n)) => total = Some((n, what())),
                _ => {}
            }
        }
    }
    batch.then(|| {
        per_node
            .or(total)
            .unwrap_or((1, "`#SBATCH` (one task)".into()))
    })
}

/// The launches of a command line a program's code runs (`os.system(…)`, a `subprocess`
/// call's list joined into one line): no variable of a script names its folder there.
pub(super) fn command_launches(text: &str, line: usize) -> Vec<Launch> {
    split_commands(text)
        .iter()
        .filter_map(|c| {
            let ctx = Script {
                here: &[],
                tasks: None,
            };
            parse(c, line, &ctx)
        })
        .collect()
}

/// The variables a shell script sets to its own folder (`SCRIPT_DIR=$(dirname "$0")`,
/// `HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"`).
fn script_dir_names(lines: &[(usize, String)]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|(_, l)| {
            let l = l.trim();
            let l = ["export ", "local ", "readonly ", "declare "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .unwrap_or(l);
            let (name, value) = l.split_once('=')?;
            let shell_name = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            let value = words(value);
            (shell_name && value.len() == 1 && is_script_dir(&value[0], &[]))
                .then(|| name.to_string())
        })
        .collect()
}

/// Whether a shell word (quotes removed, a command substitution as written) is the folder of
/// the running script: `$(dirname "$0")`, `${0%/*}`, `$(cd "$(dirname "$0")" && pwd)`,
/// `$(dirname "$(realpath "$0")")`, or a variable set to one (`here`).
fn is_script_dir(word: &str, here: &[String]) -> bool {
    let word = word.trim_matches('"');
    if matches!(
        word,
        "${0%/*}" | "${BASH_SOURCE%/*}" | "${BASH_SOURCE[0]%/*}"
    ) {
        return true;
    }
    let var = word
        .strip_prefix("${")
        .and_then(|w| w.strip_suffix('}'))
        .or_else(|| word.strip_prefix('$'));
    if var.is_some_and(|v| here.iter().any(|h| h == v)) {
        return true;
    }
    let inner = word
        .strip_prefix("$(")
        .and_then(|w| w.strip_suffix(')'))
        .or_else(|| word.strip_prefix('`').and_then(|w| w.strip_suffix('`')));
    let Some(inner) = inner else {
        return false;
    };
    // Every word of the substitution is one of these: the script's path, and the commands
    // that take its folder or make it absolute.
    let tokens: Vec<&str> = inner
        .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | ')' | ';' | '`'))
        .map(|t| t.trim_start_matches('$'))
        .filter(|t| !t.is_empty() && *t != "&&")
        .collect();
    let script = |t: &str| {
        matches!(
            t,
            "0" | "{0}" | "BASH_SOURCE" | "{BASH_SOURCE}" | "{BASH_SOURCE[0]}"
        )
    };
    tokens.contains(&"dirname")
        && tokens.iter().any(|t| script(t))
        && tokens.iter().all(|t| {
            script(t)
                || matches!(
                    *t,
                    "dirname"
                        | "cd"
                        | "pwd"
                        | "realpath"
                        | "readlink"
                        | "-f"
                        | "-e"
                        | "-m"
                        | "-P"
                        | "-L"
                        | "--"
                        | ">/dev/null"
                        | "&>/dev/null"
                        | "2>&1"
                )
        })
}

/// The path a script word names from the script's own folder (`$(dirname "$0")/train.py`):
/// what follows the folder.
fn from_script_dir<'w>(word: &'w str, here: &[String]) -> Option<&'w str> {
    word.match_indices('/').find_map(|(at, _)| {
        let rest = word[at + 1..].trim_start_matches('/');
        (is_script_dir(&word[..at], here) && !rest.contains(['$', '{', '*', '`'])).then_some(rest)
    })
}

/// Lines with their `\` continuations joined, each with the line it starts on.
fn joined(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        let (body, more) = match line.trim_end().strip_suffix('\\') {
            Some(body) => (body, true),
            None => (line, false),
        };
        match out.last_mut() {
            Some((_, acc)) if open => {
                acc.push(' ');
                acc.push_str(body.trim());
            }
            _ => out.push((i + 1, body.to_string())),
        }
        open = more;
    }
    out
}

/// The code of a README's blocks that are not Python source: fenced blocks in Markdown
/// (a shell prompt `$ ` dropped) and the inline code spans of its prose, every line elsewhere
/// (reStructuredText, plain text).
fn readme_lines(lower: &str, text: &str) -> Vec<(usize, String)> {
    if !lower.ends_with(".md") {
        return joined(text);
    }
    let mut out = Vec::new();
    let mut fence: Option<(String, bool)> = None;
    for (n, line) in joined(text) {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (&fence, marker) {
            (None, Some(m)) => {
                let lang = trimmed.trim_start_matches(m).trim().to_ascii_lowercase();
                let python = lang.starts_with("py") && !lang.starts_with("pycon");
                fence = Some((m.to_string(), python));
            }
            (Some((m, _)), Some(found)) if found == m => fence = None,
            (Some((_, false)), _) => out.push((n, line)),
            // Prose: a command in an inline code span (`` `python3 -m x --script y.py` ``).
            (None, None) => out.extend(code_spans(&line).into_iter().map(|c| (n, c))),
            _ => {}
        }
    }
    out
}

/// The inline code spans of a Markdown line: what lies between two runs of as many backticks.
fn code_spans(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find('`') {
        let ticks = rest[open..].chars().take_while(|&c| c == '`').count();
        let body = &rest[open + ticks..];
        let fence = "`".repeat(ticks);
        // The closing run: as many backticks, no more.
        let close = body.match_indices(&fence).map(|(at, _)| at).find(|&at| {
            !body[at + ticks..].starts_with('`') && (at == 0 || !body[..at].ends_with('`'))
        });
        let Some(close) = close else { break };
        out.push(body[..close].trim().to_string());
        rest = &body[close + ticks..];
    }
    out
}

/// A Dockerfile's `RUN`, `CMD` and `ENTRYPOINT` (shell form, or an exec form's JSON array).
fn dockerfile_lines(text: &str) -> Vec<(usize, String)> {
    joined(text)
        .into_iter()
        .filter_map(|(n, line)| {
            let trimmed = line.trim_start();
            let (word, rest) = trimmed.split_once(char::is_whitespace)?;
            matches!(
                word.to_ascii_uppercase().as_str(),
                "RUN" | "CMD" | "ENTRYPOINT"
            )
            .then(|| (n, exec_form(rest.trim())))
        })
        .collect()
}

/// `["python", "app.py"]` as the command line it runs; anything else as written.
fn exec_form(text: &str) -> String {
    match serde_json::from_str::<Vec<String>>(text) {
        Ok(words) => words
            .iter()
            .map(|w| {
                if w.contains(char::is_whitespace) {
                    format!("'{w}'")
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        Err(_) => text.to_string(),
    }
}

/// A YAML line as a command: a list item's dash and a `run:`, `command:`, `script:` or
/// `entrypoint:` key dropped (a block's lines are commands of their own).
fn yaml_command(line: &str) -> String {
    let mut text = line.trim_start().trim_start_matches("- ").trim_start();
    for key in ["run:", "command:", "script:", "entrypoint:", "cmd:"] {
        if let Some(rest) = text.strip_prefix(key) {
            text = rest.trim_start();
        }
    }
    exec_form(text.trim_start_matches(['|', '>']).trim())
}

/// The commands of a line: split at `&&`, `||`, `;` and `|` outside quotes and command
/// substitutions (`$(cd "$(dirname "$0")" && pwd)`), a comment cut.
fn split_commands(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let mut chars = line.chars().peekable();
    let mut previous = ' ';
    while let Some(c) = chars.next() {
        if depth > 0 {
            depth = substitution_depth(depth, c);
            current.push(c);
            previous = c;
            continue;
        }
        match quote {
            Some('"') if c == '$' && chars.peek() == Some(&'(') => depth = 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '$' && chars.peek() == Some(&'(') => depth = 1,
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => break,
            None if c == ';' || c == '|' || c == '&' && chars.peek() == Some(&'&') => {
                if matches!(chars.peek(), Some('|' | '&')) {
                    chars.next();
                }
                out.push(std::mem::take(&mut current));
                previous = ' ';
                continue;
            }
            None => {}
        }
        if depth == 1 {
            // The `(` of `$(` is counted as it is read.
            current.push(c);
            current.push(chars.next().unwrap_or('('));
            previous = '(';
            continue;
        }
        current.push(c);
        previous = c;
    }
    out.push(current);
    out.retain(|c| !c.trim().is_empty());
    out
}

/// The depth of nested parentheses in a command substitution after `c`.
fn substitution_depth(depth: usize, c: char) -> usize {
    match c {
        '(' => depth + 1,
        ')' => depth - 1,
        _ => depth,
    }
}

/// Words as a shell splits them (quotes removed; no expansion; a command substitution
/// `$(…)` kept as written, one word with what it is joined to).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let mut any = false;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if depth > 0 {
            depth = substitution_depth(depth, c);
            current.push(c);
            continue;
        }
        if c == '$' && chars.peek() == Some(&'(') && quote != Some('\'') {
            chars.next();
            current.push_str("$(");
            depth = 1;
            continue;
        }
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if any || !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                any = false;
            }
            None => current.push(c),
        }
    }
    if any || !current.is_empty() {
        out.push(current);
    }
    out
}

fn is_python(word: &str) -> bool {
    let base = word.rsplit('/').next().unwrap_or(word);
    let version = base
        .strip_prefix("python")
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
    version
        || matches!(base, "py" | "pythonw")
        || matches!(
            word,
            "$(PYTHON)" | "${PYTHON}" | "$PYTHON" | "$(PY)" | "${PY}" | "$PY"
        )
}

/// Options of a launcher that take no value (any other `--option` takes the next word).
const FLAGS: &[&str] = &[
    "--standalone",
    "--no-python",
    "--no_python",
    "--run-path",
    "--run_path",
    "--multi_gpu",
    "--multi-gpu",
    "--cpu",
    "--use_deepspeed",
    "--use_fsdp",
    "--use_megatron_lm",
    "--debug",
    "--quiet",
    "-q",
    "--no_local_rank",
    "--same_network",
    "--tee",
];

/// The launch a command makes, if it starts a Python file or module.
fn parse(command: &str, line: usize, ctx: &Script) -> Option<Launch> {
    // A prompt (`$ `, `> `, `% `) or a notebook's `!`.
    let command = command.trim();
    let bare = ["$ ", "> ", "% ", "!"]
        .iter()
        .find_map(|p| command.strip_prefix(p))
        .unwrap_or(command);
    parse_words(command, &words(bare), line, ctx)
}

/// The launch the shell words of `command` make, if they start a Python file or module.
fn parse_words(command: &str, words: &[String], line: usize, ctx: &Script) -> Option<Launch> {
    let mut i = 0;
    let mut mask = None;
    let mut cards: Option<(usize, String)> = None;
    let mut unknown: Option<String> = None;
    // Env assignments and wrappers before the launcher.
    loop {
        let w = words.get(i)?;
        if let Some((key, value)) = w.split_once('=').filter(|(k, _)| is_env_name(k)) {
            if key == "CUDA_VISIBLE_DEVICES" {
                mask = Some(value.to_string());
            }
            i += 1;
        } else if matches!(
            w.as_str(),
            "sudo" | "nohup" | "exec" | "time" | "env" | "nice"
        ) {
            i += 1;
        } else if matches!(
            w.as_str(),
            "uv" | "poetry" | "pipenv" | "pdm" | "hatch" | "rye"
        ) && words.get(i + 1).is_some_and(|r| r == "run")
        {
            i += 2;
        } else if w == "conda" && words.get(i + 1).is_some_and(|r| r == "run") {
            i += 2;
            while words.get(i).is_some_and(|w| w.starts_with('-')) {
                i += if matches!(words[i].as_str(), "-n" | "--name" | "-p" | "--prefix") {
                    2
                } else {
                    1
                };
            }
        } else {
            break;
        }
    }
    let launcher = words.get(i)?.clone();
    let base = launcher.rsplit('/').next().unwrap_or(&launcher).to_string();
    i += 1;
    // What a distributed launcher starts when its command gives no count: torchrun one
    // process; accelerate (without a config file) and deepspeed one per card they see.
    let mut default: Option<(usize, String)> = None;
    let distributed = if is_python(&launcher) {
        // Interpreter options; `-m torch.distributed.run` is torchrun.
        loop {
            let w = words.get(i)?;
            match w.as_str() {
                "-m" => {
                    let module = words.get(i + 1)?;
                    if matches!(
                        module.as_str(),
                        "torch.distributed.run" | "torch.distributed.launch"
                    ) {
                        i += 2;
                        default = Some((1, format!("`python -m {module}` (one process)")));
                        break true;
                    }
                    let rest = &words[i + 2..];
                    let cards = script_cards(rest).or(cards);
                    let mut l = launch(
                        command,
                        line,
                        Target::Module(module.clone()),
                        (cards, None),
                        mask,
                    );
                    l.handed = handed(module, rest, true);
                    return Some(l);
                }
                "-c" => return None,
                "-W" | "-X" => i += 2,
                o if o.starts_with('-') => i += 1,
                _ => break false,
            }
        }
    } else if base == "torchrun" {
        default = Some((1, "`torchrun` (one process)".into()));
        true
    } else if base == "deepspeed" {
        default = Some((usize::MAX, "`deepspeed` without `--num_gpus`".into()));
        true
    } else if base == "accelerate" && words.get(i).is_some_and(|w| w == "launch") {
        i += 1;
        default = Some((
            usize::MAX,
            "`accelerate launch` without `--num_processes`".into(),
        ));
        true
    } else if let Some(&(_, options, default)) = crate::knowledge::python::PROCESS_LAUNCHERS
        .iter()
        .find(|(name, ..)| *name == base)
    {
        return copies(
            command,
            &words[i..],
            line,
            ctx,
            (&base, options, default),
            mask,
        );
    } else {
        // A program's name, not a word of prose (`Use`, a list's `-`).
        let named = base.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && base
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
        if !named {
            return None;
        }
        let rest = &words[i..];
        let handed = handed(&base, rest, false)?;
        let cards = script_cards(rest).or(cards);
        let mut l = launch(command, line, Target::Outside(base), (cards, None), mask);
        l.handed = Some(handed);
        return Some(l);
    };
    let mut module = false;
    if distributed {
        // The launcher's options, up to the script.
        while let Some(w) = words.get(i) {
            // `torchrun $DIST_ARGS train.py`: options the command does not write, a count
            // perhaps among them.
            if w.starts_with('$') && !w.contains('/') && !w.ends_with(".py") {
                if cards.is_none() {
                    unknown = Some(format!("`{w}`"));
                    default = None;
                }
                i += 1;
                continue;
            }
            if !w.starts_with('-') {
                break;
            }
            let (option, inline) = match w.split_once('=') {
                Some((o, v)) => (o, Some(v.to_string())),
                None => (w.as_str(), None),
            };
            if matches!(option, "-m" | "--module") {
                module = true;
                i += 1;
                continue;
            }
            if matches!(option, "--multi_gpu" | "--multi-gpu") {
                cards = cards.or_else(|| Some((usize::MAX, format!("`{option}`"))));
            }
            // A config file holds the count: not read here.
            if matches!(option, "--config_file" | "--config-file") {
                default = None;
            }
            let takes = inline.is_none() && !FLAGS.contains(&option);
            let value = inline.or_else(|| takes.then(|| words.get(i + 1).cloned()).flatten());
            match launcher_cards(option, value.as_deref()) {
                Some(Count::Cards(n, what)) => cards = Some((n, what)),
                // Given, but not written here: the launcher's default no longer holds.
                Some(Count::Unknown(what)) => {
                    unknown = Some(what);
                    default = None;
                }
                None => {}
            }
            i += if takes { 2 } else { 1 };
        }
    }
    let script = words.get(i)?;
    let target = if module {
        Target::Module(script.clone())
    } else if !script.ends_with(".py") {
        return None;
    } else if !script.contains(['$', '{', '*', '`']) {
        Target::File(script.clone())
    } else {
        Target::Here(from_script_dir(script, ctx.here)?.to_string())
    };
    if matches!(&target, Target::File(f) | Target::Here(f) if f.rsplit('/').next() == Some("setup.py"))
    {
        return None;
    }
    // A launcher that starts one process per card it sees sees the command's mask.
    let default = default.map(|(n, what)| match mask.as_deref().and_then(list_count) {
        Some(seen) if n == usize::MAX => (
            seen,
            format!(
                "{what}, under `CUDA_VISIBLE_DEVICES={}`",
                mask.as_deref().unwrap_or("")
            ),
        ),
        _ => (n, what),
    });
    let cards = script_cards(&words[i + 1..]).or(cards).or(default);
    let unknown = unknown.filter(|_| cards.is_none());
    Some(launch(command, line, target, (cards, unknown), mask))
}

/// The launch of a command a launcher of processes starts as several ranks (`mpirun -np 4
/// python train.py`; `words` follow the launcher's name): the command's own launch, each of
/// its processes counted as many times as the launcher starts it. A count the command does not
/// write (`-np $NP`, none at all) is unknown: several processes, perhaps.
fn copies(
    command: &str,
    words: &[String],
    line: usize,
    ctx: &Script,
    (base, options, default): (&str, &[&str], &str),
    mut mask: Option<String>,
) -> Option<Launch> {
    let mut count: Option<Count> = None;
    // The launcher's options, up to the command it starts.
    let mut j = 0;
    while let Some(w) = words.get(j) {
        let name = w.rsplit('/').next().unwrap_or(w);
        if !w.starts_with('-')
            && (is_python(w)
                || w.ends_with(".py")
                || matches!(name, "torchrun" | "deepspeed" | "accelerate" | "env"))
        {
            break;
        }
        let (option, inline) = match w.split_once('=') {
            Some((o, v)) if w.starts_with('-') => (o, Some(v)),
            _ => (w.as_str(), None),
        };
        let value = inline.or_else(|| words.get(j + 1).map(String::as_str));
        if options.contains(&option) {
            if let Some(v) = value {
                let what = format!("`{base} {option} {v}`");
                count = Some(match v.parse::<usize>() {
                    Ok(n) => Count::Cards(n, what),
                    Err(_) => Count::Unknown(what),
                });
            }
        }
        // Open MPI's `-x NAME=value`: the variable given to every process.
        if option == "-x" {
            if let Some(m) = value.and_then(|v| v.strip_prefix("CUDA_VISIBLE_DEVICES=")) {
                mask = Some(m.to_string());
            }
        }
        j += 1;
    }
    // Slurm's `srun` in a batch script starts the tasks its `#SBATCH` lines ask for.
    if count.is_none() && base == "srun" {
        count = ctx.tasks.clone().map(|(n, what)| Count::Cards(n, what));
    }
    let mut inner = parse_words(command, &words[j..], line, ctx)?;
    inner.mask = inner.mask.or(mask);
    match count {
        Some(Count::Cards(1, _)) => {}
        Some(Count::Cards(n, what)) => {
            inner.cards = Some(match inner.cards.take() {
                Some((m, each)) if m > 1 => (n.saturating_mul(m), format!("{what} of {each}")),
                _ => (n, what),
            });
            inner.unknown = None;
        }
        Some(Count::Unknown(what)) => {
            if inner.cards.is_none() {
                inner.unknown = Some(what);
            }
        }
        None => {
            if inner.cards.as_ref().is_none_or(|(m, _)| *m <= 1) {
                inner.cards = None;
                inner.unknown = Some(format!(
                    "`{base}` without a count starts {default}: its number of"
                ));
            }
        }
    }
    Some(inner)
}

/// A launch; a mask of several cards asks for them too.
fn launch(
    command: &str,
    line: usize,
    target: Target,
    (cards, unknown): (Option<(usize, String)>, Option<String>),
    mask: Option<String>,
) -> Launch {
    let from_mask = mask.as_deref().and_then(|m| {
        let n = list_count(m)?;
        (n > 1).then(|| (n, format!("`CUDA_VISIBLE_DEVICES={m}`")))
    });
    Launch {
        line,
        command: shown(command),
        target,
        cards: cards.or(from_mask),
        unknown,
        mask,
        handed: None,
    }
}

/// The scripts `program` (a module run by `python -m`, else an executable) is handed: a
/// `.py` word after one of its options (`--script train.py`), or in any place for a module or
/// a known runner of scripts. A tool that only reads files (`black`, `pytest`, `cp`) starts
/// none; a config (`--config x.py`) is read, not started.
fn handed(program: &str, words: &[String], module: bool) -> Option<Handed> {
    use crate::knowledge::python::{FILE_TOOLS, SINGLE_PROCESS_RUNNERS};
    let root = program.split('.').next().unwrap_or(program);
    if FILE_TOOLS.contains(&program) || FILE_TOOLS.contains(&root) {
        return None;
    }
    let single =
        SINGLE_PROCESS_RUNNERS.contains(&program) || SINGLE_PROCESS_RUNNERS.contains(&root);
    let mut scripts = Vec::new();
    let mut after: Option<&str> = None;
    for w in words {
        let (option, value) = match w.split_once('=').filter(|(o, _)| o.starts_with('-')) {
            Some((o, v)) => (Some(o), v),
            None => (after.take(), w.as_str()),
        };
        if w.starts_with('-') && !w.contains('=') {
            after = (w != "--").then_some(w.as_str());
            continue;
        }
        let named = option.is_some() || module || single;
        let config = option.is_some_and(|o| {
            let o = o.to_ascii_lowercase();
            o.contains("config") || o.contains("cfg")
        });
        let plain = !value.contains(['$', '{', '*', '`', ':']) && !value.starts_with('-');
        if named && !config && plain && value.ends_with(".py") {
            scripts.push(value.to_string());
        }
    }
    if scripts.is_empty() {
        return None;
    }
    let shown = if module {
        format!("`python -m {program}`")
    } else {
        format!("`{program}`")
    };
    let unknown = (!single)
        .then(|| format!("{shown}, a launcher this tree does not hold, starts its own number of"));
    Some(Handed { scripts, unknown })
}

fn is_env_name(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit())
}

/// The processes a launcher option asks for.
enum Count {
    Cards(usize, String),
    /// Given by what the command does not write (`$GPUS`, `${N:-1}`, `{n}`).
    Unknown(String),
}

/// The cards a launcher option asks for: a count written, or one given by a variable (its
/// default taken only where it is more than one: the variable may make it anything).
fn launcher_cards(written: &str, value: Option<&str>) -> Option<Count> {
    let value = value?;
    let option = written.replace('-', "_");
    let what = format!("`{written} {value}`");
    let count_option = matches!(
        option.as_str(),
        "__nproc_per_node" | "__num_processes" | "__num_gpus" | "__num_processes_per_node"
    );
    if (count_option || matches!(option.as_str(), "__gpu_ids" | "__include"))
        && value.contains(['$', '{', '`'])
    {
        // `${GPUS:-8}`: eight unless told otherwise.
        let default = value
            .strip_prefix("${")
            .and_then(|v| v.strip_suffix('}'))
            .and_then(|v| v.split_once('-'))
            .map(|(_, d)| d.trim_start_matches(['=', '-']))
            .and_then(|d| match option.as_str() {
                "__gpu_ids" => list_count(d),
                _ => d.parse::<usize>().ok(),
            });
        return Some(match default {
            Some(n) if n > 1 => Count::Cards(n, format!("{what}, its default")),
            _ => Count::Unknown(what),
        });
    }
    let count = match option.as_str() {
        _ if count_option => match value {
            "gpu" | "auto" => usize::MAX,
            v => match v.parse() {
                Ok(n) => n,
                Err(_) => return Some(Count::Unknown(what)),
            },
        },
        "__gpu_ids" => list_count(value)?,
        "__include" => value
            .split('@')
            .map(|host| {
                host.split_once(':')
                    .map_or(1, |(_, ids)| ids.split(',').count())
            })
            .sum(),
        "__multi_gpu" => usize::MAX,
        _ => return None,
    };
    Some(Count::Cards(count, what))
}

/// Cards an option of the program asks for (`--gpu_ids 0,1`, `--num_gpus 2`, a serving
/// engine's `--tp-size 2`), or a `key=value` argument (ultralytics' `device=0,1`, Hydra's
/// `trainer.devices=2`), when more than one.
pub(crate) fn script_cards<W: AsRef<str>>(words: &[W]) -> Option<(usize, String)> {
    use crate::knowledge::python::{CARD_COUNT_KEYWORDS, GPU_COUNT_KEYWORDS};
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_ref();
        let (option, inline) = match w.split_once('=') {
            Some((o, v)) => (o.to_string(), Some(v.to_string())),
            None => (w.to_string(), None),
        };
        let dashed = option.starts_with('-');
        // A `key=value` argument takes no value from the next word.
        let value = if dashed {
            inline.or_else(|| words.get(i + 1).map(|v| v.as_ref().to_string()))
        } else {
            inline
        };
        let key = if dashed {
            option.as_str()
        } else {
            option.rsplit('.').next().unwrap_or(&option)
        };
        let name = key.trim_start_matches('-').replace('-', "_");
        let count = match (name.as_str(), value.as_deref()) {
            ("gpu_ids" | "gpus" | "device_ids" | "gpu_id" | "devices" | "device", Some(v))
                if v.contains(',') =>
            {
                list_count(v)
            }
            // `--devices 2`: Lightning's (and its CLIs', litgpt's) number of cards.
            ("gpu_num" | "nproc_per_node" | "num_processes" | "devices", Some(v)) => v.parse().ok(),
            (name, Some(v))
                if GPU_COUNT_KEYWORDS.contains(&name) || CARD_COUNT_KEYWORDS.contains(&name) =>
            {
                v.parse().ok()
            }
            _ => None,
        };
        let named = dashed || (!option.is_empty() && !option.contains('/'));
        if let (true, Some(count), Some(v)) = (named, count, &value) {
            if count > 1 {
                let shown = if dashed {
                    format!("`{option} {v}`")
                } else {
                    format!("`{option}={v}`")
                };
                return Some((count, shown));
            }
        }
        i += 1;
    }
    None
}

/// The number of indices in `0,1`.
fn list_count(value: &str) -> Option<usize> {
    let ids: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    ids.iter()
        .all(|i| i.parse::<u64>().is_ok())
        .then_some(ids.len())
}

fn shown(command: &str) -> String {
    let one = command.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 100 {
        format!("{}…", one.chars().take(99).collect::<String>())
    } else {
        one
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(name: &str, text: &str) -> Vec<(usize, Target, Option<usize>, Option<String>)> {
        launches(name, text)
            .into_iter()
            .map(|l| (l.line, l.target, l.cards.map(|c| c.0), l.mask))
            .collect()
    }

    #[test]
    fn commands_of_each_kind_of_file_name_their_program() {
        let file = |p: &str| Target::File(p.into());
        assert_eq!(
            one("train.sh", "#!/bin/sh\nset -e\nCUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 \\\n  train.py --lr 1\n"),
            vec![(3, file("train.py"), Some(2), Some("0,1".into()))]
        );
        assert_eq!(
            one(
                "Makefile",
                "serve:\n\t@$(PYTHON) -u -m app.serve --port 1\nx = python no.py\n"
            ),
            vec![(2, Target::Module("app.serve".into()), None, None)]
        );
        assert_eq!(
            one("Dockerfile", "FROM x\nRUN pip install . && python setup.py build\nCMD [\"python\", \"web/app.py\"]\n"),
            vec![(3, file("web/app.py"), None, None)]
        );
        assert_eq!(
            one("Procfile", "web: python server.py\n"),
            vec![(1, file("server.py"), None, None)]
        );
        assert_eq!(
            one("ci.yml", "jobs:\n  t:\n    steps:\n      - run: |\n          accelerate launch --multi_gpu --num_processes=2 finetune.py\n          deepspeed --num_gpus 4 ds.py\n"),
            vec![(5, file("finetune.py"), Some(2), None), (6, file("ds.py"), Some(4), None)]
        );
        assert_eq!(
            one("README.md", "Run it:\n\n```bash\n$ python demo.py --gpu_ids 0,1\n```\n\n```python\nimport os\nos.system('python hidden.py')\n```\n\n    python indented.py\n"),
            vec![(4, file("demo.py"), Some(2), None)]
        );
        assert_eq!(
            one("run.sh", "python -m torch.distributed.run --nproc-per-node=2 -m pkg.train\nuv run python tools/x.py # python y.py\n"),
            vec![(1, Target::Module("pkg.train".into()), Some(2), None), (2, file("tools/x.py"), None, None)]
        );
    }

    /// A distributed launcher that gives no count starts its default: torchrun one process,
    /// accelerate (without a config file) and deepspeed one per card they see, the cards of
    /// the command's mask when it has one.
    #[test]
    fn a_launcher_without_a_count_starts_its_default() {
        let count = |cmd: &str| one("run.sh", &format!("{cmd}\n"))[0].2;
        assert_eq!(count("torchrun train.py"), Some(1));
        assert_eq!(count("python -m torch.distributed.run train.py"), Some(1));
        assert_eq!(count("torchrun --nproc_per_node=1 train.py"), Some(1));
        assert_eq!(count("accelerate launch train.py"), Some(usize::MAX));
        assert_eq!(count("deepspeed train.py"), Some(usize::MAX));
        assert_eq!(
            count("accelerate launch --num_processes 1 train.py"),
            Some(1)
        );
        assert_eq!(
            count("CUDA_VISIBLE_DEVICES=1 accelerate launch train.py"),
            Some(1)
        );
        assert_eq!(
            count("accelerate launch --config_file one.yaml train.py"),
            None
        );
        assert_eq!(count("python train.py"), None);
    }

    /// A launcher of ranks starts its command as several processes: its count times the
    /// command's own, unknown where it writes none.
    #[test]
    fn a_launcher_of_ranks_counts_its_processes() {
        let launch = |cmd: &str| {
            let l = launches("run.sh", &format!("{cmd}\n")).remove(0);
            (l.target, l.cards.map(|c| c.0), l.unknown.is_some(), l.mask)
        };
        let file = |p: &str| Target::File(p.into());
        assert_eq!(
            launch("mpirun -np 4 python x.py"),
            (file("x.py"), Some(4), false, None)
        );
        assert_eq!(
            launch("mpiexec -n=2 --bind-to core python3 -u x.py"),
            (file("x.py"), Some(2), false, None)
        );
        assert_eq!(
            launch("srun -N 2 --ntasks-per-node=1 torchrun --nproc_per_node 8 x.py"),
            (file("x.py"), Some(8), false, None)
        );
        assert_eq!(
            launch("srun --ntasks-per-node=2 torchrun --nproc_per_node 4 x.py"),
            (file("x.py"), Some(8), false, None)
        );
        assert_eq!(
            launch("srun -n 1 python x.py"),
            (file("x.py"), None, false, None)
        );
        assert_eq!(
            launch("mpirun -np $NP python x.py"),
            (file("x.py"), None, true, None)
        );
        assert_eq!(
            launch("mpirun python x.py"),
            (file("x.py"), None, true, None)
        );
        assert_eq!(
            launch("mpirun -np 2 -x CUDA_VISIBLE_DEVICES=0,1 python x.py"),
            (file("x.py"), Some(2), false, Some("0,1".into()))
        );
        assert_eq!(
            launch("horovodrun -np 4 -H localhost:4 python -m pkg.train"),
            (Target::Module("pkg.train".into()), Some(4), false, None)
        );
        assert!(launches("run.sh", "mpirun -np 4 ./a.out\n").is_empty());
        // A batch script's `srun` starts the tasks its `#SBATCH` lines ask for, one by default.
        let batch = |head: &str| {
            launches(
                "job.sh",
                &format!("#!/bin/bash\n{head}#SBATCH --gres=gpu:1\nsrun python x.py\n"),
            )
            .remove(0)
            .cards
            .map(|c| c.0)
        };
        assert_eq!(batch(""), None);
        assert_eq!(batch("#SBATCH --ntasks-per-node=4\n"), Some(4));
        assert_eq!(batch("#SBATCH -n 2\n"), Some(2));
    }

    /// A launcher that may be outside the tree keeps the `.py` words it is handed: a module's
    /// in any place but a config option's value, an executable's after an option; a runner of
    /// one process starts one; a tool that reads files starts nothing.
    #[test]
    fn a_launcher_keeps_the_scripts_it_is_handed() {
        let handed = |cmd: &str| {
            launches("run.sh", &format!("{cmd}\n"))
                .into_iter()
                .next()
                .and_then(|l| l.handed)
                .map(|h| (h.scripts, h.unknown.is_some()))
        };
        let scripts = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            handed("python3 -m trainer.distribute --script recipes/train.py --config_path c.json"),
            Some((scripts(&["recipes/train.py"]), true))
        );
        assert_eq!(
            handed("trainer-run --config configs/x.py --script=train.py"),
            Some((scripts(&["train.py"]), true))
        );
        assert_eq!(
            handed("python -m cProfile -o out.prof bench.py"),
            Some((scripts(&["bench.py"]), false))
        );
        assert_eq!(
            handed("coverage run bench.py"),
            Some((scripts(&["bench.py"]), false))
        );
        assert_eq!(handed("python -m black train.py"), None);
        assert_eq!(handed("cat train.py"), None);
        assert_eq!(handed("some-tool train.py"), None);
        assert_eq!(handed("python -m pkg.serve --port 1"), None);
        assert_eq!(handed("Use the --script train.py option"), None);
        // A Markdown README's inline code spans are commands too; its prose is not.
        let readme = "* Train by the command `OMP_NUM_THREADS=2 CUDA_VISIBLE_DEVICES=<devices> python3 -m trainer.distribute --script recipes/train.py`.\n* Or ``python demo.py`` then `pip install x`; python prose.py\n";
        let found: Vec<(Target, Option<String>)> = launches("README.md", readme)
            .into_iter()
            .map(|l| (l.target, l.mask))
            .collect();
        assert_eq!(
            found,
            vec![
                (
                    Target::Module("trainer.distribute".into()),
                    Some("<devices>".into())
                ),
                (Target::File("demo.py".into()), None),
            ]
        );
    }
}
