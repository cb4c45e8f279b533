//! What a policy's values must be before anything is written with them: a mask CUDA reads as
//! the user meant it, an order CUDA knows, an allocator setting PyTorch parses, selectors that
//! do not contradict the mask or each other. Each problem names its key, so the loader can
//! point at the value in the file.

use super::{CardSelector, Policy};

/// One step of the path from the policy table to a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Name(&'static str),
    Index(usize),
}

/// A value of the policy that cannot be what the user meant.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The value's keys below `[policy]`.
    pub key: Vec<Key>,
    /// The bytes of the string value the problem is about (an entry of the mask), when not all.
    pub within: Option<std::ops::Range<usize>>,
    pub message: String,
}

impl Problem {
    fn at(key: &[Key], message: String) -> Problem {
        Problem {
            key: key.to_vec(),
            within: None,
            message,
        }
    }

    fn within(mut self, range: std::ops::Range<usize>) -> Problem {
        self.within = Some(range);
        self
    }

    /// `policy.forbidden[0].name`, as the user writes the key.
    pub fn dotted(&self) -> String {
        let mut out = String::from("policy");
        for key in &self.key {
            match key {
                Key::Name(name) => {
                    out.push('.');
                    out.push_str(name);
                }
                Key::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

/// The orders `CUDA_DEVICE_ORDER` takes; anything else CUDA ignores (fastest first).
pub const DEVICE_ORDERS: [&str; 2] = ["FASTEST_FIRST", "PCI_BUS_ID"];

const VISIBLE: Key = Key::Name("visible_devices");
const ORDER: Key = Key::Name("device_order");
const ALLOC: Key = Key::Name("alloc_conf");

impl Policy {
    /// Every value that cannot be what the user meant, in the order of the keys.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = mask_problems(self);
        problems.extend(order_problem(&self.device_order));
        problems.extend(alloc_problems(&self.alloc_conf));
        problems.extend(selector_problems(self));
        for (key, value) in [
            ("leak_alert_mib", self.leak_alert_mib),
            ("leak_fail_mib", self.leak_fail_mib),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                problems.push(Problem::at(
                    &[Key::Name(key)],
                    format!("`{key}` is a number of MiB, 0 or more, not {value}"),
                ));
            }
        }
        problems
    }
}

/// One entry of `CUDA_VISIBLE_DEVICES`, as CUDA reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskEntry<'a> {
    Index(u64),
    /// A `GPU-…` UUID (or a prefix of one) or a `MIG-…` id.
    Uuid(&'a str),
}

/// The entries of a mask with their byte ranges, or what is wrong with the first bad one.
pub fn mask_entries(mask: &str) -> Vec<(std::ops::Range<usize>, Result<MaskEntry<'_>, String>)> {
    let mut out = Vec::new();
    let mut start = 0;
    for entry in mask.split(',') {
        let range = start..start + entry.len();
        start = range.end + 1;
        out.push((range, mask_entry(entry)));
    }
    out
}

fn mask_entry(entry: &str) -> Result<MaskEntry<'_>, String> {
    if entry.is_empty() {
        return Err("an empty entry: CUDA stops reading the mask there".to_string());
    }
    if entry != entry.trim() {
        return Err(format!(
            "`{}` has a space: CUDA stops reading the mask there; write `{}`",
            super::excerpt(entry),
            super::excerpt(entry.trim())
        ));
    }
    if entry.bytes().all(|b| b.is_ascii_digit()) {
        return entry
            .parse()
            .map(MaskEntry::Index)
            .map_err(|_| format!("`{}` is no card index", super::excerpt(entry)));
    }
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    let uuid = if let Some(rest) = entry.strip_prefix("MIG-GPU-") {
        // The older MIG form: `MIG-GPU-<uuid>/<gpu instance>/<compute instance>`.
        let mut parts = rest.split('/');
        let ok = parts.next().is_some_and(hex)
            && parts
                .by_ref()
                .take(2)
                .filter(|p| p.parse::<u32>().is_ok())
                .count()
                == 2
            && parts.next().is_none();
        ok.then_some(entry)
    } else {
        entry
            .strip_prefix("GPU-")
            .or_else(|| entry.strip_prefix("MIG-"))
            .filter(|rest| hex(rest))
            .map(|_| entry)
    };
    uuid.map(MaskEntry::Uuid).ok_or_else(|| {
        let hint = if entry == "-1" {
            ": it hides every card (CPU only), a policy `fix` has no header for yet"
        } else {
            ""
        };
        format!(
            "`{}` is neither a card index (`1`) nor a UUID (`GPU-…`) or MIG id (`MIG-…`){hint}",
            super::excerpt(entry)
        )
    })
}

fn mask_problems(policy: &Policy) -> Vec<Problem> {
    let mask = policy.visible_devices.as_str();
    if mask.is_empty() {
        // The header's validation function needs a card: a CPU-only policy has no header yet.
        return vec![Problem::at(
            &[VISIBLE],
            "an empty `visible_devices` hides every card (CPU only), a policy `fix` has no header for yet: list the cards, e.g. `visible_devices = \"1\"`".to_string(),
        )];
    }
    let mut problems = Vec::new();
    let mut seen: Vec<MaskEntry<'_>> = Vec::new();
    for (range, entry) in mask_entries(mask) {
        match entry {
            Err(why) => problems
                .push(Problem::at(&[VISIBLE], format!("`visible_devices`: {why}")).within(range)),
            Ok(entry) if seen.contains(&entry) => problems.push(
                Problem::at(
                    &[VISIBLE],
                    format!(
                        "`visible_devices` lists `{}` twice: each card once",
                        super::excerpt(&mask[range.clone()])
                    ),
                )
                .within(range),
            ),
            Ok(entry) => seen.push(entry),
        }
    }
    problems
}

fn order_problem(order: &str) -> Option<Problem> {
    if DEVICE_ORDERS.contains(&order) {
        return None;
    }
    let upper = order.trim().to_ascii_uppercase();
    let common = |known: &str| {
        known
            .bytes()
            .zip(upper.bytes())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let guess = DEVICE_ORDERS
        .iter()
        .filter(|k| common(k) >= 3)
        .max_by_key(|k| common(k));
    let hint = guess.map_or(String::new(), |g| format!("; did you mean `{g}`?"));
    Some(Problem::at(
        &[ORDER],
        format!(
            "`device_order` is `{}`, an order CUDA does not know (it would number the cards fastest first): `FASTEST_FIRST` or `PCI_BUS_ID`{hint}",
            super::excerpt(order)
        ),
    ))
}

/// The options of `PYTORCH_CUDA_ALLOC_CONF` PyTorch knows, with what each takes.
const ALLOC_OPTIONS: [(&str, AllocValue); 12] = [
    ("max_split_size_mb", AllocValue::MiB { above: 20 }),
    ("max_non_split_rounding_mb", AllocValue::MiB { above: 0 }),
    ("garbage_collection_threshold", AllocValue::Fraction),
    ("roundup_power2_divisions", AllocValue::Divisions),
    ("expandable_segments", AllocValue::Bool),
    ("release_lock_on_cudamalloc", AllocValue::Bool),
    ("pinned_use_cuda_host_register", AllocValue::Bool),
    ("pinned_use_background_threads", AllocValue::Bool),
    ("pinned_num_register_threads", AllocValue::PowerOfTwo),
    (
        "pinned_reserve_segment_size_mb",
        AllocValue::MiB { above: 0 },
    ),
    ("graph_capture_record_stream_reuse", AllocValue::Bool),
    ("backend", AllocValue::Backend),
];

#[derive(Debug, Clone, Copy)]
enum AllocValue {
    /// A whole number of MiB, more than `above`.
    MiB {
        above: u64,
    },
    /// A number strictly between 0 and 1.
    Fraction,
    /// A power of two, or `[size:divisions,…,>:divisions]`.
    Divisions,
    PowerOfTwo,
    /// `True` or `False`, as PyTorch spells them.
    Bool,
    Backend,
}

impl AllocValue {
    fn check(self, value: &str) -> Result<(), String> {
        let power_of_two = |v: &str| v.parse::<u64>().is_ok_and(u64::is_power_of_two);
        let ok = match self {
            AllocValue::MiB { above } => {
                if value.parse::<u64>().is_ok_and(|v| v > above) {
                    return Ok(());
                }
                return Err(format!("a whole number of MiB above {above}"));
            }
            AllocValue::Fraction => value.parse::<f64>().is_ok_and(|v| v > 0.0 && v < 1.0),
            AllocValue::Divisions => {
                power_of_two(value)
                    || value
                        .strip_prefix('[')
                        .and_then(|v| v.strip_suffix(']'))
                        .is_some_and(|list| {
                            list.split(',').all(|pair| {
                                pair.split_once(':').is_some_and(|(size, div)| {
                                    (size == ">" || power_of_two(size)) && power_of_two(div)
                                })
                            })
                        })
            }
            AllocValue::PowerOfTwo => power_of_two(value),
            AllocValue::Bool => matches!(value, "True" | "False"),
            AllocValue::Backend => matches!(value, "native" | "cudaMallocAsync"),
        };
        if ok {
            return Ok(());
        }
        Err(match self {
            AllocValue::MiB { .. } => unreachable!("returned above"),
            AllocValue::Fraction => "a number between 0 and 1".to_string(),
            AllocValue::Divisions => {
                "a power of two, or `[size:divisions,…,>:divisions]`".to_string()
            }
            AllocValue::PowerOfTwo => "a power of two".to_string(),
            AllocValue::Bool => "`True` or `False`".to_string(),
            AllocValue::Backend => "`native` or `cudaMallocAsync`".to_string(),
        })
    }
}

/// The `option:value` items of an allocator setting, split on the commas outside brackets.
fn alloc_items(conf: &str) -> Vec<std::ops::Range<usize>> {
    let (mut items, mut start, mut depth) = (Vec::new(), 0, 0i32);
    for (i, b) in conf.bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth -= 1,
            b',' if depth == 0 => {
                items.push(start..i);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(start..conf.len());
    items
}

fn alloc_problems(conf: &str) -> Vec<Problem> {
    if conf.is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for range in alloc_items(conf) {
        let item = &conf[range.clone()];
        let problem = |why: String| {
            Problem::at(&[ALLOC], format!("`alloc_conf`: {why}")).within(range.clone())
        };
        let Some((option, value)) = item.split_once(':') else {
            problems.push(problem(format!(
                "`{}` is not `option:value` (e.g. `max_split_size_mb:1024`)",
                super::excerpt(item)
            )));
            continue;
        };
        let Some((_, kind)) = ALLOC_OPTIONS.iter().find(|(name, _)| *name == option) else {
            let known: Vec<&str> = ALLOC_OPTIONS.iter().map(|(name, _)| *name).collect();
            problems.push(problem(format!(
                "PyTorch knows no option `{}` (it stops with \"Unrecognized CachingAllocator option\"); it knows {}",
                super::excerpt(option),
                known.join(", ")
            )));
            continue;
        };
        if seen.contains(&option) {
            problems.push(problem(format!("`{option}` is set twice")));
            continue;
        }
        seen.push(option);
        if let Err(takes) = kind.check(value) {
            problems.push(problem(format!(
                "`{option}` takes {takes}, not `{}`",
                super::excerpt(value)
            )));
        }
    }
    problems
}

fn selector_problems(policy: &Policy) -> Vec<Problem> {
    let mut problems = Vec::new();
    let target = &policy.target;
    let target_key = [Key::Name("target")];
    problems.extend(own_problems(target, &target_key));
    for (i, forbidden) in policy.forbidden.iter().enumerate() {
        let key = [Key::Name("forbidden"), Key::Index(i)];
        problems.extend(own_problems(forbidden, &key));
        if let Some((field, why)) = same_card(target, forbidden) {
            problems.push(Problem::at(
                &[key[0], key[1], Key::Name(field)],
                format!(
                    "`forbidden[{i}]` {why} the target `{}`: the target card would be forbidden",
                    super::excerpt(&target.label())
                ),
            ));
        }
        if let Some(uuid) = &forbidden.uuid {
            for (range, entry) in mask_entries(&policy.visible_devices) {
                if let Ok(MaskEntry::Uuid(listed)) = entry {
                    if same_uuid(listed, uuid) {
                        problems.push(
                            Problem::at(
                                &[VISIBLE],
                                format!(
                                    "`visible_devices` makes `{}` visible, the card `forbidden[{i}]` forbids",
                                    super::excerpt(listed)
                                ),
                            )
                            .within(range),
                        );
                    }
                }
            }
        }
    }
    if let Some(uuid) = &target.uuid {
        let uuids: Vec<&str> = mask_entries(&policy.visible_devices)
            .into_iter()
            .filter_map(|(_, e)| match e {
                Ok(MaskEntry::Uuid(u)) => Some(u),
                _ => None,
            })
            .collect();
        let only_uuids = mask_entries(&policy.visible_devices)
            .iter()
            .all(|(_, e)| matches!(e, Ok(MaskEntry::Uuid(_))));
        if only_uuids && !uuids.iter().any(|u| same_uuid(u, uuid)) {
            problems.push(Problem::at(
                &[Key::Name("target"), Key::Name("uuid")],
                format!(
                    "the target `{}` is not among the cards `visible_devices` lists by UUID: the programs could not see it",
                    super::excerpt(uuid)
                ),
            ));
        }
    }
    problems
}

/// CUDA takes a unique prefix of a UUID in the mask.
fn same_uuid(listed: &str, uuid: &str) -> bool {
    let (listed, uuid) = (listed.to_ascii_lowercase(), uuid.to_ascii_lowercase());
    uuid.starts_with(&listed) || listed.starts_with(&uuid)
}

/// What is wrong with one selector on its own.
fn own_problems(selector: &CardSelector, key: &[Key]) -> Vec<Problem> {
    let with = |field: &'static str| {
        let mut k = key.to_vec();
        k.push(Key::Name(field));
        k
    };
    let label = Problem::dotted(&Problem::at(key, String::new()));
    let label = label.trim_start_matches("policy.").to_string();
    let mut problems = Vec::new();
    if *selector == CardSelector::default() {
        problems.push(Problem::at(
            key,
            format!("`{label}` names no card: give `name`, `pci_bus_id` or `uuid`"),
        ));
    }
    if selector
        .name
        .as_deref()
        .is_some_and(|n| n.trim().is_empty())
    {
        problems.push(Problem::at(
            &with("name"),
            format!("`{label}.name` is empty: it would match every card"),
        ));
    }
    if let Some(gib) = selector.min_memory_gib {
        if !(gib.is_finite() && gib >= 0.0) {
            problems.push(Problem::at(
                &with("min_memory_gib"),
                format!("`{label}.min_memory_gib` is a number of GiB, 0 or more, not {gib}"),
            ));
        }
    }
    if let Some(bus) = &selector.pci_bus_id {
        if parse_bus_id(bus).is_none() {
            problems.push(Problem::at(
                &with("pci_bus_id"),
                format!(
                    "`{label}.pci_bus_id` is `{}`, not a PCI bus id as NVML prints it (`00000000:02:00.0`)",
                    super::excerpt(bus)
                ),
            ));
        }
    }
    if let Some(uuid) = &selector.uuid {
        let ok = matches!(mask_entry(uuid), Ok(MaskEntry::Uuid(_)));
        if !ok {
            problems.push(Problem::at(
                &with("uuid"),
                format!(
                    "`{label}.uuid` is `{}`, not a UUID as NVML prints it (`GPU-…`, or `MIG-…`)",
                    super::excerpt(uuid)
                ),
            ));
        }
    }
    problems
}

/// Whether a forbidden selector takes every card the target selects, and through which field.
fn same_card(
    target: &CardSelector,
    forbidden: &CardSelector,
) -> Option<(&'static str, &'static str)> {
    if let (Some(a), Some(b)) = (&target.uuid, &forbidden.uuid) {
        if a.eq_ignore_ascii_case(b) {
            return Some(("uuid", "has the UUID of"));
        }
    }
    if let (Some(a), Some(b)) = (&target.pci_bus_id, &forbidden.pci_bus_id) {
        if same_bus_id(a, b) {
            return Some(("pci_bus_id", "is on the PCI bus of"));
        }
    }
    // A name-only rule forbids every card whose name holds it: all the target's, when the
    // target's name holds it and the target says nothing the rule could tell apart.
    let name_only = forbidden.uuid.is_none()
        && forbidden.pci_bus_id.is_none()
        && forbidden.min_memory_gib.is_none();
    match (&target.name, &forbidden.name) {
        (Some(t), Some(f)) if name_only && !f.trim().is_empty() && t.contains(f.as_str()) => {
            Some(("name", "matches every card named like"))
        }
        _ => None,
    }
}

/// `0000:02:00.0` (CUDA) and `00000000:02:00.0` (NVML) name the same slot.
pub fn same_bus_id(a: &str, b: &str) -> bool {
    parse_bus_id(a).is_some_and(|x| Some(x) == parse_bus_id(b))
}

/// Domain, bus, device and function of a PCI bus id (`[domain:]bus:device[.function]`, hex).
pub fn parse_bus_id(text: &str) -> Option<(u32, u32, u32, u32)> {
    let mut parts = text.trim().rsplitn(3, ':');
    let dev_fn = parts.next()?;
    let bus = u32::from_str_radix(parts.next()?, 16).ok()?;
    let domain = parts
        .next()
        .map_or(Some(0), |d| u32::from_str_radix(d, 16).ok())?;
    let (dev, func) = dev_fn.split_once('.').unwrap_or((dev_fn, "0"));
    Some((
        domain,
        bus,
        u32::from_str_radix(dev, 16).ok()?,
        u32::from_str_radix(func, 16).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(policy: &Policy) -> Vec<String> {
        policy.problems().into_iter().map(|p| p.message).collect()
    }

    #[test]
    fn the_default_policy_has_no_problem() {
        assert_eq!(messages(&Policy::default()), Vec::<String>::new());
    }

    #[test]
    fn masks_are_distinct_indices_or_uuids() {
        for good in [
            "0",
            "1,2",
            "GPU-8f2c",
            "MIG-GPU-8f2c-11aa/1/0",
            "MIG-8f2c-11",
            "0,GPU-aa",
        ] {
            let p = Policy {
                visible_devices: good.into(),
                ..Policy::default()
            };
            assert_eq!(messages(&p), Vec::<String>::new(), "{good}");
        }
        for bad in ["banana", "1,1", "1, 2", "1,", "-1", "GPU-", "MIG-GPU-aa/1"] {
            let p = Policy {
                visible_devices: bad.into(),
                ..Policy::default()
            };
            assert_eq!(p.problems().len(), 1, "{bad}: {:?}", p.problems());
        }
    }

    #[test]
    fn an_empty_mask_is_refused_by_name() {
        let empty = Policy {
            visible_devices: String::new(),
            ..Policy::default()
        };
        assert!(messages(&empty)[0].contains("CPU only"));
    }

    #[test]
    fn alloc_conf_parses_as_pytorch_reads_it() {
        for good in [
            "",
            "max_split_size_mb:1024",
            "expandable_segments:True,garbage_collection_threshold:0.6",
            "roundup_power2_divisions:[256:1,512:2,>:4],backend:cudaMallocAsync",
        ] {
            assert_eq!(alloc_problems(good), Vec::new(), "{good}");
        }
        for bad in [
            "max_split_size_mb:10",
            "max_split_size_mb=1024",
            "expandable_segments:true",
            "max_split_mb:1024",
            "garbage_collection_threshold:1.5",
            "max_split_size_mb:1024,max_split_size_mb:512",
        ] {
            assert_eq!(alloc_problems(bad).len(), 1, "{bad}");
        }
    }

    #[test]
    fn selectors_that_contradict_are_named() {
        let same_name = Policy {
            forbidden: vec![CardSelector {
                name: Some("RTX".into()),
                ..CardSelector::default()
            }],
            ..Policy::default()
        };
        assert_eq!(
            same_name.problems()[0].key,
            vec![Key::Name("forbidden"), Key::Index(0), Key::Name("name")]
        );
        let forbidden_visible = Policy {
            visible_devices: "GPU-aa".into(),
            target: CardSelector {
                uuid: Some("GPU-aa11".into()),
                ..CardSelector::default()
            },
            forbidden: vec![CardSelector {
                uuid: Some("GPU-aa11".into()),
                ..CardSelector::default()
            }],
            ..Policy::default()
        };
        assert_eq!(
            forbidden_visible.problems().len(),
            2,
            "{:?}",
            forbidden_visible.problems()
        );
        let target_hidden = Policy {
            visible_devices: "GPU-bb".into(),
            target: CardSelector {
                uuid: Some("GPU-aa11".into()),
                ..CardSelector::default()
            },
            ..Policy::default()
        };
        assert_eq!(
            target_hidden.problems()[0].key,
            vec![Key::Name("target"), Key::Name("uuid")]
        );
        assert!(order_problem("PCI_BUS")
            .unwrap()
            .message
            .contains("did you mean `PCI_BUS_ID`"));
    }
}
