//! The compression ladder: strategies, cheapest first.
//!
//! A strategy looks at the working list (through [`Structure`]) and proposes edits: a span of
//! whole units to replace, what to put there, and whether the originals go to the store. It
//! never mutates anything itself; the engine writes the offloads, then applies all edits of a
//! pass at once, so a failure anywhere leaves the working list as it was. The order of the
//! ladder is data ([`DEFAULT_LADDER`]), so presets and hosts can choose their own.

mod current_compress;
mod current_large;
mod emergency;
mod facts;
pub(crate) mod llm;
#[cfg(test)]
mod multi_result_tests;
mod offload;
mod prefix;
pub mod preset;
mod rollup;
mod round_summary;
pub mod structured;
mod text_only;
mod tool_runs;
mod truncate;
mod turn_trim;
pub(crate) mod turns;

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;

use crate::config::Config;
use crate::error::Result;
use crate::format::Format;
use crate::host::Summarizer;
use crate::message::Message;
use crate::plan::Plan;
use crate::prepared::Summaries;
use crate::structure::{Protection, Structure};

pub(crate) use facts::read_concepts as facts_concepts;
pub use facts::{Concept, FactType};
pub use preset::Preset;

/// A message of the working list with its cached token count.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The message.
    pub msg: Rc<Message>,
    /// Its tokens, counted once.
    pub tokens: u32,
    /// The host pinned it: no step replaces it.
    pub pinned: bool,
}

impl Entry {
    /// An unpinned entry.
    pub fn new(msg: Rc<Message>, tokens: u32) -> Entry {
        Entry { msg, tokens, pinned: false }
    }
}

impl AsRef<Message> for Entry {
    fn as_ref(&self) -> &Message {
        &self.msg
    }
}

/// One strategy of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Tool results over `toolResultLimit` keep their head and tail; the whole is offloaded.
    ToolResultTruncate,
    /// Large messages before the `lastKeep` tail and the current round are offloaded, a preview
    /// left in place (no LLM).
    LargeMessageOffloadWithProtection,
    /// The same, without the `lastKeep` protection (the current round stays protected).
    LargeMessageOffload,
    /// Complete rounds outside the recent focus window roll into one rolling summary (LLM;
    /// message-count pressure only).
    HistoryRollup,
    /// Long runs of historical tool exchanges become one summary each (LLM).
    ToolRunCompress,
    /// Each complete earlier round's work becomes one summary; the user's message stays (LLM).
    PreviousRoundSummary,
    /// A large, already answered message of the current round is summarized in place (LLM).
    CurrentRoundLargeMessage,
    /// Results of already answered exchanges of the current round shrink in place (LLM).
    CurrentRoundCompress,
    /// The last resort: oldest rounds, then the oldest answered work of the current round, are
    /// offloaded whole behind a short notice (no LLM).
    Emergency,
    /// Everything before a reserved recent tail (`reserveRatio` of the window) becomes one
    /// structured five-field summary, rolled forward pass after pass (LLM).
    PrefixSummary,
    /// Everything before the reserved tail becomes a restoration block of facts, one extraction
    /// per configured concept (LLM); the `factsFallback` strategy runs when none are found.
    FactRetrieval,
    /// The oldest half of the complete turns becomes one summary at the start of the kept
    /// context, when there are more than `maxContextTurns` turns or, with at least five, too
    /// many tokens (LLM when available, a notice otherwise).
    TurnTrim,
    /// With fewer than five complete turns over budget, each keeps only its user message and
    /// final answer; the tool work is offloaded (no LLM).
    TurnTextOnly,
}

/// The default order: the no-LLM steps first, then the reference's LLM strategies, then the
/// emergency step that guarantees the budget.
pub const DEFAULT_LADDER: &[Strategy] = &[
    Strategy::ToolResultTruncate,
    Strategy::LargeMessageOffloadWithProtection,
    Strategy::LargeMessageOffload,
    Strategy::HistoryRollup,
    Strategy::ToolRunCompress,
    Strategy::PreviousRoundSummary,
    Strategy::CurrentRoundLargeMessage,
    Strategy::CurrentRoundCompress,
    Strategy::Emergency,
];

/// What a proposed edit needs from the pass.
pub(crate) struct Ctx<'a> {
    pub config: &'a Config,
    pub format: Format,
    pub working: &'a [Entry],
    /// The analysis of `working`: units, rounds, what is unread, what protects each message.
    pub st: &'a Structure,
    /// Tokens of the whole request now.
    pub total: u64,
    /// The pass's target.
    pub target: u64,
    /// The host's plan, if set.
    pub plan: Option<&'a Plan>,
    /// Summaries that failed during this pass.
    pub failures: &'a RefCell<Vec<llm::Failure>>,
    /// Summaries prepared ahead of the pass, the pass's count of host calls, and whether the
    /// pass is itself a preparation ([`crate::prepare`]).
    pub summaries: &'a Summaries,
}

impl Ctx<'_> {
    /// Tokens of a span of the working list.
    pub fn tokens(&self, span: Range<usize>) -> u64 {
        self.working[span].iter().map(|e| e.tokens as u64).sum()
    }

    /// Tokens the pass still has to free.
    pub fn excess(&self) -> u64 {
        (self.total + 1).saturating_sub(self.target)
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

impl Strategy {
    /// The event type recorded for this strategy's changes.
    pub fn event_type(self) -> &'static str {
        match self {
            Strategy::ToolResultTruncate => "TOOL_RESULT_TRUNCATE",
            Strategy::LargeMessageOffloadWithProtection => "LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION",
            Strategy::LargeMessageOffload => "LARGE_MESSAGE_OFFLOAD",
            Strategy::HistoryRollup => "RECENT_FOCUS_WINDOW_COMPACT",
            Strategy::ToolRunCompress => "TOOL_INVOCATION_COMPRESS",
            Strategy::PreviousRoundSummary => "PREVIOUS_ROUND_CONVERSATION_SUMMARY",
            Strategy::CurrentRoundLargeMessage => "CURRENT_ROUND_LARGE_MESSAGE_SUMMARY",
            Strategy::CurrentRoundCompress => "CURRENT_ROUND_MESSAGE_COMPRESS",
            Strategy::Emergency => "EMERGENCY_OFFLOAD",
            Strategy::PrefixSummary => "PREFIX_SUMMARY",
            Strategy::FactRetrieval => "FACT_RETRIEVAL",
            Strategy::TurnTrim => "TURN_TRIM",
            Strategy::TurnTextOnly => "TURN_TEXT_ONLY",
        }
    }

    /// Whether the strategy calls the host's summarizer.
    pub fn uses_llm(self) -> bool {
        matches!(
            self,
            Strategy::HistoryRollup
                | Strategy::ToolRunCompress
                | Strategy::PreviousRoundSummary
                | Strategy::CurrentRoundLargeMessage
                | Strategy::CurrentRoundCompress
                | Strategy::PrefixSummary
                | Strategy::FactRetrieval
        )
    }

    /// Whether the strategy relieves message-count pressure (the others relieve token
    /// pressure, and run only under it).
    pub fn relieves_count(self) -> bool {
        matches!(self, Strategy::HistoryRollup)
    }

    /// Whether the strategy relieves turn-count pressure (more than `maxContextTurns` turns).
    pub fn relieves_turns(self) -> bool {
        matches!(self, Strategy::TurnTrim)
    }

    /// The strategy's edits, and the strategy that made them (fact retrieval hands over to its
    /// fallback when it finds nothing; the events then name the fallback).
    pub(crate) async fn plan<S: Summarizer>(self, ctx: &Ctx<'_>, summarizer: &S) -> Result<(Strategy, Vec<Edit>)> {
        Ok(match self {
            Strategy::FactRetrieval => match facts::plan(ctx, summarizer).await {
                Some(edits) => (self, edits),
                // The configuration refuses the facts strategy as its own fallback.
                None => match ctx.config.facts_fallback {
                    Strategy::FactRetrieval => (self, Vec::new()),
                    fallback => (fallback, fallback.plan_one(ctx, summarizer).await),
                },
            },
            other => (other, other.plan_one(ctx, summarizer).await),
        })
    }

    async fn plan_one<S: Summarizer>(self, ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
        match self {
            Strategy::ToolResultTruncate => truncate::plan(ctx),
            Strategy::LargeMessageOffloadWithProtection => offload::plan(ctx, true),
            Strategy::LargeMessageOffload => offload::plan(ctx, false),
            Strategy::HistoryRollup => rollup::plan(ctx, summarizer).await,
            Strategy::ToolRunCompress => tool_runs::plan(ctx, summarizer).await,
            Strategy::PreviousRoundSummary => round_summary::plan(ctx, summarizer).await,
            Strategy::CurrentRoundLargeMessage => current_large::plan(ctx, summarizer).await,
            Strategy::CurrentRoundCompress => current_compress::plan(ctx, summarizer).await,
            Strategy::Emergency => emergency::plan(ctx),
            Strategy::PrefixSummary => prefix::plan(ctx, summarizer).await,
            // Only reached as a fallback of itself, which the configuration refuses.
            Strategy::FactRetrieval => Vec::new(),
            Strategy::TurnTrim => turn_trim::plan(ctx, summarizer).await,
            Strategy::TurnTextOnly => text_only::plan(ctx),
        }
    }
}

pub(crate) fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
