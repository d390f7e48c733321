//! Prompts for the LLM strategies, in our own words, and the host's overrides.
//!
//! Each LLM strategy sends the host's `summarize` a `system` text (what to do) and a `prompt`
//! (the span, serialized inside tags). A host may replace any `system` text through
//! `customPrompt`; a blank override falls back to the default, as in the reference.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::format::openai::kind_of;

/// Host overrides of the default prompts (the reference's four names plus the rollup's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptConfig {
    /// Compression of historical runs of tool exchanges.
    pub previous_round_tool_compress_prompt: Option<String>,
    /// Summary of a complete earlier round.
    pub previous_round_summary_prompt: Option<String>,
    /// Summary of one large message of the current round.
    pub current_round_large_message_prompt: Option<String>,
    /// Compression of the answered exchanges of the current round.
    pub current_round_compress_prompt: Option<String>,
    /// The rolling summary of rounds outside the focus window.
    pub history_rollup_prompt: Option<String>,
}

const FIELDS: [&str; 5] = [
    "previousRoundToolCompressPrompt",
    "previousRoundSummaryPrompt",
    "currentRoundLargeMessagePrompt",
    "currentRoundCompressPrompt",
    "historyRollupPrompt",
];

impl PromptConfig {
    pub(crate) fn from_json(v: &Value) -> Result<PromptConfig> {
        let obj = match v {
            Value::Null => return Ok(PromptConfig::default()),
            Value::Object(o) => o,
            other => return Err(Error::config("customPrompt", format!("must be an object, got {}", kind_of(other)))),
        };
        let mut out = PromptConfig::default();
        for (k, v) in obj {
            let slot = match k.as_str() {
                "previousRoundToolCompressPrompt" => &mut out.previous_round_tool_compress_prompt,
                "previousRoundSummaryPrompt" => &mut out.previous_round_summary_prompt,
                "currentRoundLargeMessagePrompt" => &mut out.current_round_large_message_prompt,
                "currentRoundCompressPrompt" => &mut out.current_round_compress_prompt,
                "historyRollupPrompt" => &mut out.history_rollup_prompt,
                other => {
                    return Err(Error::config(
                        &format!("customPrompt.{other}"),
                        format!("is not a prompt name (expected one of {})", FIELDS.join(", ")),
                    ))
                }
            };
            *slot = match v {
                Value::Null => None,
                Value::String(s) if s.trim().is_empty() => None,
                Value::String(s) => Some(s.clone()),
                other => {
                    return Err(Error::config(&format!("customPrompt.{k}"), format!("must be a string, got {}", kind_of(other))))
                }
            };
        }
        Ok(out)
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "previousRoundToolCompressPrompt": self.previous_round_tool_compress_prompt,
            "previousRoundSummaryPrompt": self.previous_round_summary_prompt,
            "currentRoundLargeMessagePrompt": self.current_round_large_message_prompt,
            "currentRoundCompressPrompt": self.current_round_compress_prompt,
            "historyRollupPrompt": self.history_rollup_prompt,
        })
    }

    /// The system text for summarizing a complete earlier round.
    pub fn previous_round_summary(&self) -> &str {
        self.previous_round_summary_prompt.as_deref().unwrap_or(PREVIOUS_ROUND_SUMMARY)
    }
}

/// Default instructions for summarizing one complete earlier round.
pub const PREVIOUS_ROUND_SUMMARY: &str = "You compress one finished round of an agent conversation so it can stay in \
the model's context at a fraction of its size. The user's request stays as it is; you write what replaces everything \
the assistant did to answer it. Write in the third person, in the language of the conversation, as plain text. Keep \
every fact later turns may need: file paths, commands, identifiers, numbers, error messages, decisions, what was \
changed and what failed. Name the tools used and their key arguments briefly. Do not address the user, do not invent \
anything, and do not write offload markers.";
