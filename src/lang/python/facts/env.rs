//! Env effects on the managed variables, in every form a program can write them:
//! `os.environ[K] = V` (chained too), `setdefault`, `update` (dict, keywords, splats), `|=`,
//! `putenv`, `unsetenv`, `pop`, `del`, `clear`, `environ` aliases, and the env of child
//! processes. Each effect carries the edits that take it out, when that is safe.

use std::ops::Range;

use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{Expr, ExprCall, Keyword, Stmt};

use super::{options, range, EnvEffect, EnvKey, EnvOp, FactVisitor, Val};
use crate::base::edit::Edit;
use crate::knowledge::python::{CHILD_ENV_CALLS, SHELL_CALLS};
use crate::lang::removal::{delete_items, removal_edit};
use crate::model::policy::EnvVar;

/// `VAR=value` assignments of managed variables in a command line (`export VAR=v; …`,
/// `env VAR=v …`, `VAR=v cmd`). `computed_tail`: the text is followed by an interpolated value,
/// so an assignment at its very end takes a computed value.
fn shell_assignments(text: &str, computed_tail: bool) -> Vec<(EnvVar, Val)> {
    let mut out = Vec::new();
    for var in EnvVar::ALL {
        let pattern = format!("{}=", var.name());
        let mut from = 0;
        while let Some(at) = text[from..].find(&pattern).map(|i| i + from) {
            from = at + pattern.len();
            let boundary = text[..at]
                .chars()
                .next_back()
                .is_none_or(|c| c.is_whitespace() || matches!(c, ';' | '&' | '(' | '"' | '\''));
            if !boundary {
                continue;
            }
            let rest = &text[from..];
            let end = rest
                .find(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | ')'))
                .unwrap_or(rest.len());
            let raw = rest[..end].trim_matches(|c| c == '"' || c == '\'');
            let val = if (end == rest.len() && computed_tail) || raw.contains(['$', '{', '%']) {
                Val::Computed
            } else {
                Val::Lit(raw.to_string())
            };
            out.push((var, val));
        }
    }
    out
}

/// One item of an `update`/`|=`/`del`: its range, its key if it is one we know, its op.
struct Item {
    range: Range<usize>,
    key: Option<EnvKey>,
    op: EnvOp,
    /// The value read from a command-line option (`args.gpu`, `sys.argv[1]`), as written.
    from_option: Option<String>,
}

impl<'s> FactVisitor<'s> {
    /// The statement is made only of env effects on managed variables.
    pub(super) fn pure_env_stmt(&self, stmt: &Stmt) -> bool {
        let items = self.stmt_items(stmt);
        !items.is_empty()
            && items
                .iter()
                .all(|i| matches!(i.key, Some(EnvKey::Managed(_))))
            && self.stmt_is_only_env(stmt)
    }

    fn stmt_is_only_env(&self, stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Assign(a) => a
                .targets
                .iter()
                .all(|t| self.environ_subscript(t).is_some()),
            Stmt::Delete(d) => d
                .targets
                .iter()
                .all(|t| self.environ_subscript(t).is_some()),
            Stmt::AugAssign(_) | Stmt::Expr(_) => {
                let items = self.stmt_items(stmt);
                let all_keys = items.iter().all(|i| i.key.is_some());
                all_keys && !self.has_splat(stmt)
            }
            _ => false,
        }
    }

    fn has_splat(&self, stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Expr(e) => match e.value.as_ref() {
                Expr::Call(call) => {
                    call.arguments.keywords.iter().any(|k| k.arg.is_none())
                        || matches!(call.arguments.args.first(), Some(Expr::Dict(d)) if d.items.iter().any(|i| i.key.is_none()))
                        || matches!(call.arguments.args.first(), Some(e) if !matches!(e, Expr::Dict(_)) && self.call_name(call).as_deref() == Some("os.environ.update"))
                }
                _ => false,
            },
            Stmt::AugAssign(a) => {
                !matches!(a.value.as_ref(), Expr::Dict(d) if d.items.iter().all(|i| i.key.is_some()))
            }
            _ => false,
        }
    }

    fn call_name(&self, call: &ExprCall) -> Option<String> {
        self.bindings.qualified(&call.func)
    }

    /// The items a statement-level env statement touches (empty when it is not one).
    fn stmt_items(&self, stmt: &Stmt) -> Vec<Item> {
        match stmt {
            // `os.environ = {...}`: the whole environment replaced.
            Stmt::Assign(assign) if assign.targets.iter().any(|t| self.is_environ(t)) => {
                vec![clobber(range(stmt))]
            }
            Stmt::Assign(assign) => {
                let targets: Vec<_> = assign
                    .targets
                    .iter()
                    .filter_map(|t| self.environ_subscript(t))
                    .collect();
                // The value only of an env write: naming a module constant builds the scopes.
                if targets.is_empty() {
                    return Vec::new();
                }
                let value = self.value_of(&assign.value);
                let from_option = self.option_source(&assign.value, 0);
                targets
                    .into_iter()
                    .map(|(key, r)| Item {
                        range: r,
                        key,
                        op: EnvOp::Set(value.clone()),
                        from_option: from_option.clone(),
                    })
                    .collect()
            }
            Stmt::AugAssign(aug) if self.is_environ(&aug.target) => match aug.value.as_ref() {
                Expr::Dict(dict) => self.dict_items(dict),
                other => vec![clobber(range(other))],
            },
            Stmt::AugAssign(aug) => match self.environ_subscript(&aug.target) {
                Some((key, r)) => vec![Item {
                    range: r,
                    key,
                    op: EnvOp::Set(Val::Computed),
                    from_option: None,
                }],
                None => Vec::new(),
            },
            Stmt::Delete(del) => del
                .targets
                .iter()
                .filter_map(|t| self.environ_subscript(t))
                .map(|(key, r)| Item {
                    range: r,
                    key,
                    op: EnvOp::Unset,
                    from_option: None,
                })
                .collect(),
            Stmt::Expr(e) => match e.value.as_ref() {
                Expr::Call(call) => self.call_items(call),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The items an env-changing call touches (`setdefault`, `update`, `pop`, …).
    fn call_items(&self, call: &ExprCall) -> Vec<Item> {
        let Some(name) = self.call_name(call) else {
            return Vec::new();
        };
        let args = &call.arguments.args;
        let keyed = |op: EnvOp| -> Vec<Item> {
            match args.first() {
                Some(k) => vec![Item {
                    range: range(k),
                    key: self.env_key(k),
                    from_option: matches!(op, EnvOp::Set(_) | EnvOp::SetDefault(_))
                        .then(|| args.get(1).and_then(|v| self.option_source(v, 0)))
                        .flatten(),
                    op,
                }],
                None => Vec::new(),
            }
        };
        match name.as_str() {
            "os.environ.setdefault" => keyed(EnvOp::SetDefault(
                args.get(1).map_or(Val::Computed, |v| self.value_of(v)),
            )),
            "os.putenv" => keyed(EnvOp::Set(
                args.get(1).map_or(Val::Computed, |v| self.value_of(v)),
            )),
            "os.unsetenv" | "os.environ.pop" | "monkeypatch.delenv" => keyed(EnvOp::Unset),
            // pytest's fixture: sets the variable for the rest of the test.
            "monkeypatch.setenv" => keyed(EnvOp::Set(
                args.get(1).map_or(Val::Computed, |v| self.value_of(v)),
            )),
            // `mock.patch.dict(os.environ, {K: V})` and accelerate's
            // `patch_environment(K=V)`: set while the block or the decorated function runs.
            "unittest.mock.patch.dict" | "mock.patch.dict" | "patch.dict"
                if args.first().is_some_and(|a| {
                    self.bindings.is(a, "os.environ")
                        || matches!(a, Expr::StringLiteral(s) if s.value.to_str() == "os.environ")
                }) =>
            {
                match args.get(1) {
                    Some(Expr::Dict(dict)) => self.dict_items(dict),
                    _ => call
                        .arguments
                        .keywords
                        .iter()
                        .filter(|k| k.arg.as_ref().is_some_and(|a| a.as_str() != "clear"))
                        .map(|kw| self.keyword_item(kw))
                        .collect(),
                }
            }
            // It upper-cases its keywords: `cuda_visible_devices="0"` sets the mask.
            "accelerate.utils.patch_environment" | "accelerate.utils.other.patch_environment" => {
                call.arguments
                    .keywords
                    .iter()
                    .map(|kw| {
                        let mut item = self.keyword_item(kw);
                        if let Some(arg) = &kw.arg {
                            item.key = key_of_name(&arg.as_str().to_ascii_uppercase());
                        }
                        item
                    })
                    .collect()
            }
            "os.environ.clear" => vec![clobber(range(call))],
            // A .env file that overrides what is already set may set the mask.
            "dotenv.load_dotenv" | "dotenv.main.load_dotenv"
                if call.arguments.keywords.iter().any(|k| {
                    k.arg.as_ref().is_some_and(|a| a.as_str() == "override")
                        && matches!(k.value, Expr::BooleanLiteral(ref b) if b.value)
                }) =>
            {
                vec![clobber(range(call))]
            }
            "os.environ.update" => {
                let mut items = Vec::new();
                match args.first() {
                    Some(Expr::Dict(dict)) => items.extend(self.dict_items(dict)),
                    Some(other) => items.push(clobber(range(other))),
                    None => {}
                }
                items.extend(
                    call.arguments
                        .keywords
                        .iter()
                        .map(|kw| self.keyword_item(kw)),
                );
                items
            }
            _ => Vec::new(),
        }
    }

    /// `{K: V, **other}` written into the environment: a set per item, a clobber per splat.
    fn dict_items(&self, dict: &ruff_python_ast::ExprDict) -> Vec<Item> {
        dict.items
            .iter()
            .map(|item| match &item.key {
                Some(k) => Item {
                    range: range(k).start..range(&item.value).end,
                    key: self.env_key(k),
                    op: EnvOp::Set(self.value_of(&item.value)),
                    from_option: self.option_source(&item.value, 0),
                },
                None => clobber(range(&item.value)),
            })
            .collect()
    }

    fn keyword_item(&self, kw: &Keyword) -> Item {
        match &kw.arg {
            Some(arg) => Item {
                range: range(kw),
                key: key_of_name(arg.as_str()),
                op: EnvOp::Set(self.value_of(&kw.value)),
                from_option: self.option_source(&kw.value, 0),
            },
            None => clobber(range(kw)),
        }
    }

    /// Record the effects of a statement (not of the expressions nested in it, see
    /// `call_effects`). `as_pass`: the statement is the last of a body that would empty.
    pub(super) fn record_env_effects(&mut self, stmt: &'s Stmt, as_pass: bool) {
        let items = self.stmt_items(stmt);
        if items
            .iter()
            .all(|i| i.key.is_none() && i.op != EnvOp::Clobber)
        {
            return;
        }
        // `os.environ[K] = saved` where `saved` was read from `K` (a fixture that puts back
        // what it found): the variable ends as it was, whatever set it; the removal beside it
        // (`if saved is None: os.environ.pop(K)`) is the same restore.
        if let Stmt::Assign(assign) = stmt {
            let read = self
                .env_read_key(&assign.value, 0)
                .and_then(|k| self.env_key(k));
            if let Some(key) = read.filter(|k| items.iter().all(|i| i.key.as_ref() == Some(k))) {
                self.restores.push((self.functions.last().cloned(), key));
                return;
            }
        }
        let srange = range(stmt);
        let pure = self.pure_env_stmt(stmt);
        let only_env = self.stmt_is_only_env(stmt);
        let whole = removal_edit(self.source, srange.clone(), as_pass).map(|e| vec![e]);
        let removal = if let (true, Some(guard)) = (pure, &self.guard_removal) {
            // The whole `if K not in os.environ:` goes with the writes it guards.
            Some(guard.clone())
        } else if pure || only_env {
            whole
        } else {
            self.partial_removal(stmt, &items)
        };
        for item in items {
            if item.key.is_none() && item.op != EnvOp::Clobber {
                continue;
            }
            self.push_effect(item, srange.clone(), pure, removal.clone(), false);
        }
    }

    fn push_effect(
        &mut self,
        item: Item,
        stmt: Range<usize>,
        pure: bool,
        removal: Option<Vec<Edit>>,
        child: bool,
    ) {
        // A helper that builds a child's env or command, called twice, is one effect where it
        // writes the variable.
        let again = child
            && self
                .facts
                .effects
                .iter()
                .any(|e| e.child && e.at == item.range && e.key == item.key && e.op == item.op);
        if again {
            return;
        }
        self.facts.effects.push(EnvEffect {
            key: item.key,
            op: item.op,
            at: item.range,
            stmt,
            function: self.functions.last().cloned(),
            child,
            pure,
            removal,
            from_option: item.from_option,
        });
    }

    /// Edits that take out only the managed parts of a statement that also does other things.
    fn partial_removal(&self, stmt: &Stmt, items: &[Item]) -> Option<Vec<Edit>> {
        let managed = |i: &Item| matches!(i.key, Some(EnvKey::Managed(_)));
        match stmt {
            Stmt::Assign(assign) => {
                // `a = os.environ[K] = V`: drop the env target and its `=`.
                let mut edits = Vec::new();
                for (i, t) in assign.targets.iter().enumerate() {
                    if self
                        .environ_subscript(t)
                        .is_some_and(|(k, _)| matches!(k, Some(EnvKey::Managed(_))))
                    {
                        let next = assign
                            .targets
                            .get(i + 1)
                            .map_or(range(&*assign.value).start, |n| range(n).start);
                        edits.push(Edit::delete(range(t).start..next));
                    }
                }
                Some(edits)
            }
            Stmt::Delete(del) => {
                let spans: Vec<_> = del
                    .targets
                    .iter()
                    .map(|t| {
                        let m = self
                            .environ_subscript(t)
                            .is_some_and(|(k, _)| matches!(k, Some(EnvKey::Managed(_))));
                        (range(t), m)
                    })
                    .collect();
                Some(delete_items(&spans))
            }
            Stmt::Expr(_) | Stmt::AugAssign(_) => {
                if items.iter().any(|i| i.op == EnvOp::Clobber) && items.iter().all(|i| !managed(i))
                {
                    return None;
                }
                let spans: Vec<_> = items
                    .iter()
                    .map(|i| (i.range.clone(), managed(i)))
                    .collect();
                if spans.iter().all(|(_, m)| *m) {
                    return None;
                }
                Some(list_deletions(stmt, &spans))
            }
            _ => None,
        }
    }

    /// Env effects of calls inside expressions: `x = os.environ.pop(K)`, child-process env.
    pub(super) fn call_effects(&mut self, call: &'s ExprCall, name: &str) {
        if name.is_empty() {
            return;
        }
        let stmt = self.stmts.last().cloned().unwrap_or(0..0);
        let nested = range(call) != stmt;
        if nested
            && matches!(
                name,
                "os.environ.pop"
                    | "monkeypatch.setenv"
                    | "monkeypatch.delenv"
                    | "unittest.mock.patch.dict"
                    | "mock.patch.dict"
                    | "patch.dict"
                    | "accelerate.utils.patch_environment"
                    | "accelerate.utils.other.patch_environment"
                    | "os.environ.setdefault"
                    | "os.environ.update"
                    | "os.putenv"
                    | "os.unsetenv"
                    | "os.environ.clear"
            )
        {
            for item in self.call_items(call) {
                if item.key.is_some() || item.op == EnvOp::Clobber {
                    self.push_effect(item, stmt.clone(), false, None, false);
                }
            }
        }
        if SHELL_CALLS.contains(&name) || name.ends_with("Popen") {
            let command = super::first_or_keyword(call, "args");
            for item in command.map_or(Vec::new(), |c| self.shell_env_items(c, 0)) {
                self.push_effect(item, stmt.clone(), false, None, true);
            }
            // A command line that starts a GPU program (`os.system("torchrun train.py")`):
            // the child inherits this process's env.
            let text = match command {
                Some(Expr::StringLiteral(s)) => Some(s.value.to_str().to_string()),
                Some(Expr::FString(f)) => super::fstring_head(f),
                _ => None,
            };
            if let (Some(text), false) = (text, self.env_only) {
                let words: Vec<Option<&str>> = text
                    .split_whitespace()
                    .skip_while(|w| w.contains('=') || matches!(*w, "exec" | "nohup" | "env"))
                    .map(Some)
                    .collect();
                if super::gpu_program(&words) {
                    self.cuda_at(stmt.start);
                }
            }
        }
        if CHILD_ENV_CALLS.contains(&name)
            || name.ends_with("Popen")
            || name.ends_with("create_subprocess_exec")
        {
            if let Some(kw) = call
                .arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "env"))
            {
                for item in self.child_env_items(&kw.value) {
                    self.push_effect(item, stmt.clone(), false, None, true);
                }
            }
        }
    }

    /// Managed items of a child env: `{K: V}`, `{**os.environ, K: V}`, `dict(os.environ, K=V)`.
    fn child_env_items(&self, expr: &Expr) -> Vec<Item> {
        self.child_env_items_at(expr, 0)
    }

    fn child_env_items_at(&self, expr: &Expr, depth: usize) -> Vec<Item> {
        let items: Vec<Item> = match expr {
            Expr::Dict(dict) => dict
                .items
                .iter()
                .filter_map(|item| {
                    let k = item.key.as_ref()?;
                    Some(Item {
                        range: range(k).start..range(&item.value).end,
                        key: self.env_key(k),
                        op: EnvOp::Set(self.value_of(&item.value)),
                        from_option: None,
                    })
                })
                .collect(),
            Expr::Call(call)
                if matches!(
                    self.call_name(call).as_deref(),
                    Some("dict" | "builtins.dict")
                ) =>
            {
                call.arguments
                    .keywords
                    .iter()
                    .filter(|k| k.arg.is_some())
                    .map(|kw| self.keyword_item(kw))
                    .collect()
            }
            // `{k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}`: the
            // keys its conditions leave out (`!=`, `not in (…)`).
            Expr::DictComp(comp) => comp
                .generators
                .iter()
                .flat_map(|g| &g.ifs)
                .flat_map(|cond| self.excluded_keys(cond))
                .map(|key| Item {
                    range: range(key),
                    key: self.env_key(key),
                    op: EnvOp::Unset,
                    from_option: None,
                })
                .collect(),
            // An env a helper of the file builds: `run(…, env=env_for(gpu))`.
            Expr::Call(call) if depth < 3 => self
                .scopes()
                .returned_by(call)
                .into_iter()
                .flat_map(|v| self.child_env_items_at(v, depth + 1))
                .collect(),
            // `env = os.environ.copy(); env[K] = V; run(..., env=env)`: the dict as the
            // scope of the call builds it.
            Expr::Name(n) if depth < 2 => {
                let scopes = self.scopes();
                let scope = scopes.scope_at(range(expr).start);
                let id = n.id.as_str();
                let mut items: Vec<Item> = scopes
                    .lookup(id, scope)
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|(value, _)| self.child_env_items_at(value, depth + 1))
                    .collect();
                for (name, s, key, value) in &scopes.item_stores {
                    if *name == id && *s == scope {
                        items.push(Item {
                            range: range(*key).start..range(*value).end,
                            key: self.env_key(key),
                            op: EnvOp::Set(self.value_of(value)),
                            from_option: None,
                        });
                    }
                }
                for (name, s, key) in &scopes.removals {
                    if *name == id && *s == scope {
                        items.push(Item {
                            range: range(*key),
                            key: self.env_key(key),
                            op: EnvOp::Unset,
                            from_option: None,
                        });
                    }
                }
                for (name, s, call) in &scopes.updates {
                    if *name == id && *s == scope {
                        if let Some(Expr::Dict(dict)) = call.arguments.args.first() {
                            items.extend(self.dict_items(dict));
                        }
                        items.extend(
                            call.arguments
                                .keywords
                                .iter()
                                .filter(|k| k.arg.is_some())
                                .map(|kw| self.keyword_item(kw)),
                        );
                    }
                }
                items
            }
            _ => Vec::new(),
        };
        items.into_iter().filter(|i| i.key.is_some()).collect()
    }

    /// The keys a comprehension's condition leaves out: `k != K`, `k not in (K1, K2)`, each
    /// side of an `and`.
    fn excluded_keys<'e>(&self, cond: &'e Expr) -> Vec<&'e Expr> {
        use ruff_python_ast::CmpOp;
        match cond {
            Expr::BoolOp(b) if b.op == ruff_python_ast::BoolOp::And => b
                .values
                .iter()
                .flat_map(|v| self.excluded_keys(v))
                .collect(),
            Expr::Compare(c) if c.ops.len() == 1 => {
                let right = &c.comparators[0];
                match c.ops[0] {
                    CmpOp::NotEq => vec![c.left.as_ref(), right],
                    CmpOp::NotIn => match right {
                        Expr::Tuple(t) => t.elts.iter().collect(),
                        Expr::List(l) => l.elts.iter().collect(),
                        Expr::Set(set) => set.elts.iter().collect(),
                        other => vec![other],
                    },
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    /// `CUDA_VISIBLE_DEVICES=0 python train.py` in a command string (`os.system`, a shell
    /// `subprocess` call, an `env` argument list): the env of the child it starts.
    fn shell_env_items(&self, expr: &Expr, depth: usize) -> Vec<Item> {
        let scan = |text: &str, r: Range<usize>, computed_tail: bool| -> Vec<Item> {
            shell_assignments(text, computed_tail)
                .into_iter()
                .map(|(var, val)| Item {
                    range: r.clone(),
                    key: Some(EnvKey::Managed(var)),
                    op: EnvOp::Set(val),
                    from_option: None,
                })
                .collect()
        };
        match expr {
            Expr::StringLiteral(s) => scan(s.value.to_str(), range(expr), false),
            Expr::FString(f) => {
                let mut items = Vec::new();
                for part in f.value.iter() {
                    match part {
                        ruff_python_ast::FStringPart::Literal(l) => {
                            items.extend(scan(&l.value, range(expr), false))
                        }
                        ruff_python_ast::FStringPart::FString(fs) => {
                            let elements: Vec<_> = fs.elements.iter().collect();
                            for (i, e) in elements.iter().enumerate() {
                                if let ruff_python_ast::InterpolatedStringElement::Literal(l) = e {
                                    let then_value = matches!(
                                        elements.get(i + 1),
                                        Some(ruff_python_ast::InterpolatedStringElement::Interpolation(_))
                                    );
                                    items.extend(scan(&l.value, range(expr), then_value));
                                }
                            }
                        }
                    }
                }
                items
            }
            Expr::List(l) => l
                .elts
                .iter()
                .flat_map(|e| self.shell_env_items(e, depth + 1))
                .collect(),
            Expr::Tuple(t) => t
                .elts
                .iter()
                .flat_map(|e| self.shell_env_items(e, depth + 1))
                .collect(),
            Expr::BinOp(b) if depth < 4 => {
                let mut items = self.shell_env_items(&b.left, depth + 1);
                items.extend(self.shell_env_items(&b.right, depth + 1));
                items
            }
            // `"CUDA_VISIBLE_DEVICES={} python x.py".format(gpu)`
            Expr::Call(c) if depth < 4 => match c.func.as_ref() {
                Expr::Attribute(a) if a.attr.as_str() == "format" => {
                    let mut items = self.shell_env_items(&a.value, depth + 1);
                    for i in &mut items {
                        if matches!(&i.op, EnvOp::Set(Val::Lit(v)) if v.contains('{')) {
                            i.op = EnvOp::Set(Val::Computed);
                        }
                    }
                    items
                }
                // A command a helper of the file builds: `Popen(command_for(gpu), shell=True)`.
                _ => self
                    .scopes()
                    .returned_by(c)
                    .into_iter()
                    .flat_map(|v| self.shell_env_items(v, depth + 1))
                    .collect(),
            },
            Expr::Name(n) if depth < 2 => {
                let scopes = self.scopes();
                let scope = scopes.scope_at(range(expr).start);
                scopes
                    .lookup(n.id.as_str(), scope)
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|(v, _)| self.shell_env_items(v, depth + 1))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// An `if` without `else` whose test only reads and whose body only writes managed
    /// variables: removing the writes removes the `if` (no `if …: pass` left behind).
    pub(super) fn guard_of(&self, stmt: &Stmt) -> Option<Vec<Edit>> {
        let Stmt::If(s) = stmt else { return None };
        let only_writes = !s.body.is_empty() && s.body.iter().all(|b| self.pure_env_stmt(b));
        if !s.elif_else_clauses.is_empty() || !only_writes || !self.reads_only(&s.test) {
            return None;
        }
        removal_edit(self.source, range(stmt), false).map(|e| vec![e])
    }

    fn reads_only(&self, expr: &Expr) -> bool {
        match expr {
            // `getattr(args, "gpu")`, `vars(args)["gpu"]`, `opts.get("gpu")`: an option read.
            Expr::Call(_) | Expr::Subscript(_)
                if options::option_access(expr).is_some_and(|r| self.reads_only(r.holder)) =>
            {
                true
            }
            Expr::StringLiteral(_) | Expr::NumberLiteral(_) | Expr::NoneLiteral(_) => true,
            Expr::BooleanLiteral(_) | Expr::Name(_) | Expr::Attribute(_) => true,
            Expr::Compare(c) => {
                self.reads_only(&c.left) && c.comparators.iter().all(|e| self.reads_only(e))
            }
            Expr::BoolOp(b) => b.values.iter().all(|e| self.reads_only(e)),
            Expr::UnaryOp(u) => self.reads_only(&u.operand),
            Expr::Subscript(sub) => self.reads_only(&sub.value) && self.reads_only(&sub.slice),
            Expr::Call(call) => {
                matches!(
                    self.call_name(call).as_deref(),
                    Some("os.environ.get" | "os.getenv")
                ) && call.arguments.args.iter().all(|a| self.reads_only(a))
            }
            _ => false,
        }
    }

    /// `READ == "literal"` / `READ != "literal"` where READ reads a managed variable back.
    pub(super) fn env_check(&mut self, cmp: &'s ruff_python_ast::ExprCompare) {
        use ruff_python_ast::CmpOp;
        let mut left = cmp.left.as_ref();
        for (op, right) in cmp.ops.iter().zip(cmp.comparators.iter()) {
            if matches!(op, CmpOp::Eq | CmpOp::NotEq) {
                for (read, literal) in [(left, right), (right, left)] {
                    let Expr::StringLiteral(s) = literal else {
                        continue;
                    };
                    let key = self.env_read_key(read, 0).and_then(|k| self.env_key(k));
                    if let Some(EnvKey::Managed(var)) = key {
                        self.push_env_check(var, literal, s);
                    }
                }
            }
            left = right;
        }
    }

    /// A string literal a managed variable is checked against, with where its value is
    /// written in the source (when as is: one literal, the value once in it), as device
    /// strings' indices are found.
    fn push_env_check(
        &mut self,
        var: EnvVar,
        literal: &Expr,
        s: &ruff_python_ast::ExprStringLiteral,
    ) {
        let value = s.value.to_str().to_string();
        let at = range(literal);
        let text = &self.source[at.clone()];
        let inner = match (
            text.find(value.as_str()),
            text.matches(value.as_str()).count(),
        ) {
            (Some(found), 1) if !value.is_empty() && s.value.iter().count() == 1 => {
                Some(at.start + found..at.start + found + value.len())
            }
            _ => None,
        };
        self.facts.env_checks.push((var, at, value, inner));
    }

    /// A table of expected values checked in a loop: `for key, want in TABLE.items():` whose
    /// body compares the variable read by `key` (`os.environ.get(key)`, directly or through
    /// a local name) with `want`. Each managed key of the dict literal is a check of its value.
    pub(super) fn env_table_check(&mut self, stmt: &'s ruff_python_ast::StmtFor) {
        use ruff_python_ast::CmpOp;
        let Expr::Tuple(target) = stmt.target.as_ref() else {
            return;
        };
        let [Expr::Name(key), Expr::Name(want)] = target.elts.as_slice() else {
            return;
        };
        let Expr::Call(call) = stmt.iter.as_ref() else {
            return;
        };
        let Expr::Attribute(items) = call.func.as_ref() else {
            return;
        };
        if items.attr.as_str() != "items" || !call.arguments.args.is_empty() {
            return;
        }
        let Some(Expr::Dict(table)) = self.single_value(&items.value) else {
            return;
        };
        let mut compares = Compares(Vec::new());
        for body in &stmt.body {
            compares.visit_stmt(body);
        }
        let checked = compares.0.iter().any(|cmp| {
            let mut left = cmp.left.as_ref();
            cmp.ops
                .iter()
                .zip(cmp.comparators.iter())
                .any(|(op, right)| {
                    let sides = [(left, right), (right, left)];
                    left = right;
                    matches!(op, CmpOp::Eq | CmpOp::NotEq)
                        && sides.iter().any(|(read, other)| {
                            matches!(other, Expr::Name(n) if n.id == want.id)
                                && matches!(
                                    self.env_read_key(read, 0),
                                    Some(Expr::Name(k)) if k.id == key.id
                                )
                        })
                })
        });
        if !checked {
            return;
        }
        for item in &table.items {
            let (Some(Expr::StringLiteral(k)), Expr::StringLiteral(v)) = (&item.key, &item.value)
            else {
                continue;
            };
            if let Some(EnvKey::Managed(var)) = key_of_name(k.value.to_str()) {
                self.push_env_check(var, &item.value, v);
            }
        }
    }

    /// What a local name is bound to, when it is bound once.
    fn single_value(&self, expr: &Expr) -> Option<&'s Expr> {
        let Expr::Name(n) = expr else { return None };
        let scopes = self.scopes();
        let scope = scopes.scope_at(range(expr).start);
        match scopes.lookup(n.id.as_str(), scope)?.as_slice() {
            [(value, _)] => Some(*value),
            _ => None,
        }
    }

    /// The key `expr` reads a variable by: `K` of `os.environ.get(K)`, `os.getenv(K)` or
    /// `os.environ[K]`, or of the one read a local name is bound to.
    fn env_read_key(&self, expr: &'s Expr, depth: usize) -> Option<&'s Expr> {
        match expr {
            Expr::Call(call)
                if matches!(
                    self.call_name(call).as_deref(),
                    Some("os.environ.get" | "os.getenv")
                ) =>
            {
                call.arguments.args.first()
            }
            Expr::Subscript(sub) if self.is_environ(&sub.value) => Some(&sub.slice),
            Expr::Name(_) if depth < 2 => self.env_read_key(self.single_value(expr)?, depth + 1),
            _ => None,
        }
    }

    pub(super) fn is_environ(&self, expr: &Expr) -> bool {
        self.bindings.is(expr, "os.environ")
    }

    /// `os.environ[K]` (through any alias): the key, if known, and the subscript's range.
    fn environ_subscript(&self, expr: &Expr) -> Option<(Option<EnvKey>, Range<usize>)> {
        let Expr::Subscript(sub) = expr else {
            return None;
        };
        if !self.is_environ(&sub.value) {
            return None;
        }
        Some((self.env_key(&sub.slice), range(expr)))
    }

    /// The variable a key expression names: a string literal, or a module constant holding one.
    fn env_key(&self, expr: &Expr) -> Option<EnvKey> {
        let name = match expr {
            Expr::StringLiteral(s) => s.value.to_str().to_string(),
            Expr::Name(_) => self.scopes().module_string(expr)?,
            _ => return None,
        };
        key_of_name(&name)
    }

    /// Where a written value is read from the command line: an option of the file's parser
    /// read back (`args.gpu`, `str(opt.gpu_ids)`, `",".join(args.gpus)`), any attribute of a
    /// parsed namespace, or `sys.argv[…]`, directly or through local names. The read as
    /// written, for the message.
    pub(super) fn option_source(&self, expr: &Expr, depth: usize) -> Option<String> {
        let mut reads = OptionRead {
            visitor: self,
            depth,
            found: None,
        };
        reads.visit_expr(expr);
        reads.found
    }

    /// `expr` itself reads an option (`None` also when its parts must be looked at).
    fn option_leaf(&self, expr: &Expr, depth: usize) -> Option<Option<String>> {
        let text = || Some(self.source[range(expr)].to_string());
        match expr {
            _ if self.reads_option(expr, depth) => Some(text()),
            Expr::Subscript(sub) if self.bindings.is(&sub.value, "sys.argv") => Some(text()),
            Expr::Name(n) if depth < 4 => {
                let scopes = self.scopes();
                let scope = scopes.scope_at(range(expr).start);
                let found = scopes
                    .lookup(n.id.as_str(), scope)
                    .unwrap_or_default()
                    .into_iter()
                    .find_map(|(value, _)| self.option_source(value, depth + 1));
                Some(found)
            }
            _ => None,
        }
    }

    /// `expr` reads a parsed option's value, in any form ([`options::option_access`]): an
    /// option the file declares, or any attribute or key of the parsed namespace.
    fn reads_option(&self, expr: &Expr, depth: usize) -> bool {
        let Some(read) = options::option_access(expr) else {
            return false;
        };
        if self.bindings.is(read.holder, "os.environ") {
            return false;
        }
        self.scopes().options.contains(read.dest)
            || if read.dict {
                self.is_namespace_dict(read.holder, depth)
            } else {
                self.is_namespace(read.holder, depth)
            }
    }

    /// A name bound to `vars(args)` / `args.__dict__` of a parsed namespace.
    fn is_namespace_dict(&self, expr: &Expr, depth: usize) -> bool {
        let Expr::Name(n) = expr else { return false };
        if depth >= 4 {
            return false;
        }
        let scopes = self.scopes();
        let scope = scopes.scope_at(range(expr).start);
        scopes.lookup(n.id.as_str(), scope).is_some_and(|values| {
            values.iter().any(|(v, _)| {
                options::namespace_of_dict(v).is_some_and(|ns| self.is_namespace(ns, depth + 1))
            })
        })
    }

    /// A name bound to `parser.parse_args()` (or the first of `parse_known_args()`), or that
    /// call itself.
    fn is_namespace(&self, expr: &Expr, depth: usize) -> bool {
        let parsed = options::parses_args;
        if matches!(expr, Expr::Call(_)) {
            return parsed(expr);
        }
        let Expr::Name(n) = expr else { return false };
        if depth >= 4 {
            return false;
        }
        let scopes = self.scopes();
        let scope = scopes.scope_at(range(expr).start);
        scopes
            .lookup(n.id.as_str(), scope)
            .is_some_and(|values| values.iter().any(|(v, _)| parsed(v)))
            || scopes
                .unpacked(n.id.as_str(), scope)
                .is_some_and(|(i, v, _)| i == 0 && parsed(v))
    }

    fn value_of(&self, expr: &Expr) -> Val {
        match expr {
            Expr::StringLiteral(s) => Val::Lit(s.value.to_str().to_string()),
            Expr::Name(_) => self
                .scopes()
                .module_string(expr)
                .map_or(Val::Computed, Val::Lit),
            _ => Val::Computed,
        }
    }
}

/// Looks for a read of a command-line option in an expression (see `option_source`).
struct OptionRead<'v, 's> {
    visitor: &'v FactVisitor<'s>,
    depth: usize,
    found: Option<String>,
}

/// The comparisons of a loop body.
struct Compares<'a>(Vec<&'a ruff_python_ast::ExprCompare>);

impl<'a> Visitor<'a> for Compares<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Compare(cmp) = expr {
            self.0.push(cmp);
        }
        ruff_python_ast::visitor::walk_expr(self, expr);
    }
}

impl<'a> ruff_python_ast::visitor::Visitor<'a> for OptionRead<'_, '_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found.is_some() {
            return;
        }
        match self.visitor.option_leaf(expr, self.depth) {
            Some(found) => self.found = found,
            None => ruff_python_ast::visitor::walk_expr(self, expr),
        }
    }
}

/// `update({K: V}, K2=V2)` holds two lists, the dict's items and the keywords: each loses its
/// own items (a deletion never crosses the `}`), a dict that loses all of them is left `{}`, and
/// keywords that all go take the comma before them.
fn list_deletions(stmt: &Stmt, spans: &[(Range<usize>, bool)]) -> Vec<Edit> {
    let dict = match stmt {
        Stmt::Expr(e) => match e.value.as_ref() {
            Expr::Call(call) => match call.arguments.args.first() {
                Some(d @ Expr::Dict(_)) => Some(range(d)),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    };
    let Some(dict) = dict else {
        return delete_items(spans);
    };
    let (inside, keywords): (Vec<_>, Vec<_>) = spans
        .iter()
        .cloned()
        .partition(|(r, _)| dict.start <= r.start && r.end <= dict.end);
    let all_go = |list: &[(Range<usize>, bool)]| !list.is_empty() && list.iter().all(|(_, m)| *m);
    let mut edits = Vec::new();
    if all_go(&inside) {
        edits.push(Edit::delete(dict.start + 1..dict.end - 1));
    } else {
        edits.extend(delete_items(&inside));
    }
    match keywords.last() {
        Some((last, _)) if all_go(&keywords) => edits.push(Edit::delete(dict.end..last.end)),
        _ => edits.extend(delete_items(&keywords)),
    }
    edits
}

fn clobber(range: Range<usize>) -> Item {
    Item {
        range,
        key: None,
        op: EnvOp::Clobber,
        from_option: None,
    }
}

fn key_of_name(name: &str) -> Option<EnvKey> {
    if let Some(var) = EnvVar::from_name(name) {
        return Some(EnvKey::Managed(var));
    }
    match name {
        "HIP_VISIBLE_DEVICES" => Some(EnvKey::Amd("HIP_VISIBLE_DEVICES")),
        "ROCR_VISIBLE_DEVICES" => Some(EnvKey::Amd("ROCR_VISIBLE_DEVICES")),
        _ => None,
    }
}
