//! Anthropic Messages API messages (`messages` of `client.messages.create`).
//!
//! Roles are `user` and `assistant`; the system prompt is the request's top-level `system`
//! parameter, which stays with the host (count it in `reservedTokens`), so a `system` message
//! is refused with a pointer there. Content is a string or a list of blocks: `text`, `image`,
//! `document`, `thinking` / `redacted_thinking`, `tool_use` (assistant), `tool_result` (user;
//! string or block content, `is_error`), and any other block (server tools, search results,
//! a server-side `compaction`, future types), which is kept as it came. An assistant message
//! with a `compaction` block is never replaced, and what comes before the latest one is already
//! condensed (see `strategy::provider`). `cache_control`, `citations` and unknown fields
//! ride along in the wire value. A user message that carries tool results is a tool message
//! to the engine, with one `ToolResult` block per result.
//!
//! Thinking. Anthropic checks the signature of every `thinking` block and the encrypted data of
//! every `redacted_thinking` block it gets back; during a tool-use loop the assistant's thinking
//! must come back complete and unmodified, while thinking of earlier turns may be left out
//! (Anthropic's extended-thinking docs, "Preserving thinking blocks"). So the format never edits
//! thinking: a rebuilt assistant message keeps every thinking block byte-exact, in its original
//! order, at the front of its content; thinking disappears only when the whole message is
//! replaced by a summary of earlier turns, which the docs allow. Thinking is counted in full,
//! which overstates models that drop earlier turns' thinking from the context, never
//! understates.
//!
//! Token estimates for what the tokenizer cannot read: an image counts [`IMAGE_TOKENS`] (the
//! cost of the largest image Anthropic does not downscale, about 1.15 megapixels / 750), a PDF
//! or file document [`DOCUMENT_TOKENS`], a text document its text, redacted thinking a quarter
//! of its data length, any other block the estimate of its JSON text.
//!
//! Turns. The API combines consecutive user or assistant messages into one turn; the engine
//! still keeps its own messages alternating (see `strategy::turns`), and [`validate`] reports
//! lists that do not, because stricter Anthropic-compatible endpoints refuse them.

use serde_json::{json, Map, Value};

use super::{json_tokens, kept_result_parts, reread, write_input_call, Problem};
use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::message::{Block, Message, Role, Synthetic};
use crate::tokens::{estimate, O200K_WEIGHTS};

/// Fixed token estimate of an image block.
pub const IMAGE_TOKENS: u32 = 1600;
/// Fixed token estimate of a document block whose source is a PDF, a URL or a file id.
pub const DOCUMENT_TOKENS: u32 = 3000;

fn block_type(v: &Value) -> &str {
    v.get("type").and_then(Value::as_str).unwrap_or("")
}

/// A thinking block of the wire (`thinking` or `redacted_thinking`).
fn is_thinking_wire(v: &Value) -> bool {
    matches!(block_type(v), "thinking" | "redacted_thinking")
}

/// A canonical block that stands for a thinking block of the wire.
fn is_thinking_block(b: &Block) -> bool {
    match b {
        Block::Thinking(_) => true,
        Block::Opaque { raw, .. } => block_type(raw) == "redacted_thinking",
        _ => false,
    }
}

pub(crate) fn read(index: usize, v: &Value) -> Result<(Role, Vec<Block>)> {
    let obj = v.as_object().ok_or_else(|| Error::message_at(index, "", format!("expected an object, got {}", kind_of(v))))?;
    let role = match obj.get("role") {
        Some(Value::String(s)) => match s.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "system" => {
                return Err(Error::message_at(
                    index,
                    "role",
                    "\"system\" is not a message role of the Anthropic Messages API: pass the system prompt as the \
                     request's top-level `system` parameter (and count it in `reservedTokens`)",
                ))
            }
            other => return Err(Error::message_at(index, "role", format!("unknown role {other:?} (expected user or assistant)"))),
        },
        Some(other) => return Err(Error::message_at(index, "role", format!("expected a string, got {}", kind_of(other)))),
        None => return Err(Error::message_at(index, "role", "is missing")),
    };
    let mut blocks = Vec::new();
    match obj.get("content") {
        Some(Value::String(s)) => blocks.push(Block::Text(s.clone())),
        Some(Value::Array(items)) => {
            for (k, item) in items.iter().enumerate() {
                read_block(index, k, item, role, &mut blocks)?;
            }
        }
        Some(other) => {
            let got = kind_of(other);
            return Err(Error::message_at(index, "content", format!("expected a string or an array of content blocks, got {got}")));
        }
        None => return Err(Error::message_at(index, "content", "is missing")),
    }
    let role = if role == Role::User && blocks.iter().any(|b| matches!(b, Block::ToolResult { .. })) { Role::Tool } else { role };
    Ok((role, blocks))
}

fn read_block(index: usize, k: usize, item: &Value, role: Role, out: &mut Vec<Block>) -> Result<()> {
    let field = |f: &str| format!("content[{k}].{f}");
    let got = kind_of(item);
    let obj = item
        .as_object()
        .ok_or_else(|| Error::message_at(index, &format!("content[{k}]"), format!("expected a content block object, got {got}")))?;
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        _ => return Err(Error::message_at(index, &field("type"), "must be a string")),
    };
    let string = |name: &str| -> Result<String> {
        match obj.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(Error::message_at(index, &field(name), format!("must be a string, got {}", kind_of(other)))),
            None => Err(Error::message_at(index, &field(name), format!("is missing on a {ty} block"))),
        }
    };
    let only = |wanted: Role, what: &str| -> Result<()> {
        if role == wanted {
            Ok(())
        } else {
            Err(Error::message_at(index, &field("type"), format!("{ty} blocks belong in {what} messages")))
        }
    };
    match ty {
        "text" => out.push(Block::Text(string("text")?)),
        "thinking" => {
            only(Role::Assistant, "assistant")?;
            out.push(Block::Thinking(string("thinking")?));
        }
        "redacted_thinking" => {
            only(Role::Assistant, "assistant")?;
            let data = string("data")?;
            out.push(Block::Opaque { raw: item.clone(), tokens: (data.len() / 4).max(1) as u32 });
        }
        "tool_use" => {
            only(Role::Assistant, "assistant")?;
            let id = string("id")?;
            if id.is_empty() {
                return Err(Error::message_at(index, &field("id"), "is empty"));
            }
            let name = string("name")?;
            let input = obj.get("input").ok_or_else(|| Error::message_at(index, &field("input"), "is missing on a tool_use block"))?;
            out.push(Block::ToolCall { id, name, arguments: input.to_string() });
        }
        "tool_result" => {
            only(Role::User, "user")?;
            let call_id = string("tool_use_id")?;
            if call_id.is_empty() {
                return Err(Error::message_at(index, &field("tool_use_id"), "is empty"));
            }
            let is_error = match obj.get("is_error") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(Error::message_at(index, &field("is_error"), format!("must be a boolean, got {}", kind_of(other))))
                }
            };
            let mut nested = Vec::new();
            let content = match obj.get("content") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => {
                    let mut texts: Vec<&str> = Vec::new();
                    for (j, part) in parts.iter().enumerate() {
                        if block_type(part) == "text" {
                            let Some(t) = part.get("text").and_then(Value::as_str) else {
                                return Err(Error::message_at(index, &field(&format!("content[{j}].text")), "must be a string"));
                            };
                            texts.push(t);
                        } else if part.is_object() {
                            nested.push(Block::Opaque { raw: part.clone(), tokens: opaque_tokens(part) });
                        } else {
                            let got = kind_of(part);
                            return Err(Error::message_at(
                                index,
                                &field(&format!("content[{j}]")),
                                format!("expected a content block object, got {got}"),
                            ));
                        }
                    }
                    texts.join("\n")
                }
                Some(other) => {
                    let got = kind_of(other);
                    return Err(Error::message_at(
                        index,
                        &field("content"),
                        format!("expected a string or an array of content blocks, got {got}"),
                    ));
                }
            };
            out.push(Block::ToolResult { call_id, content, is_error });
            out.extend(nested);
        }
        _ => out.push(Block::Opaque { raw: item.clone(), tokens: opaque_tokens(item) }),
    }
    Ok(())
}

/// The estimate for a block the tokenizer does not read (see the module docs).
fn opaque_tokens(v: &Value) -> u32 {
    match block_type(v) {
        "image" => IMAGE_TOKENS,
        "document" => {
            let source = v.get("source");
            match source.and_then(|s| s.get("type")).and_then(Value::as_str) {
                Some("text") => match source.and_then(|s| s.get("data")).and_then(Value::as_str) {
                    Some(text) => estimate(text, &O200K_WEIGHTS).saturating_add(10),
                    None => json_tokens(v),
                },
                Some("content") => json_tokens(v),
                _ => DOCUMENT_TOKENS,
            }
        }
        _ => json_tokens(v),
    }
}

/// Rebuilds `original` with new blocks, keeping every wire field the blocks do not describe:
/// the message's unknown fields, `tool_use` blocks whose call did not change (with their
/// `cache_control`), each `tool_result`'s own fields and non-text content, and every thinking
/// block byte-exact at the front.
pub(crate) fn rebuild(original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
    let mut wire: Map<String, Value> = original.wire.as_object().cloned().unwrap_or_default();
    let items: Vec<&Value> = match original.wire.get("content") {
        Some(Value::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    };
    let thinking: Vec<Value> = items.iter().filter(|b| is_thinking_wire(b)).map(|b| (*b).clone()).collect();
    let new: Vec<Block> = blocks.into_iter().filter(|b| !is_thinking_block(b)).collect();
    let string_content = matches!(original.wire.get("content"), Some(Value::String(_)));
    let content = if thinking.is_empty() && string_content && new.iter().all(|b| matches!(b, Block::Text(_))) {
        Value::String(
            new.iter().filter_map(|b| if let Block::Text(t) = b { Some(t.as_str()) } else { None }).collect::<Vec<_>>().join("\n"),
        )
    } else {
        let mut out = thinking;
        write_blocks(&items, &new, &mut out);
        Value::Array(out)
    };
    wire.insert("content".into(), content);
    if !wire.contains_key("role") {
        wire.insert("role".into(), Value::String(role_name(original.role).into()));
    }
    reread(read, Value::Object(wire), original.role, synthetic)
}

fn write_blocks(items: &[&Value], new: &[Block], out: &mut Vec<Value>) {
    let mut consumed = vec![false; new.len()];
    for (i, b) in new.iter().enumerate() {
        if consumed[i] {
            continue;
        }
        match b {
            Block::Text(t) => {
                if !t.is_empty() {
                    out.push(json!({"type": "text", "text": t}));
                }
            }
            Block::Thinking(_) => {}
            Block::ToolCall { id, name, arguments } => {
                let orig = items.iter().find(|v| block_type(v) == "tool_use" && v.get("id").and_then(Value::as_str) == Some(id));
                out.push(write_input_call(
                    orig.copied(),
                    "name",
                    name,
                    arguments,
                    |input| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                ));
            }
            Block::ToolResult { call_id, content, is_error } => {
                let orig =
                    items.iter().find(|v| block_type(v) == "tool_result" && v.get("tool_use_id").and_then(Value::as_str) == Some(call_id));
                let orig_parts: &[Value] = orig.and_then(|v| v.get("content")).and_then(Value::as_array).map_or(&[], Vec::as_slice);
                let nested = kept_result_parts(new, i, orig_parts, &mut consumed);
                let body = if nested.is_empty() {
                    Value::String(content.clone())
                } else {
                    let mut parts = Vec::new();
                    if !content.is_empty() {
                        parts.push(json!({"type": "text", "text": content}));
                    }
                    parts.extend(nested);
                    Value::Array(parts)
                };
                let mut v = match orig {
                    Some(v) => (*v).clone(),
                    None => json!({"type": "tool_result", "tool_use_id": call_id}),
                };
                v["content"] = body;
                if *is_error {
                    v["is_error"] = Value::Bool(true);
                } else if v.get("is_error").is_some() {
                    v["is_error"] = Value::Bool(false);
                }
                out.push(v);
            }
            Block::Opaque { raw, .. } => out.push(raw.clone()),
        }
    }
}

/// A message written by the engine: its text as string content.
pub(crate) fn synthesize(role: Role, text: String, synthetic: Synthetic) -> Message {
    let wire = json!({"role": role_name(role), "content": text});
    reread(read, wire, role, synthetic)
}

/// `neighbor` with `text` joined as a text block (see [`super::Format::merge`]).
pub(crate) fn merge(neighbor: &Message, text: &str, note_first: bool, synthetic: Synthetic) -> Message {
    let mut wire: Map<String, Value> = neighbor.wire.as_object().cloned().unwrap_or_default();
    let mut items: Vec<Value> = match neighbor.wire.get("content") {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(s)) if !s.is_empty() => vec![json!({"type": "text", "text": s})],
        _ => Vec::new(),
    };
    let note = json!({"type": "text", "text": text});
    if note_first {
        let at = items.iter().take_while(|b| is_thinking_wire(b) || block_type(b) == "tool_result").count();
        items.insert(at, note);
    } else {
        items.push(note);
    }
    wire.insert("content".into(), Value::Array(items));
    reread(read, Value::Object(wire), neighbor.role, synthetic)
}

/// `first` and `second`, two messages of one side, as one: their contents in order, except
/// that the blocks Anthropic wants first (thinking, tool results) go first. The wire fields
/// other than content are `second`'s.
pub(crate) fn join(first: &Message, second: &Message, synthetic: Synthetic) -> Message {
    let items = |m: &Message| -> Vec<Value> {
        match m.wire.get("content") {
            Some(Value::Array(a)) => a.clone(),
            Some(Value::String(s)) if !s.is_empty() => vec![json!({"type": "text", "text": s})],
            _ => Vec::new(),
        }
    };
    let all: Vec<Value> = items(first).into_iter().chain(items(second)).collect();
    let (mut front, rest): (Vec<Value>, Vec<Value>) = all.into_iter().partition(|b| is_thinking_wire(b) || block_type(b) == "tool_result");
    front.extend(rest);
    let mut wire: Map<String, Value> = second.wire.as_object().cloned().unwrap_or_default();
    wire.insert("content".into(), Value::Array(front));
    reread(read, Value::Object(wire), second.role, synthetic)
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Assistant => "assistant",
        _ => "user",
    }
}

/// The `context_reload` tool as an Anthropic tool definition.
pub(crate) fn reload_tool(description: &str, parameters: Value) -> Value {
    json!({
        "name": crate::format::RELOAD_TOOL_NAME,
        "description": description,
        "input_schema": parameters
    })
}

/// Anthropic's own rules, beyond tool pairing:
///
/// - `ROLES_NOT_ALTERNATING`: two user or two assistant messages in a row. The Messages API
///   merges them into one turn; stricter Anthropic-compatible endpoints reject them.
/// - `TOOL_RESULT_NOT_FIRST`: in a user message, a `tool_result` block after another block
///   (the API wants the results first, text after them).
/// - `THINKING_ONLY`: an assistant message made only of thinking blocks.
/// - `EMPTY_CONTENT`: a message with empty content (allowed only for a final assistant
///   message) or an empty text block.
pub(crate) fn validate<M: AsRef<Message>>(messages: &[M]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut prev_role: Option<&str> = None;
    for (i, m) in messages.iter().enumerate() {
        let m = m.as_ref();
        let role = m.wire.get("role").and_then(Value::as_str).unwrap_or("");
        if prev_role == Some(role) {
            problems.push(Problem {
                index: i,
                code: "ROLES_NOT_ALTERNATING",
                message: format!(
                    "messages {} and {i} are both {role} messages; the Messages API merges them into one turn, \
                     stricter endpoints reject them",
                    i - 1
                ),
            });
        }
        prev_role = Some(role);
        let last = i + 1 == messages.len();
        let items: &[Value] = match m.wire.get("content") {
            Some(Value::String(s)) => {
                if s.is_empty() && !(last && role == "assistant") {
                    problems.push(empty(i, "has empty content"));
                }
                continue;
            }
            Some(Value::Array(a)) => a,
            _ => continue,
        };
        if items.is_empty() && !(last && role == "assistant") {
            problems.push(empty(i, "has no content blocks"));
        }
        if let Some(k) = items.iter().position(|b| block_type(b) == "text" && b.get("text").and_then(Value::as_str) == Some("")) {
            problems.push(empty(i, &format!("has an empty text block (content[{k}])")));
        }
        if role == "user" {
            if let Some(first_other) = items.iter().position(|b| block_type(b) != "tool_result") {
                if let Some(k) = items.iter().skip(first_other).position(|b| block_type(b) == "tool_result") {
                    problems.push(Problem {
                        index: i,
                        code: "TOOL_RESULT_NOT_FIRST",
                        message: format!(
                            "message {i} has a tool_result block (content[{}]) after a {} block; tool results must come first",
                            first_other + k,
                            block_type(&items[first_other])
                        ),
                    });
                }
            }
        } else if !items.is_empty() && items.iter().all(is_thinking_wire) {
            problems.push(Problem {
                index: i,
                code: "THINKING_ONLY",
                message: format!("assistant message {i} is made only of thinking blocks"),
            });
        }
    }
    problems
}

fn empty(index: usize, what: &str) -> Problem {
    Problem { index, code: "EMPTY_CONTENT", message: format!("message {index} {what}") }
}

/// The Anthropic Messages API, as the table of formats in [`super`] registers it.
pub(crate) struct Anthropic;

impl super::WireFormat for Anthropic {
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
        super::Words { call: "tool_use", results: "tool_result blocks", model: "assistant message" }
    }
    fn id_field(&self, m: &Message, id: &str, result: bool) -> String {
        let (kind, key) = if result { ("tool_result", "tool_use_id") } else { ("tool_use", "id") };
        super::content_id_field(m, id, kind, key)
    }
    fn price_list(&self) -> super::PriceList {
        super::PriceList::Anthropic
    }
    fn validate(&self, messages: &[&Message], request: bool) -> Vec<Problem> {
        let mut problems = super::pairing(self, messages, request);
        problems.extend(validate(messages));
        problems
    }
    fn needs_alternation(&self) -> bool {
        true
    }
    fn provider_compaction(&self, m: &Message) -> bool {
        m.blocks.iter().any(|b| matches!(b, Block::Opaque { raw, .. } if raw.get("type").and_then(Value::as_str) == Some("compaction")))
    }
    fn merge(&self, neighbor: &Message, text: String, note_first: bool, mark: Synthetic) -> Message {
        merge(neighbor, &text, note_first, mark)
    }
    fn join(&self, first: &Message, second: &Message, mark: Synthetic) -> Message {
        join(first, second, mark)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(index: usize, v: &Value) -> Result<Message> {
        crate::format::Format::Anthropic.parse(index, v)
    }

    fn syn() -> Synthetic {
        Synthetic::in_place("TEST", "u-1")
    }

    #[test]
    fn reads_every_block() {
        let m = parse(
            0,
            &json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "let me see", "signature": "sig"},
                {"type": "redacted_thinking", "data": "abcdefgh"},
                {"type": "text", "text": "Reading.", "citations": []},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.rs"}, "cache_control": {"type": "ephemeral"}},
                {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "x"}}
            ]}),
        )
        .unwrap();
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.blocks[0], Block::Thinking("let me see".into()));
        assert!(matches!(&m.blocks[1], Block::Opaque { tokens: 2, .. }));
        assert_eq!(m.call_ids().collect::<Vec<_>>(), vec!["t1"]);
        assert!(matches!(&m.blocks[4], Block::Opaque { .. }), "server tools are kept as they came");

        let m = parse(
            1,
            &json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "fn main() {}"},
                {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": [
                    {"type": "text", "text": "denied"}, {"type": "image", "source": {"type": "url", "url": "u"}}]},
                {"type": "text", "text": "go on"}
            ]}),
        )
        .unwrap();
        assert_eq!(m.role, Role::Tool, "a user message with results belongs to the exchange");
        assert_eq!(m.result_ids().collect::<Vec<_>>(), vec!["t1", "t2"]);
        assert_eq!(m.blocks[1], Block::ToolResult { call_id: "t2".into(), content: "denied".into(), is_error: true });
        assert!(matches!(&m.blocks[2], Block::Opaque { tokens: IMAGE_TOKENS, .. }));
        let pdf = json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}});
        let txt = json!({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello world"}});
        let m = parse(2, &json!({"role": "user", "content": [pdf, txt]})).unwrap();
        assert!(matches!(&m.blocks[0], Block::Opaque { tokens: DOCUMENT_TOKENS, .. }));
        assert!(matches!(&m.blocks[1], Block::Opaque { tokens, .. } if *tokens < 20));
    }

    #[test]
    fn errors_name_index_and_field() {
        let cases = [
            (json!({"role": "system", "content": "x"}), "role"),
            (json!({"role": "user"}), "content"),
            (json!({"role": "user", "content": 3}), "content"),
            (json!({"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}), "content[0].type"),
            (json!({"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "a"}]}), "content[0].type"),
            (json!({"role": "assistant", "content": [{"type": "tool_use", "id": "", "name": "f", "input": {}}]}), "content[0].id"),
            (json!({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f"}]}), "content[0].input"),
            (json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}]}), "content[0].is_error"),
            (json!({"role": "user", "content": [{"type": "text"}]}), "content[0].text"),
            (json!({"role": "user", "content": ["hi"]}), "content[0]"),
        ];
        for (v, field) in cases {
            let e = parse(4, &v).unwrap_err();
            assert_eq!(e.index(), Some(4), "{v}");
            assert_eq!(e.field(), Some(field), "{v}: {}", e.message());
        }
    }

    #[test]
    fn rebuild_keeps_thinking_ids_and_fields() {
        let thinking = json!({"type": "thinking", "thinking": "plan", "signature": "sig-1"});
        let call = json!({"type": "tool_use", "id": "t1", "name": "read", "input": {"p": 1}, "cache_control": {"type": "ephemeral"}});
        let text = json!({"type": "text", "text": "long explanation"});
        let orig = parse(0, &json!({"role": "assistant", "id": "msg_1", "content": [thinking, text, call]})).unwrap();
        // A strategy that drops thinking and shrinks the text.
        let out = rebuild(&orig, vec![Block::Text("short".into()), orig.blocks[2].clone()], syn());
        let short = json!({"type": "text", "text": "short"});
        assert_eq!(out.wire, json!({"role": "assistant", "id": "msg_1", "content": [thinking, short, call]}));
        assert_eq!(out.blocks[0], Block::Thinking("plan".into()));

        let orig = parse(
            0,
            &json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "aaaa", "cache_control": {"type": "ephemeral"}},
                {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "bbbb"}, {"type": "image", "source": {}}]}
            ]}),
        )
        .unwrap();
        let blocks = orig
            .blocks
            .iter()
            .map(|b| match b {
                Block::ToolResult { call_id, is_error, .. } => {
                    Block::ToolResult { call_id: call_id.clone(), content: format!("{call_id}!"), is_error: *is_error }
                }
                other => other.clone(),
            })
            .collect();
        let out = rebuild(&orig, blocks, syn());
        assert_eq!(
            out.wire["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "a", "content": "a!", "cache_control": {"type": "ephemeral"}},
                {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "b!"}, {"type": "image", "source": {}}]}
            ])
        );
        assert_eq!(out.role, Role::Tool);
        let plain = parse(0, &json!({"role": "user", "content": "a long question"})).unwrap();
        assert_eq!(rebuild(&plain, vec![Block::Text("q".into())], syn()).wire, json!({"role": "user", "content": "q"}));
    }

    #[test]
    fn merge_puts_notes_after_what_must_come_first() {
        let a = parse(
            0,
            &json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "answer"}]}),
        )
        .unwrap();
        let out = merge(&a, "note", true, syn());
        assert_eq!(out.wire["content"][0]["type"], "thinking");
        assert_eq!(out.wire["content"][1], json!({"type": "text", "text": "note"}));
        let u = parse(0, &json!({"role": "user", "content": "question"})).unwrap();
        let out = merge(&u, "note", false, syn());
        assert_eq!(out.wire["content"], json!([{"type": "text", "text": "question"}, {"type": "text", "text": "note"}]));
        assert!(out.synthetic.unwrap().in_place);
    }

    #[test]
    fn validator_rules() {
        let msgs: Vec<Message> = [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "user", "content": "again"}),
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "tool_result", "tool_use_id": "z"}]}),
            json!({"role": "assistant", "content": []}),
            json!({"role": "user", "content": [{"type": "text", "text": ""}]}),
            json!({"role": "assistant", "content": ""}),
        ]
        .iter()
        .enumerate()
        .map(|(i, v)| parse(i, v).unwrap())
        .collect();
        let codes: Vec<(usize, &str)> = validate(&msgs).iter().map(|p| (p.index, p.code)).collect();
        let want =
            [(1, "ROLES_NOT_ALTERNATING"), (2, "THINKING_ONLY"), (3, "TOOL_RESULT_NOT_FIRST"), (4, "EMPTY_CONTENT"), (5, "EMPTY_CONTENT")];
        assert_eq!(codes, want);
    }
}
