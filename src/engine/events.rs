//! What a compression pass did, one event per change.
//!
//! Unlike the reference, whose `inputToken`/`outputToken` keys meant different things per event
//! type, every event says the same things: how many messages it replaced, their tokens before
//! and after, the offload that keeps the originals, and the summarizer's own usage when an LLM
//! was called. Events are recorded only when a pass commits, so a failed pass leaves none.

use serde::Serialize;

use crate::fields::{Fault, Fields, Record};

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

impl Record for CompressionEvent {
    const FIELDS: &'static [&'static str] = &[
        "type",
        "timestamp",
        "index",
        "messageCount",
        "replacementCount",
        "tokensBefore",
        "tokensAfter",
        "offloadUuid",
        "summarizeInputTokens",
        "summarizeOutputTokens",
        "durationMs",
        "error",
    ];
    fn read(f: &Fields) -> Result<CompressionEvent, Fault> {
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
}

impl CompressionEvent {
    /// The event as JSON text, as serde writes it.
    pub(crate) fn write(&self, out: &mut String) {
        let mut o = crate::json::Obj::new(out);
        o.str("type", &self.event_type)
            .num("timestamp", self.timestamp)
            .int("index", self.index as u64)
            .int("messageCount", self.message_count as u64)
            .int("replacementCount", self.replacement_count as u64)
            .int("tokensBefore", self.tokens_before)
            .int("tokensAfter", self.tokens_after);
        if let Some(u) = &self.offload_uuid {
            o.str("offloadUuid", u);
        }
        if let Some(t) = self.summarize_input_tokens {
            o.int("summarizeInputTokens", t);
        }
        if let Some(t) = self.summarize_output_tokens {
            o.int("summarizeOutputTokens", t);
        }
        if let Some(d) = self.duration_ms {
            o.num("durationMs", d);
        }
        if let Some(e) = &self.error {
            o.str("error", e);
        }
        o.end();
    }

    /// Tokens this change saved.
    pub fn tokens_saved(&self) -> i64 {
        self.tokens_before as i64 - self.tokens_after as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_written_and_read_as_serde_writes_and_reads_it() {
        let bare = CompressionEvent {
            event_type: "TOOL_RESULT_TRUNCATE".into(),
            timestamp: 1_764_000_000_000.0,
            index: 0,
            message_count: 1,
            replacement_count: 1,
            tokens_before: u64::MAX,
            tokens_after: 0,
            offload_uuid: None,
            summarize_input_tokens: None,
            summarize_output_tokens: None,
            duration_ms: None,
            error: None,
        };
        let full = CompressionEvent {
            event_type: "SUMMARIZE_FAILED".into(),
            timestamp: 1_764_000_000_123.5,
            offload_uuid: Some("u".into()),
            summarize_input_tokens: Some(7),
            summarize_output_tokens: Some(0),
            duration_ms: Some(0.1 + 0.2),
            error: Some("the model said \"no\"\n".into()),
            ..bare.clone()
        };
        let odd = CompressionEvent { timestamp: f64::NAN, duration_ms: Some(1e-7), ..bare.clone() };
        for e in [bare, full, odd] {
            let mut out = String::new();
            e.write(&mut out);
            assert_eq!(out, serde_json::to_string(&e).unwrap());
            if e.timestamp.is_finite() {
                let back: CompressionEvent = crate::fields::record(&serde_json::from_str(&out).unwrap(), "").unwrap();
                assert_eq!(back, e);
            }
        }
    }
}
