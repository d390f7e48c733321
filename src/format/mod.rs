//! Wire formats: one file each, chosen by the `format` option.
//!
//! A format reads its provider's messages into canonical [`Message`]s, rebuilds a message a
//! strategy rewrote, writes the engine's own messages, describes the `context_reload` tool and
//! checks a list the way its provider would before accepting it.

pub mod openai;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Result;
use crate::message::{Block, Message, Role, Synthetic};

/// Name of the reload tool, as in the reference, so prompts written for it keep working.
pub const RELOAD_TOOL_NAME: &str = "context_reload";
/// The reload tool's one argument.
pub const RELOAD_TOOL_PARAM: &str = "working_context_offload_uuid";

const RELOAD_DESCRIPTION: &str = "Reload the original messages of a part of this conversation that was compressed. \
Compressed parts carry a marker <!-- CONTEXT_OFFLOAD: uuid=... -->; call this tool with that uuid when you need \
the exact original content (full tool output, file contents, earlier details).";
const RELOAD_PARAM_DESCRIPTION: &str = "The uuid from a <!-- CONTEXT_OFFLOAD: uuid=... --> marker.";

/// A provider's message shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Format {
    /// OpenAI chat completions (`messages` of `client.chat.completions.create`).
    #[default]
    #[serde(rename = "openai")]
    OpenAi,
}

impl Format {
    /// The name used in options and state.
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
        }
    }

    /// Reads one wire message; `index` is used in error messages.
    pub fn parse(self, index: usize, v: &Value) -> Result<Message> {
        match self {
            Format::OpenAi => openai::parse(index, v),
        }
    }

    /// Rebuilds `original` with new content blocks, keeping what the blocks do not describe.
    pub fn rebuild(self, original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
        match self {
            Format::OpenAi => openai::rebuild(original, blocks, synthetic),
        }
    }

    /// A message written by the engine (a summary or a notice).
    pub fn synthesize(self, role: Role, text: String, synthetic: Synthetic) -> Message {
        match self {
            Format::OpenAi => openai::synthesize(role, text, synthetic),
        }
    }

    /// The `context_reload` tool definition in this format.
    pub fn reload_tool(self) -> Value {
        match self {
            Format::OpenAi => openai::reload_tool(RELOAD_DESCRIPTION, RELOAD_PARAM_DESCRIPTION),
        }
    }

    /// Extracts the uuid argument from a `context_reload` call in this format's shape.
    pub fn reload_call_uuid(self, call: &Value) -> Option<String> {
        let args = match self {
            Format::OpenAi => openai::reload_call_args(call)?,
        };
        args.get(RELOAD_TOOL_PARAM)?.as_str().map(str::to_string)
    }

    /// Problems a provider would reject the list for (empty when valid).
    pub fn validate<M: AsRef<Message>>(self, messages: &[M]) -> Vec<Problem> {
        validate_tool_pairing(messages)
    }
}

/// One reason a provider would reject a message list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Index of the message at fault.
    pub index: usize,
    /// Stable problem code (`ORPHAN_RESULT`, `MISSING_RESULT`, `DUPLICATE_RESULT`, `DUPLICATE_CALL`).
    pub code: &'static str,
    /// What is wrong, for people.
    pub message: String,
}

/// Tool pairing, the rule every provider enforces: each result answers a call of the assistant
/// message that opened its exchange (only results between them), each call is answered before
/// the conversation moves on, and no id is used twice. Calls of the last exchange may still be
/// waiting for results (the host is about to run the tools).
pub fn validate_tool_pairing<M: AsRef<Message>>(messages: &[M]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut open: Option<(usize, Vec<String>, Vec<bool>)> = None;
    let mut seen_calls = std::collections::HashSet::new();
    let close = |open: &mut Option<(usize, Vec<String>, Vec<bool>)>, problems: &mut Vec<Problem>| {
        if let Some((at, ids, answered)) = open.take() {
            for (id, ok) in ids.iter().zip(answered) {
                if !ok {
                    problems.push(Problem {
                        index: at,
                        code: "MISSING_RESULT",
                        message: format!("tool call {id:?} of message {at} has no result before the conversation moves on"),
                    });
                }
            }
        }
    };
    for (i, m) in messages.iter().enumerate() {
        let m = m.as_ref();
        if m.has_results() {
            for id in m.result_ids() {
                let found = open.as_mut().and_then(|(_, ids, answered)| {
                    ids.iter().position(|c| c == id).map(|k| {
                        let dup = answered[k];
                        answered[k] = true;
                        dup
                    })
                });
                match found {
                    Some(false) => {}
                    Some(true) => problems.push(Problem {
                        index: i,
                        code: "DUPLICATE_RESULT",
                        message: format!("message {i} answers tool call {id:?} a second time"),
                    }),
                    None => problems.push(Problem {
                        index: i,
                        code: "ORPHAN_RESULT",
                        message: format!("message {i} answers tool call {id:?}, which the assistant message before it did not make"),
                    }),
                }
            }
            // A message may carry results and other content (Anthropic); it still belongs to the exchange.
            continue;
        }
        close(&mut open, &mut problems);
        if m.has_calls() {
            let ids: Vec<String> = m.call_ids().map(str::to_string).collect();
            for id in &ids {
                if !seen_calls.insert(id.clone()) {
                    problems.push(Problem {
                        index: i,
                        code: "DUPLICATE_CALL",
                        message: format!("message {i} reuses tool call id {id:?}"),
                    });
                }
            }
            let n = ids.len();
            open = Some((i, ids, vec![false; n]));
        }
    }
    // The last exchange may be in flight: its missing results are not a problem yet.
    let _ = open;
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: Value) -> Vec<Message> {
        v.as_array().unwrap().iter().enumerate().map(|(i, m)| Format::OpenAi.parse(i, m).unwrap()).collect()
    }

    #[test]
    fn pairing_rules() {
        let ok = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}, {"id": "b", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
            {"role": "assistant", "content": "done"},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}
        ]));
        assert!(Format::OpenAi.validate(&ok).is_empty());
        let bad = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "user", "content": "again"},
            {"role": "tool", "tool_call_id": "a", "content": "late"}
        ]));
        let codes: Vec<_> = Format::OpenAi.validate(&bad).iter().map(|p| p.code).collect();
        assert_eq!(codes, vec!["MISSING_RESULT", "ORPHAN_RESULT"]);
    }

    #[test]
    fn reload_call_shapes() {
        let f = Format::OpenAi;
        let want = Some("u-1".to_string());
        assert_eq!(f.reload_call_uuid(&json!({"working_context_offload_uuid": "u-1"})), want);
        assert_eq!(f.reload_call_uuid(&json!("{\"working_context_offload_uuid\":\"u-1\"}")), want);
        assert_eq!(f.reload_call_uuid(&json!({"id": "c", "function": {"name": "context_reload", "arguments": "{\"working_context_offload_uuid\":\"u-1\"}"}})), want);
        assert_eq!(f.reload_call_uuid(&json!(3)), None);
    }
}
