//! Per-process accounting of one GPU check: NVML's running-process lists of every card, sampled
//! while the check's children run, each process told apart as the check's own (its process
//! tree, [`Tree::contains`]) or foreign. A process of the check on a forbidden card fails the
//! check; memory still held by the check's processes when its command has ended is its leak;
//! foreign processes are shown and never blamed.

use std::collections::HashSet;

use super::nvml::{Card, Gpus};
use super::tree::{command_line, Tree};
use crate::model::outcome::{GpuProcess, ProcessOrigin};

/// At most this many foreign processes are kept per check (a shared server runs many).
const MAX_FOREIGN: usize = 32;

pub struct Accountant {
    cards: Vec<Card>,
    /// UUIDs of the cards the policy forbids.
    forbidden: Vec<String>,
    target: Card,
    /// Pids found in a tree of the check, and pids found outside every tree seen so far.
    ours: HashSet<u32>,
    strangers: HashSet<u32>,
    seen: Vec<GpuProcess>,
    /// Why the driver cannot list processes (the first failure), if it cannot.
    unlisted: Option<String>,
}

impl Accountant {
    pub fn new(gpus: &Gpus, target: &Card, forbidden: &[Card]) -> Accountant {
        Accountant {
            cards: gpus.cards.clone(),
            forbidden: forbidden.iter().map(|c| c.uuid.clone()).collect(),
            target: target.clone(),
            ours: HashSet::new(),
            strangers: HashSet::new(),
            seen: Vec::new(),
            unlisted: None,
        }
    }

    /// Whether the driver lists processes (as far as the samples so far show).
    pub fn listing(&self) -> bool {
        self.unlisted.is_none()
    }

    /// One sample of every card's processes while `tree` (a child of the check) runs, or none
    /// runs. Returns the check's processes listed in this sample, as `(pid, card index, MiB)`.
    pub fn sample(&mut self, gpus: &Gpus, tree: Option<&Tree>) -> Vec<(u32, u32, Option<f64>)> {
        let mut ours_now = Vec::new();
        if self.unlisted.is_some() {
            return ours_now;
        }
        for index in 0..self.cards.len() {
            let card = self.cards[index].clone();
            let listed = match gpus.processes(&card) {
                Ok(listed) => listed,
                Err(e) => {
                    self.unlisted = Some(e);
                    return Vec::new();
                }
            };
            for (pid, mib) in listed {
                let origin = self.origin(pid, tree);
                if origin == ProcessOrigin::Check {
                    ours_now.push((pid, card.index, mib));
                }
                self.record(pid, origin, &card, mib);
            }
        }
        ours_now
    }

    /// Whose `pid` is: decided once, when first listed (a pid first seen outside every tree
    /// stays foreign; one of the check's stays the check's).
    fn origin(&mut self, pid: u32, tree: Option<&Tree>) -> ProcessOrigin {
        if self.ours.contains(&pid) {
            return ProcessOrigin::Check;
        }
        if !self.strangers.contains(&pid) {
            if tree.is_some_and(|t| t.contains(pid)) {
                self.ours.insert(pid);
                return ProcessOrigin::Check;
            }
            // Not yet decided against a later tree: a pid listed before any tree runs is foreign.
            self.strangers.insert(pid);
        }
        ProcessOrigin::Foreign
    }

    fn record(&mut self, pid: u32, origin: ProcessOrigin, card: &Card, mib: Option<f64>) {
        if let Some(known) = self
            .seen
            .iter_mut()
            .find(|p| p.pid == pid && p.card_index == card.index)
        {
            known.peak_mib = max_mib(known.peak_mib, mib);
            return;
        }
        let foreign = self
            .seen
            .iter()
            .filter(|p| p.origin == ProcessOrigin::Foreign)
            .count();
        if origin == ProcessOrigin::Foreign && foreign >= MAX_FOREIGN {
            return;
        }
        self.seen.push(GpuProcess {
            pid,
            origin,
            command: (origin == ProcessOrigin::Check)
                .then(|| command_line(pid))
                .flatten(),
            card_index: card.index,
            card: card.name.clone(),
            pci_bus_id: card.pci_bus_id.clone(),
            uuid: card.uuid.clone(),
            forbidden: self.forbidden.contains(&card.uuid),
            peak_mib: mib,
            lingering_mib: None,
        });
    }

    /// The check's command has ended (its root `root_pid` excepted, everything it started may
    /// still run): what the check's processes still hold now is booked as lingering. Returns
    /// the MiB this call added to the booking.
    pub fn book_lingering(&mut self, gpus: &Gpus, tree: &Tree, root_pid: u32) -> f64 {
        let mut booked = 0.0;
        for (pid, card, mib) in self.sample(gpus, Some(tree)) {
            if pid == root_pid {
                continue;
            }
            let Some(process) = self
                .seen
                .iter_mut()
                .find(|p| p.pid == pid && p.card_index == card)
            else {
                continue;
            };
            // A process whose memory the driver does not give still lingers: 0 MiB booked.
            // Booked when the command says it ended and again when its root exits: what a
            // process holds is its largest sample, never their sum.
            let held = mib.unwrap_or(0.0);
            let before = process.lingering_mib.unwrap_or(0.0);
            process.lingering_mib = Some(before.max(held));
            booked += (held - before).max(0.0);
        }
        booked
    }

    /// MiB that foreign processes hold on the target card now (0 when not listed).
    pub fn foreign_on_target(&mut self, gpus: &Gpus) -> f64 {
        if self.unlisted.is_some() {
            return 0.0;
        }
        match gpus.processes(&self.target) {
            Ok(listed) => listed
                .into_iter()
                .filter(|(pid, _)| !self.ours.contains(pid))
                .filter_map(|(_, mib)| mib)
                .sum(),
            Err(e) => {
                self.unlisted = Some(e);
                0.0
            }
        }
    }

    /// The check's processes seen on a forbidden card.
    pub fn on_forbidden(&self) -> Vec<&GpuProcess> {
        self.seen
            .iter()
            .filter(|p| p.origin == ProcessOrigin::Check && p.forbidden)
            .collect()
    }

    /// The processes seen, and why they could not be told apart. `allocated`: a child of the
    /// check held memory on a card (the probe did): if then no process of the check was ever
    /// listed, the driver lists them under other pids (another PID namespace).
    pub fn finish(mut self, allocated: bool) -> (Vec<GpuProcess>, Option<String>) {
        let none_ours = !self.seen.iter().any(|p| p.origin == ProcessOrigin::Check);
        if self.unlisted.is_none() && allocated && none_ours {
            self.unlisted = Some(
                "the driver listed no process of the check although its probe held memory: \
                 the tool runs in another PID namespace than the driver's (a container without \
                 the host's PID namespace?), so processes are not attributed"
                    .to_string(),
            );
        }
        if let Some(why) = &self.unlisted {
            // Without attribution every listed process would look foreign: keep none.
            return (Vec::new(), Some(why.clone()));
        }
        (self.seen, None)
    }
}

fn max_mib(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}
