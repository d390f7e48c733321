//! What the engine's passes hand back to the host: a pass's result, a preparation's, and the
//! answer to a provider's overflow error.

use serde::Serialize;

use crate::engine::events::CompressionEvent;
use crate::engine::overflow::Overflow;
use crate::error::Error;

/// Event type of a summarize call that failed (its span fell back to a non-LLM step or stayed).
pub const FAILURE_EVENT: &str = "SUMMARIZE_FAILED";

/// Where a pass compacts to: it aims below `aim` (the low-water mark), and must end below
/// `bound` (the trigger): the last round and the latest answer yield only to reach `bound`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// The low-water mark the plan aims below.
    pub aim: u64,
    /// What the pass must end below.
    pub bound: u64,
}

impl Target {
    /// A target that is both aim and bound (an overflow's, or one under the trigger).
    pub fn exactly(tokens: u64) -> Target {
        Target { aim: tokens, bound: tokens }
    }
}

/// What [`super::AutoContextMemory::compress_if_needed`] did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressResult {
    /// Whether the working list changed.
    pub compressed: bool,
    /// Request tokens before the pass.
    pub tokens_before: u64,
    /// Request tokens after the pass.
    pub tokens_after: u64,
    /// Working messages before the pass.
    pub messages_before: usize,
    /// Working messages after the pass.
    pub messages_after: usize,
    /// The target the pass had to get under: `maxToken × tokenRatio` in the estimate's units
    /// (corrected by [`super::AutoContextMemory::observe_usage`]); for
    /// [`super::AutoContextMemory::handle_overflow`], its own.
    pub target_tokens: u64,
    /// Where the pass aimed: the low-water mark `maxToken × targetRatio` (calibrated the same
    /// way), lowered so a token-triggered pass frees at least `minFreedTokens`. A pass stops
    /// above it, still under the target, when what remains is protected. Equal to the target
    /// for a pass of message-count pressure alone and for an overflow.
    pub low_water_tokens: u64,
    /// Whether the request now fits under the target, in fewer than `msgThreshold` messages.
    pub under_target: bool,
    /// Whether the pass stopped over the target because nothing more could be compressed.
    pub exhausted: bool,
    /// Why a triggered pass could not reach the target (tokens, or the message count), if it
    /// could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The changes made, in order.
    pub events: Vec<CompressionEvent>,
    /// The summarize calls of this pass that failed, one per `SUMMARIZE_FAILED` event and in
    /// the same order: each an [`crate::ErrorCode::SummarizeFailed`] naming the strategy, the span and
    /// the event, whose cause is the host's own error when the host threw (a rejected empty or
    /// too long summary has none). The pass went on without them; they are here so the host
    /// sees what its summarize function threw. Not serialized.
    #[serde(skip)]
    pub failures: Vec<Error>,
    /// Summarize calls this pass made to the host.
    pub summarize_calls: usize,
    /// Summaries this pass took from a preparation ([`super::AutoContextMemory::prepare`])
    /// instead of calling the host.
    pub prepared_used: usize,
}

impl CompressResult {
    /// The result of a pass that changed nothing: `tokens` and `messages` before and after.
    pub(crate) fn unchanged(tokens: u64, messages: usize, target: Target) -> CompressResult {
        CompressResult {
            compressed: false,
            tokens_before: tokens,
            tokens_after: tokens,
            messages_before: messages,
            messages_after: messages,
            target_tokens: target.bound,
            low_water_tokens: target.aim,
            under_target: tokens < target.bound,
            exhausted: false,
            reason: None,
            events: Vec::new(),
            failures: Vec::new(),
            summarize_calls: 0,
            prepared_used: 0,
        }
    }
}

/// What [`super::AutoContextMemory::prepare`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrepareResult {
    /// Whether a preparation ran (usage was past `prepareRatio` and none was running).
    pub prepared: bool,
    /// Summarize calls made to the host.
    pub summarize_calls: usize,
    /// Requests already prepared by an earlier preparation (no call made).
    pub reused: usize,
    /// Prepared answers now waiting for the next pass.
    pub ready: usize,
    /// Request tokens when it ran (the estimate, before calibration).
    pub tokens: u64,
    /// The token count from which a preparation runs (`prepareRatio` of the window, calibrated).
    pub prepare_tokens: u64,
    /// Why nothing was prepared, when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What [`crate::AutoContextMemory::handle_overflow`] did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OverflowResult {
    /// Whether the error was recognized as "context too long".
    pub overflow: bool,
    /// Whether sending the working list again can succeed (it is now shorter than what was
    /// refused).
    pub retry: bool,
    /// Who sent the error, as far as its shape tells: `'openai'`, `'anthropic'`, `'gemini'` or
    /// `'openai-compatible'`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's input limit, when the error stated it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// What the provider counted, when the error stated it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<u64>,
    /// Request tokens (estimated) before the compaction.
    pub tokens_before: u64,
    /// Request tokens (estimated) after the compaction.
    pub tokens_after: u64,
    /// The target the compaction aimed for.
    pub target_tokens: u64,
    /// The changes made.
    pub events: Vec<CompressionEvent>,
    /// Why no retry is advised, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The pass itself (failures included), when one ran. Not serialized.
    #[serde(skip)]
    pub pass: Option<CompressResult>,
}

impl OverflowResult {
    /// The answer to an error that is not an overflow: nothing done, no retry.
    pub(crate) fn not_overflow(tokens: u64) -> OverflowResult {
        OverflowResult {
            overflow: false,
            retry: false,
            provider: None,
            limit: None,
            requested: None,
            tokens_before: tokens,
            tokens_after: tokens,
            target_tokens: tokens,
            events: Vec::new(),
            reason: Some("not a context-length error; compacting would not help".into()),
            pass: None,
        }
    }

    /// The answer to overflow `o` of a request of `before` estimated tokens, compacted towards
    /// `target` by `pass`.
    pub(crate) fn after_pass(o: &Overflow, before: u64, target: u64, pass: CompressResult) -> OverflowResult {
        let after = pass.tokens_after;
        let retry = after < before;
        let reason = (!retry).then(|| {
            "nothing more could be compacted (what remains is protected: system messages, the first and the current user \
             message, results the model has not answered yet); a retry would be refused again"
                .to_string()
        });
        OverflowResult {
            overflow: true,
            retry,
            provider: Some(o.provider.to_string()),
            limit: o.limit,
            requested: o.requested,
            tokens_before: before,
            tokens_after: after,
            target_tokens: target,
            events: pass.events.clone(),
            reason,
            pass: Some(pass),
        }
    }
}
