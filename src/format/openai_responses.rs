//! OpenAI Responses API input items (the `input` of `client.responses.create`), and the OpenAI
//! Agents SDK's spelling of the same items (what its sessions and `callModelInputFilter` hold).
//!
//! A Responses conversation is a list of items rather than of messages: `message` items (a role
//! and string or part-list content; `type` may be left out, as in `{role, content}`), one
//! `function_call` item per call, one `function_call_output` item per result, `reasoning` items,
//! and items the server reads but the engine does not (a `compaction`, hosted tool calls and
//! their outputs, `item_reference`). Each item is one canonical message. The items of one model
//! response (its reasoning, its message, its function calls) are one turn: [`continues_turn`]
//! glues them, so parallel calls open one tool exchange and a reasoning item never loses the
//! item it came with (the API refuses a reasoning item without its following item, and a
//! function call without its reasoning).
//!
//! The Agents SDK writes `callId` for `call_id` and `function_call_result` for
//! `function_call_output`; both spellings are read, and a rewritten item keeps the one it came
//! in. Items the engine writes take a shape both the API and the SDK accept: `{role: 'user',
//! content}` for notes, and for the model's side a `message` item with one `output_text` part
//! and a `status` (the SDK requires a part list there; the API refuses `input_text` in it).
//!
//! Items the engine does not read are kept as they came and never rewritten, counted as their
//! JSON text: a `compaction` item (the server's encrypted digest of what came before it) is
//! protected like a system message, and what comes before the latest one is already condensed
//! (see `strategy::provider`); any other item travels with the turn it belongs to
//! (hosted calls with the model's response, their outputs with the call before them) and may be
//! offloaded with it. Reasoning counts its summary text; its encrypted content is not counted,
//! as models read the reasoning of the current turn only.

use serde_json::{json, Map, Value};

use super::json_tokens;
use super::openai::{role_name, OPAQUE_PART_TOKENS};
use super::{kept_result_parts, reread, Problem};
use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::message::{Block, Message, Role, Synthetic};

/// What an item is, by its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A `message` item (or an easy input message without `type`).
    Message,
    /// A `function_call`.
    Call,
    /// A `function_call_output` (the SDK's `function_call_result`).
    Output,
    /// A `reasoning` item.
    Reasoning,
    /// A `compaction` item.
    Compaction,
    /// Any other item type, kept as it came.
    Other,
}

fn item_type(v: &Value) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

fn kind(v: &Value) -> Kind {
    match item_type(v) {
        None | Some("message") => Kind::Message,
        Some("function_call") => Kind::Call,
        Some("function_call_output" | "function_call_result") => Kind::Output,
        Some("reasoning") => Kind::Reasoning,
        Some("compaction") => Kind::Compaction,
        Some(_) => Kind::Other,
    }
}

/// The key holding a call id in this item: `call_id` (the API) or `callId` (the Agents SDK).
fn call_id_key(obj: &Map<String, Value>) -> &'static str {
    if !obj.contains_key("call_id") && obj.contains_key("callId") {
        "callId"
    } else {
        "call_id"
    }
}

/// Tokens of a content or output part the tokenizer cannot read: images, files and audio at
/// the OpenAI format's fixed estimate, anything else as its JSON text.
fn part_tokens(part: &Value) -> u32 {
    match item_type(part) {
        Some("input_image" | "input_file" | "input_audio" | "image" | "file" | "audio") => OPAQUE_PART_TOKENS,
        _ => json_tokens(part),
    }
}

pub(crate) fn read(index: usize, v: &Value) -> Result<(Role, Vec<Block>)> {
    let obj = v.as_object().ok_or_else(|| Error::message_at(index, "", format!("expected an item object, got {}", kind_of(v))))?;
    if let Some(t) = obj.get("type").filter(|t| !t.is_string()) {
        return Err(Error::message_at(index, "type", format!("expected a string, got {}", kind_of(t))));
    }
    let string = |field: &str, what: &str| -> Result<String> {
        match obj.get(field) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(Error::message_at(index, field, format!("must be a string, got {}", kind_of(other)))),
            None => Err(Error::message_at(index, field, format!("is missing on a {what} item"))),
        }
    };
    let call_id = |what: &str| -> Result<String> {
        let key = call_id_key(obj);
        let id = string(key, what)?;
        if id.is_empty() {
            return Err(Error::message_at(index, key, "is empty"));
        }
        Ok(id)
    };
    let (role, blocks) = match kind(v) {
        Kind::Message => read_message(index, obj)?,
        Kind::Call => {
            let id = call_id("function_call")?;
            let name = string("name", "function_call")?;
            let arguments = string("arguments", "function_call")?;
            (Role::Assistant, vec![Block::ToolCall { id, name, arguments }])
        }
        Kind::Output => {
            let call_id = call_id("function call output")?;
            let output =
                obj.get("output").ok_or_else(|| Error::message_at(index, "output", "is missing on a function call output item"))?;
            let (content, nested) = read_output(index, output)?;
            let mut blocks = vec![Block::ToolResult { call_id, content, is_error: false }];
            blocks.extend(nested);
            (Role::Tool, blocks)
        }
        Kind::Reasoning => {
            // The API's reasoning summary, or the Agents SDK's `content`.
            let parts = obj.get("summary").or_else(|| obj.get("content")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let text: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
            (Role::Assistant, vec![Block::Thinking(text.join("\n"))])
        }
        Kind::Compaction => (Role::System, vec![Block::Opaque { raw: v.clone(), tokens: json_tokens(v) }]),
        Kind::Other => {
            let ty = item_type(v).unwrap_or("");
            let answer = ty.ends_with("_output") || ty.ends_with("_result") || ty.ends_with("_response");
            let role = if answer { Role::Tool } else { Role::Assistant };
            (role, vec![Block::Opaque { raw: v.clone(), tokens: json_tokens(v) }])
        }
    };
    Ok((role, blocks))
}

fn read_message(index: usize, obj: &Map<String, Value>) -> Result<(Role, Vec<Block>)> {
    let role = match obj.get("role") {
        Some(Value::String(s)) => match s.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(Error::message_at(
                    index,
                    "role",
                    format!(
                    "unknown role {other:?} (expected user, assistant, system or developer; tool results are function_call_output items)"
                ),
                ))
            }
        },
        Some(other) => return Err(Error::message_at(index, "role", format!("expected a string, got {}", kind_of(other)))),
        None => return Err(Error::message_at(index, "role", "is missing (a message item needs a role; other items need a type)")),
    };
    let mut blocks = Vec::new();
    match obj.get("content") {
        Some(Value::String(s)) => blocks.push(Block::Text(s.clone())),
        Some(Value::Array(parts)) => {
            for (k, part) in parts.iter().enumerate() {
                let field = |f: &str| format!("content[{k}]{f}");
                let p = part
                    .as_object()
                    .ok_or_else(|| Error::message_at(index, &field(""), format!("expected a part object, got {}", kind_of(part))))?;
                let text_of = |key: &str| match p.get(key) {
                    Some(Value::String(t)) => Ok(t.clone()),
                    _ => Err(Error::message_at(index, &field(&format!(".{key}")), "must be a string")),
                };
                match p.get("type").and_then(Value::as_str).unwrap_or("") {
                    "input_text" | "output_text" | "text" => blocks.push(Block::Text(text_of("text")?)),
                    "refusal" => blocks.push(Block::Text(text_of("refusal")?)),
                    _ => blocks.push(Block::Opaque { raw: part.clone(), tokens: part_tokens(part) }),
                }
            }
        }
        Some(other) => {
            return Err(Error::message_at(index, "content", format!("expected a string or an array of parts, got {}", kind_of(other))))
        }
        None => return Err(Error::message_at(index, "content", "is missing")),
    }
    Ok((role, blocks))
}

/// The text of a function call's output and its parts the engine does not read: a string, a
/// list of `input_text` / `input_image` / `input_file` parts, or (the Agents SDK) one structured
/// `text`, `image` or `file` output.
fn read_output<'a>(index: usize, output: &'a Value) -> Result<(String, Vec<Block>)> {
    let mut texts: Vec<&str> = Vec::new();
    let mut nested = Vec::new();
    let mut read = |part: &'a Value| match (item_type(part), part.get("text")) {
        (Some("input_text" | "text" | "output_text"), Some(Value::String(t))) => texts.push(t.as_str()),
        _ => nested.push(Block::Opaque { raw: part.clone(), tokens: part_tokens(part) }),
    };
    match output {
        Value::String(s) => return Ok((s.clone(), Vec::new())),
        Value::Array(parts) => parts.iter().for_each(&mut read),
        Value::Object(_) => read(output),
        other => {
            return Err(Error::message_at(
                index,
                "output",
                format!("expected a string, an array of parts or an output object, got {}", kind_of(other)),
            ))
        }
    }
    Ok((texts.join("\n"), nested))
}

/// Whether `next` belongs to the model response `prev` belongs to: both are on the model's side
/// (reasoning, message, function and hosted calls), or `next` is the output of a hosted tool
/// (which the engine does not read) right after that response.
pub(crate) fn continues_turn(prev: &Message, next: &Message) -> bool {
    let unread_output = |m: &Message| m.role == Role::Tool && !m.has_results();
    match next.role {
        Role::Assistant => prev.role == Role::Assistant,
        Role::Tool => unread_output(next) && (prev.role == Role::Assistant || unread_output(prev)),
        _ => false,
    }
}

/// Rebuilds `original` with new blocks, keeping every field the blocks do not describe. A
/// message gets its text as one text part of the type its role takes (or as a string when it
/// was one) followed by its other parts; an output gets the result text as a string (or as an
/// `input_text` part before the parts kept); a call gets a changed name or arguments. Reasoning
/// and items the engine does not read come back as they were.
pub(crate) fn rebuild(original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
    let mut wire: Map<String, Value> = original.wire.as_object().cloned().unwrap_or_default();
    match kind(&original.wire) {
        Kind::Message => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text(t) | Block::ToolResult { content: t, .. } => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            let text = texts.join("\n");
            let opaque: Vec<Value> =
                blocks.iter().filter_map(|b| if let Block::Opaque { raw, .. } = b { Some(raw.clone()) } else { None }).collect();
            let content = if opaque.is_empty() && matches!(wire.get("content"), Some(Value::String(_))) {
                Value::String(text)
            } else {
                let mut parts = Vec::new();
                if !text.is_empty() || opaque.is_empty() {
                    parts.push(text_part(original.role, text));
                }
                parts.extend(opaque);
                Value::Array(parts)
            };
            wire.insert("content".into(), content);
        }
        Kind::Output => {
            let orig_parts: &[Value] = match original.wire.get("output") {
                Some(Value::Array(a)) => a,
                _ => &[],
            };
            let mut consumed = vec![false; blocks.len()];
            let mut texts: Vec<&str> = Vec::new();
            let mut nested = Vec::new();
            for (i, b) in blocks.iter().enumerate() {
                match b {
                    Block::ToolResult { content, .. } => {
                        texts.push(content);
                        nested.extend(kept_result_parts(&blocks, i, orig_parts, &mut consumed));
                    }
                    Block::Text(t) if !consumed[i] => texts.push(t),
                    _ => {}
                }
            }
            let text = texts.join("\n");
            let output = if nested.is_empty() {
                Value::String(text)
            } else {
                let mut parts = vec![json!({"type": "input_text", "text": text})];
                parts.extend(nested);
                Value::Array(parts)
            };
            wire.insert("output".into(), output);
        }
        Kind::Call => {
            let id = wire.get(call_id_key(&wire)).and_then(Value::as_str).unwrap_or("").to_string();
            let call = blocks.iter().find_map(|b| match b {
                Block::ToolCall { id: c, name, arguments } if *c == id => Some((name, arguments)),
                _ => None,
            });
            if let Some((name, arguments)) = call {
                if wire.get("name").and_then(Value::as_str) != Some(name) {
                    wire.insert("name".into(), Value::String(name.clone()));
                }
                if wire.get("arguments").and_then(Value::as_str) != Some(arguments) {
                    wire.insert("arguments".into(), Value::String(arguments.clone()));
                }
            }
        }
        Kind::Reasoning | Kind::Compaction | Kind::Other => {}
    }
    reread(read, Value::Object(wire), original.role, synthetic)
}

/// A text content part as `role` takes it: `output_text` on the model's side, `input_text`
/// otherwise.
fn text_part(role: Role, text: String) -> Value {
    match role {
        Role::Assistant => json!({"type": "output_text", "text": text, "annotations": []}),
        _ => json!({"type": "input_text", "text": text}),
    }
}

/// An item written by the engine: a user (or system) message with string content, or on the
/// model's side a completed assistant `message` with one `output_text` part.
pub(crate) fn synthesize(role: Role, text: String, synthetic: Synthetic) -> Message {
    let wire = match role {
        Role::Assistant => json!({"type": "message", "role": "assistant", "status": "completed", "content": [text_part(role, text)]}),
        Role::System => json!({"role": role_name(role), "content": text}),
        Role::User | Role::Tool => json!({"role": "user", "content": text}),
    };
    reread(read, wire, role, synthetic)
}

/// The `context_reload` tool as a Responses API function tool (`strict` off: its `page`
/// argument is optional).
pub(crate) fn reload_tool(description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "name": crate::format::RELOAD_TOOL_NAME,
        "description": description,
        "parameters": parameters,
        "strict": false
    })
}

/// The wire field holding a call id in item `m`.
pub(crate) fn id_field(m: &Message) -> String {
    m.wire.as_object().map_or("call_id", call_id_key).to_string()
}

/// The Responses API's own rules beyond tool pairing: `PART_TYPE_FOR_ROLE`, a content part of a
/// type the message's role does not take (the API accepts only `output_text` and `refusal` in
/// an assistant message, and neither, nor chat-style `text`, in the others); and
/// `REASONING_WITHOUT_FOLLOWER`, a reasoning item followed by something other than the rest of
/// its response (the API refuses a reasoning item without its following item).
pub(crate) fn validate<M: AsRef<Message>>(messages: &[M]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let m = m.as_ref();
        match kind(&m.wire) {
            Kind::Message => {
                let parts = m.wire.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
                for (k, p) in parts.iter().enumerate() {
                    let ty = item_type(p).unwrap_or("");
                    let wrong = match m.role {
                        Role::Assistant => !matches!(ty, "output_text" | "refusal"),
                        _ => matches!(ty, "output_text" | "refusal" | "text"),
                    };
                    if wrong {
                        let role = m.wire.get("role").and_then(Value::as_str).unwrap_or("");
                        problems.push(Problem {
                            index: i,
                            code: "PART_TYPE_FOR_ROLE",
                            message: format!("message {i} ({role}) has a {ty:?} part at content[{k}], which the Responses API refuses in a {role} message"),
                        });
                    }
                }
            }
            Kind::Reasoning if messages.get(i + 1).is_some_and(|next| next.as_ref().role != Role::Assistant) => problems.push(Problem {
                index: i,
                code: "REASONING_WITHOUT_FOLLOWER",
                message: format!(
                    "reasoning item {i} is not followed by the rest of its response (item {} is not on the model's side)",
                    i + 1
                ),
            }),
            _ => {}
        }
    }
    problems
}

/// The OpenAI Responses API's input items, as the table of formats in [`super`] registers it.
pub(crate) struct OpenAiResponses;

impl super::WireFormat for OpenAiResponses {
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
        super::openai::reload_call_args(call)
    }
    fn words(&self) -> super::Words {
        super::Words { call: "function_call", results: "function_call_output items", model: "model response" }
    }
    fn id_field(&self, m: &Message, _id: &str, _result: bool) -> String {
        id_field(m)
    }
    fn price_list(&self) -> super::PriceList {
        super::PriceList::OpenAi
    }
    fn validate(&self, messages: &[&Message], request: bool) -> Vec<Problem> {
        let mut problems = super::pairing(self, messages, request);
        problems.extend(validate(messages));
        problems
    }
    fn continues_turn(&self, prev: &Message, next: &Message) -> bool {
        continues_turn(prev, next)
    }
    fn provider_compaction(&self, m: &Message) -> bool {
        m.wire.get("type").and_then(Value::as_str) == Some("compaction")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(index: usize, v: &Value) -> Result<Message> {
        crate::format::Format::OpenAiResponses.parse(index, v)
    }

    fn syn() -> Synthetic {
        Synthetic::in_place("TEST", "u-1")
    }

    #[test]
    fn reads_every_item_in_both_spellings() {
        let m = parse(0, &json!({"role": "user", "content": "hi"})).unwrap();
        assert_eq!((m.role, m.blocks.clone()), (Role::User, vec![Block::Text("hi".into())]));
        let m = parse(1, &json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}, {"type": "input_image", "image_url": "data:x"}]})).unwrap();
        assert_eq!(m.role, Role::System);
        assert!(matches!(m.blocks[1], Block::Opaque { tokens: OPAQUE_PART_TOKENS, .. }));
        let api = parse(2, &json!({"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": "{}"})).unwrap();
        let sdk =
            parse(2, &json!({"type": "function_call", "callId": "c1", "name": "ls", "arguments": "{}", "status": "completed"})).unwrap();
        assert_eq!(api.blocks, sdk.blocks);
        assert_eq!(api.call_ids().collect::<Vec<_>>(), vec!["c1"]);
        let api = parse(3, &json!({"type": "function_call_output", "call_id": "c1", "output": "a\nb"})).unwrap();
        let sdk = parse(3, &json!({"type": "function_call_result", "callId": "c1", "name": "ls", "status": "completed", "output": {"type": "text", "text": "a\nb"}})).unwrap();
        assert_eq!(api.blocks, sdk.blocks);
        assert_eq!(api.role, Role::Tool);
        assert_eq!(api.payload_text(), "a\nb");
        let m = parse(4, &json!({"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "u"}]})).unwrap();
        assert_eq!(m.blocks.len(), 2);
        let api = parse(
            5,
            &json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "XYZ"}),
        )
        .unwrap();
        let sdk = parse(5, &json!({"type": "reasoning", "content": [{"type": "input_text", "text": "think"}], "providerData": {"encryptedContent": "XYZ"}})).unwrap();
        assert_eq!(api.blocks, vec![Block::Thinking("think".into())]);
        assert_eq!(api.blocks, sdk.blocks);
        let m = parse(6, &json!({"type": "compaction", "encrypted_content": "E"})).unwrap();
        assert_eq!(m.role, Role::System);
        let m = parse(7, &json!({"type": "web_search_call", "id": "ws_1", "status": "completed"})).unwrap();
        assert_eq!((m.role, m.has_calls()), (Role::Assistant, false));
        let m = parse(8, &json!({"type": "computer_call_output", "call_id": "cc", "output": {}})).unwrap();
        assert_eq!((m.role, m.has_results()), (Role::Tool, false));
    }

    #[test]
    fn errors_name_index_and_field() {
        let cases = [
            (json!({"content": "x"}), "role"),
            (json!({"role": "tool", "content": "x"}), "role"),
            (json!({"role": "user"}), "content"),
            (json!({"role": "user", "content": [{"type": "input_text"}]}), "content[0].text"),
            (json!({"role": "user", "content": [3]}), "content[0]"),
            (json!({"type": 3}), "type"),
            (json!({"type": "function_call", "name": "f", "arguments": "{}"}), "call_id"),
            (json!({"type": "function_call", "callId": "", "name": "f", "arguments": "{}"}), "callId"),
            (json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}), "arguments"),
            (json!({"type": "function_call_output", "call_id": "c"}), "output"),
            (json!({"type": "function_call_output", "call_id": "c", "output": 3}), "output"),
        ];
        for (v, field) in cases {
            let e = parse(4, &v).unwrap_err();
            assert_eq!(e.index(), Some(4), "{v}");
            assert_eq!(e.field(), Some(field), "{v}: {}", e.message());
        }
        let e = parse(4, &json!("x")).unwrap_err();
        assert!(e.message().contains("message 4: expected an item object"), "{}", e.message());
    }

    #[test]
    fn rebuild_keeps_spelling_fields_and_part_types() {
        let orig = parse(
            0,
            &json!({"type": "function_call_result", "callId": "c9", "name": "grep", "status": "completed", "output": "long", "x": 1}),
        )
        .unwrap();
        let out = rebuild(&orig, vec![Block::ToolResult { call_id: "c9".into(), content: "short".into(), is_error: false }], syn());
        assert_eq!(
            out.wire,
            json!({"type": "function_call_result", "callId": "c9", "name": "grep", "status": "completed", "output": "short", "x": 1})
        );
        assert_eq!(out.synthetic, Some(syn()));

        let orig = parse(0, &json!({"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
            "content": [{"type": "output_text", "text": "long", "annotations": [{"type": "url_citation", "start_index": 0, "end_index": 4}]}]}))
        .unwrap();
        let out = rebuild(&orig, vec![Block::Text("short".into())], syn());
        assert_eq!(out.wire["content"], json!([{"type": "output_text", "text": "short", "annotations": []}]), "stale citations go");
        assert_eq!(out.wire["id"], "msg_1");

        let orig = parse(0, &json!({"role": "user", "content": "long"})).unwrap();
        assert_eq!(rebuild(&orig, vec![Block::Text("s".into())], syn()).wire, json!({"role": "user", "content": "s"}));

        let orig = parse(0, &json!({"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "long"}, {"type": "input_image", "image_url": "u"}]})).unwrap();
        let mut blocks = orig.blocks.clone();
        blocks[0] = Block::ToolResult { call_id: "c".into(), content: "s".into(), is_error: false };
        let out = rebuild(&orig, blocks, syn());
        assert_eq!(out.wire["output"], json!([{"type": "input_text", "text": "s"}, {"type": "input_image", "image_url": "u"}]));

        let orig = parse(0, &json!({"type": "reasoning", "id": "rs", "summary": []})).unwrap();
        assert_eq!(rebuild(&orig, vec![Block::Text("x".into())], syn()).wire, orig.wire, "reasoning is never rewritten");
    }

    #[test]
    fn written_items_read_back_and_validate() {
        let a = synthesize(Role::Assistant, "note".into(), syn());
        assert_eq!(
            a.wire,
            json!({"type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "note", "annotations": []}]})
        );
        assert_eq!(a.blocks, vec![Block::Text("note".into())]);
        let u = synthesize(Role::Tool, "n".into(), syn());
        assert_eq!(u.wire, json!({"role": "user", "content": "n"}));
        assert!(validate(&[a, u]).is_empty());
    }

    #[test]
    fn validator_rules() {
        let msgs: Vec<Message> = [
            json!({"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}),
            json!({"role": "user", "content": [{"type": "output_text", "text": "x"}]}),
            json!({"type": "reasoning", "summary": []}),
            json!({"role": "user", "content": "y"}),
            json!({"type": "reasoning", "summary": []}),
            json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}),
            json!({"type": "reasoning", "summary": []}),
        ]
        .iter()
        .enumerate()
        .map(|(i, v)| parse(i, v).unwrap())
        .collect();
        let codes: Vec<_> = validate(&msgs).iter().map(|p| (p.index, p.code)).collect();
        assert_eq!(codes, vec![(0, "PART_TYPE_FOR_ROLE"), (1, "PART_TYPE_FOR_ROLE"), (2, "REASONING_WITHOUT_FOLLOWER")]);
    }

    #[test]
    fn turns_glue_the_items_of_one_response() {
        let p = |v: Value| parse(0, &v).unwrap();
        let rs = p(json!({"type": "reasoning", "summary": []}));
        let fc = p(json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}));
        let out = p(json!({"type": "function_call_output", "call_id": "c", "output": "1"}));
        let user = p(json!({"role": "user", "content": "u"}));
        let hosted_out = p(json!({"type": "computer_call_output", "call_id": "k", "output": {}}));
        assert!(continues_turn(&rs, &fc) && continues_turn(&fc, &fc));
        assert!(continues_turn(&fc, &hosted_out) && continues_turn(&hosted_out, &hosted_out));
        assert!(
            !continues_turn(&out, &fc) && !continues_turn(&fc, &out) && !continues_turn(&rs, &user) && !continues_turn(&hosted_out, &fc)
        );
    }
}
