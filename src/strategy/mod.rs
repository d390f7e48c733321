//! The compression ladder: one rung per file, and the default order.
//!
//! A rung looks at the working list (through [`Structure`]) and proposes edits: a span of whole
//! units to replace, what to put there, and whether the originals go to the store. It never
//! mutates anything itself; the pass writes the offloads, then applies all edits of a pass at
//! once, so a failure anywhere leaves the working list as it was. The order of the ladder is
//! data ([`DEFAULT_LADDER`], the presets, the `strategies` option), so presets and hosts choose
//! their own.
//!
//! Adding a rung: a file `src/strategy/<rung>.rs` with one `impl Rung`, its line in `RUNGS`,
//! and its name in [`crate::options::presets`] (the enum variant, whose doc is the README ladder
//! table's line when the default ladder has it, and its row of names, which the options read and
//! the TypeScript `StrategyName` is generated from).
//!
//! Besides the rungs, the folder holds what they share and nothing else: the summarize jobs of
//! the LLM rungs (`llm`), the in-place summaries of the two current-round rungs (`in_place`),
//! the identifier index every replacement carries (`index`), the pricing of rent against
//! rewrite ([`rent`]) and the reader of the five-field structured summary ([`structured`]).

mod current_compress;
mod current_large;
mod cut;
mod emergency;
mod facts;
mod in_place;
mod large_offload;
pub(crate) mod llm;
mod prefix;
mod prefix_span;
mod preview;
mod provider;
pub(crate) mod rent;
mod rollup;
mod round_summary;
pub mod structured;
mod stub;
mod text_only;
mod tool_runs;
mod truncate;
pub(crate) use cut::worth_cutting;
mod turn_trim;

use std::cell::RefCell;
use std::ops::Range;

use futures_util::future::LocalBoxFuture;

use crate::entry::Entry;
use crate::format::Format;
use crate::host::{Clock, DynSummarizer};
use crate::message::Message;
use crate::options::Config;
use crate::plan::Plan;
use crate::structure::{Protection, Structure};
use crate::summarize::prepared::Summaries;

pub use crate::options::presets::{Strategy, DEFAULT_LADDER};

/// Every rung, one line each.
pub(crate) const RUNGS: &[&dyn Rung] = &[
    &truncate::ToolResultTruncate,
    &stub::ToolResultStub,
    &large_offload::LargeMessageOffload { protect_tail: true },
    &large_offload::LargeMessageOffload { protect_tail: false },
    &rollup::HistoryRollup,
    &tool_runs::ToolRunCompress,
    &round_summary::PreviousRoundSummary,
    &current_large::CurrentRoundLargeMessage,
    &current_compress::CurrentRoundCompress,
    &emergency::Emergency,
    &prefix::PrefixSummary,
    &facts::FactRetrieval,
    &turn_trim::TurnTrim,
    &text_only::TurnTextOnly,
    &provider::ProviderCompaction,
];

/// The pressure a rung relieves; it runs only under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pressure {
    /// Too many tokens (most rungs).
    Tokens,
    /// `msgThreshold` messages or more.
    Count,
    /// More than `maxContextTurns` turns, or too many tokens.
    Turns,
    /// Stale content whose rent has paid for the rewrite ([`rent`]), or too many tokens.
    Rent,
}

/// One rung of the ladder.
pub(crate) trait Rung: Sync {
    /// The strategy it is (its names and event type).
    fn strategy(&self) -> Strategy;

    /// Whether it calls the host's summarizer (it is skipped without one).
    fn uses_llm(&self) -> bool {
        false
    }

    /// The pressure it relieves.
    fn relieves(&self) -> Pressure {
        Pressure::Tokens
    }

    /// Its edits of the working list, and the strategy that made them (fact retrieval hands
    /// over to its fallback when it finds nothing; the events then name the fallback).
    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)>;
}

/// The rung of `strategy`.
pub(crate) fn rung(strategy: Strategy) -> &'static dyn Rung {
    match RUNGS.iter().find(|r| r.strategy() == strategy) {
        Some(r) => *r,
        // Every strategy has its rung (a test checks it); the last resort stands in otherwise.
        None => &emergency::Emergency,
    }
}

impl Strategy {
    /// Whether the strategy calls the host's summarizer.
    pub fn uses_llm(self) -> bool {
        rung(self).uses_llm()
    }
}

/// What a proposed edit needs from the pass.
pub(crate) struct Ctx<'a> {
    pub config: &'a Config,
    pub format: Format,
    pub working: &'a [Entry],
    /// The analysis of `working`: units, rounds, what is unread, what protects each message.
    pub st: &'a Structure,
    /// Tokens of the whole request now.
    pub total: u64,
    /// The pass's target: the low-water mark it aims at.
    pub target: u64,
    /// What the pass must get under (the trigger), at least `target`.
    pub bound: u64,
    /// The window (`maxToken`) in the estimate's units: a message the model has not read is cut
    /// only when what must be sent whole is over it (a request over the target but inside the
    /// window is sent as it is).
    pub window: u64,
    /// The host's plan, if set.
    pub plan: Option<&'a Plan>,
    /// Summaries that failed during this pass.
    pub failures: &'a RefCell<Vec<llm::Failure>>,
    /// Summaries prepared ahead of the pass, the pass's count of host calls, and whether the
    /// pass is itself a preparation ([`crate::summarize::prepared`]).
    pub summaries: &'a Summaries,
    /// The host's clock, to time summarize calls.
    pub clock: &'a dyn Clock,
    /// The working list when the pass started (what the agent last sent, and what came since),
    /// and for each message of `working` the snapshot messages it stands for: a summarize
    /// request shared with the agent's prompt cache names its span in the snapshot.
    pub snapshot: &'a [Entry],
    pub origins: &'a [Range<usize>],
    /// The provider's cache is cold: nothing of the request is cached, so no edit costs a
    /// rewrite ([`rent`]).
    pub cold: bool,
    /// The memory's counter: a rung that cuts a text tells it how (see
    /// [`TokenCounter::prepare_cut`]), so the pass counts the cut text cheaply.
    pub counter: &'a crate::tokens::TokenCounter,
}

impl Ctx<'_> {
    /// Tokens of a span of the working list.
    pub fn tokens(&self, span: Range<usize>) -> u64 {
        self.working[span].iter().map(|e| e.tokens as u64).sum()
    }

    /// Tokens the pass still has to free to reach its low-water mark.
    pub fn excess(&self) -> u64 {
        (self.total + 1).saturating_sub(self.target)
    }

    /// Whether working message `i` is a summary one of the LLM steps made.
    pub fn is_summary(&self, i: usize) -> bool {
        self.working[i]
            .msg
            .synthetic
            .as_ref()
            .is_some_and(|s| Strategy::ALL.iter().any(|&t| t.event_type() == s.kind && rung(t).uses_llm()))
    }

    /// Tokens the pass must free to get under the trigger: a summary prepared in the background
    /// is used when it frees that much, even short of the low-water mark (later steps go on).
    pub fn must_excess(&self) -> u64 {
        (self.total + 1).saturating_sub(self.bound)
    }

    /// The offload uuid for replacing message `i` in place: the offload that already holds its
    /// original when the message is itself a copy of one ([`crate::message::Synthetic::copy`]), so the new copy
    /// points at the original and no offload ever holds a copy; a new uuid otherwise.
    pub fn in_place_offload(&self, i: usize) -> String {
        match self.working[i].msg.synthetic.as_ref().and_then(|s| s.copy_offload()) {
            Some(u) => u.to_string(),
            None => new_uuid(),
        }
    }

    /// The span a rolling summary of `kind` replaces when it covers `start..end`, and the
    /// summary's generation: the span starts after the last message in the range that a step
    /// respecting `mask` may not replace (a system or pinned message stays where it is), takes
    /// in a summary of the same kind just before it (rolling it forward), and the generation is
    /// one above every summary of that kind it holds (one that joined the turn after it in the
    /// alternating formats lies inside).
    pub fn rolling_span(&self, mut start: usize, end: usize, kind: &str, mask: Protection) -> (Range<usize>, u32) {
        let of_kind = |i: usize| self.working[i].msg.synthetic.as_ref().filter(|s| s.kind == kind).map(|s| s.generation.unwrap_or(1));
        if let Some(s) = (start..end).rev().find(|&i| !self.st.free(i, mask)) {
            start = s + 1;
        }
        if start > 0 && of_kind(start - 1).is_some() && self.st.free(start - 1, mask) {
            start -= 1;
        }
        let generation = (start..end).filter_map(of_kind).map(|g| g + 1).max().unwrap_or(1);
        (start..end, generation)
    }
}

/// A proposed replacement of a span of whole units.
#[derive(Debug)]
pub(crate) struct Edit {
    pub span: Range<usize>,
    pub replacement: Vec<Message>,
    /// The offload uuid the originals of `span` go to.
    pub offload: Option<String>,
    pub usage: (Option<u64>, Option<u64>),
    /// Time the summarizer took, when it was called.
    pub ms: Option<f64>,
}

impl Edit {
    /// Message `i` replaced by `replacement` without the summarizer, its original offloaded
    /// under `uuid`: what every rung that shrinks one message in place produces.
    pub(crate) fn in_place(i: usize, replacement: Message, uuid: String) -> Edit {
        Edit { span: i..i + 1, replacement: vec![replacement], offload: Some(uuid), usage: (None, None), ms: None }
    }
}

/// Below this many complete turns, token pressure is left to the text-only step: where turn
/// trimming stops and the text-only step of the `turns` preset starts.
pub(crate) const MIN_TURNS_TO_TRIM: usize = 5;

/// The tools `names` calls, each once, by name (byte order), with `×n` after a tool called `n > 1`
/// times: the tool list of a notice.
///
/// A span calls few distinct tools, however many calls it makes: they are counted in the order
/// met and put in order by insertion, which the WebAssembly module holds in far less code than
/// the library's sort of strings.
pub(crate) fn tool_list(names: Vec<&str>) -> Vec<String> {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match counted.iter_mut().find(|(t, _)| *t == name) {
            Some((_, n)) => *n += 1,
            None => {
                let at = counted.iter().position(|(t, _)| *t > name).unwrap_or(counted.len());
                counted.insert(at, (name, 1));
            }
        }
    }
    counted.into_iter().map(|(t, c)| if c > 1 { format!("{t} ×{c}") } else { t.to_string() }).collect()
}

/// A new offload uuid: random (version 4), drawn again until its marker counts the tokens every
/// marker counts ([`crate::tokens::steady_marker`]). The hex digits of a uuid tokenize to 25 to
/// 41 tokens, so with any uuid the same conversation compressed twice would cost a different
/// number of tokens each time, and a marker's cost would be a coin flip; the redraw costs a few
/// bits of the uuid's 122 and a few counts of a 60-byte text per offload.
pub(crate) fn new_uuid() -> String {
    let mut uuid = crate::random::uuid_v4().to_string();
    for _ in 0..64 {
        if crate::tokens::steady_marker(&uuid) {
            break;
        }
        uuid = crate::random::uuid_v4().to_string();
    }
    uuid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_list_names_each_tool_once_in_byte_order_with_its_count() {
        // What sorting the names and counting runs of them gives.
        let sorted = |names: &[&str]| {
            let mut names = names.to_vec();
            names.sort_unstable();
            let mut out: Vec<(String, usize)> = Vec::new();
            for n in names {
                match out.last_mut() {
                    Some((last, c)) if last == n => *c += 1,
                    _ => out.push((n.to_string(), 1)),
                }
            }
            out.into_iter().map(|(t, c)| if c > 1 { format!("{t} ×{c}") } else { t }).collect::<Vec<_>>()
        };
        let pool = ["read", "grep", "Read", "edit", "bash", "read_file", "é", "", "grep"];
        let mut state = 7u64;
        for len in 0..60 {
            let names: Vec<&str> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    pool[(state >> 33) as usize % pool.len()]
                })
                .collect();
            assert_eq!(tool_list(names.clone()), sorted(&names), "{names:?}");
        }
        assert_eq!(tool_list(vec!["read", "bash", "read"]), ["bash", "read ×2"]);
    }

    #[test]
    fn every_new_offload_uuid_is_a_distinct_v4_uuid_whose_marker_counts_the_same() {
        // A memory counts its messages before it offloads any.
        let counter = crate::tokens::TokenCounter::new(crate::tokens::Tokenizer::O200kBase).unwrap();
        assert!(counter.count_text("the messages of a conversation").unwrap() > 0);
        let uuids: std::collections::HashSet<String> = (0..300).map(|_| new_uuid()).collect();
        assert_eq!(uuids.len(), 300);
        for u in &uuids {
            assert!(crate::message::is_uuid(u) && u.as_bytes()[14] == b'4', "{u}");
            assert_eq!(counter.count_text(&crate::message::offload_marker(u)).unwrap(), 31, "{u}");
        }
    }

    #[test]
    fn every_strategy_has_one_rung() {
        for s in Strategy::ALL {
            assert_eq!(RUNGS.iter().filter(|r| r.strategy() == s).count(), 1, "{}", s.name());
            assert!(!rung(s).uses_llm() || s.summarize_kind().is_some(), "{} asks the summarizer with a kind of its own", s.name());
        }
        assert_eq!(RUNGS.len(), Strategy::ALL.len());
    }
}
