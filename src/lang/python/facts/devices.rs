//! Device selection by data flow: a literal is a device index only where it reaches a
//! device-consuming argument of a known API (a sink), directly or through flow.rs. Dict keys,
//! comparisons, `match` patterns, `Literal[...]` members and prose are never sinks.

use rustc_hash::FxHashSet as HashSet;
use std::ops::Range;

use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
use ruff_python_ast::{Expr, ExprCall, ExprSubscript, InterpolatedStringElement, Number};

use super::flow::Scope;
use super::{range, FactVisitor, IndexParam, MultiKind, ParamTakes};
use crate::knowledge::python::{
    CARD_COUNT_KEYWORDS, DATA_CONTAINERS, ENGINES, GPU_COUNT_KEYWORDS, INDEX_CALLS, INDEX_KEYWORDS,
    LIGHTNING_CALLS, LIGHTNING_CLIS, OFFLOAD_KEYWORDS, TAKES_A_GPU_CALLS, TORCH_CUDA_DEVICE_FUNCS,
};

/// A literal device index that reaches a sink.
#[derive(Debug, Clone)]
pub struct DeviceUse {
    pub kind: DeviceUseKind,
    pub index: u64,
    /// The literal node (the key for deduplication).
    pub literal: Option<Range<usize>>,
    /// The bytes to replace with the new index.
    pub digits: Option<Range<usize>>,
    /// Where to point the user: the literal.
    pub at: Range<usize>,
    /// The sink it reaches, and how.
    pub what: String,
    /// The sink's argument (where the device is chosen: the literal itself, or the name that
    /// carries it there).
    pub sink: Range<usize>,
    /// A name on the way that is also used for something else: rewriting would change that too.
    pub shared: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceUseKind {
    String,
    Call,
    Keyword,
    /// Reached through a variable, a default or a table.
    Flow,
}

/// What a sink accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Accepts {
    /// An int or a device string (`"cuda:1"`, `torch.device`).
    Spec,
    /// An int only.
    Index,
    /// Only a device string: the callee is not known to take an int device.
    DeviceString,
    /// A list of ints (`device_ids`).
    IndexList,
}

/// What a device list holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeviceList {
    None,
    /// GPUs only, in CUDA's order.
    Gpus,
    /// Devices of several kinds, or of a kind not known.
    Mixed,
}

/// A keyword of a call (written, or held by a dict splatted into it): its name, its value, and
/// the dict's name and load when it came through one.
type Keyword<'s> = (&'s str, &'s Expr, Option<(String, Range<usize>)>);

/// A literal reached by flow.
#[derive(Debug, Clone)]
struct Origin {
    literal: Range<usize>,
    index: u64,
    digits: Option<Range<usize>>,
    string: bool,
    via: Option<String>,
}

#[derive(Debug, Default)]
struct Flow {
    origins: Vec<Origin>,
    rank: bool,
    /// The rank modulo the visible count (`rank % torch.cuda.device_count()`).
    rank_modulo: bool,
    /// How many GPUs a list or a loop selects (0: not several).
    multi: u64,
    /// Names traversed: (key, load range).
    path: Vec<(String, Range<usize>)>,
    /// Under `int(...)`: a string of digits is an index too (`int(os.getenv("GPU", "1"))`).
    numeric: bool,
    /// The value is read from a configuration file (YAML, TOML, JSON): which file, which key.
    config: Option<String>,
    /// What is resolved is a card index (an index argument, the `N` of `f"cuda:{N}"`), or
    /// an index or a device (`torch.cuda.set_device(…)`, `.to(…)`).
    index: bool,
    spec: bool,
    /// An index read at run time with no default the tool can read: a command-line option
    /// (`args.gpu_id`, `--gpu-id` with `default=None` or none), or an environment variable
    /// (`os.environ.get("MYLIB_DEVICE")`).
    cli: Option<super::RunTimeRead>,
    /// Parameters of the file's functions the value comes from: (function of `scopes`, name).
    params: Vec<(usize, String)>,
    /// The value is appended to `"cuda"` (`"cuda" + gpu_str` with `gpu_str = f":{gpu_id}"`, as
    /// basicsr's `get_device` builds it): a string that starts `:` carries the index.
    after_cuda: bool,
    /// The value is a card number as `nvidia-smi` (or GPUtil, which runs it) counts cards:
    /// every card, in PCI order, the mask ignored.
    smi: bool,
}

/// A name for the index of the process among its siblings: a rank (`local_rank`, `RANK`),
/// accelerate's `process_index`, a worker pool's `proc_id` (lmdeploy's executor gives each
/// spawned worker `set_device(proc_id)`).
fn names_a_rank(name: &str) -> bool {
    name.to_ascii_lowercase().contains("rank")
        || matches!(
            name,
            "process_index"
                | "local_process_index"
                | "proc_id"
                | "proc_idx"
                | "process_id"
                | "process_idx"
        )
}

impl<'s> FactVisitor<'s> {
    pub(super) fn call(&mut self, call: &'s ExprCall, name: &str) {
        let name = name.to_string();
        let method = match call.func.as_ref() {
            Expr::Attribute(a) => a.attr.as_str(),
            _ => "",
        };
        let args = &call.arguments.args;
        let kw = |n: &str| {
            call.arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == n))
                .map(|k| &k.value)
        };
        if name.ends_with("nvmlDeviceGetHandleByIndex")
            || matches!(name.as_str(), "nvitop.Device" | "nvitop.PhysicalDevice")
        {
            if let Some(first) = args.first().or_else(|| kw("index")) {
                self.nvml(first, &name);
            }
            return;
        }
        if crate::knowledge::python::IN_PROCESS_LAUNCHERS.contains(&name.as_str()) {
            self.facts.multi_gpu.push((
                range(call),
                format!(
                    "`{name}` starts as many processes as its arguments say (`--nproc_per_node`)"
                ),
                MultiKind::Launcher,
            ));
        }
        let gpu_api = self.is_framework(&name);
        if name == "torch.device" {
            match (args.first(), args.get(1)) {
                (Some(Expr::StringLiteral(s)), Some(index)) if s.value.to_str() == "cuda" => {
                    self.sink(index, Accepts::Index, "torch.device(\"cuda\", …)");
                }
                (Some(first), _) => self.sink(first, Accepts::Spec, "torch.device(…)"),
                _ => {}
            }
            if let Some(index) = kw("index") {
                self.sink(index, Accepts::Index, "torch.device(index=…)");
            }
            return;
        }
        if let Some(func) = name.strip_prefix("torch.cuda.") {
            if TORCH_CUDA_DEVICE_FUNCS.contains(&func) {
                let what = format!("torch.cuda.{func}(…)");
                if let Some(first) = args.first() {
                    self.sink(first, Accepts::Spec, &what);
                }
                if let Some(d) = kw("device") {
                    self.sink(d, Accepts::Spec, &what);
                }
                return;
            }
        }
        if let Some((_, position, keyword)) = INDEX_CALLS.iter().find(|(n, _, _)| *n == name) {
            let what = format!("{name}(…)");
            if let Some(index) = args.get(*position) {
                self.sink(index, Accepts::Index, &what);
            }
            if let Some(index) = keyword.and_then(kw) {
                self.sink(index, Accepts::Index, &what);
            }
            return;
        }
        if name == "tensorflow.device" {
            if let Some(first) = args.first() {
                self.sink(first, Accepts::DeviceString, "tf.device(…)");
            }
            return;
        }
        match method {
            "to" | "cuda" => {
                if let Some(first) = args.first() {
                    self.sink(first, Accepts::Spec, &format!(".{method}(…)"));
                }
                if let Some(d) = kw("device") {
                    self.sink(d, Accepts::Spec, &format!(".{method}(device=…)"));
                }
            }
            _ => {}
        }
        // A callable and its argument passed together (`to_thread(model.to, "cuda:1")`,
        // `executor.submit(torch.cuda.set_device, 1)`, `partial(t.cuda, 1)`): the argument
        // after a device-taking callable is its device.
        for pair in args.windows(2) {
            if let Some(what) = self.device_callable(&pair[0]) {
                self.sink(&pair[1], Accepts::Spec, &what);
            }
        }
        let parallel = name.ends_with("DataParallel");
        // The keywords as written, and those a dict splatted into the call holds
        // (`Llama(**params)` with `params = {"main_gpu": 1}`), with the dict's name on the way.
        let mut keywords: Vec<Keyword<'s>> = Vec::new();
        for k in &call.arguments.keywords {
            match &k.arg {
                Some(arg) => keywords.push((arg.as_str(), &k.value, None)),
                None => self.splatted(&k.value, None, 0, &mut keywords),
            }
        }
        if TAKES_A_GPU_CALLS.contains(&name.as_str()) {
            self.cuda_at(range(call).start);
        }
        self.card_counts(call, &name, gpu_api, &keywords);
        self.rank_call(call, &name);
        for (arg, value, through) in keywords {
            if gpu_api
                && OFFLOAD_KEYWORDS.contains(&arg)
                && int_literal(value).is_none_or(|n| n != 0)
            {
                // `n_gpu_layers=-1`: the framework puts the model on a GPU.
                self.cuda_at(range(value).start);
            }
            match arg {
                // Test data a test asserts back (`round_trip`): no device choice.
                "device"
                    if !gpu_api
                        && DATA_CONTAINERS.contains(&name.as_str())
                        && super::inert::within(self.inert(), &range(value)) => {}
                "device" if method != "to" && method != "cuda" => {
                    let accepts = if gpu_api {
                        Accepts::Spec
                    } else {
                        Accepts::DeviceString
                    };
                    self.sink_through(value, accepts, "device=…", through);
                }
                "device_ids" if parallel || gpu_api => {
                    self.sink_through(value, Accepts::IndexList, "device_ids=…", through)
                }
                "map_location" => self.map_location(value),
                // `device_map="auto"` (accelerate's placement, through any wrapper: openrlhf's
                // `get_llm_for_sequence_regression(…, device_map="auto")`) puts the model on
                // the cards the process sees: GPU use, on the policy's card under the header.
                "device_map" if matches!(value, Expr::StringLiteral(s) if matches!(s.value.to_str(), "auto" | "balanced" | "balanced_low_0" | "sequential")) => {
                    self.cuda_at(range(value).start)
                }
                "device_map" if gpu_api || matches!(value, Expr::Dict(_)) => self.device_map(value),
                "max_memory" if gpu_api => self.max_memory(value),
                // A list is several cards (ctranslate2's `device_index=[0, 1]`).
                _ if INDEX_KEYWORDS.contains(&arg) && (gpu_api || parallel) => {
                    self.sink_through(value, Accepts::IndexList, &format!("{arg}=…"), through)
                }
                _ => {}
            }
        }
        let per_visible_gpu = call.arguments.keywords.iter().any(|k| {
            matches!(
                k.arg.as_ref().map(|a| a.as_str()),
                Some("nprocs" | "world_size" | "nproc_per_node")
            ) && self.counts_visible(&k.value, 0)
        });
        self.facts.spawns_per_visible_gpu |= per_visible_gpu;
        if name == "range" || name == "builtins.range" {
            if let Some(Expr::Call(inner)) = args.first() {
                if self.is_device_count(inner) {
                    self.facts.multi_gpu.push((
                        range(call),
                        "iterates over every visible GPU by position".into(),
                        MultiKind::Adaptive,
                    ));
                }
            }
        }
    }

    /// The cards a call asks for by number: a framework's count keywords (their product:
    /// `LLM(…, tensor_parallel_size=2, pipeline_parallel_size=2)` is four), a keyword named
    /// for a number of GPUs in any call (`num_gpus=2`), Lightning's `devices=`/`gpus=`. More than
    /// one card is several by design; Lightning's list of indices is a sink like `device_ids`,
    /// and its trainer takes a GPU unless told another accelerator.
    fn card_counts(
        &mut self,
        call: &'s ExprCall,
        name: &str,
        gpu_api: bool,
        keywords: &[Keyword<'s>],
    ) {
        let top = name.split('.').next().unwrap_or(name);
        let engine = ENGINES.contains(&top) && !self.own(top);
        // Parallel sizes multiply (`tp_size=2, dp_size=2` is four cards); a number of GPUs is
        // the whole (`num_gpus=2, tp_size=2` is two).
        let mut product: u64 = 1;
        let mut total: u64 = 1;
        let mut written: Vec<String> = Vec::new();
        for (arg, value, _) in keywords {
            let parallel = (gpu_api || engine) && CARD_COUNT_KEYWORDS.contains(arg);
            if !parallel && !GPU_COUNT_KEYWORDS.contains(arg) {
                continue;
            }
            if let Some(n) = self.count_of(value) {
                if parallel {
                    product = product.saturating_mul(n);
                } else {
                    total = total.max(n);
                }
                written.push(format!("{arg}={n}"));
            }
        }
        let mut asked = (!written.is_empty()).then(|| (product.max(total), written));
        if LIGHTNING_CALLS.contains(&name) {
            // `LightningCLI` builds its trainer from `trainer_defaults={"accelerator": …}` and
            // the command line (`--trainer.devices`): what the code says is in that dict.
            let defaults: Vec<(&str, &Expr)> =
                match keywords.iter().find(|k| k.0 == "trainer_defaults") {
                    Some((_, Expr::Dict(d), _)) if LIGHTNING_CLIS.contains(&name) => d
                        .items
                        .iter()
                        .filter_map(|item| match &item.key {
                            Some(Expr::StringLiteral(k)) => Some((k.value.to_str(), &item.value)),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
            let kw = |n: &str| {
                keywords
                    .iter()
                    .find(|k| k.0 == n)
                    .map(|k| k.1)
                    .or_else(|| defaults.iter().find(|k| k.0 == n).map(|k| k.1))
            };
            let accelerator = kw("accelerator").map(|a| match a {
                Expr::StringLiteral(s) => Some(s.value.to_str()),
                _ => None,
            });
            match accelerator {
                // Another accelerator, or one chosen at run time: no card of its own here.
                Some(Some("cpu" | "tpu" | "mps" | "hpu" | "ipu" | "xla")) | Some(None) => {}
                _ => {
                    self.cuda_at(range(call).start);
                    if let Some(devices) = kw("devices").or_else(|| kw("gpus")) {
                        match devices {
                            Expr::List(_) | Expr::Tuple(_) => {
                                self.sink(devices, Accepts::IndexList, "devices=…");
                            }
                            Expr::UnaryOp(_) => self.facts.multi_gpu.push((
                                range(devices),
                                "`devices=-1` trains on every visible GPU".into(),
                                MultiKind::Adaptive,
                            )),
                            _ => match self.count_of(devices) {
                                Some(n) if n > 1 => {
                                    let (cards, written) = asked.get_or_insert((1, Vec::new()));
                                    *cards = (*cards).max(n);
                                    written.push(format!("devices={n}"));
                                }
                                // `devices=int(os.environ["SLURM_NTASKS_PER_NODE"])`: one
                                // process per card, as many as the scheduler says when it runs.
                                None if self.read_at_run_time(devices) => {
                                    self.facts.multi_gpu.push((
                                        range(devices),
                                        format!(
                                            "`{name}(devices={})` trains on a number of cards read at run time",
                                            &self.source[range(devices)]
                                        ),
                                        MultiKind::CardsAtRunTime,
                                    ));
                                }
                                _ => {}
                            },
                        }
                    }
                }
            }
        }
        if let Some((n, written)) = asked.filter(|(n, _)| *n > 1) {
            self.facts.multi_gpu.push((
                range(call),
                format!("`{}`", written.join(", ")),
                MultiKind::Cards(n),
            ));
        }
    }

    /// A value the process reads when it runs: the environment (`os.environ.get("N")`,
    /// `os.getenv`), or a command-line option.
    fn read_at_run_time(&self, expr: &'s Expr) -> bool {
        struct Env(bool);
        impl<'a> ruff_python_ast::visitor::Visitor<'a> for Env {
            fn visit_expr(&mut self, e: &'a Expr) {
                let environ =
                    |e: &Expr| matches!(e, Expr::Attribute(a) if a.attr.as_str() == "environ");
                match e {
                    Expr::Call(c)
                        if matches!(c.func.as_ref(), Expr::Attribute(a)
                        if a.attr.as_str() == "getenv" || a.attr.as_str() == "get" && environ(&a.value)) =>
                    {
                        self.0 = true;
                    }
                    Expr::Subscript(s) if environ(&s.value) => self.0 = true,
                    _ => ruff_python_ast::visitor::walk_expr(self, e),
                }
            }
        }
        let mut env = Env(false);
        ruff_python_ast::visitor::Visitor::visit_expr(&mut env, expr);
        env.0 || self.option_source(expr, 0).is_some()
    }

    /// The number a count takes: a literal, a name every binding of which is a literal (the
    /// largest; `n = 100` then `n = min(len(slots), n)` is computed, and no count), or what an
    /// attribute reads (an argparse default, a constant of a config class).
    pub(super) fn count_of(&self, expr: &'s Expr) -> Option<u64> {
        if let Some(n) = int_literal(expr) {
            return Some(n);
        }
        let scope = self.scopes().scope_at(range(expr).start);
        if let Expr::Name(n) = expr {
            let values = self.scopes().lookup(n.id.as_str(), scope)?;
            return values
                .iter()
                .map(|(v, _)| int_literal(v))
                .collect::<Option<Vec<u64>>>()?
                .into_iter()
                .max();
        }
        if !matches!(expr, Expr::Attribute(_)) {
            return None;
        }
        let mut flow = Flow {
            numeric: true,
            ..Flow::default()
        };
        self.resolve(expr, scope, 0, false, &mut flow);
        flow.origins
            .iter()
            .filter(|o| !o.string)
            .map(|o| o.index)
            .max()
    }

    /// `("CUDAExecutionProvider", {"device_id": 1})`: the options' `device_id` is a CUDA index.
    pub(super) fn ort_provider(&mut self, elts: &'s [Expr]) {
        let [Expr::StringLiteral(name), Expr::Dict(options)] = elts else {
            return;
        };
        if !matches!(
            name.value.to_str(),
            "CUDAExecutionProvider" | "TensorrtExecutionProvider"
        ) {
            return;
        }
        for item in &options.items {
            if matches!(&item.key, Some(Expr::StringLiteral(k)) if k.value.to_str() == "device_id")
            {
                self.sink(&item.value, Accepts::Index, "the CUDA provider's device_id");
            }
        }
    }

    /// Code in `within` runs `nvidia-smi` (a string of its command), asks GPUtil for cards or
    /// counts them with NVML.
    fn runs_smi(&self, within: Range<usize>) -> bool {
        let mut smi = Smi {
            bindings: &self.bindings,
            within: within.clone(),
            found: false,
        };
        for stmt in self.body {
            let r = range(stmt);
            if r.start <= within.start && within.end <= r.end {
                smi.visit_stmt(stmt);
            }
        }
        smi.found
    }

    /// What a loop or comprehension iterates over counts every card in PCI order (the mask
    /// ignored): `range(pynvml.nvmlDeviceGetCount())`, `GPUtil.getGPUs()`, `nvidia-smi` output.
    fn lists_smi(&self, iter: &Expr) -> bool {
        let mut smi = Smi {
            bindings: &self.bindings,
            within: range(iter),
            found: false,
        };
        smi.visit_expr(iter);
        smi.found
    }

    /// An NVML index: a literal (a card by PCI bus order), or a CUDA index passed where NVML
    /// wants its own (a mismatch once the mask renumbers cards).
    fn nvml(&mut self, arg: &'s Expr, call: &str) {
        let scope = self.scopes().scope_at(range(arg).start);
        let mut flow = Flow::default();
        self.resolve(arg, scope, 0, false, &mut flow);
        let literal = match flow.origins.as_slice() {
            [one] if !one.string => one.digits.clone().map(|d| (one.index, d)),
            _ => None,
        };
        let from_cuda = literal.is_none() && self.is_cuda_index(arg, 0);
        if literal.is_some() || from_cuda {
            self.facts.nvml.push(super::NvmlUse {
                at: range(arg),
                index: literal,
                call: call.to_string(),
                from_cuda,
                to_cuda: false,
            });
        }
    }

    /// `torch.cuda.current_device()`, `x.device.index`, `x.get_device()`, or a name bound to
    /// one of them: a CUDA device number.
    fn is_cuda_index(&self, expr: &Expr, depth: usize) -> bool {
        match expr {
            Expr::Call(c) => {
                let name = self.bindings.qualified(&c.func).unwrap_or_default();
                name == "torch.cuda.current_device"
                    || matches!(c.func.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "get_device")
                    || (matches!(name.as_str(), "int" | "builtins.int")
                        && c.arguments
                            .args
                            .first()
                            .is_some_and(|a| self.is_cuda_index(a, depth + 1)))
            }
            Expr::Attribute(a) => {
                a.attr.as_str() == "index"
                    && matches!(a.value.as_ref(), Expr::Attribute(d) if d.attr.as_str() == "device")
            }
            Expr::Name(_) => self.bound_to(expr, depth, |v, d| self.is_cuda_index(v, d)),
            _ => false,
        }
    }

    /// A reference (not a call) to a callable whose first argument is a device.
    fn device_callable(&self, expr: &Expr) -> Option<String> {
        let Expr::Attribute(attr) = expr else {
            return None;
        };
        let name = self.bindings.qualified(expr).unwrap_or_default();
        if let Some(func) = name.strip_prefix("torch.cuda.") {
            return TORCH_CUDA_DEVICE_FUNCS
                .contains(&func)
                .then(|| format!("torch.cuda.{func} (called with it)"));
        }
        matches!(attr.attr.as_str(), "to" | "cuda")
            .then(|| format!(".{} (called with it)", attr.attr.as_str()))
    }

    /// `map_location`: a device, or a dict whose *values* are devices (keys name the saved ones).
    fn map_location(&mut self, value: &'s Expr) {
        match value {
            Expr::Dict(dict) => {
                for item in &dict.items {
                    self.sink(
                        &item.value,
                        Accepts::DeviceString,
                        "the value side of map_location",
                    );
                }
            }
            Expr::Lambda(_) => {}
            other => self.sink(other, Accepts::Spec, "map_location=…"),
        }
    }

    /// `device_map={"": 1}`: one device is a selection, several a placement for review.
    fn device_map(&mut self, value: &'s Expr) {
        let Expr::Dict(dict) = value else {
            if !matches!(value, Expr::StringLiteral(s) if matches!(s.value.to_str(), "auto" | "balanced" | "balanced_low_0" | "sequential" | "cpu"))
            {
                self.sink(value, Accepts::Spec, "device_map=…");
            }
            return;
        };
        let distinct: HashSet<Option<u64>> =
            dict.items.iter().map(|i| int_literal(&i.value)).collect();
        let cards = distinct.iter().flatten().count() as u64;
        if cards > 1 {
            self.facts.multi_gpu.push((
                range(value),
                format!("device_map spreads the model over {cards} GPUs"),
                MultiKind::Cards(cards),
            ));
            return;
        }
        for item in &dict.items {
            self.sink(&item.value, Accepts::Spec, "a device_map value");
        }
    }

    fn max_memory(&mut self, value: &'s Expr) {
        if let Expr::Dict(dict) = value {
            let gpus = dict
                .items
                .iter()
                .filter(|i| i.key.as_ref().and_then(int_literal).is_some())
                .count();
            if gpus > 0 {
                self.facts.multi_gpu.push((
                    range(value),
                    format!("max_memory budgets {gpus} GPU index(es) by position"),
                    MultiKind::Cards(gpus as u64),
                ));
            }
        }
    }

    /// `jax.devices()[1]`, `tf.config.list_physical_devices("GPU")[1]`, `gpus[1]`: a list of
    /// GPUs only, in CUDA's order, indexed by a literal is a device index like `cuda:1` (the
    /// mask moves it); a list that mixes kinds (`list_physical_devices()` starts with the CPU)
    /// is not, and a position past the first there is several devices.
    pub(super) fn device_list_subscript(&mut self, sub: &'s ExprSubscript) {
        let Some(index) = int_literal(&sub.slice) else {
            return;
        };
        match self.device_list(&sub.value, 0) {
            DeviceList::Gpus => {
                self.sink(&sub.slice, Accepts::Index, "a GPU device list's position");
            }
            DeviceList::Mixed if index > 0 => self.facts.multi_gpu.push((
                range(sub),
                format!("takes visible GPU number {index} from a device list"),
                MultiKind::Cards(index + 1),
            )),
            _ => {}
        }
    }

    fn device_list(&self, expr: &Expr, depth: usize) -> DeviceList {
        match expr {
            Expr::Call(call) => {
                let name = self.bindings.qualified(&call.func).unwrap_or_default();
                // The kind asked for: the first argument or the `backend`/`device_type` keyword.
                let kind = call
                    .arguments
                    .args
                    .first()
                    .or_else(|| {
                        call.arguments
                            .keywords
                            .iter()
                            .find(|k| {
                                k.arg.as_ref().is_some_and(|a| {
                                    matches!(a.as_str(), "backend" | "device_type")
                                })
                            })
                            .map(|k| &k.value)
                    })
                    .map(|e| match e {
                        Expr::StringLiteral(s) => Some(s.value.to_str().to_ascii_lowercase()),
                        _ => None,
                    });
                let jax = name == "jax.devices" || name == "jax.local_devices";
                let tf = name.ends_with("list_physical_devices")
                    || name.ends_with("list_logical_devices")
                    || name.ends_with("get_visible_devices");
                match (jax, tf, kind.as_ref().map(|k| k.as_deref())) {
                    // JAX's default backend is the GPU where there is one.
                    (true, _, None) | (true, _, Some(Some("gpu" | "cuda"))) => DeviceList::Gpus,
                    (_, true, Some(Some("gpu"))) => DeviceList::Gpus,
                    (true, _, _) | (_, true, _) => DeviceList::Mixed,
                    _ => DeviceList::None,
                }
            }
            Expr::Name(n) if depth < 4 => {
                let scope = self.scopes().scope_at(range(expr).start);
                let kinds: Vec<DeviceList> = self
                    .scopes()
                    .lookup(n.id.as_str(), scope)
                    .map(|values| {
                        values
                            .iter()
                            .map(|(v, _)| self.device_list(v, depth + 1))
                            .collect()
                    })
                    .unwrap_or_default();
                if kinds.is_empty() || kinds.iter().all(|k| *k == DeviceList::None) {
                    DeviceList::None
                } else if kinds.iter().all(|k| *k == DeviceList::Gpus) {
                    DeviceList::Gpus
                } else {
                    DeviceList::Mixed
                }
            }
            _ => DeviceList::None,
        }
    }

    /// A name (up to 4 deep) one of whose bound values satisfies `pred`.
    fn bound_to(&self, expr: &Expr, depth: usize, pred: impl Fn(&Expr, usize) -> bool) -> bool {
        let Expr::Name(n) = expr else { return false };
        if depth >= 4 {
            return false;
        }
        let scope = self.scopes().scope_at(range(expr).start);
        self.scopes()
            .lookup(n.id.as_str(), scope)
            .is_some_and(|values| values.iter().any(|(v, _)| pred(v, depth + 1)))
    }

    /// `torch.cuda.device_count()`, directly or through a name bound to it.
    pub(super) fn counts_visible(&self, expr: &Expr, depth: usize) -> bool {
        match expr {
            Expr::Call(c) => self.is_device_count(c),
            Expr::Name(_) => self.bound_to(expr, depth, |v, d| self.counts_visible(v, d)),
            _ => false,
        }
    }

    pub(super) fn is_device_count(&self, call: &ExprCall) -> bool {
        self.bindings.qualified(&call.func).is_some_and(|n| {
            matches!(
                n.as_str(),
                "torch.cuda.device_count" | "cupy.cuda.runtime.getDeviceCount"
            )
        })
    }

    pub(super) fn compare(&mut self, expr: &Expr) {
        let Expr::Compare(cmp) = expr else { return };
        let operands: Vec<&Expr> = std::iter::once(cmp.left.as_ref())
            .chain(cmp.comparators.iter())
            .collect();
        let counts = operands
            .iter()
            .any(|e| matches!(e, Expr::Call(c) if self.is_device_count(c)));
        let literal = operands.iter().filter_map(|e| int_literal(e)).max();
        if let (true, Some(n)) = (counts, literal) {
            if n >= 1 {
                let needed = cards_needed(
                    cmp,
                    n,
                    |e| matches!(e, Expr::Call(c) if self.is_device_count(c)),
                );
                self.facts.multi_gpu.push((
                    range(expr),
                    format!("compares the GPU count with {n}"),
                    // Asserted, the count is a requirement; in a branch, the program adapts.
                    if self.asserts > 0 {
                        MultiKind::Cards(needed)
                    } else {
                        MultiKind::Adaptive
                    },
                ));
            }
        }
    }

    /// A device-consuming argument: every literal that reaches it is a device use.
    fn sink(&mut self, expr: &'s Expr, accepts: Accepts, what: &str) {
        self.sink_through(expr, accepts, what, None);
    }

    /// The keywords a dict splatted into a call holds: a dict literal, `dict(k=v)`, a name
    /// bound to one (whose name and load are `through`: a dict also used elsewhere is shared).
    fn splatted(
        &self,
        expr: &'s Expr,
        through: Option<(String, Range<usize>)>,
        depth: usize,
        out: &mut Vec<Keyword<'s>>,
    ) {
        if depth > 3 {
            return;
        }
        match expr {
            Expr::Dict(d) => {
                for item in &d.items {
                    match &item.key {
                        Some(Expr::StringLiteral(k)) => {
                            out.push((k.value.to_str(), &item.value, through.clone()))
                        }
                        Some(_) => {}
                        None => self.splatted(&item.value, through.clone(), depth + 1, out),
                    }
                }
            }
            Expr::Call(c)
                if matches!(
                    self.bindings.qualified(&c.func).as_deref(),
                    Some("dict" | "builtins.dict")
                ) =>
            {
                for a in &c.arguments.args {
                    self.splatted(a, through.clone(), depth + 1, out);
                }
                for k in &c.arguments.keywords {
                    match &k.arg {
                        Some(arg) => out.push((arg.as_str(), &k.value, through.clone())),
                        None => self.splatted(&k.value, through.clone(), depth + 1, out),
                    }
                }
            }
            Expr::Name(n) => {
                let scopes = self.scopes();
                let scope = scopes.scope_at(range(expr).start);
                let through = through.or_else(|| Some((n.id.to_string(), range(expr))));
                for (value, _) in scopes.lookup(n.id.as_str(), scope).unwrap_or_default() {
                    self.splatted(value, through.clone(), depth + 1, out);
                }
            }
            _ => {}
        }
    }

    fn sink_through(
        &mut self,
        expr: &'s Expr,
        accepts: Accepts,
        what: &str,
        through: Option<(String, Range<usize>)>,
    ) {
        // An assert runs its expression: `assert x.to("cuda:1").sum() == 1` puts a tensor on
        // card 1, and `assert x.device == torch.device("cuda:1")` fails once the mask
        // renumbers it. Only a `device=` of a call that is no GPU API is test data there
        // (`assert parse(device="cuda:1") == 1`).
        if self.asserts > 0 && accepts == Accepts::DeviceString && what == "device=…" {
            return;
        }
        let scope = self.scopes().scope_at(range(expr).start);
        let mut flow = Flow {
            index: matches!(accepts, Accepts::Index | Accepts::IndexList),
            spec: accepts == Accepts::Spec,
            ..Flow::default()
        };
        flow.path.extend(through);
        self.resolve(expr, scope, 0, accepts == Accepts::IndexList, &mut flow);
        let takes = match accepts {
            Accepts::Index => Some(ParamTakes::Index),
            Accepts::Spec => Some(ParamTakes::Spec),
            Accepts::IndexList => Some(ParamTakes::IndexList),
            // A device string for a callee not known to take a device: no call of this
            // function is known to choose a card.
            Accepts::DeviceString => None,
        };
        for (f, name) in std::mem::take(&mut flow.params) {
            if let Some(takes) = takes {
                if !self
                    .param_sinks
                    .iter()
                    .any(|(g, n, _)| *g == f && *n == name)
                {
                    self.param_sinks.push((f, name, takes));
                }
            }
        }
        if flow.smi && accepts != Accepts::DeviceString {
            self.facts.nvml.push(super::NvmlUse {
                at: range(expr),
                index: None,
                call: what.to_string(),
                from_cuda: false,
                to_cuda: true,
            });
            return;
        }
        if flow.rank_modulo && !flow.rank {
            self.rank_modulo_card(range(expr), what);
            return;
        }
        if flow.rank {
            self.facts.multi_gpu.push((
                range(expr),
                format!("{what} takes its device from the process rank (one GPU per process)"),
                MultiKind::Rank,
            ));
            return;
        }
        if flow.multi > 1 {
            self.facts.multi_gpu.push((
                range(expr),
                format!("{what} selects {} GPUs", flow.multi),
                MultiKind::Cards(flow.multi),
            ));
            return;
        }
        if flow.origins.is_empty() {
            if let Some(config) = flow.config.take() {
                self.facts
                    .config_devices
                    .push((range(expr), what.to_string(), config));
            } else if let Some(read) = flow.cli.take() {
                self.facts
                    .cli_devices
                    .push((range(expr), what.to_string(), read));
            }
        } else {
            self.cuda_at(range(expr).start);
        }
        for (key, load) in &flow.path {
            self.flow_loads.insert((key.clone(), load.start, load.end));
        }
        for o in flow.origins {
            let ok = match accepts {
                Accepts::Spec => true,
                Accepts::Index | Accepts::IndexList => !o.string,
                Accepts::DeviceString => o.string,
            };
            if !ok {
                continue;
            }
            let kind = match (&o.via, o.string, range(expr) == o.literal) {
                (Some(_), _, _) => DeviceUseKind::Flow,
                (None, true, _) => DeviceUseKind::String,
                (None, false, _) if what.ends_with("=…") => DeviceUseKind::Keyword,
                _ => DeviceUseKind::Call,
            };
            let what = match &o.via {
                Some(via) => format!("{what} (through {via})"),
                None => what.to_string(),
            };
            self.facts.devices.push(DeviceUse {
                kind,
                index: o.index,
                literal: Some(o.literal.clone()),
                digits: o.digits,
                at: o.literal,
                what,
                sink: range(expr),
                // Decided once every sink is seen (`mark_shared`).
                shared: None,
            });
            let last = self.facts.devices.len() - 1;
            self.device_paths
                .push((last, flow.path.iter().map(|(k, _)| k.clone()).collect()));
        }
    }

    /// The calls that pass a card to a parameter that chooses one (a function of this file,
    /// or one another module of the tree defines): each argument there is a device sink. A
    /// parameter handed on to another such call chooses a card too (a few rounds deep); the
    /// module's own such parameters are told to the index (`index_params`).
    pub(super) fn param_calls(&mut self) {
        if self.calls.is_empty() || (self.param_sinks.is_empty() && self.imported_fns.is_empty()) {
            return;
        }
        for c in self.imported_fns {
            // `Local(…)`, `mod.Name(…)`, `a.b.Name(…)`: what names the import.
            let names_it = |func: &Expr| match (func, &c.attr) {
                (Expr::Name(n), None) => n.id.as_str() == c.local,
                (Expr::Attribute(a), Some(attr)) => {
                    a.attr.as_str() == attr && is_path(&a.value, &c.local)
                }
                _ => false,
            };
            for p in &c.value {
                let calls: Vec<&'s ExprCall> = self
                    .calls
                    .iter()
                    .copied()
                    .filter(|call| match &p.method {
                        None => names_it(&call.func),
                        Some(m) => self.method_call(call, m, None, &|f: &Expr| names_it(f)),
                    })
                    .collect();
                let shown = match &p.method {
                    Some(m) => format!("{}.{m}", c.name),
                    None => c.name.clone(),
                };
                for call in calls {
                    self.param_argument(call, &shown, p);
                }
            }
        }
        let mut done = 0;
        for _ in 0..4 {
            if done == self.param_sinks.len() {
                break;
            }
            let new: Vec<(usize, String, ParamTakes)> = self.param_sinks[done..].to_vec();
            done = self.param_sinks.len();
            for (f, param, takes) in new {
                let g = &self.scopes().functions[f];
                // A nested function is not followed; nor a method without `self` (a static
                // or class method, called on its class).
                let init = g.class.is_some() && g.name == "__init__";
                let method = g.class.is_some() && !init;
                if !g.top || (method && g.positional.first() != Some(&"self")) {
                    continue;
                }
                // `self` is not passed by a call.
                let position = g
                    .positional
                    .iter()
                    .position(|p| *p == param)
                    .and_then(|i| i.checked_sub(usize::from(g.class.is_some())));
                let (callee, method_name) = match (&g.class, init) {
                    (Some(class), true) => (class.clone(), None),
                    (Some(class), false) => (class.clone(), Some(g.name.to_string())),
                    _ => (g.name.to_string(), None),
                };
                let calls: Vec<&'s ExprCall> = self
                    .calls
                    .iter()
                    .copied()
                    .filter(|call| match &method_name {
                        None => {
                            matches!(call.func.as_ref(), Expr::Name(n) if n.id.as_str() == callee)
                        }
                        Some(m) => self.method_call(
                            call,
                            m,
                            Some(&callee),
                            &|f: &Expr| matches!(f, Expr::Name(n) if n.id.as_str() == callee),
                        ),
                    })
                    .collect();
                let shown = match &method_name {
                    Some(m) => format!("{callee}.{m}"),
                    None => callee.clone(),
                };
                let index_param = IndexParam {
                    shared: self.param_shared(f, &param),
                    callee,
                    method: method_name,
                    param,
                    position,
                    takes,
                };
                for call in calls {
                    self.param_argument(call, &shown, &index_param);
                }
                if !self.facts.index_params.contains(&index_param) {
                    self.facts.index_params.push(index_param);
                }
            }
        }
    }

    /// `call` calls method `method` on an instance of the class `class` names: `self.m(…)` in
    /// a method of class `own` (a class of this file), or `x.m(…)` / `self.x.m(…)` where every
    /// value `x` is given is made by calling the class (`x = Runner(…)`).
    fn method_call(
        &self,
        call: &ExprCall,
        method: &str,
        own: Option<&str>,
        class: &dyn Fn(&Expr) -> bool,
    ) -> bool {
        let Expr::Attribute(a) = call.func.as_ref() else {
            return false;
        };
        if a.attr.as_str() != method {
            return false;
        }
        let scopes = self.scopes();
        let scope = scopes.scope_at(range(call).start);
        let values = match a.value.as_ref() {
            Expr::Name(s) if s.id.as_str() == "self" => {
                return own.is_some() && scopes.class_of(scope) == own;
            }
            Expr::Name(n) => scopes.lookup(n.id.as_str(), scope).unwrap_or_default(),
            Expr::Attribute(x) if matches!(x.value.as_ref(), Expr::Name(s) if s.id.as_str() == "self") => {
                scopes.attr_values(x.attr.as_str(), scopes.class_of(scope))
            }
            _ => return false,
        };
        !values.is_empty()
            && values
                .iter()
                .all(|(v, _)| matches!(v, Expr::Call(c) if class(&c.func)))
    }

    /// The argument `call` passes to parameter `p` of `callee`, a device sink. Where the callee
    /// reads the parameter for something else too, what is passed is not remapped.
    fn param_argument(&mut self, call: &'s ExprCall, callee: &str, p: &IndexParam) {
        let Some((arg, keyword)) = argument(call, &p.param, p.position) else {
            return;
        };
        let what = if keyword {
            format!("{callee}({}=…)", p.param)
        } else {
            format!("{callee}(…)")
        };
        let Some(accepts) = accepts_of(p.takes) else {
            self.spawn_count(arg, range(call), &format!("`{callee}(…)`"), &p.param);
            return;
        };
        let before = self.facts.devices.len();
        self.sink(arg, accepts, &what);
        if p.shared {
            for d in &mut self.facts.devices[before..] {
                d.shared = Some(format!("{callee}`'s `{}", p.param));
            }
        }
    }

    /// Function `f` reads its parameter `param` elsewhere than on its way to a device, other
    /// than to compare it with `None` (which a card moved from 1 to 0 leaves as it was; `if
    /// gpu_id:` does not).
    fn param_shared(&self, f: usize, param: &str) -> bool {
        let within = self.scopes().functions[f].range.clone();
        let key = super::flow::LoadKey::Name(param);
        let mut none_checks = NoneChecks {
            name: param,
            within: within.clone(),
            found: Vec::new(),
        };
        for stmt in self.body {
            none_checks.visit_stmt(stmt);
        }
        super::flow::loads_of(self.body, &[key])
            .get(&key)
            .is_some_and(|loads| {
                loads.iter().any(|l| {
                    within.start <= l.start
                        && l.end <= within.end
                        && !none_checks.found.contains(l)
                        && !self
                            .flow_loads
                            .contains(&(param.to_string(), l.start, l.end))
                })
            })
    }

    fn resolve(&self, expr: &'s Expr, scope: Scope, depth: usize, list: bool, flow: &mut Flow) {
        if depth > 8 {
            return;
        }
        let via = |flow: &Flow| flow.path.first().map(|(k, _)| k.clone());
        match expr {
            Expr::NumberLiteral(_) => {
                if let Some(index) = int_literal(expr) {
                    flow.origins.push(Origin {
                        literal: range(expr),
                        index,
                        digits: Some(range(expr)),
                        string: false,
                        via: via(flow),
                    });
                }
            }
            Expr::StringLiteral(lit) => {
                if lit.value.is_implicit_concatenated() {
                    return;
                }
                let value = lit.value.to_str();
                if value.contains("rank") || value.contains("RANK") {
                    flow.rank = true;
                }
                let digits_only = !value.is_empty()
                    && value.len() <= 3
                    && value.bytes().all(|b| b.is_ascii_digit());
                if flow.numeric && digits_only {
                    let r = range(expr);
                    let text = &self.source[r.clone()];
                    if let (Some(at), Ok(index)) = (text.find(value), value.parse()) {
                        let start = r.start + at;
                        flow.origins.push(Origin {
                            literal: r.clone(),
                            index,
                            digits: Some(start..start + value.len()),
                            string: false,
                            via: flow.path.first().map(|(k, _)| k.clone()),
                        });
                    }
                    return;
                }
                if flow.after_cuda {
                    if let Some(digits) = value
                        .strip_prefix(':')
                        .filter(|d| !d.is_empty() && d.len() <= 3)
                        .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
                    {
                        let r = range(expr);
                        let text = &self.source[r.clone()];
                        let at = (text.matches(value).count() == 1)
                            .then(|| text.find(value))
                            .flatten();
                        flow.origins.push(Origin {
                            literal: r.clone(),
                            index: digits.parse().unwrap_or(0),
                            digits: at.map(|at| r.start + at + 1..r.start + at + value.len()),
                            string: true,
                            via: via(flow),
                        });
                    }
                    return;
                }
                if let Some((prefix, index)) = device_string(value) {
                    let r = range(expr);
                    let text = &self.source[r.clone()];
                    let digits = match (text.find(value), text.matches(value).count()) {
                        (Some(at), 1) => {
                            Some(r.start + at + prefix.len()..r.start + at + value.len())
                        }
                        _ => None,
                    };
                    flow.origins.push(Origin {
                        literal: r,
                        index,
                        digits,
                        string: true,
                        via: via(flow),
                    });
                }
            }
            // `vars(args)["gpu_id"]`, `getattr(args, "gpu_id")`: the option, as `args.gpu_id`.
            Expr::Subscript(_) | Expr::Call(_) if self.keyed_option(expr).is_some() => {
                let name = self.keyed_option(expr).unwrap_or_default();
                if names_a_rank(name) {
                    flow.rank = true;
                    return;
                }
                let mut values = Vec::new();
                self.option_value(name, expr, &mut values, flow);
                if !values.is_empty() {
                    flow.path.push((format!(".{name}"), range(expr)));
                }
                for (value, s) in values {
                    self.resolve(value, s, depth + 1, list, flow);
                }
            }
            Expr::FString(f) => self.fstring(f, scope, depth, flow),
            Expr::Call(call) => self.resolve_call(call, scope, depth, flow),
            Expr::BinOp(op) if is_cuda_prefix(&op.left) => {
                let was = std::mem::replace(&mut flow.index, true);
                let numeric = std::mem::replace(&mut flow.numeric, true);
                match op.right.as_ref() {
                    Expr::Tuple(t) => {
                        if let Some(first) = t.elts.first() {
                            self.resolve(first, scope, depth + 1, false, flow);
                        }
                    }
                    right => self.resolve(right, scope, depth + 1, false, flow),
                }
                flow.index = was;
                flow.numeric = numeric;
            }
            // `rank % torch.cuda.device_count()`: a card per rank, wrapped around the visible
            // ones (all ranks share one under a one-card mask).
            Expr::BinOp(op)
                if op.op == ruff_python_ast::Operator::Mod
                    && matches!(op.right.as_ref(), Expr::Call(c) if self.is_device_count(c)) =>
            {
                let mut left = Flow::default();
                self.resolve(&op.left, scope, depth + 1, false, &mut left);
                flow.rank_modulo |= left.rank;
            }
            Expr::BinOp(op)
                if op.op == ruff_python_ast::Operator::Add
                    && matches!(op.left.as_ref(), Expr::StringLiteral(s) if s.value.to_str() == "cuda") =>
            {
                let was = std::mem::replace(&mut flow.after_cuda, true);
                self.resolve(&op.right, scope, depth + 1, false, flow);
                flow.after_cuda = was;
            }
            // `[i for i in range(pynvml.nvmlDeviceGetCount()) if …]`: cards as NVML numbers them.
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::Generator(_) => {
                let generators = match expr {
                    Expr::ListComp(c) => &c.generators,
                    Expr::SetComp(c) => &c.generators,
                    Expr::Generator(c) => &c.generators,
                    _ => unreachable!(),
                };
                flow.smi |= generators.iter().any(|g| self.lists_smi(&g.iter));
            }
            Expr::If(ifexp) => {
                self.resolve(&ifexp.body, scope, depth + 1, list, flow);
                self.resolve(&ifexp.orelse, scope, depth + 1, list, flow);
            }
            Expr::BoolOp(b) => {
                for v in &b.values {
                    self.resolve(v, scope, depth + 1, list, flow);
                }
            }
            Expr::List(_) | Expr::Tuple(_) if list => {
                let elts = match expr {
                    Expr::List(l) => &l.elts,
                    Expr::Tuple(t) => &t.elts,
                    _ => unreachable!(),
                };
                if elts.len() > 1 {
                    flow.multi = elts.len() as u64;
                    return;
                }
                for e in elts {
                    self.resolve(e, scope, depth + 1, false, flow);
                }
            }
            Expr::Name(n) => {
                let id = n.id.as_str();
                if names_a_rank(id) {
                    flow.rank = true;
                    return;
                }
                // `for i in range(2)`: one device per index, several GPUs by design.
                if let Some(n) = self
                    .scopes()
                    .loop_count(id, range(expr).start)
                    .filter(|&n| n > 1)
                {
                    flow.multi = n;
                    return;
                }
                // `for i in range(args.num_gpus)` (default 2), `for i in max_memory` built over
                // such a range: one device per index.
                if let Some(n) = self
                    .scopes()
                    .loop_iter(id, range(expr).start)
                    .and_then(|iter| self.iterated_count(iter, scope, depth))
                    .filter(|&n| n > 1)
                {
                    flow.multi = n;
                    return;
                }
                // `for i in range(pynvml.nvmlDeviceGetCount())`: every card, in PCI order.
                if self
                    .scopes()
                    .loop_iter(id, range(expr).start)
                    .is_some_and(|iter| self.lists_smi(iter))
                {
                    flow.smi = true;
                    return;
                }
                if let Some(f) = self.scopes().param_of(id, scope) {
                    flow.params.push((f, id.to_string()));
                }
                let Some(values) = self.scopes().lookup(id, scope) else {
                    if let Some(c) = self
                        .imported
                        .iter()
                        .find(|c| c.local == id && c.attr.is_none())
                    {
                        self.foreign(c, range(expr), flow);
                        return;
                    }
                    self.resolve_unpacked(id, scope, depth, flow, range(expr));
                    return;
                };
                flow.path.push((id.to_string(), range(expr)));
                for (value, s) in values {
                    self.resolve(value, s, depth + 1, list, flow);
                }
            }
            Expr::Attribute(_) | Expr::Subscript(_)
                if self.config_read(expr, scope, flow, None) => {}
            Expr::Attribute(attr) => {
                let name = attr.attr.as_str();
                // `args.local_rank`, accelerate's `accelerator.process_index`.
                if names_a_rank(name) {
                    flow.rank = true;
                    return;
                }
                let owner = match attr.value.as_ref() {
                    Expr::Name(n) => Some(n.id.as_str()),
                    _ => None,
                };
                // `config.DEVICE`, `pkg.config.DEVICE`: a constant of a module of the tree.
                if let Some(c) = self
                    .imported
                    .iter()
                    .find(|c| c.attr.as_deref() == Some(name) && is_path(&attr.value, &c.local))
                {
                    self.foreign(c, range(expr), flow);
                    return;
                }
                let scopes = self.scopes();
                // `self.x` / `cls.x` in a method: that class's attribute; `Class.x`: that
                // class's; `obj.x`: an argparse default or the attribute as any class of the
                // file sets it (a config object, a dataclass of arguments).
                let (key, class) = match owner {
                    Some("self" | "cls") => match scopes.class_of(scope) {
                        Some(class) => (format!("self.{name}"), Some(class)),
                        None => return,
                    },
                    Some(c) if scopes.is_class(c) => (format!(".{name}"), Some(c)),
                    _ => (format!(".{name}"), None),
                };
                let mut values = scopes.attr_values(name, class);
                if class.is_none() {
                    self.option_value(name, expr, &mut values, flow);
                }
                if values.is_empty() {
                    return;
                }
                flow.path.push((key, range(expr)));
                for (value, s) in values {
                    self.resolve(value, s, depth + 1, list, flow);
                }
            }
            Expr::Subscript(sub) => {
                if self.bindings.is(&sub.value, "os.environ") {
                    let key = match sub.slice.as_ref() {
                        Expr::StringLiteral(k) => Some(k.value.to_str()),
                        _ => None,
                    };
                    self.env_read(range(expr), key, None, scope, depth, flow);
                    return;
                }
                if let Expr::StringLiteral(key) = sub.slice.as_ref() {
                    self.dict_value(&sub.value, key.value.to_str(), scope, depth, flow);
                }
                // `GPUtil.getFirstAvailable()[0]`, `free_gpus()[0]`, `idle[0]` with `idle` a
                // list of NVML indices: one of the cards it lists.
                let mut listed = Flow::default();
                match sub.value.as_ref() {
                    Expr::Call(c) => self.resolve_call(c, scope, depth + 1, &mut listed),
                    container => self.resolve(container, scope, depth + 1, false, &mut listed),
                }
                flow.smi |= listed.smi;
            }
            _ => {}
        }
    }

    /// A read of a declared option in a form other than `args.name` ([`super::options::option_access`]).
    fn keyed_option(&self, expr: &'s Expr) -> Option<&'s str> {
        if !matches!(expr, Expr::Subscript(_) | Expr::Call(_)) {
            return None;
        }
        let read = super::options::option_access(expr)?;
        // A key of any other dict (`config.get("device")` of a TOML file) is no option, even
        // when an option shares its name: the namespace's own dict (`vars(args)`) reads as
        // the namespace.
        (!read.dict
            && !self.bindings.is(read.holder, "os.environ")
            && self.scopes().options.contains(read.dest))
        .then_some(read.dest)
    }

    /// The values of option `name` read at `expr`: its argparse defaults; with none the tool
    /// can read, the read itself when it holds a card index.
    fn option_value(
        &self,
        name: &str,
        expr: &Expr,
        values: &mut Vec<(&'s Expr, Scope)>,
        flow: &mut Flow,
    ) {
        let scopes = self.scopes();
        if let Some(defaults) = scopes.argparse.get(name) {
            values.extend(defaults.iter().map(|d| (*d, Scope::Module)));
        }
        // A card index the user gives at run time: what the launch scripts pass
        // (the old numbering, `--gpu-id 1`) selects no device under the mask.
        // Where a device may be named whole (`--device cpu`), only an option
        // named for a card (`--gpu`, `--gpu-id`) holds an index.
        let card = || {
            let lower = name.to_ascii_lowercase();
            crate::knowledge::CARD_WORDS
                .iter()
                .any(|w| lower.contains(w))
        };
        if (flow.index || (flow.spec && card())) && scopes.options.contains(name) {
            flow.cli = Some(super::RunTimeRead::Option(
                self.source[range(expr)].to_string(),
            ));
        }
    }

    /// A device constant defined in another module of the tree: a device use here, fixed there.
    fn foreign(
        &self,
        c: &crate::lang::python::index::ImportedConst,
        load: Range<usize>,
        flow: &mut Flow,
    ) {
        let shown = match &c.attr {
            Some(attr) => format!("{}.{attr}", c.local),
            None => c.local.clone(),
        };
        flow.origins.push(Origin {
            literal: load,
            index: c.value.index,
            digits: None,
            string: c.value.string,
            via: Some(format!(
                "`{shown}`, which is `{} = {}` in `{}` line {}: change it there",
                c.name, c.value.text, c.from, c.value.line
            )),
        });
    }

    /// How many values a loop over `iter` takes when the code says: `range(X)` with X a literal
    /// or a default (`args.num_gpus`), or a name bound to a comprehension over such a range.
    fn iterated_count(&self, iter: &'s Expr, scope: Scope, depth: usize) -> Option<u64> {
        if depth > 4 {
            return None;
        }
        match iter {
            Expr::Call(call) if matches!(call.func.as_ref(), Expr::Name(n) if n.id.as_str() == "range") =>
            {
                let bound = match &call.arguments.args[..] {
                    [end] | [_, end] => end,
                    _ => return None,
                };
                let mut flow = Flow {
                    numeric: true,
                    ..Flow::default()
                };
                self.resolve(bound, scope, depth + 1, false, &mut flow);
                flow.origins
                    .iter()
                    .filter(|o| !o.string)
                    .map(|o| o.index)
                    .max()
            }
            Expr::Name(n) => {
                let values = self.scopes().lookup(n.id.as_str(), scope)?;
                values.iter().find_map(|(v, s)| {
                    let generators = match v {
                        Expr::DictComp(c) => &c.generators,
                        Expr::ListComp(c) => &c.generators,
                        Expr::SetComp(c) => &c.generators,
                        _ => return None,
                    };
                    self.iterated_count(&generators.first()?.iter, *s, depth + 1)
                })
            }
            _ => None,
        }
    }

    /// `kind, _, index = device.partition(":")`: the index part of a device string.
    fn resolve_unpacked(
        &self,
        id: &str,
        scope: Scope,
        depth: usize,
        flow: &mut Flow,
        load: Range<usize>,
    ) {
        let Some((position, value, vscope)) = self.scopes().unpacked(id, scope) else {
            return;
        };
        let Expr::Call(call) = value else { return };
        let Expr::Attribute(attr) = call.func.as_ref() else {
            return;
        };
        let separator = matches!(call.arguments.args.first(), Some(Expr::StringLiteral(s)) if s.value.to_str() == ":");
        let index_part = match attr.attr.as_str() {
            "partition" | "rpartition" => position == 2,
            "split" | "rsplit" => position == 1,
            _ => false,
        };
        if !(separator && index_part) {
            return;
        }
        flow.path.push((id.to_string(), load));
        let before = flow.origins.len();
        self.resolve(&attr.value, vscope, depth + 1, false, flow);
        for o in &mut flow.origins[before..] {
            o.string = false;
        }
    }

    /// A value read from the environment: a rank where the variable names one; else the
    /// default, what the program uses when the variable is unset; with none (or `None`), a
    /// card index the user sets at run time, as an option with no default is.
    fn env_read(
        &self,
        read: Range<usize>,
        key: Option<&str>,
        default: Option<&'s Expr>,
        scope: Scope,
        depth: usize,
        flow: &mut Flow,
    ) {
        if key.is_some_and(|k| k.contains("RANK")) {
            flow.rank = true;
            return;
        }
        match default {
            Some(d) if !d.is_none_literal_expr() => self.resolve(d, scope, depth + 1, false, flow),
            _ => {
                // The header's own variables, and the masks of other runtimes, are judged as
                // the mask, not as a card index.
                let managed = key.is_some_and(|k| {
                    crate::model::policy::EnvVar::from_name(k).is_some()
                        || k.ends_with("VISIBLE_DEVICES")
                });
                let card = || {
                    key.is_some_and(|k| {
                        let lower = k.to_ascii_lowercase();
                        crate::knowledge::CARD_WORDS
                            .iter()
                            .any(|w| lower.contains(w))
                    })
                };
                if !managed && (flow.index || flow.numeric || (flow.spec && card())) {
                    flow.cli = Some(super::RunTimeRead::Env(self.source[read].to_string()));
                }
            }
        }
    }

    fn resolve_call(&self, call: &'s ExprCall, scope: Scope, depth: usize, flow: &mut Flow) {
        let name = self.bindings.qualified(&call.func).unwrap_or_default();
        let args = &call.arguments.args;
        match name.as_str() {
            "int" | "str" | "builtins.int" | "builtins.str" => {
                if let Some(first) = args.first() {
                    let outer = flow.numeric;
                    flow.numeric = name.ends_with("int");
                    self.resolve(first, scope, depth + 1, false, flow);
                    flow.numeric = outer;
                }
                return;
            }
            // GPUtil runs `nvidia-smi`: its ids count every card, in PCI order.
            n if n.starts_with("GPUtil.get") => {
                flow.smi = true;
                return;
            }
            "torch.distributed.get_rank" | "torch.distributed.get_local_rank" => {
                flow.rank = true;
                return;
            }
            "os.environ.get" | "os.getenv" => {
                let key = match args.first() {
                    Some(Expr::StringLiteral(k)) => Some(k.value.to_str()),
                    _ => None,
                };
                let default = args.get(1).or_else(|| {
                    call.arguments
                        .keywords
                        .iter()
                        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "default"))
                        .map(|k| &k.value)
                });
                self.env_read(range(call), key, default, scope, depth, flow);
                return;
            }
            _ => {}
        }
        // A function of the file, or a method of the class called on `self`, that picks a
        // card from `nvidia-smi`'s output.
        let callee = match call.func.as_ref() {
            Expr::Name(f) => Some((f.id.as_str(), None)),
            Expr::Attribute(a) if matches!(a.value.as_ref(), Expr::Name(s) if s.id.as_str() == "self") => {
                self.scopes()
                    .class_of(scope)
                    .map(|c| (a.attr.as_str(), Some(c)))
            }
            _ => None,
        };
        if let Some((callee, class)) = callee {
            let scopes = self.scopes();
            if scopes.functions.iter().any(|g| {
                g.top
                    && g.class.as_deref() == class
                    && g.name == callee
                    && self.runs_smi(g.range.clone())
            }) {
                flow.smi = true;
            }
            if class.is_none() {
                return;
            }
        }
        let Expr::Attribute(attr) = call.func.as_ref() else {
            return;
        };
        match attr.attr.as_str() {
            "format" if is_cuda_prefix(&attr.value) => {
                if let Some(first) = args.first() {
                    self.resolve(first, scope, depth + 1, false, flow);
                }
            }
            "get"
                if self.config_read(
                    &call.func,
                    scope,
                    flow,
                    match args.first() {
                        Some(Expr::StringLiteral(k)) => Some(k.value.to_str()),
                        _ => None,
                    },
                ) => {}
            "get" => {
                if let Some(Expr::StringLiteral(key)) = args.first() {
                    self.dict_value(&attr.value, key.value.to_str(), scope, depth, flow);
                }
                if let Some(default) = args.get(1) {
                    self.resolve(default, scope, depth + 1, false, flow);
                }
            }
            _ => {}
        }
    }

    /// `cfg["train"]["device"]`, `cfg.device`, `cfg.get("device")` where `cfg` holds a loaded
    /// configuration file (`yaml.safe_load`, `json.load`, `tomllib.load`, `OmegaConf.load`):
    /// the device is in the file, which the tool does not read. Records which file and key.
    fn config_read(&self, expr: &Expr, scope: Scope, flow: &mut Flow, last: Option<&str>) -> bool {
        let mut keys: Vec<String> = last.map(str::to_string).into_iter().collect();
        let mut at = expr;
        loop {
            match at {
                Expr::Subscript(sub) => {
                    if let Expr::StringLiteral(k) = sub.slice.as_ref() {
                        keys.push(k.value.to_str().to_string());
                    }
                    at = &sub.value;
                }
                // `cfg.get` (the call's key is the caller's to add) and `cfg.model.device`.
                Expr::Attribute(a) => {
                    if a.attr.as_str() != "get" {
                        keys.push(a.attr.as_str().to_string());
                    }
                    at = &a.value;
                }
                Expr::Call(c) if matches!(c.func.as_ref(), Expr::Attribute(a) if a.attr.as_str() == "get") =>
                {
                    if let Some(Expr::StringLiteral(k)) = c.arguments.args.first() {
                        keys.push(k.value.to_str().to_string());
                    }
                    at = &c.func;
                }
                _ => break,
            }
        }
        let Expr::Name(n) = at else { return false };
        let Some(values) = self.scopes().lookup(n.id.as_str(), scope) else {
            return false;
        };
        let Some(file) = values.iter().find_map(|(v, _)| self.loaded_config(v)) else {
            return false;
        };
        keys.reverse();
        let key = if keys.is_empty() {
            String::new()
        } else {
            format!("key `{}` of ", keys.join("."))
        };
        flow.config = Some(format!("{key}{file}"));
        true
    }

    /// A call that loads a configuration file, and how to name that file.
    fn loaded_config(&self, expr: &Expr) -> Option<String> {
        let Expr::Call(call) = expr else { return None };
        let name = self.bindings.qualified(&call.func).unwrap_or_default();
        let kind = match name.as_str() {
            "yaml.safe_load"
            | "yaml.load"
            | "yaml.full_load"
            | "yaml.unsafe_load"
            | "ruamel.yaml.YAML.load" => "a YAML file",
            "json.load" | "json.loads" => "a JSON file",
            "toml.load" | "tomllib.load" | "tomli.load" | "toml.loads" | "tomllib.loads" => {
                "a TOML file"
            }
            "omegaconf.OmegaConf.load" | "OmegaConf.load" => "a configuration file",
            _ => return None,
        };
        // The path when the code names it: `load(open("conf.yaml"))`, `OmegaConf.load("c.yaml")`.
        let path = call.arguments.args.first().and_then(|a| match a {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            Expr::Call(open) => match open.arguments.args.first() {
                Some(Expr::StringLiteral(s)) => Some(s.value.to_str().to_string()),
                _ => None,
            },
            _ => None,
        });
        Some(match path {
            Some(p) => format!("`{p}`"),
            None => kind.to_string(),
        })
    }

    /// `TABLE["key"]`: the value of that key in the dict literal `TABLE` is bound to.
    fn dict_value(&self, table: &'s Expr, key: &str, scope: Scope, depth: usize, flow: &mut Flow) {
        let Expr::Name(n) = table else { return };
        let Some(values) = self.scopes().lookup(n.id.as_str(), scope) else {
            return;
        };
        // Other keys of the table are other data: only the key read here carries the device.
        for (value, s) in values {
            let Expr::Dict(dict) = value else { continue };
            for item in &dict.items {
                if matches!(&item.key, Some(Expr::StringLiteral(k)) if k.value.to_str() == key) {
                    self.resolve(&item.value, s, depth + 1, false, flow);
                }
            }
        }
    }

    /// `f"cuda:1"` (the digits inside a literal part) and `f"cuda:{x}"` (x flows).
    fn fstring(
        &self,
        f: &'s ruff_python_ast::ExprFString,
        scope: Scope,
        depth: usize,
        flow: &mut Flow,
    ) {
        for part in f.value.iter() {
            let ruff_python_ast::FStringPart::FString(fs) = part else {
                continue;
            };
            let elements: Vec<&InterpolatedStringElement> = fs.elements.iter().collect();
            for (i, element) in elements.iter().enumerate() {
                let InterpolatedStringElement::Literal(lit) = element else {
                    continue;
                };
                let text = &lit.value;
                // `"cuda" + f":{gpu_id}"`: the colon that starts the f-string ends the prefix.
                let pos = match text.rfind("cuda:") {
                    Some(pos) => Some(pos + 5),
                    None => (flow.after_cuda && i == 0 && text.starts_with(':')).then_some(1),
                };
                if let Some(pos) = pos {
                    let rest = &text[pos..];
                    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                    let r = range(lit);
                    if !digits.is_empty() && digits.len() == rest.len() {
                        let src = &self.source[r.clone()];
                        if src == &**text {
                            let start = r.start + pos;
                            flow.origins.push(Origin {
                                literal: start..start + digits.len(),
                                index: digits.parse().unwrap_or(0),
                                digits: Some(start..start + digits.len()),
                                string: true,
                                via: flow.path.first().map(|(k, _)| k.clone()),
                            });
                        }
                    } else if rest.is_empty() {
                        if let Some(InterpolatedStringElement::Interpolation(inter)) =
                            elements.get(i + 1)
                        {
                            let before = flow.origins.len();
                            // `f"cuda:{args.device_id}"` with `default="0"`: a string of
                            // digits there is an index.
                            let was = std::mem::replace(&mut flow.index, true);
                            let numeric = std::mem::replace(&mut flow.numeric, true);
                            let after_cuda = std::mem::replace(&mut flow.after_cuda, false);
                            self.resolve(&inter.expression, scope, depth + 1, false, flow);
                            flow.index = was;
                            flow.numeric = numeric;
                            flow.after_cuda = after_cuda;
                            for o in &mut flow.origins[before..] {
                                o.string = true;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `expr` is the dotted path `path` as written (`a.b` for `a.b`).
fn is_path(expr: &Expr, path: &str) -> bool {
    match expr {
        Expr::Name(n) => n.id.as_str() == path,
        Expr::Attribute(a) => path
            .strip_suffix(a.attr.as_str())
            .and_then(|rest| rest.strip_suffix('.'))
            .is_some_and(|base| is_path(&a.value, base)),
        _ => false,
    }
}

fn is_cuda_prefix(expr: &Expr) -> bool {
    matches!(expr, Expr::StringLiteral(s) if {
        let v = s.value.to_str();
        v.starts_with("cuda:") && (v.len() == 5 || v[5..].starts_with('{') || v[5..].starts_with('%'))
    })
}

pub fn int_literal(expr: &Expr) -> Option<u64> {
    match expr {
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => i.as_u64(),
            _ => None,
        },
        _ => None,
    }
}

/// `cuda:1`, `/gpu:1`, `/GPU:1`, `/device:GPU:1`, `GPU:1`: the prefix and the index.
pub fn device_string(value: &str) -> Option<(&'static str, u64)> {
    const PREFIXES: &[&str] = &[
        "cuda:",
        "/device:GPU:",
        "/job:localhost/replica:0/task:0/device:GPU:",
        "/gpu:",
        "/GPU:",
        "GPU:",
        "gpu:",
    ];
    for prefix in PREFIXES {
        if let Some(rest) = value.strip_prefix(prefix) {
            if !rest.is_empty() && rest.len() <= 3 && rest.bytes().all(|b| b.is_ascii_digit()) {
                return rest.parse().ok().map(|n| (*prefix, n));
            }
        }
    }
    None
}

/// How many cards a comparison of the GPU count with `n` requires to hold.
fn cards_needed(
    cmp: &ruff_python_ast::ExprCompare,
    n: u64,
    is_count: impl Fn(&Expr) -> bool,
) -> u64 {
    use ruff_python_ast::CmpOp;
    let count_left = is_count(&cmp.left);
    match (cmp.ops.first(), count_left) {
        (Some(CmpOp::Gt), true) | (Some(CmpOp::Lt), false) => n + 1,
        (Some(CmpOp::GtE | CmpOp::Eq), true) | (Some(CmpOp::LtE | CmpOp::Eq), false) => n,
        _ => 1,
    }
}

/// The argument a call passes to a parameter: by keyword, else at its position (not after a
/// `*args`); whether it was a keyword.
pub(super) fn argument<'s>(
    call: &'s ExprCall,
    param: &str,
    position: Option<usize>,
) -> Option<(&'s Expr, bool)> {
    if let Some(k) = call
        .arguments
        .keywords
        .iter()
        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == param))
    {
        return Some((&k.value, true));
    }
    let args = &call.arguments.args;
    let at = position?;
    if args
        .iter()
        .take(at + 1)
        .any(|a| matches!(a, Expr::Starred(_)))
    {
        return None;
    }
    args.get(at).map(|a| (a, false))
}

/// What a device sink for the parameter accepts (`None`: it takes no device, but a number
/// of processes).
fn accepts_of(takes: ParamTakes) -> Option<Accepts> {
    match takes {
        ParamTakes::Index => Some(Accepts::Index),
        ParamTakes::Spec => Some(Accepts::Spec),
        ParamTakes::IndexList => Some(Accepts::IndexList),
        ParamTakes::Processes => None,
    }
}

/// The loads of `name` within a range that are compared with `None` (`gpu_id is not None`).
struct NoneChecks<'n> {
    name: &'n str,
    within: Range<usize>,
    found: Vec<Range<usize>>,
}

impl<'a> Visitor<'a> for NoneChecks<'_> {
    fn visit_stmt(&mut self, stmt: &'a ruff_python_ast::Stmt) {
        let r = range(stmt);
        if r.end > self.within.start && r.start < self.within.end {
            walk_stmt(self, stmt);
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        // `isinstance(gpu_id, int)`: 0 is an `int` as 1 is.
        if let Expr::Call(call) = expr {
            if matches!(call.func.as_ref(), Expr::Name(f) if f.id.as_str() == "isinstance") {
                if let Some(first @ Expr::Name(n)) = call.arguments.args.first() {
                    if n.id.as_str() == self.name {
                        self.found.push(range(first));
                    }
                }
            }
        }
        if let Expr::Compare(c) = expr {
            let is = c.ops.iter().all(|op| {
                matches!(
                    op,
                    ruff_python_ast::CmpOp::Is | ruff_python_ast::CmpOp::IsNot
                )
            });
            let operands = std::iter::once(c.left.as_ref()).chain(c.comparators.iter());
            if is
                && c.comparators
                    .iter()
                    .chain([c.left.as_ref()])
                    .any(Expr::is_none_literal_expr)
            {
                for e in operands {
                    if matches!(e, Expr::Name(n) if n.id.as_str() == self.name) {
                        self.found.push(range(e));
                    }
                }
            }
        }
        walk_expr(self, expr);
    }
}

/// Finds what numbers cards as NVML does (every card, PCI order): a string of the
/// `nvidia-smi` command, a GPUtil query, NVML's count of cards.
struct Smi<'b> {
    bindings: &'b crate::lang::python::semantic::Bindings,
    within: Range<usize>,
    found: bool,
}

impl<'a> Visitor<'a> for Smi<'_> {
    fn visit_stmt(&mut self, stmt: &'a ruff_python_ast::Stmt) {
        let r = range(stmt);
        // A docstring that names the tool runs nothing.
        match stmt {
            _ if r.end <= self.within.start || self.within.end <= r.start => {}
            ruff_python_ast::Stmt::Expr(e) if e.value.is_string_literal_expr() => {}
            _ => walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::StringLiteral(s) => {
                self.found |= s.value.to_str().contains("nvidia-smi");
            }
            Expr::Call(c) => {
                self.found |= self.bindings.qualified(&c.func).is_some_and(|n| {
                    n.starts_with("GPUtil.get") || n.ends_with("nvmlDeviceGetCount")
                });
            }
            _ => {}
        }
        walk_expr(self, expr);
    }
}
