//! Prompts for the LLM strategies, in our own words, and the host's overrides.
//!
//! Each LLM strategy sends the host's `summarize` a `system` text (what to do) and a `prompt`
//! (the span, serialized inside tags). A host may replace any `system` text through
//! `customPrompt`; a blank override falls back to the default, as in the reference.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::options::read::OptionValue;

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

/// The `customPrompt` option: `null` keeps the defaults.
impl OptionValue for PromptConfig {
    const TS: &'static str = "CustomPrompt";

    fn read(v: &Value, _field: &str) -> Result<Option<Self>> {
        PromptConfig::from_json(v).map(Some)
    }

    fn write(&self) -> Value {
        self.to_json()
    }
}

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
                other => return Err(Error::config(&format!("customPrompt.{k}"), format!("must be a string, got {}", kind_of(other)))),
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
    pub fn previous_round_summary(&self) -> String {
        pick(&self.previous_round_summary_prompt, PREVIOUS_ROUND_SUMMARY)
    }

    /// The system text for compressing a run of historical tool exchanges.
    pub fn previous_round_tool_compress(&self) -> String {
        pick(&self.previous_round_tool_compress_prompt, PREVIOUS_ROUND_TOOL_COMPRESS)
    }

    /// The system text for summarizing one large message of the current round.
    pub fn current_round_large_message(&self) -> String {
        pick(&self.current_round_large_message_prompt, CURRENT_ROUND_LARGE_MESSAGE)
    }

    /// The system text for shrinking answered tool results of the current round.
    pub fn current_round_compress(&self) -> String {
        pick(&self.current_round_compress_prompt, CURRENT_ROUND_COMPRESS)
    }

    /// The system text for the rolling summary of old rounds.
    pub fn history_rollup(&self) -> String {
        pick(&self.history_rollup_prompt, HISTORY_ROLLUP)
    }
}

/// What every default prompt asks for, whatever the span: what an agent needs to go on with its
/// task once the messages are gone.
const KEEP_RULES: &str = "The agent continues its task from your summary, so keep what it will need: the user's \
instructions and constraints, quoted word for word; the files, paths and symbols it read or changed, and what \
changed; the commands it ran with their key arguments and outcome; every error or failure, verbatim, and how it \
was fixed or that it is still open; decisions and their reasons; and what remains to be done. Keep identifiers, \
numbers and error codes exactly as written. Write in the third person, in the language of the conversation, as \
plain text. Do not address the user, do not invent anything, and do not write offload markers or tags.";

/// Default instructions for compressing a run of historical tool exchanges.
pub const PREVIOUS_ROUND_TOOL_COMPRESS: &str = "You compress a run of tool calls and their results from earlier in an \
agent conversation. Say which tools were called with which arguments and what each returned that matters; merge \
identical repeated calls into one line with a count; be careful with calls that changed state (writes, deletions, \
commands) and say exactly what changed. Mark output that was cut off as truncated.";

/// Default instructions for one large message of the current round.
pub const CURRENT_ROUND_LARGE_MESSAGE: &str = "You shorten one large message from the turn the agent is working on \
right now. The agent still needs it, so compress conservatively: keep every detail it may act on next.";

/// Default instructions for shrinking an answered tool result of the current round.
pub const CURRENT_ROUND_COMPRESS: &str = "You shorten the result of one tool call that the agent has already read \
and acted on in its current turn. Write a short factual digest of what the result showed, so the agent does not \
need to run the tool again; prefix output that could not be understood with [unparsed].";

/// Default instructions for the rolling summary of rounds that left the focus window.
pub const HISTORY_ROLLUP: &str = "You maintain the long-term memory of an agent conversation. Merge the earlier \
summary, if there is one, with the rounds that follow it into one durable summary: the user's requirements and \
constraints, decisions made, technical facts learned, what was done and its outcome, and what is still open.";

/// Default instructions for summarizing one complete earlier round.
pub const PREVIOUS_ROUND_SUMMARY: &str = "You compress one finished round of an agent conversation so it can stay in \
the model's context at a fraction of its size. The user's request stays as it is; you write what replaces everything \
the assistant did to answer it. Write in the third person, in the language of the conversation, as plain text. Keep \
every fact later turns may need: the files, paths and symbols read or changed and what changed, the commands run and \
their outcome, every error verbatim and how it was fixed or that it is still open, decisions and their reasons, and \
what remains to be done. Keep identifiers, numbers and error codes exactly as written; name the tools used and their \
key arguments briefly. Do not address the user, do not invent anything, and do not write offload markers.";

/// The host's prompt when it gave one, else the default followed by the rules every default
/// shares.
fn pick(custom: &Option<String>, default: &str) -> String {
    match custom {
        Some(c) => c.clone(),
        None if default.contains("do not write offload markers") => default.to_string(),
        None => format!("{default}\n\n{KEEP_RULES}"),
    }
}
