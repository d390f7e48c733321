//! A span of the conversation as a request body a provider accepts, for the `messages` of a
//! summarize request.
//!
//! A host that prefers wire messages to the prompt's transcript sends `[system, ...messages,
//! its own instruction as a user message]` to its model. A span cut from the working list may
//! start or end inside a tool exchange (a call whose results lie outside it, results whose call
//! does), and in the Anthropic shape it may start with the assistant or end with the user. Sent
//! as it is, that is an HTTP 400. So the span is rewritten here: whole, complete exchanges stay
//! as they are; a message of a partial exchange becomes text (its calls or results rendered as
//! the transcript renders them, the user's side for results, the assistant's for calls); and
//! where turns must alternate, neighbours of one side join, a short user line opens a body that
//! would start with the assistant, and a short assistant line closes one that would end with
//! the user, before the host's instruction.

use serde_json::Value;

use crate::format::{Format, Turn};
use crate::message::{transcript, Block, Message, Role, Synthetic};
use crate::structure::Structure;

/// Opens a body that would otherwise start with the assistant (formats whose turns alternate).
const OPENING: &str = "(The conversation to summarize follows.)";
/// Closes a body that would otherwise end with the user (formats whose turns alternate).
const CLOSING: &str = "(End of the conversation to summarize.)";

const KIND: &str = "SUMMARIZE_REQUEST";

/// `messages` as a valid request body in `format`, once the host appends a user message.
pub(crate) fn request_body(format: Format, messages: &[&Message]) -> Vec<Value> {
    let st = Structure::analyze(format, messages, 0);
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 2);
    for (i, m) in messages.iter().enumerate() {
        let u = st.unit(i);
        let tool_work = m.has_calls() || m.has_results() || m.role == Role::Tool;
        // A Responses reasoning item goes with the rest of its response: as it is only when that
        // follows it as it is.
        let reasoning = m.role == Role::Assistant && !m.blocks.is_empty() && m.blocks.iter().all(|b| matches!(b, Block::Thinking(_)));
        let cut_reasoning = reasoning && (if u.exchange { !u.complete } else { u.span.end == i + 1 });
        if (!tool_work && !cut_reasoning) || (u.exchange && u.complete) {
            out.push((*m).clone());
        } else {
            let role = if m.role == Role::Assistant { Role::Assistant } else { Role::User };
            let text = transcript(&[m]);
            let text = if text.trim().is_empty() { "(tool work)".to_string() } else { text.trim_end().to_string() };
            out.push(format.synthesize(role, text, Synthetic::new(KIND, None)));
        }
    }
    if format.needs_alternation() {
        out = alternate(format, out);
    }
    out.into_iter().map(|m| m.wire.into_value()).collect()
}

/// Joins neighbours of one side, and opens and closes the body with the side the provider
/// wants (the user's first; the assistant's last, before the host's instruction).
fn alternate(format: Format, messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 2);
    for m in messages {
        match out.last() {
            Some(prev) if format.turn(prev.role) == format.turn(m.role) => {
                let prev = out.pop().expect("a last message");
                out.push(format.join(&prev, &m, Synthetic::new(KIND, None)));
            }
            _ => out.push(m),
        }
    }
    let side = |m: &Message| format.turn(m.role);
    if out.first().is_none_or(|m| side(m) != Turn::User) {
        out.insert(0, format.synthesize(Role::User, OPENING.into(), Synthetic::new(KIND, None)));
    }
    if out.last().is_some_and(|m| side(m) == Turn::User) {
        out.push(format.synthesize(Role::Assistant, CLOSING.into(), Synthetic::new(KIND, None)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(format: Format, v: Value) -> Vec<Message> {
        v.as_array().unwrap().iter().enumerate().map(|(i, m)| format.parse(i, m).unwrap()).collect()
    }

    fn with_instruction(format: Format, body: Vec<Value>) -> Vec<Message> {
        let mut all = body;
        all.push(json!({"role": "user", "content": "Summarize the conversation above."}));
        parse(format, Value::Array(all))
    }

    #[test]
    fn a_partial_exchange_becomes_text_and_whole_ones_stay() {
        let f = Format::OpenAi;
        let m = parse(
            f,
            json!([
                {"role": "assistant", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "one"},
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "h", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "three"}
            ]),
        );
        let refs: Vec<&Message> = m.iter().collect();
        let body = request_body(f, &refs);
        assert_eq!(body[0]["role"], "assistant");
        assert!(body[0].get("tool_calls").is_none(), "the call without its second result is text: {}", body[0]);
        assert!(body[0]["content"].as_str().unwrap().contains("name=\"g\""));
        assert_eq!(body[1]["role"], "user");
        assert!(body[1]["content"].as_str().unwrap().contains("one"));
        assert_eq!(body[2], m[2].wire, "the whole exchange stays");
        assert_eq!(body[3], m[3].wire);
        assert!(f.validate_request(&with_instruction(f, body)).is_empty());
    }

    #[test]
    fn anthropic_bodies_open_with_the_user_and_close_with_the_assistant() {
        let f = Format::Anthropic;
        let m = parse(
            f,
            json!([
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]}
            ]),
        );
        let refs: Vec<&Message> = m.iter().collect();
        let body = request_body(f, &refs);
        assert_eq!(body.len(), 4);
        assert_eq!((body[0]["role"].as_str(), body[3]["role"].as_str()), (Some("user"), Some("assistant")));
        assert_eq!(body[1], m[0].wire);
        assert!(f.validate_request(&with_instruction(f, body)).is_empty());
        // A single result, without its call: text on the user's side.
        let body = request_body(f, &refs[1..]);
        assert!(f.validate_request(&with_instruction(f, body.clone())).is_empty(), "{body:?}");
        assert!(!body.iter().any(|v| v.to_string().contains("tool_result\"")), "{body:?}");
    }
}
