//! Where each message of a pass's working list comes from: the snapshot the pass started from,
//! or one replacement, and which snapshot messages that replacement stands for.
//!
//! A pass runs many steps, and a later step may replace what an earlier one wrote: a tool
//! result truncated, then its truncated copy offloaded whole; a round's notice taken into a
//! larger one. The model never saw those intermediates, so they must not reach the store or the
//! events. The log keeps, for every replacement alive at the end, the range of snapshot
//! messages it stands for (a replacement that takes in earlier ones of the same pass stands for
//! all of theirs), so the pass writes one offload holding those originals, and records one
//! event per replaced span, with its index in the list it commits.

use std::ops::Range;

use crate::engine::events::CompressionEvent;
use crate::entry::Entry;
use crate::strategy::Strategy;

/// Where an entry of the pass's working list comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// Snapshot message `k`, untouched.
    Kept(usize),
    /// A message of replacement `g`.
    Replaced(usize),
}

/// One replacement of the pass.
#[derive(Debug)]
pub(crate) struct Replacement {
    /// The snapshot messages it stands for.
    pub snapshot: Range<usize>,
    /// The step that wrote it (the last one, when it took in earlier replacements).
    pub strategy: Strategy,
    /// The offload its marker names: a new one, or one an earlier pass wrote that already holds
    /// the original of the one message it stands for.
    pub offload: Option<String>,
    usage: (Option<u64>, Option<u64>),
    ms: Option<f64>,
    /// The step of the pass that made it.
    step: usize,
    /// Not taken into a later replacement.
    pub alive: bool,
}

/// The origins of a pass's working list.
#[derive(Debug)]
pub(crate) struct PassLog {
    origins: Vec<Origin>,
    replacements: Vec<Replacement>,
    step: usize,
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

impl PassLog {
    /// The log of a pass over a snapshot of `len` messages, nothing replaced yet.
    pub fn new(len: usize) -> PassLog {
        PassLog { origins: (0..len).map(Origin::Kept).collect(), replacements: Vec::new(), step: 0 }
    }

    /// Starts the next step of the ladder: its events follow the earlier steps'.
    pub fn next_step(&mut self) {
        self.step += 1;
    }

    /// Records that `span` of the current list became `count` messages written by `strategy`
    /// (the caller splices the list itself). Replacements of this pass inside the span are taken
    /// in: the new one stands for their snapshot messages too, sums their summarizer usage, and
    /// their messages outside the span (a replacement of several messages cut by this one)
    /// become its own.
    pub fn replace(
        &mut self,
        span: Range<usize>,
        count: usize,
        strategy: Strategy,
        offload: Option<String>,
        usage: (Option<u64>, Option<u64>),
        ms: Option<f64>,
    ) {
        let id = self.replacements.len();
        let (mut lo, mut hi) = (usize::MAX, 0);
        let mut taken = Vec::new();
        let (mut input, mut output) = usage;
        let mut time = ms;
        for o in &self.origins[span.clone()] {
            let range = match *o {
                Origin::Kept(k) => k..k + 1,
                Origin::Replaced(g) => {
                    let r = &mut self.replacements[g];
                    if r.alive {
                        r.alive = false;
                        taken.push(g);
                        input = add(input, r.usage.0);
                        output = add(output, r.usage.1);
                        time = match (time, r.ms) {
                            (None, None) => None,
                            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
                        };
                    }
                    r.snapshot.clone()
                }
            };
            lo = lo.min(range.start);
            hi = hi.max(range.end);
        }
        let snapshot = if lo < hi { lo..hi } else { 0..0 };
        self.origins.splice(span, std::iter::repeat_n(Origin::Replaced(id), count));
        if !taken.is_empty() {
            for o in &mut self.origins {
                if matches!(*o, Origin::Replaced(g) if taken.contains(&g)) {
                    *o = Origin::Replaced(id);
                }
            }
        }
        self.replacements.push(Replacement { snapshot, strategy, offload, usage: (input, output), ms: time, step: self.step, alive: true });
    }

    /// For each message of the pass's working list, the snapshot messages it stands for: itself,
    /// or those of the replacement it belongs to.
    pub fn ranges(&self) -> Vec<Range<usize>> {
        self.origins
            .iter()
            .map(|o| match *o {
                Origin::Kept(k) => k..k + 1,
                Origin::Replaced(g) => self.replacements[g].snapshot.clone(),
            })
            .collect()
    }

    /// Whether a replacement of the pass that offloads was taken into a later one (its marker
    /// may still be named by what took it in: [`PassLog::to_write`]).
    pub fn any_taken(&self) -> bool {
        self.replacements.iter().any(|r| !r.alive && r.offload.is_some())
    }

    /// Whether message `i` of the pass's working list is one of the pass's replacements (only
    /// those can name a marker the pass made).
    pub fn is_replacement(&self, i: usize) -> bool {
        matches!(self.origins[i], Origin::Replaced(_))
    }

    /// The replacements alive at the end of the pass, in the order they were made: each is an
    /// event of the pass ([`PassLog::events`]).
    pub fn alive(&self) -> impl Iterator<Item = &Replacement> {
        self.replacements.iter().filter(|r| r.alive)
    }

    /// The replacements whose offload the pass writes: those alive at the end, and those taken
    /// into a later one whose marker still reaches the committed list (`referenced`: the
    /// uuids its markers name), as when a preview joins a neighbouring summary in a format
    /// whose turns alternate and the joined message quotes the preview. Each offload holds
    /// the replacement's snapshot messages, so a reload of any marker the model sees gives
    /// originals.
    pub fn to_write<'a>(&'a self, referenced: &'a std::collections::HashSet<String>) -> impl Iterator<Item = &'a Replacement> {
        self.replacements.iter().filter(|r| r.alive || r.offload.as_ref().is_some_and(|u| referenced.contains(u)))
    }

    /// One event per replacement alive at the end, step by step and in list order within a
    /// step: its index and message count in `work` (the list the pass commits), the snapshot
    /// messages it stands for and their tokens in `snapshot`.
    pub fn events(&self, snapshot: &[Entry], work: &[Entry]) -> Vec<CompressionEvent> {
        let mut at: Vec<Option<(usize, usize)>> = vec![None; self.replacements.len()];
        for (i, o) in self.origins.iter().enumerate() {
            if let Origin::Replaced(g) = *o {
                let slot = at[g].get_or_insert((i, 0));
                slot.1 += 1;
            }
        }
        let tokens = |es: &[Entry]| es.iter().map(|e| e.tokens as u64).sum::<u64>();
        let mut alive: Vec<(&Replacement, Option<(usize, usize)>)> = self.replacements.iter().zip(at).filter(|(r, _)| r.alive).collect();
        crate::sort::by_key(&mut alive, |(r, place)| crate::sort::pair(r.step as u64, place.map_or(0, |p| p.0) as u64));
        alive
            .into_iter()
            .map(|(r, place)| {
                let (index, count) = place.unwrap_or((0, 0));
                CompressionEvent {
                    event_type: r.strategy.event_type().into(),
                    timestamp: 0.0,
                    index,
                    message_count: r.snapshot.len(),
                    replacement_count: count,
                    tokens_before: tokens(&snapshot[r.snapshot.clone()]),
                    tokens_after: tokens(&work[index..index + count]),
                    offload_uuid: r.offload.clone(),
                    summarize_input_tokens: r.usage.0,
                    summarize_output_tokens: r.usage.1,
                    duration_ms: r.ms,
                    error: None,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_of_a_replacement_stands_for_the_snapshot_messages() {
        let mut log = PassLog::new(6);
        // Message 2 truncated, then messages 1..4 (the truncated copy among them) summarized.
        log.replace(2..3, 1, Strategy::ToolResultTruncate, Some("a".into()), (None, None), None);
        log.replace(1..4, 1, Strategy::ToolRunCompress, Some("b".into()), (Some(10), Some(2)), Some(5.0));
        let alive: Vec<_> = log.alive().collect();
        assert_eq!(alive.len(), 1);
        assert_eq!((alive[0].snapshot.clone(), alive[0].offload.as_deref()), (1..4, Some("b")));
        // A note of two messages, then only its first taken into a larger one: the second
        // becomes part of the larger replacement.
        let mut log = PassLog::new(6);
        log.replace(3..5, 2, Strategy::PrefixSummary, Some("p".into()), (Some(1), None), None);
        log.replace(0..4, 1, Strategy::Emergency, Some("e".into()), (None, None), None);
        let alive: Vec<_> = log.alive().collect();
        assert_eq!(alive.len(), 1);
        assert_eq!(alive[0].snapshot, 0..5);
        assert_eq!(log.origins, vec![Origin::Replaced(1), Origin::Replaced(1), Origin::Kept(5)]);
    }

    #[test]
    fn a_taken_in_replacement_is_written_while_its_marker_is_in_the_list() {
        // A preview of message 1, then a note joined to it (the preview's text, marker and all,
        // stays in the joined message): both offloads are written, each with its originals.
        let mut log = PassLog::new(4);
        log.replace(1..2, 1, Strategy::LargeMessageOffload, Some("p".into()), (None, None), None);
        log.replace(0..2, 1, Strategy::HistoryRollup, Some("s".into()), (None, None), None);
        let none = std::collections::HashSet::new();
        let written: Vec<_> = log.to_write(&none).map(|r| (r.offload.clone().unwrap(), r.snapshot.clone())).collect();
        assert_eq!(written, vec![("s".to_string(), 0..2)]);
        let referenced = std::collections::HashSet::from(["p".to_string(), "s".to_string()]);
        let written: Vec<_> = log.to_write(&referenced).map(|r| (r.offload.clone().unwrap(), r.snapshot.clone())).collect();
        assert_eq!(written, vec![("p".to_string(), 1..2), ("s".to_string(), 0..2)]);
        assert_eq!(log.alive().count(), 1, "one event: the preview is not an event of its own");
    }
}
