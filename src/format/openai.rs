//! OpenAI chat-completions messages.
//!
//! Reads `system`, `developer`, `user`, `assistant` and `tool` messages with string, null or
//! part-list content, `tool_calls`, `tool_call_id`, `refusal` and any field we do not know (kept
//! untouched in the wire value). Writing a rewritten message starts from its original wire
//! value, so `name`, unknown fields and unchanged `tool_calls` survive the rewrite.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::message::{Block, Message, Role, Synthetic};

/// Fixed token estimate of an image, audio or file part (OpenAI bills a low-detail image at 85).
pub const OPAQUE_PART_TOKENS: u32 = 85;

pub(crate) fn read(index: usize, v: &Value) -> Result<(Role, Vec<Block>)> {
    let obj = v.as_object().ok_or_else(|| Error::message_at(index, "", format!("expected an object, got {}", kind_of(v))))?;
    let role_str = match obj.get("role") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => return Err(Error::message_at(index, "role", format!("expected a string, got {}", kind_of(other)))),
        None => return Err(Error::message_at(index, "role", "is missing")),
    };
    let role = match role_str {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(Error::message_at(
                index,
                "role",
                format!("unknown role {other:?} (expected system, developer, user, assistant or tool)"),
            ))
        }
    };

    let mut blocks = Vec::new();
    let content = obj.get("content").unwrap_or(&Value::Null);
    if role == Role::Tool {
        let call_id = match obj.get("tool_call_id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::String(_)) => return Err(Error::message_at(index, "tool_call_id", "is empty")),
            Some(other) => return Err(Error::message_at(index, "tool_call_id", format!("expected a string, got {}", kind_of(other)))),
            None => return Err(Error::message_at(index, "tool_call_id", "is missing on a tool message")),
        };
        let mut parts = Vec::new();
        read_content(index, content, &mut parts)?;
        let mut text = String::new();
        for p in parts {
            match p {
                Block::Text(t) => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&t);
                }
                other => blocks.push(other),
            }
        }
        blocks.insert(0, Block::ToolResult { call_id, content: text, is_error: false });
    } else {
        read_content(index, content, &mut blocks)?;
    }

    if role == Role::Assistant {
        if let Some(r) = obj.get("refusal") {
            match r {
                Value::String(s) => blocks.push(Block::Text(s.clone())),
                Value::Null => {}
                other => return Err(Error::message_at(index, "refusal", format!("expected a string, got {}", kind_of(other)))),
            }
        }
        match obj.get("tool_calls") {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) => {
                for (k, call) in calls.iter().enumerate() {
                    blocks.push(read_call(index, k, call)?);
                }
            }
            Some(other) => return Err(Error::message_at(index, "tool_calls", format!("expected an array, got {}", kind_of(other)))),
        }
    } else if obj.get("tool_calls").is_some_and(|v| !v.is_null()) {
        return Err(Error::message_at(index, "tool_calls", format!("only assistant messages may call tools, not {role_str}")));
    }

    Ok((role, blocks))
}

fn read_call(index: usize, k: usize, call: &Value) -> Result<Block> {
    let field = |f: &str| format!("tool_calls[{k}].{f}");
    let obj = call
        .as_object()
        .ok_or_else(|| Error::message_at(index, &format!("tool_calls[{k}]"), format!("expected an object, got {}", kind_of(call))))?;
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(Error::message_at(index, &field("id"), "must be a non-empty string")),
    };
    let func = obj
        .get("function")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::message_at(index, &field("function"), "must be an object with name and arguments"))?;
    let name = match func.get("name") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(Error::message_at(index, &field("function.name"), "must be a string")),
    };
    let arguments = match func.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => {
            return Err(Error::message_at(index, &field("function.arguments"), format!("must be a JSON string, got {}", kind_of(other))))
        }
    };
    Ok(Block::ToolCall { id, name, arguments })
}

fn read_content(index: usize, content: &Value, out: &mut Vec<Block>) -> Result<()> {
    match content {
        Value::Null => Ok(()),
        Value::String(s) => {
            out.push(Block::Text(s.clone()));
            Ok(())
        }
        Value::Array(parts) => {
            for (k, part) in parts.iter().enumerate() {
                let obj = part.as_object().ok_or_else(|| {
                    Error::message_at(index, &format!("content[{k}]"), format!("expected an object, got {}", kind_of(part)))
                })?;
                let ty = obj.get("type").and_then(Value::as_str).unwrap_or("");
                match ty {
                    "text" | "input_text" | "output_text" => match obj.get("text") {
                        Some(Value::String(t)) => out.push(Block::Text(t.clone())),
                        _ => return Err(Error::message_at(index, &format!("content[{k}].text"), "must be a string")),
                    },
                    "refusal" => match obj.get("refusal") {
                        Some(Value::String(t)) => out.push(Block::Text(t.clone())),
                        _ => return Err(Error::message_at(index, &format!("content[{k}].refusal"), "must be a string")),
                    },
                    _ => out.push(Block::Opaque { raw: part.clone(), tokens: OPAQUE_PART_TOKENS }),
                }
            }
            Ok(())
        }
        other => Err(Error::message_at(index, "content", format!("expected a string, an array of parts or null, got {}", kind_of(other)))),
    }
}

/// Rebuilds `original` with new blocks, keeping every wire field the blocks do not describe.
pub(crate) fn rebuild(original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
    let mut wire: Map<String, Value> = original.wire.as_object().cloned().unwrap_or_default();
    if !wire.contains_key("role") {
        wire.insert("role".into(), Value::String(role_name(original.role).into()));
    }
    write_blocks(&mut wire, original.role, &blocks, Some(original));
    Message { role: original.role, blocks, wire: Value::Object(wire).into(), synthetic: Some(synthetic) }
}

/// A new message written by the engine.
pub(crate) fn synthesize(role: Role, text: String, synthetic: Synthetic) -> Message {
    let blocks = vec![Block::Text(text)];
    let mut wire = Map::new();
    wire.insert("role".into(), Value::String(role_name(role).into()));
    write_blocks(&mut wire, role, &blocks, None);
    Message { role, blocks, wire: Value::Object(wire).into(), synthetic: Some(synthetic) }
}

fn write_blocks(wire: &mut Map<String, Value>, role: Role, blocks: &[Block], original: Option<&Message>) {
    let mut texts: Vec<&str> = Vec::new();
    let mut opaque: Vec<&Value> = Vec::new();
    let mut calls: Vec<&Block> = Vec::new();
    let mut result_id: Option<&str> = None;
    for b in blocks {
        match b {
            Block::Text(t) => texts.push(t),
            Block::ToolResult { call_id, content, .. } => {
                result_id = Some(call_id);
                texts.push(content);
            }
            Block::Opaque { raw, .. } => opaque.push(raw),
            Block::ToolCall { .. } => calls.push(b),
            Block::Thinking(_) => {}
        }
    }
    let text = texts.join("\n");
    let content = if opaque.is_empty() {
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        }
    } else {
        let mut parts = Vec::new();
        if !text.is_empty() {
            parts.push(json!({"type": "text", "text": text}));
        }
        parts.extend(opaque.into_iter().cloned());
        Value::Array(parts)
    };
    wire.insert("content".into(), content);
    if role == Role::Assistant {
        // The refusal was folded into the text above; keep the field out so it is not sent twice.
        wire.remove("refusal");
    }
    if let Some(id) = result_id {
        wire.insert("tool_call_id".into(), Value::String(id.to_string()));
    }
    if calls.is_empty() {
        wire.remove("tool_calls");
    } else {
        let same_calls =
            original.is_some_and(|o| o.blocks.iter().filter(|b| matches!(b, Block::ToolCall { .. })).eq(calls.iter().copied()));
        if !same_calls {
            let list = calls
                .iter()
                .map(|b| match b {
                    Block::ToolCall { id, name, arguments } => {
                        json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
                    }
                    _ => Value::Null,
                })
                .collect();
            wire.insert("tool_calls".into(), Value::Array(list));
        }
    }
}

/// The wire name of a role (the AI SDK's model messages use the same names).
pub(super) fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// The `context_reload` tool as an OpenAI function tool.
pub(crate) fn reload_tool(description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": crate::format::RELOAD_TOOL_NAME,
            "description": description,
            "parameters": parameters
        }
    })
}

/// Reads the arguments of a `context_reload` call: the call object (`tool_calls[i]`), its
/// `function`, its parsed arguments, or the arguments JSON string.
pub(crate) fn reload_call_args(v: &Value) -> Option<Value> {
    match v {
        Value::String(s) => serde_json::from_str(s).ok(),
        Value::Object(o) => {
            if let Some(f) = o.get("function") {
                return reload_call_args(f);
            }
            if let Some(a) = o.get("arguments") {
                return reload_call_args(a);
            }
            Some(v.clone())
        }
        _ => None,
    }
}

/// OpenAI chat completions, as the table of formats in [`super`] registers it.
pub(crate) struct OpenAi;

impl super::WireFormat for OpenAi {
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
        reload_call_args(call)
    }
    fn words(&self) -> super::Words {
        super::Words { call: "tool call", results: "results", model: "assistant message" }
    }
    fn id_field(&self, _m: &Message, _id: &str, result: bool) -> String {
        if result { "tool_call_id" } else { "tool_calls" }.into()
    }
    fn price_list(&self) -> super::PriceList {
        super::PriceList::OpenAi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(index: usize, v: &Value) -> Result<Message> {
        crate::format::Format::OpenAi.parse(index, v)
    }

    fn syn() -> Synthetic {
        Synthetic::new("TEST", None)
    }

    #[test]
    fn reads_every_shape() {
        let m = parse(0, &json!({"role": "developer", "content": "be brief"})).unwrap();
        assert_eq!(m.role, Role::System);
        let m = parse(
            1,
            &json!({"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}]}),
        )
        .unwrap();
        assert_eq!(m.blocks.len(), 2);
        assert!(matches!(m.blocks[1], Block::Opaque { .. }));
        let m = parse(2, &json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})).unwrap();
        assert_eq!(m.call_ids().collect::<Vec<_>>(), vec!["c1"]);
        let m = parse(3, &json!({"role": "tool", "tool_call_id": "c1", "content": "a\nb", "x-extra": 1})).unwrap();
        assert_eq!(m.result_ids().collect::<Vec<_>>(), vec!["c1"]);
        assert_eq!(m.payload_text(), "a\nb");
    }

    #[test]
    fn errors_name_index_and_field() {
        let e = parse(7, &json!({"role": "robot", "content": "x"})).unwrap_err();
        assert_eq!(e.index(), Some(7));
        assert_eq!(e.field(), Some("role"));
        assert!(e.message().contains("message 7"), "{}", e.message());
        let e = parse(2, &json!({"role": "tool", "content": "x"})).unwrap_err();
        assert_eq!(e.field(), Some("tool_call_id"));
        let e = parse(0, &json!("hello")).unwrap_err();
        assert!(e.message().contains("expected an object"));
        let e =
            parse(0, &json!({"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {}}}]})).unwrap_err();
        assert_eq!(e.field(), Some("tool_calls[0].function.arguments"));
    }

    #[test]
    fn rebuild_keeps_unknown_fields_and_ids() {
        let orig = parse(0, &json!({"role": "tool", "tool_call_id": "c9", "name": "grep", "content": "long", "x": {"y": 1}})).unwrap();
        let out = rebuild(&orig, vec![Block::ToolResult { call_id: "c9".into(), content: "short".into(), is_error: false }], syn());
        assert_eq!(out.wire, json!({"role": "tool", "tool_call_id": "c9", "name": "grep", "content": "short", "x": {"y": 1}}));
        let orig = parse(0, &json!({"role": "assistant", "content": "thinking aloud", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}, "extra": true}]})).unwrap();
        let mut blocks = orig.blocks.clone();
        blocks[0] = Block::Text("short".into());
        let out = rebuild(&orig, blocks, syn());
        assert_eq!(out.wire["tool_calls"], orig.wire["tool_calls"]);
        assert_eq!(out.wire["content"], json!("short"));
    }
}
