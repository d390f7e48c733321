//! The compression ladder: strategies, cheapest first.
//!
//! A strategy looks at the working list (through [`Structure`]) and proposes edits: a span of
//! whole units to replace, what to put there, and whether the originals go to the store. It
//! never mutates anything itself; the engine writes the offloads, then applies all edits of a
//! pass at once, so a failure anywhere leaves the working list as it was. The order of the
//! ladder is data ([`DEFAULT_LADDER`]), so presets and hosts can choose their own.

mod offload;
mod round_summary;
mod truncate;

use std::ops::Range;
use std::rc::Rc;

use crate::config::Config;
use crate::error::Result;
use crate::format::Format;
use crate::host::Summarizer;
use crate::message::Message;
use crate::structure::Structure;

/// A message of the working list with its cached token count.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The message.
    pub msg: Rc<Message>,
    /// Its tokens, counted once.
    pub tokens: u32,
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
    /// Each complete earlier round's work becomes one summary; the user's message stays (LLM).
    PreviousRoundSummary,
}

/// The default order.
pub const DEFAULT_LADDER: &[Strategy] = &[
    Strategy::ToolResultTruncate,
    Strategy::LargeMessageOffloadWithProtection,
    Strategy::LargeMessageOffload,
    Strategy::PreviousRoundSummary,
];

/// What a proposed edit needs from the pass.
pub(crate) struct Ctx<'a> {
    pub config: &'a Config,
    pub format: Format,
    pub working: &'a [Entry],
    pub st: &'a Structure,
    /// Tokens of the whole request now.
    pub total: u64,
    /// The pass's target.
    pub target: u64,
}

/// A proposed replacement of a span of whole units.
#[derive(Debug)]
pub(crate) struct Edit {
    pub span: Range<usize>,
    pub replacement: Vec<Message>,
    /// The offload uuid the originals of `span` go to.
    pub offload: Option<String>,
    pub usage: (Option<u64>, Option<u64>),
}

impl Strategy {
    /// The event type recorded for this strategy's changes.
    pub fn event_type(self) -> &'static str {
        match self {
            Strategy::ToolResultTruncate => "TOOL_RESULT_TRUNCATE",
            Strategy::LargeMessageOffloadWithProtection => "LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION",
            Strategy::LargeMessageOffload => "LARGE_MESSAGE_OFFLOAD",
            Strategy::PreviousRoundSummary => "PREVIOUS_ROUND_CONVERSATION_SUMMARY",
        }
    }

    /// Whether the strategy calls the host's summarizer.
    pub fn uses_llm(self) -> bool {
        matches!(self, Strategy::PreviousRoundSummary)
    }

    pub(crate) async fn plan<S: Summarizer>(self, ctx: &Ctx<'_>, summarizer: &S) -> Result<Vec<Edit>> {
        match self {
            Strategy::ToolResultTruncate => Ok(truncate::plan(ctx)),
            Strategy::LargeMessageOffloadWithProtection => Ok(offload::plan(ctx, true)),
            Strategy::LargeMessageOffload => Ok(offload::plan(ctx, false)),
            Strategy::PreviousRoundSummary => round_summary::plan(ctx, summarizer).await,
        }
    }
}

pub(crate) fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
