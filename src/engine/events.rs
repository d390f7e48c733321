//! What a compression pass did, one event per change.
//!
//! Unlike the reference, whose `inputToken`/`outputToken` keys meant different things per event
//! type, every event says the same things: how many messages it replaced, their tokens before
//! and after, the offload that keeps the originals, and the summarizer's own usage when an LLM
//! was called. Events are recorded only when a pass commits, so a failed pass leaves none.

use serde::Serialize;

use crate::fields::{Fault, Fields};

/// One change made by a compression pass (or one summarize call that failed).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressionEvent {
    /// The strategy's event type, e.g. `TOOL_RESULT_TRUNCATE`, or `SUMMARIZE_FAILED`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// When the pass committed, in milliseconds since the Unix epoch.
    pub timestamp: f64,
    /// Index in the working list (after the change) of the first message written.
    pub index: usize,
    /// Messages replaced.
    pub message_count: usize,
    /// Messages written in their place.
    pub replacement_count: usize,
    /// Tokens of the replaced messages.
    pub tokens_before: u64,
    /// Tokens of the messages written in their place.
    pub tokens_after: u64,
    /// The offload holding the replaced originals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload_uuid: Option<String>,
    /// Tokens the summarizer read, when it was called and reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarize_input_tokens: Option<u64>,
    /// Tokens the summarizer wrote, when it was called and reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarize_output_tokens: Option<u64>,
    /// How long the summarizer took, in milliseconds, when it was called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// For `SUMMARIZE_FAILED`: which strategy's call failed and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CompressionEvent {
    /// Reads an event as it is saved.
    pub(crate) fn read(f: &Fields) -> Result<CompressionEvent, Fault> {
        Ok(CompressionEvent {
            event_type: f.str("type")?,
            timestamp: f.f64("timestamp")?,
            index: f.usize("index")?,
            message_count: f.usize("messageCount")?,
            replacement_count: f.usize("replacementCount")?,
            tokens_before: f.u64("tokensBefore")?,
            tokens_after: f.u64("tokensAfter")?,
            offload_uuid: f.opt_str("offloadUuid")?,
            summarize_input_tokens: f.opt_u64("summarizeInputTokens")?,
            summarize_output_tokens: f.opt_u64("summarizeOutputTokens")?,
            duration_ms: f.opt_f64("durationMs")?,
            error: f.opt_str("error")?,
        })
    }

    /// Tokens this change saved.
    pub fn tokens_saved(&self) -> i64 {
        self.tokens_before as i64 - self.tokens_after as i64
    }
}
