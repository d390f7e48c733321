//! Vercel AI SDK `ModelMessage`s (the `messages` of `generateText` and `streamText`).
//!
//! Roles `system` (string content), `user` (string, or `text`, `image` and `file` parts),
//! `assistant` (string, or `text`, `file`, `reasoning`, `tool-call`, provider-executed
//! `tool-result` and `tool-approval-request` parts) and `tool` (`tool-result` and
//! `tool-approval-response` parts). `providerOptions`, on messages and parts, and unknown
//! fields ride along in the wire value; part types this build does not know are kept as they
//! came. A tool message answers with one `ToolResult` block per `tool-result` part; the text of
//! a result is its `output`: the `value` of `text` / `error-text`, the compact JSON of `json` /
//! `error-json`, the text parts of `content` (its media kept as they came), the `reason` of
//! `execution-denied`. Calls the provider executed (`providerExecuted: true`) and their results
//! in the assistant message are the provider's business and are kept as they came; a tool
//! message holding only approval responses stays inside its exchange.
//!
//! Thinking: `reasoning` parts carry provider signatures in `providerOptions` (Anthropic's
//! `signature` and `redactedData`), so, as in the Anthropic format, a rebuilt assistant message
//! keeps every reasoning part byte-exact at the front of its content.
//!
//! Binary data (`Uint8Array`, `ArrayBuffer`) cannot cross as JSON: the JavaScript wrapper turns
//! it into base64 text, which the AI SDK accepts wherever it accepts bytes. Token estimates: an
//! image part, or a file or tool-output part with an `image/*` media type, counts
//! [`IMAGE_TOKENS`]; any other file [`FILE_TOKENS`]; parts kept as they came the estimate of
//! their JSON text.

use serde_json::{json, Map, Value};

use super::json_tokens;
use super::openai::role_name;
use super::{kept_result_parts, reread, write_input_call, Problem};
use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::message::{Block, Message, Role, Synthetic};

/// Fixed token estimate of an image (Anthropic's largest undownscaled image; above OpenAI's
/// high-detail 1024×1024).
pub const IMAGE_TOKENS: u32 = 1600;
/// Fixed token estimate of a file that is not an image (a PDF page or a few).
pub const FILE_TOKENS: u32 = 3000;

fn part_type(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

fn is_reasoning_block(b: &Block) -> bool {
    matches!(b, Block::Thinking(_))
}

fn media_tokens(v: &Value) -> u32 {
    let media = v.get("mediaType").and_then(Value::as_str).unwrap_or("");
    match part_type(v) {
        "image" | "image-data" | "image-url" | "image-file-id" => IMAGE_TOKENS,
        "file" | "file-data" | "file-url" | "file-id" | "media" if media.starts_with("image/") => IMAGE_TOKENS,
        "file" | "file-data" | "file-url" | "file-id" | "media" => FILE_TOKENS,
        _ => json_tokens(v),
    }
}

pub(crate) fn read(index: usize, v: &Value) -> Result<(Role, Vec<Block>)> {
    let obj = v.as_object().ok_or_else(|| Error::message_at(index, "", format!("expected an object, got {}", kind_of(v))))?;
    let role = match obj.get("role") {
        Some(Value::String(s)) => match s.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => {
                return Err(Error::message_at(index, "role", format!("unknown role {other:?} (expected system, user, assistant or tool)")))
            }
        },
        Some(other) => return Err(Error::message_at(index, "role", format!("expected a string, got {}", kind_of(other)))),
        None => return Err(Error::message_at(index, "role", "is missing")),
    };
    let mut blocks = Vec::new();
    match (role, obj.get("content")) {
        (_, None) => return Err(Error::message_at(index, "content", "is missing")),
        (Role::Tool, Some(Value::String(_))) => {
            return Err(Error::message_at(index, "content", "of a tool message must be an array of tool-result parts"))
        }
        (_, Some(Value::String(s))) => blocks.push(Block::Text(s.clone())),
        (Role::System, Some(other)) => {
            return Err(Error::message_at(index, "content", format!("of a system message must be a string, got {}", kind_of(other))))
        }
        (_, Some(Value::Array(parts))) => {
            for (k, part) in parts.iter().enumerate() {
                read_part(index, k, part, role, &mut blocks)?;
            }
        }
        (_, Some(other)) => {
            return Err(Error::message_at(index, "content", format!("expected a string or an array of parts, got {}", kind_of(other))))
        }
    }
    Ok((role, blocks))
}

fn read_part(index: usize, k: usize, part: &Value, role: Role, out: &mut Vec<Block>) -> Result<()> {
    let field = |f: &str| format!("content[{k}].{f}");
    let obj = part
        .as_object()
        .ok_or_else(|| Error::message_at(index, &format!("content[{k}]"), format!("expected a part object, got {}", kind_of(part))))?;
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        _ => return Err(Error::message_at(index, &field("type"), "must be a string")),
    };
    let string = |name: &str| -> Result<String> {
        match obj.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(Error::message_at(index, &field(name), format!("must be a string, got {}", kind_of(other)))),
            None => Err(Error::message_at(index, &field(name), format!("is missing on a {ty} part"))),
        }
    };
    let id = |name: &str| -> Result<String> {
        let s = string(name)?;
        if s.is_empty() {
            return Err(Error::message_at(index, &field(name), "is empty"));
        }
        Ok(s)
    };
    let misplaced = |what: &str| Err(Error::message_at(index, &field("type"), format!("{ty} parts belong in {what} messages")));
    let provider_executed = obj.get("providerExecuted") == Some(&Value::Bool(true));
    if role == Role::Tool && !matches!(ty, "tool-result" | "tool-approval-response") {
        return Err(Error::message_at(
            index,
            &field("type"),
            format!("a tool message holds tool-result and tool-approval-response parts, not {ty}"),
        ));
    }
    match ty {
        "text" => out.push(Block::Text(string("text")?)),
        "reasoning" if role == Role::Assistant => out.push(Block::Thinking(string("text")?)),
        "reasoning" => return misplaced("assistant"),
        "tool-call" if role == Role::Assistant => {
            let call_id = id("toolCallId")?;
            let name = string("toolName")?;
            if provider_executed {
                out.push(Block::Opaque { raw: part.clone(), tokens: json_tokens(part) });
            } else {
                let arguments = obj.get("input").map(Value::to_string).unwrap_or_default();
                out.push(Block::ToolCall { id: call_id, name, arguments });
            }
        }
        "tool-call" => return misplaced("assistant"),
        "tool-result" if role == Role::Tool => {
            let call_id = id("toolCallId")?;
            let output = obj.get("output").ok_or_else(|| Error::message_at(index, &field("output"), "is missing on a tool-result part"))?;
            let (content, is_error, nested) = read_output(index, &field("output"), output)?;
            out.push(Block::ToolResult { call_id, content, is_error });
            out.extend(nested);
        }
        // Results of tools the provider ran come back inside the assistant message.
        "tool-result" if role == Role::Assistant => out.push(Block::Opaque { raw: part.clone(), tokens: json_tokens(part) }),
        "tool-result" => return misplaced("tool"),
        "tool-approval-request" if role == Role::Assistant => {
            id("approvalId")?;
            out.push(Block::Opaque { raw: part.clone(), tokens: json_tokens(part) });
        }
        "tool-approval-request" => return misplaced("assistant"),
        "tool-approval-response" if role == Role::Tool => {
            id("approvalId")?;
            out.push(Block::Opaque { raw: part.clone(), tokens: json_tokens(part) });
        }
        "tool-approval-response" => return misplaced("tool"),
        _ => out.push(Block::Opaque { raw: part.clone(), tokens: media_tokens(part) }),
    }
    Ok(())
}

/// The text of a tool output, whether it is an error, and its media parts.
fn read_output(index: usize, field: &str, output: &Value) -> Result<(String, bool, Vec<Block>)> {
    let obj = output
        .as_object()
        .ok_or_else(|| Error::message_at(index, field, format!("expected an output object ({{type, value}}), got {}", kind_of(output))))?;
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
    let value = obj.get("value");
    let text_value = || -> Result<String> {
        match value {
            Some(Value::String(s)) => Ok(s.clone()),
            _ => Err(Error::message_at(index, &format!("{field}.value"), format!("must be a string for a {ty} output"))),
        }
    };
    Ok(match ty {
        "text" => (text_value()?, false, Vec::new()),
        "error-text" => (text_value()?, true, Vec::new()),
        "json" => (value.unwrap_or(&Value::Null).to_string(), false, Vec::new()),
        "error-json" => (value.unwrap_or(&Value::Null).to_string(), true, Vec::new()),
        "execution-denied" => (obj.get("reason").and_then(Value::as_str).unwrap_or("").to_string(), false, Vec::new()),
        "content" => {
            let items = value
                .and_then(Value::as_array)
                .ok_or_else(|| Error::message_at(index, &format!("{field}.value"), "must be an array for a content output"))?;
            let mut texts: Vec<&str> = Vec::new();
            let mut nested = Vec::new();
            for item in items {
                match (part_type(item), item.get("text")) {
                    ("text", Some(Value::String(t))) => texts.push(t),
                    _ => nested.push(Block::Opaque { raw: item.clone(), tokens: media_tokens(item) }),
                }
            }
            (texts.join("\n"), false, nested)
        }
        // A later output type: its JSON is what the model would read.
        _ => (output.to_string(), false, Vec::new()),
    })
}

/// Rebuilds `original` with new blocks, keeping every wire field the blocks do not describe:
/// the message's `providerOptions` and unknown fields, unchanged `tool-call` parts, each
/// `tool-result` part's `toolName` and options (its output rewritten as text of the same kind),
/// and every reasoning part byte-exact at the front.
pub(crate) fn rebuild(original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
    let mut wire: Map<String, Value> = original.wire.as_object().cloned().unwrap_or_default();
    let parts: Vec<&Value> = match original.wire.get("content") {
        Some(Value::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    };
    let reasoning: Vec<Value> = parts.iter().filter(|p| part_type(p) == "reasoning").map(|p| (*p).clone()).collect();
    let new: Vec<Block> = blocks.into_iter().filter(|b| !is_reasoning_block(b)).collect();
    let all_text = reasoning.is_empty() && new.iter().all(|b| matches!(b, Block::Text(_)));
    let string_content = matches!(original.wire.get("content"), Some(Value::String(_)));
    let content = if original.role == Role::System || (all_text && string_content) {
        let texts: Vec<&str> = new.iter().filter_map(|b| if let Block::Text(t) = b { Some(t.as_str()) } else { None }).collect();
        Value::String(texts.join("\n"))
    } else {
        let mut out = reasoning;
        write_parts(&parts, &new, &mut out);
        Value::Array(out)
    };
    wire.insert("content".into(), content);
    if !wire.contains_key("role") {
        wire.insert("role".into(), Value::String(role_name(original.role).into()));
    }
    reread(read, Value::Object(wire), original.role, synthetic)
}

fn write_parts(parts: &[&Value], new: &[Block], out: &mut Vec<Value>) {
    let mut consumed = vec![false; new.len()];
    for (i, b) in new.iter().enumerate() {
        if consumed[i] {
            continue;
        }
        match b {
            Block::Text(t) => out.push(json!({"type": "text", "text": t})),
            Block::Thinking(_) => {}
            Block::ToolCall { id, name, arguments } => {
                let orig = parts.iter().find(|p| part_type(p) == "tool-call" && p.get("toolCallId").and_then(Value::as_str) == Some(id));
                out.push(write_input_call(
                    orig.copied(),
                    "toolName",
                    name,
                    arguments,
                    |input| json!({"type": "tool-call", "toolCallId": id, "toolName": name, "input": input}),
                ));
            }
            Block::ToolResult { call_id, content, is_error } => {
                let orig =
                    parts.iter().find(|p| part_type(p) == "tool-result" && p.get("toolCallId").and_then(Value::as_str) == Some(call_id));
                let orig_output = orig.and_then(|p| p.get("output"));
                let orig_items: &[Value] = orig_output.and_then(|o| o.get("value")).and_then(Value::as_array).map_or(&[], Vec::as_slice);
                let nested = kept_result_parts(new, i, orig_items, &mut consumed);
                let output = write_output(orig_output, content, *is_error, nested);
                let mut p = match orig {
                    Some(p) => (*p).clone(),
                    None => json!({"type": "tool-result", "toolCallId": call_id, "toolName": ""}),
                };
                p["output"] = output;
                out.push(p);
            }
            Block::Opaque { raw, .. } => out.push(raw.clone()),
        }
    }
}

/// A tool output carrying `text`, of the original's kind where text can stand in for it.
fn write_output(orig: Option<&Value>, text: &str, is_error: bool, nested: Vec<Value>) -> Value {
    let ty = orig.and_then(|o| o.get("type")).and_then(Value::as_str).unwrap_or("");
    let mut out = match (ty, orig) {
        ("text" | "error-text", Some(o)) => {
            let mut o = o.clone();
            o["value"] = Value::String(text.to_string());
            o
        }
        ("execution-denied", Some(o)) => {
            let mut o = o.clone();
            o["reason"] = Value::String(text.to_string());
            o
        }
        ("content", Some(o)) => {
            let mut o = o.clone();
            let mut items = vec![json!({"type": "text", "text": text})];
            items.extend(nested);
            o["value"] = Value::Array(items);
            o
        }
        // JSON no longer parses once shortened: it becomes text of the same kind.
        _ => json!({"type": if is_error { "error-text" } else { "text" }, "value": text}),
    };
    if let (Some(opts), Some(obj)) = (orig.and_then(|o| o.get("providerOptions")), out.as_object_mut()) {
        obj.entry("providerOptions").or_insert_with(|| opts.clone());
    }
    out
}

/// A message written by the engine. A user or assistant note carries its text as one `text`
/// part, the shape every layer of the AI SDK accepts: `ModelMessage` takes a string too, but
/// the provider-level prompt (`LanguageModelV2Prompt` and later, what a Mastra processor's
/// `processLLMRequest` and AI SDK middleware see) takes only part lists for those roles, and
/// a string there fails in the provider's conversion. A system note keeps string content, the
/// only shape a system message has.
pub(crate) fn synthesize(role: Role, text: String, synthetic: Synthetic) -> Message {
    let role = if role == Role::Tool { Role::User } else { role };
    let content = if role == Role::System { Value::String(text) } else { json!([{"type": "text", "text": text}]) };
    reread(read, json!({"role": role_name(role), "content": content}), role, synthetic)
}

/// The `context_reload` tool as an AI SDK tool definition: `description` and `inputSchema` (a
/// JSON schema; wrap it with the AI SDK's `jsonSchema()`, or use `autocontext/ai-sdk`).
pub(crate) fn reload_tool(description: &str, parameters: Value) -> Value {
    json!({
        "description": description,
        "inputSchema": parameters
    })
}

/// The AI SDK's own rule beyond tool pairing: `APPROVAL_WITHOUT_REQUEST`, a
/// `tool-approval-response` whose `approvalId` no earlier `tool-approval-request` made (the AI
/// SDK throws `ToolCallNotFoundForApprovalError`).
pub(crate) fn validate<M: AsRef<Message>>(messages: &[M]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut requested = std::collections::HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        let m = m.as_ref();
        for b in &m.blocks {
            let Block::Opaque { raw, .. } = b else { continue };
            let approval = raw.get("approvalId").and_then(Value::as_str).unwrap_or("");
            match part_type(raw) {
                "tool-approval-request" => {
                    requested.insert(approval.to_string());
                }
                "tool-approval-response" if !requested.contains(approval) => problems.push(Problem {
                    index: i,
                    code: "APPROVAL_WITHOUT_REQUEST",
                    message: format!("message {i} answers approval {approval:?}, which no earlier tool-approval-request asked for"),
                }),
                _ => {}
            }
        }
    }
    problems
}

/// The Vercel AI SDK's `ModelMessage`, as the table of formats in [`super`] registers it.
pub(crate) struct AiSdk;

impl super::WireFormat for AiSdk {
    fn read(&self, index: usize, v: &Value) -> Result<(Role, Vec<Block>)> {
        read(index, v)
    }
    fn rebuild(&self, original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
        rebuild(original, blocks, synthetic)
    }
    fn synthesize(&self, role: Role, text: String, synthetic: Synthetic) -> Message {
        synthesize(role, text, synthetic)
    }
    fn reload_tool(&self, description: &str, parameters: Value) -> Value {
        reload_tool(description, parameters)
    }
    fn reload_call_args(&self, call: &Value) -> Option<Value> {
        super::input_args(call)
    }
    fn words(&self) -> super::Words {
        super::Words { call: "tool call", results: "tool results", model: "assistant message" }
    }
    fn id_field(&self, m: &Message, id: &str, result: bool) -> String {
        let kind = if result { "tool-result" } else { "tool-call" };
        super::content_id_field(m, id, kind, "toolCallId")
    }
    fn price_list(&self) -> super::PriceList {
        super::PriceList::Anthropic
    }
    fn validate(&self, messages: &[&Message], request: bool) -> Vec<Problem> {
        let mut problems = super::pairing(self, messages, request);
        problems.extend(validate(messages));
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(index: usize, v: &Value) -> Result<Message> {
        crate::format::Format::AiSdk.parse(index, v)
    }

    fn syn() -> Synthetic {
        Synthetic::in_place("TEST", "u-1")
    }

    #[test]
    fn notes_are_part_lists_except_for_the_system() {
        // The provider-level prompt (what Mastra processors and AI SDK middleware see) takes
        // only part lists for user and assistant content.
        for (role, want) in [(Role::User, "user"), (Role::Tool, "user"), (Role::Assistant, "assistant")] {
            let m = synthesize(role, "note".into(), syn());
            assert_eq!(m.wire, json!({"role": want, "content": [{"type": "text", "text": "note"}]}));
            assert_eq!(m.blocks, vec![Block::Text("note".into())]);
            assert!(m.synthetic.is_some());
        }
        let s = synthesize(Role::System, "rules".into(), syn());
        assert_eq!(s.wire, json!({"role": "system", "content": "rules"}));
    }

    #[test]
    fn reads_every_part() {
        let m = parse(
            0,
            &json!({"role": "assistant", "content": [
                {"type": "reasoning", "text": "hmm", "providerOptions": {"anthropic": {"signature": "s"}}},
                {"type": "text", "text": "Looking."},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "read", "input": {"path": "a"}},
                {"type": "tool-call", "toolCallId": "w1", "toolName": "web_search", "input": {}, "providerExecuted": true},
                {"type": "tool-result", "toolCallId": "w1", "toolName": "web_search", "output": {"type": "json", "value": []}},
                {"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c1"}
            ]}),
        )
        .unwrap();
        assert_eq!(m.blocks[0], Block::Thinking("hmm".into()));
        assert_eq!(m.call_ids().collect::<Vec<_>>(), vec!["c1"], "provider-executed calls are the provider's");
        assert_eq!(m.blocks[2], Block::ToolCall { id: "c1".into(), name: "read".into(), arguments: "{\"path\":\"a\"}".into() });

        let m = parse(
            1,
            &json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "text", "value": "A"}},
                {"type": "tool-result", "toolCallId": "b", "toolName": "f", "output": {"type": "error-json", "value": {"code": 1}}},
                {"type": "tool-result", "toolCallId": "c", "toolName": "f", "output": {"type": "content", "value": [
                    {"type": "text", "text": "see"}, {"type": "image-data", "data": "AAAA", "mediaType": "image/png"}]}},
                {"type": "tool-result", "toolCallId": "d", "toolName": "f", "output": {"type": "execution-denied", "reason": "no"}},
                {"type": "tool-approval-response", "approvalId": "ap1", "approved": true}
            ]}),
        )
        .unwrap();
        assert_eq!(m.result_ids().collect::<Vec<_>>(), vec!["a", "b", "c", "d"]);
        assert_eq!(m.blocks[1], Block::ToolResult { call_id: "b".into(), content: "{\"code\":1}".into(), is_error: true });
        assert!(matches!(&m.blocks[3], Block::Opaque { tokens: IMAGE_TOKENS, .. }));
        assert_eq!(m.blocks[4], Block::ToolResult { call_id: "d".into(), content: "no".into(), is_error: false });
        let m = parse(2, &json!({"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "x", "approved": false}]}))
            .unwrap();
        assert_eq!(m.role, Role::Tool);
        assert!(!m.has_results());
    }

    #[test]
    fn errors_name_index_and_field() {
        let cases = [
            (json!({"role": "developer", "content": "x"}), "role"),
            (json!({"role": "system", "content": [{"type": "text", "text": "x"}]}), "content"),
            (json!({"role": "tool", "content": "x"}), "content"),
            (
                json!({"role": "user", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "f", "input": {}}]}),
                "content[0].type",
            ),
            (
                json!({"role": "user", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {}}]}),
                "content[0].type",
            ),
            (json!({"role": "tool", "content": [{"type": "text", "text": "x"}]}), "content[0].type"),
            (json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "f"}]}), "content[0].output"),
            (
                json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "", "toolName": "f", "output": {"type": "text", "value": ""}}]}),
                "content[0].toolCallId",
            ),
            (
                json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "text", "value": 3}}]}),
                "content[0].output.value",
            ),
        ];
        for (v, field) in cases {
            let e = parse(3, &v).unwrap_err();
            assert_eq!(e.index(), Some(3), "{v}");
            assert_eq!(e.field(), Some(field), "{v}: {}", e.message());
        }
    }

    #[test]
    fn rebuild_rewrites_outputs_as_text_of_their_kind() {
        let orig = parse(
            0,
            &json!({"role": "tool", "providerOptions": {"x": {}}, "content": [
                {"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "json", "value": {"big": true}}},
                {"type": "tool-result", "toolCallId": "b", "toolName": "g", "output": {"type": "error-text", "value": "long error"}}
            ]}),
        )
        .unwrap();
        let blocks = vec![
            Block::ToolResult { call_id: "a".into(), content: "short".into(), is_error: false },
            Block::ToolResult { call_id: "b".into(), content: "err".into(), is_error: true },
        ];
        let out = rebuild(&orig, blocks, syn());
        assert_eq!(
            out.wire,
            json!({"role": "tool", "providerOptions": {"x": {}}, "content": [
                {"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "text", "value": "short"}},
                {"type": "tool-result", "toolCallId": "b", "toolName": "g", "output": {"type": "error-text", "value": "err"}}
            ]})
        );
        let a = parse(
            0,
            &json!({"role": "assistant", "content": [
            {"type": "reasoning", "text": "r", "providerOptions": {"anthropic": {"signature": "s"}}},
            {"type": "text", "text": "long"},
            {"type": "tool-call", "toolCallId": "c", "toolName": "f", "input": {"k": 1}, "providerOptions": {"o": {}}}]}),
        )
        .unwrap();
        let out = rebuild(&a, vec![Block::Text("s".into()), a.blocks[2].clone()], syn());
        assert_eq!(out.wire["content"][0], a.wire["content"][0]);
        assert_eq!(out.wire["content"][1], json!({"type": "text", "text": "s"}));
        assert_eq!(out.wire["content"][2], a.wire["content"][2]);
    }

    #[test]
    fn approvals_must_answer_a_request() {
        let msgs: Vec<Message> = [
            json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": "c", "toolName": "f", "input": {}},
                {"type": "tool-approval-request", "approvalId": "ok", "toolCallId": "c"}]}),
            json!({"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "ok", "approved": true}]}),
            json!({"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "nope", "approved": true}]}),
        ]
        .iter()
        .enumerate()
        .map(|(i, v)| parse(i, v).unwrap())
        .collect();
        let codes: Vec<_> = validate(&msgs).iter().map(|p| (p.index, p.code)).collect();
        assert_eq!(codes, vec![(2, "APPROVAL_WITHOUT_REQUEST")]);
    }
}
