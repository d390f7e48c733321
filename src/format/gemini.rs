//! Gemini `Content`s: the `contents` of `ai.models.generateContent` in `@google/genai`, and what
//! Google ADK's `LlmRequest.contents` holds.
//!
//! Roles are `user` and `model` (a content without a role is the user's, as the API reads it);
//! the system prompt is the request's `config.systemInstruction`, which stays with the host
//! (count it in `reservedTokens`), so a `system` content is refused with a pointer there. A
//! content is a list of parts, each carrying one kind of data: `text` (with `thought: true`, a
//! thought summary), `functionCall {id?, name, args}` (the model's), `functionResponse {id?,
//! name, response, parts?}` (the user's), `inlineData`, `fileData`, `executableCode`,
//! `codeExecutionResult`, server-side `toolCall` / `toolResponse`, and any part this build does
//! not know, which is kept as it came. `thoughtSignature`, `partMetadata`, `videoMetadata` and
//! unknown fields ride along in the wire value. A user content that carries function responses
//! is a tool message to the engine.
//!
//! Ids. A function call's `id` is optional: the Gemini API leaves it out on many models, and
//! ADK strips the ids it made up before a request. The API pairs a call turn with the turn
//! right after it, which must hold as many function responses as the turn made calls. The
//! engine needs an id per call, unique in the conversation: a call without one gets a
//! canonical id (its name and a digest of the turn, made unique), and [`link`] gives each
//! response without an id the id of the call of the open turn with the same name, in order.
//! Canonical ids never reach the wire: a message no step rewrote is its wire value, and a
//! rewrite carries the canonical ids over by position ([`rebuild`]).
//!
//! Thought signatures. Gemini 3 checks the `thoughtSignature` of the first function call of
//! every step of the current turn (from the last user message that is not function responses)
//! and rejects a request that lacks one. A part that carries a signature is never rewritten:
//! a rebuilt call turn keeps its call parts byte-exact, a rebuilt model content keeps its thought
//! parts byte-exact at the front, and a model content with a signature in the current round is
//! protected from every in-place rewrite and join (`Protection::SIGNED`). A signed text part of
//! an earlier turn may be shortened; it then loses its signature, which the API allows outside
//! the current turn.
//!
//! Turns. The API wants each function-call turn right after a user turn or a function-response
//! turn, and the function responses right after their call turn; the engine keeps its own
//! notes alternating with their neighbours (as for Anthropic), which satisfies both.
//!
//! Token estimates for what the tokenizer cannot read: an image counts [`IMAGE_TOKENS`] (Gemini
//! 3's default image resolution), any other inline or file data [`FILE_TOKENS`], other parts kept
//! as they came the estimate of their JSON text.

use serde_json::{json, Map, Value};

use super::json_tokens;
use super::{kept_result_parts, reread, Problem};
use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::message::{Block, Message, Role, Synthetic};

/// Fixed token estimate of an image part (Gemini 3 reads an image at 1120 tokens by default;
/// Gemini 2.5 at 258 per 768-pixel tile).
pub const IMAGE_TOKENS: u32 = 1120;
/// Fixed token estimate of inline or file data that is not an image (a PDF of a few pages at
/// 560 tokens a page, a short recording).
pub const FILE_TOKENS: u32 = 3000;

fn parts_of(v: &Value) -> &[Value] {
    v.get("parts").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn is_call_part(p: &Value) -> bool {
    p.get("functionCall").is_some_and(Value::is_object)
}

fn is_response_part(p: &Value) -> bool {
    p.get("functionResponse").is_some_and(Value::is_object)
}

fn is_thought_part(p: &Value) -> bool {
    p.get("thought") == Some(&Value::Bool(true))
}

fn is_signed(p: &Value) -> bool {
    p.get("thoughtSignature").is_some_and(|s| !s.is_null())
}

/// The `id` of a function call or response object, when it has a non-empty one.
fn wire_id(f: &Value) -> Option<&str> {
    f.get("id").and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn name_of(f: &Value) -> &str {
    f.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The id a call or response without an `id` of its own is read with: its name and its place
/// among the parts of that name in its content (`read#2`), so the responses of a turn pair with
/// its calls even before [`link`] makes the calls' ids unique.
fn positional_id(name: &str, ordinal: usize) -> String {
    format!("{name}#{ordinal}")
}

fn media_tokens(data: &Value) -> u32 {
    let mime = data.get("mimeType").and_then(Value::as_str).unwrap_or("");
    if mime.starts_with("image/") {
        IMAGE_TOKENS
    } else {
        FILE_TOKENS
    }
}

/// The estimate for a part the tokenizer does not read (see the module docs).
fn opaque_tokens(p: &Value) -> u32 {
    match p.get("inlineData").or_else(|| p.get("fileData")) {
        Some(data) if data.is_object() => media_tokens(data),
        _ => json_tokens(p),
    }
}

pub(crate) fn read(index: usize, v: &Value) -> Result<(Role, Vec<Block>)> {
    let obj = v.as_object().ok_or_else(|| Error::message_at(index, "", format!("expected a Content object, got {}", kind_of(v))))?;
    let role = match obj.get("role") {
        None | Some(Value::Null) => Role::User,
        Some(Value::String(s)) => match s.as_str() {
            "user" => Role::User,
            "model" => Role::Assistant,
            "system" => {
                return Err(Error::message_at(
                    index,
                    "role",
                    "\"system\" is not a role of Gemini contents: pass the system prompt as the request's \
                     `config.systemInstruction` (and count it in `reservedTokens`)",
                ))
            }
            other => {
                return Err(Error::message_at(
                    index,
                    "role",
                    format!("unknown role {other:?} (expected user or model; function responses are user contents)"),
                ))
            }
        },
        Some(other) => return Err(Error::message_at(index, "role", format!("expected a string, got {}", kind_of(other)))),
    };
    let mut blocks = Vec::new();
    match obj.get("parts") {
        None | Some(Value::Null) => {}
        Some(Value::Array(parts)) => {
            let mut seen: Vec<(String, usize)> = Vec::new();
            for (k, part) in parts.iter().enumerate() {
                read_part(index, k, part, role, &mut seen, &mut blocks)?;
            }
        }
        Some(other) => return Err(Error::message_at(index, "parts", format!("expected an array of parts, got {}", kind_of(other)))),
    }
    let role = if role == Role::User && blocks.iter().any(|b| matches!(b, Block::ToolResult { .. })) { Role::Tool } else { role };
    Ok((role, blocks))
}

/// The next ordinal of `name` among the calls (or responses) of a content read so far.
fn next_ordinal(seen: &mut Vec<(String, usize)>, name: &str) -> usize {
    match seen.iter_mut().find(|(n, _)| n == name) {
        Some((_, k)) => {
            *k += 1;
            *k
        }
        None => {
            seen.push((name.to_string(), 1));
            1
        }
    }
}

fn read_part(index: usize, k: usize, part: &Value, role: Role, seen: &mut Vec<(String, usize)>, out: &mut Vec<Block>) -> Result<()> {
    let field = |f: &str| format!("parts[{k}].{f}");
    let obj = part
        .as_object()
        .ok_or_else(|| Error::message_at(index, &format!("parts[{k}]"), format!("expected a Part object, got {}", kind_of(part))))?;
    let only = |wanted: Role, what: &str, key: &str| -> Result<()> {
        if role == wanted {
            Ok(())
        } else {
            Err(Error::message_at(index, &field(key), format!("{key} parts belong in {what} contents")))
        }
    };
    let name_and_id = |key: &str, f: &Map<String, Value>| -> Result<(String, Option<String>)> {
        let name = match f.get("name") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::String(_)) => return Err(Error::message_at(index, &field(&format!("{key}.name")), "is empty")),
            Some(other) => {
                return Err(Error::message_at(index, &field(&format!("{key}.name")), format!("must be a string, got {}", kind_of(other))))
            }
            None => return Err(Error::message_at(index, &field(&format!("{key}.name")), "is missing")),
        };
        let id = match f.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.is_empty()),
            Some(other) => {
                return Err(Error::message_at(index, &field(&format!("{key}.id")), format!("must be a string, got {}", kind_of(other))))
            }
        };
        Ok((name, id))
    };
    if let Some(call) = obj.get("functionCall") {
        only(Role::Assistant, "model", "functionCall")?;
        let f = call
            .as_object()
            .ok_or_else(|| Error::message_at(index, &field("functionCall"), format!("must be an object, got {}", kind_of(call))))?;
        let (name, id) = name_and_id("functionCall", f)?;
        let arguments = match f.get("args") {
            None | Some(Value::Null) => "{}".to_string(),
            Some(a @ Value::Object(_)) => a.to_string(),
            Some(other) => {
                return Err(Error::message_at(index, &field("functionCall.args"), format!("must be an object, got {}", kind_of(other))))
            }
        };
        let ordinal = next_ordinal(seen, &name);
        let id = id.unwrap_or_else(|| positional_id(&name, ordinal));
        out.push(Block::ToolCall { id, name, arguments });
        return Ok(());
    }
    if let Some(response) = obj.get("functionResponse") {
        only(Role::User, "user", "functionResponse")?;
        let f = response
            .as_object()
            .ok_or_else(|| Error::message_at(index, &field("functionResponse"), format!("must be an object, got {}", kind_of(response))))?;
        let (name, id) = name_and_id("functionResponse", f)?;
        let (content, is_error) = match f.get("response") {
            None | Some(Value::Null) => (String::new(), false),
            Some(r @ Value::Object(_)) => read_response(r),
            Some(other) => {
                let got = kind_of(other);
                return Err(Error::message_at(index, &field("functionResponse.response"), format!("must be an object, got {got}")));
            }
        };
        let nested: Vec<Block> = match f.get("parts") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(ps)) => ps.iter().map(|p| Block::Opaque { raw: p.clone(), tokens: opaque_tokens(p) }).collect(),
            Some(other) => {
                let got = kind_of(other);
                return Err(Error::message_at(index, &field("functionResponse.parts"), format!("must be an array, got {got}")));
            }
        };
        let ordinal = next_ordinal(seen, &format!("\u{0}{name}"));
        let call_id = id.unwrap_or_else(|| positional_id(&name, ordinal));
        out.push(Block::ToolResult { call_id, content, is_error });
        out.extend(nested);
        return Ok(());
    }
    match obj.get("text") {
        Some(Value::String(t)) if is_thought_part(part) => out.push(Block::Thinking(t.clone())),
        Some(Value::String(t)) => out.push(Block::Text(t.clone())),
        Some(other) => return Err(Error::message_at(index, &field("text"), format!("must be a string, got {}", kind_of(other)))),
        None => out.push(Block::Opaque { raw: part.clone(), tokens: opaque_tokens(part) }),
    }
    Ok(())
}

/// The text of a function response and whether it reports an error. The API reads `output` as
/// the function's output and `error` as its error, and the whole object as the output when
/// neither is there: a response of one string field is that string (`{output}`, `{error}`, or
/// ADK's `{result}`); anything else is its compact JSON.
fn read_response(r: &Value) -> (String, bool) {
    let o = r.as_object().expect("checked by the caller");
    let is_error = o.contains_key("error") && !o.contains_key("output");
    if o.len() == 1 {
        if let Some(Value::String(s)) = o.values().next() {
            return (s.clone(), is_error);
        }
    }
    (r.to_string(), is_error)
}

/// A `response` object carrying `text`: the original's one string field when it had one (the
/// key the host uses), else `{output}` (`{error}` for an error).
fn write_response(orig: Option<&Value>, text: &str, is_error: bool) -> Value {
    let single = orig.and_then(Value::as_object).filter(|o| o.len() == 1).and_then(|o| o.iter().next()).filter(|(_, v)| v.is_string());
    match single {
        Some((k, _)) if (k == "error") == is_error => json!({ k.as_str(): text }),
        _ if is_error => json!({ "error": text }),
        _ => json!({ "output": text }),
    }
}

/// The canonical ids of the calls and of the responses of `m`, in order.
fn ids_of(m: &Message) -> (Vec<String>, Vec<String>) {
    (m.call_ids().map(str::to_string).collect(), m.result_ids().map(str::to_string).collect())
}

/// `m` with the ids of its calls and its responses set, in order, to `calls` and `results`
/// (when it holds as many of each).
fn with_ids(mut m: Message, calls: &[String], results: &[String]) -> Message {
    let (c, r) = (m.call_ids().count(), m.result_ids().count());
    let (mut ci, mut ri) = (calls.iter(), results.iter());
    for b in &mut m.blocks {
        match b {
            Block::ToolCall { id, .. } if c == calls.len() => *id = ci.next().expect("counted").clone(),
            Block::ToolResult { call_id, .. } if r == results.len() => *call_id = ri.next().expect("counted").clone(),
            _ => {}
        }
    }
    m
}

/// Rebuilds `original` with new blocks, keeping every wire field the blocks do not describe:
/// the content's role (or its absence) and unknown fields, its thought parts byte-exact at the
/// front, call parts whose call did not change (signature included), each function response's
/// name, id, nested parts and other fields (its `response` rewritten with the new text), and
/// text parts whose text did not change. The canonical ids of `blocks` are carried over.
pub(crate) fn rebuild(original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
    let mut wire: Map<String, Value> = original.wire.as_object().cloned().unwrap_or_default();
    let parts = parts_of(&original.wire);
    let thoughts: Vec<Value> =
        parts.iter().filter(|p| is_thought_part(p) && p.get("text").is_some_and(Value::is_string)).cloned().collect();
    let calls: Vec<&Value> = parts.iter().filter(|p| is_call_part(p)).collect();
    let responses: Vec<&Value> = parts.iter().filter(|p| is_response_part(p)).collect();
    let mut texts: Vec<Option<&Value>> =
        parts.iter().filter(|p| !is_thought_part(p) && p.get("text").is_some_and(Value::is_string)).map(Some).collect();
    let new: Vec<Block> = blocks.into_iter().filter(|b| !matches!(b, Block::Thinking(_))).collect();
    let mut out = thoughts;
    let mut consumed = vec![false; new.len()];
    let (mut call_k, mut response_k) = (0, 0);
    let (mut call_ids, mut result_ids) = (Vec::new(), Vec::new());
    for (i, b) in new.iter().enumerate() {
        if consumed[i] {
            continue;
        }
        match b {
            Block::Text(t) => {
                // An unchanged text keeps its part (and its signature); a new one is a bare text part.
                let same = texts.iter_mut().find(|p| p.is_some_and(|p| p.get("text").and_then(Value::as_str) == Some(t)));
                match same.and_then(Option::take) {
                    Some(p) => out.push(p.clone()),
                    None if t.is_empty() => {}
                    None => out.push(json!({"text": t})),
                }
            }
            Block::Thinking(_) => {}
            Block::ToolCall { id, name, arguments } => {
                call_ids.push(id.clone());
                let orig = calls.get(call_k).copied();
                call_k += 1;
                let args: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!({}));
                let unchanged = orig.is_some_and(|p| {
                    let f = &p["functionCall"];
                    name_of(f) == name && f.get("args").cloned().unwrap_or_else(|| json!({})) == args
                });
                match orig {
                    Some(p) if unchanged => out.push(p.clone()),
                    Some(p) => {
                        let mut p = p.clone();
                        p["functionCall"]["name"] = Value::String(name.clone());
                        p["functionCall"]["args"] = args;
                        out.push(p);
                    }
                    None => out.push(json!({"functionCall": {"name": name, "args": args}})),
                }
            }
            Block::ToolResult { call_id, content, is_error } => {
                result_ids.push(call_id.clone());
                let orig = responses.get(response_k).copied();
                response_k += 1;
                let nested_orig: &[Value] =
                    orig.and_then(|p| p["functionResponse"].get("parts")).and_then(Value::as_array).map_or(&[], Vec::as_slice);
                let nested = kept_result_parts(&new, i, nested_orig, &mut consumed);
                let mut p = match orig {
                    Some(p) => p.clone(),
                    None => json!({"functionResponse": {"name": call_id.split('#').next().unwrap_or(call_id)}}),
                };
                let response = write_response(p["functionResponse"].get("response"), content, *is_error);
                let f = p["functionResponse"].as_object_mut().expect("a functionResponse object");
                f.insert("response".into(), response);
                if nested.is_empty() {
                    f.remove("parts");
                } else {
                    f.insert("parts".into(), Value::Array(nested));
                }
                out.push(p);
            }
            Block::Opaque { raw, .. } => out.push(raw.clone()),
        }
    }
    wire.insert("parts".into(), Value::Array(out));
    with_ids(reread(read, Value::Object(wire), original.role, synthetic), &call_ids, &result_ids)
}

/// A content written by the engine: one text part, the user's or the model's.
pub(crate) fn synthesize(role: Role, text: String, synthetic: Synthetic) -> Message {
    let wire = json!({"role": role_name(role), "parts": [{"text": text}]});
    reread(read, wire, role, synthetic)
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Assistant => "model",
        _ => "user",
    }
}

/// The parts of a content that must come first in it: thoughts on the model's side, function
/// responses on the user's.
fn leads(p: &Value) -> bool {
    is_thought_part(p) || is_response_part(p)
}

/// `neighbor` with `text` joined as a text part (see [`super::Format::merge`]): after its
/// thoughts or function responses when `note_first`, at its end otherwise.
pub(crate) fn merge(neighbor: &Message, text: &str, note_first: bool, synthetic: Synthetic) -> Message {
    let mut wire: Map<String, Value> = neighbor.wire.as_object().cloned().unwrap_or_default();
    let mut parts: Vec<Value> = parts_of(&neighbor.wire).to_vec();
    let note = json!({"text": text});
    if note_first {
        let at = parts.iter().take_while(|p| leads(p)).count();
        parts.insert(at, note);
    } else {
        parts.push(note);
    }
    wire.insert("parts".into(), Value::Array(parts));
    let (calls, results) = ids_of(neighbor);
    with_ids(reread(read, Value::Object(wire), neighbor.role, synthetic), &calls, &results)
}

/// `first` and `second`, two contents of one side, as one: their parts in order, except that
/// thoughts and function responses go first. The fields other than `parts` are `second`'s.
pub(crate) fn join(first: &Message, second: &Message, synthetic: Synthetic) -> Message {
    let all: Vec<Value> = parts_of(&first.wire).iter().chain(parts_of(&second.wire)).cloned().collect();
    let (mut front, rest): (Vec<Value>, Vec<Value>) = all.into_iter().partition(leads);
    front.extend(rest);
    let mut wire: Map<String, Value> = second.wire.as_object().cloned().unwrap_or_default();
    wire.insert("parts".into(), Value::Array(front));
    let (c1, r1) = ids_of(first);
    let (c2, r2) = ids_of(second);
    let calls: Vec<String> = c1.into_iter().chain(c2).collect();
    let results: Vec<String> = r1.into_iter().chain(r2).collect();
    let role = if first.role == Role::Tool || second.role == Role::Tool { Role::Tool } else { second.role };
    with_ids(reread(read, Value::Object(wire), role, synthetic), &calls, &results)
}

/// The `context_reload` tool as a Gemini `FunctionDeclaration` (its arguments as a JSON schema,
/// `parametersJsonSchema`).
pub(crate) fn reload_tool(description: &str, parameters: Value) -> Value {
    json!({
        "name": crate::format::RELOAD_TOOL_NAME,
        "description": description,
        "parametersJsonSchema": parameters
    })
}

/// Reads the arguments of a `context_reload` call: a part (`{functionCall}`), a `FunctionCall`
/// (`{id, name, args}`), its `args`, or their JSON text.
pub(crate) fn reload_call_args(v: &Value) -> Option<Value> {
    match v {
        Value::String(s) => serde_json::from_str(s).ok(),
        Value::Object(o) if !o.contains_key(crate::format::RELOAD_TOOL_PARAM) => match o.get("functionCall").or_else(|| o.get("args")) {
            Some(inner) => reload_call_args(inner),
            None => Some(v.clone()),
        },
        Value::Object(_) => Some(v.clone()),
        _ => None,
    }
}

/// Whether `m` is a model content with a part that carries a thought signature.
pub(crate) fn signed(m: &Message) -> bool {
    m.role == Role::Assistant && parts_of(&m.wire).iter().any(is_signed)
}

/// The wire field of `m` that holds the call (or, with `result`, the response) whose canonical
/// id is `id`: `parts[k].functionCall` or `parts[k].functionResponse`.
pub(crate) fn id_field(m: &Message, id: &str, result: bool) -> String {
    let (key, k) = if result {
        ("functionResponse", m.result_ids().position(|r| r == id))
    } else {
        ("functionCall", m.call_ids().position(|c| c == id))
    };
    let is_kind = |p: &&Value| if result { is_response_part(p) } else { is_call_part(p) };
    let at = k.and_then(|k| {
        let parts = parts_of(&m.wire);
        parts.iter().enumerate().filter(|(_, p)| is_kind(p)).nth(k).map(|(j, _)| j)
    });
    match at {
        Some(j) => format!("parts[{j}].{key}"),
        None => "parts".into(),
    }
}

/// How an error names the call (or, when `result`, the response) `id` of content `m`: the
/// function's name, with the id the wire gave it if any, never an id the engine made up for a
/// call that came without one (`"read_log"`, `"read_log" (id "fc-1")`).
pub(crate) fn call_label(m: &Message, id: &str, result: bool) -> String {
    let k = if result { m.result_ids().position(|r| r == id) } else { m.call_ids().position(|c| c == id) };
    let is_kind = |p: &&Value| if result { is_response_part(p) } else { is_call_part(p) };
    let key = if result { "functionResponse" } else { "functionCall" };
    match k.and_then(|k| parts_of(&m.wire).iter().filter(is_kind).nth(k)).map(|p| &p[key]) {
        Some(f) => match wire_id(f) {
            Some(w) => format!("{:?} (id {w:?})", name_of(f)),
            None => format!("{:?}", name_of(f)),
        },
        None => format!("{:?}", id.split('#').next().unwrap_or(id)),
    }
}

/// Links contents just read to the conversation before them, in order: each call that came
/// without an id gets one unique in the conversation (its name, its place and a digest of its
/// content, with a counter when that is in use: `claim(id)` takes an id and says whether it
/// was free), and each function response without an id gets the id of the call of the turn
/// right before it with its name, first come first served. `open` is the conversation's open
/// turn: its last call turn and the responses after it (empty when the conversation does not
/// end in one). As in the API, only the turn right after a call turn answers it: a response
/// anywhere else keeps the id it was read with and answers nothing, which `add` refuses.
pub(crate) fn link(open: &[&Message], new: &mut [Message], claim: &mut dyn FnMut(&str) -> bool) {
    let mut calls: Vec<OpenCall> = match open {
        [turn] => call_table(turn),
        _ => Vec::new(),
    };
    for m in new.iter_mut() {
        if m.has_calls() {
            let digest = format!("{:016x}", xxhash_rust::xxh64::xxh64(m.wire.to_string().as_bytes(), 0));
            let given = given_ids(&m.wire);
            let mut k = 0;
            for b in &mut m.blocks {
                if let Block::ToolCall { id, .. } = b {
                    if !given.get(k).copied().unwrap_or(true) {
                        *id = unique(&format!("{id}@{}", &digest[..8]), claim);
                    }
                    k += 1;
                }
            }
            calls = call_table(m);
            continue;
        }
        let parts: Vec<&Value> = parts_of(&m.wire).iter().filter(|p| is_response_part(p)).collect();
        let mut k = 0;
        for b in &mut m.blocks {
            let Block::ToolResult { call_id, .. } = b else { continue };
            let Some(f) = parts.get(k).map(|p| &p["functionResponse"]) else { break };
            k += 1;
            let found = match wire_id(f) {
                Some(w) if calls.iter().any(|c| c.given && c.id == w) => calls.iter_mut().find(|c| c.id == w && !c.answered),
                given => calls.iter_mut().find(|c| c.name == name_of(f) && !c.answered && (given.is_none() || !c.given)),
            };
            if let Some(c) = found {
                c.answered = true;
                *call_id = c.id.clone();
            }
        }
        calls.clear();
    }
}

/// A call of the open turn, as [`link`] pairs responses with it.
struct OpenCall {
    /// Its canonical id.
    id: String,
    name: String,
    /// The wire gave the id.
    given: bool,
    answered: bool,
}

/// Whether each function call part of a content (in order) has an id of its own.
fn given_ids(wire: &Value) -> Vec<bool> {
    parts_of(wire).iter().filter(|p| is_call_part(p)).map(|p| wire_id(&p["functionCall"]).is_some()).collect()
}

/// The calls of a turn, none answered yet.
fn call_table(m: &Message) -> Vec<OpenCall> {
    let given = given_ids(&m.wire);
    m.blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall { id, name, .. } => Some((id.clone(), name.clone())),
            _ => None,
        })
        .enumerate()
        .map(|(k, (id, name))| OpenCall { id, name, given: given.get(k).copied().unwrap_or(false), answered: false })
        .collect()
}

/// `base`, or `base` with the first counter after it, whichever `claim` takes first.
fn unique(base: &str, claim: &mut dyn FnMut(&str) -> bool) -> String {
    if claim(base) {
        return base.to_string();
    }
    let mut n = 2;
    loop {
        let id = format!("{base}.{n}");
        if claim(&id) {
            return id;
        }
        n += 1;
    }
}

/// A content's function calls and responses as the API pairs them: the position of each call
/// part, its name and its id if given.
struct Calls<'a> {
    calls: Vec<(usize, &'a str, Option<&'a str>)>,
    responses: Vec<(usize, &'a str, Option<&'a str>)>,
}

fn calls_of(m: &Message) -> Calls<'_> {
    let mut out = Calls { calls: Vec::new(), responses: Vec::new() };
    for (k, p) in parts_of(&m.wire).iter().enumerate() {
        if is_call_part(p) {
            let f = &p["functionCall"];
            out.calls.push((k, name_of(f), wire_id(f)));
        } else if is_response_part(p) {
            let f = &p["functionResponse"];
            out.responses.push((k, name_of(f), wire_id(f)));
        }
    }
    out
}

/// The Gemini API's rules, on the wire (canonical ids play no part):
///
/// - `MISSING_RESULT`: a function-call turn not followed by a turn with a function response for
///   each of its calls (matching ids where ids are given, names otherwise), or, in a request,
///   the last turn's calls unanswered;
/// - `ORPHAN_RESULT`: a function response that answers no call of the turn right before it;
/// - `DUPLICATE_CALL`: a call id given twice;
/// - `CALL_NOT_AFTER_USER`: a function-call turn that does not come right after a user turn or
///   a function-response turn (first in the list, or after a model turn);
/// - `THOUGHT_SIGNATURE_MISSING`: in the current turn (after the last user content that is not
///   function responses), a step whose first function call has no `thoughtSignature` while
///   another step's has one (Gemini 3 rejects it);
/// - `EMPTY_CONTENT`: a content without parts.
pub(crate) fn validate<M: AsRef<Message>>(messages: &[M], request: bool, pairing_only: bool) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut ids = std::collections::HashSet::new();
    let n = messages.len();
    let info: Vec<Calls<'_>> = messages.iter().map(|m| calls_of(m.as_ref())).collect();
    for (i, m) in messages.iter().enumerate() {
        let m = m.as_ref();
        let here = &info[i];
        let model = m.role == Role::Assistant;
        if !pairing_only && parts_of(&m.wire).is_empty() {
            problems.push(Problem { index: i, code: "EMPTY_CONTENT", message: format!("message {i} has no parts") });
        }
        for &(_, name, id) in &here.calls {
            if let Some(id) = id {
                if !ids.insert(id) {
                    problems.push(Problem {
                        index: i,
                        code: "DUPLICATE_CALL",
                        message: format!("message {i} reuses function call id {id:?} ({name})"),
                    });
                }
            }
        }
        if model && !here.calls.is_empty() {
            let after_user = i > 0 && messages[i - 1].as_ref().role != Role::Assistant;
            if !pairing_only && !after_user {
                problems.push(Problem {
                    index: i,
                    code: "CALL_NOT_AFTER_USER",
                    message: if i == 0 {
                        format!("message {i} is a function-call turn that opens the list; it must come right after a user turn")
                    } else {
                        format!("message {i} is a function-call turn right after model message {}; it must follow a user turn or a function-response turn", i - 1)
                    },
                });
            }
            let next = (i + 1 < n).then(|| &info[i + 1]).filter(|nx| !nx.responses.is_empty());
            match next {
                None if i + 1 == n && !request => {}
                None => {
                    for &(_, name, _) in &here.calls {
                        let what = if i + 1 == n { "has no function response yet" } else { "is not answered by the turn right after it" };
                        problems.push(Problem {
                            index: i,
                            code: "MISSING_RESULT",
                            message: format!("message {i}: function call {name:?} {what}"),
                        });
                    }
                }
                Some(nx) => {
                    let mut used = vec![false; nx.responses.len()];
                    for &(_, name, id) in &here.calls {
                        let hit = nx.responses.iter().enumerate().position(|(k, r)| {
                            !used[k]
                                && match (id, r.2) {
                                    (Some(c), Some(r)) => c == r,
                                    _ => r.1 == name,
                                }
                        });
                        match hit {
                            Some(k) => used[k] = true,
                            None => problems.push(Problem {
                                index: i,
                                code: "MISSING_RESULT",
                                message: format!("message {i}: function call {name:?} has no function response in message {}", i + 1),
                            }),
                        }
                    }
                    for (k, &(_, name, _)) in nx.responses.iter().enumerate() {
                        if !used[k] {
                            problems.push(Problem {
                                index: i + 1,
                                code: "ORPHAN_RESULT",
                                message: format!("message {}: function response {name:?} answers no call of message {i}", i + 1),
                            });
                        }
                    }
                }
            }
        }
        if !here.responses.is_empty() {
            let after_call = i > 0 && messages[i - 1].as_ref().role == Role::Assistant && !info[i - 1].calls.is_empty();
            if !after_call {
                for &(_, name, _) in &here.responses {
                    problems.push(Problem {
                        index: i,
                        code: "ORPHAN_RESULT",
                        message: format!("message {i}: function response {name:?} does not come right after a function-call turn"),
                    });
                }
            }
        }
    }
    if !pairing_only {
        problems.extend(signatures(messages, &info));
    }
    problems
}

/// `THOUGHT_SIGNATURE_MISSING` problems of the current turn (see [`validate`]).
fn signatures<M: AsRef<Message>>(messages: &[M], info: &[Calls<'_>]) -> Vec<Problem> {
    let start = messages.iter().rposition(|m| m.as_ref().role == Role::User).map_or(0, |s| s + 1);
    let steps: Vec<(usize, bool)> = (start..messages.len())
        .filter(|&i| messages[i].as_ref().role == Role::Assistant)
        .filter_map(|i| info[i].calls.first().map(|&(k, _, _)| (i, is_signed(&parts_of(&messages[i].as_ref().wire)[k]))))
        .collect();
    if !steps.iter().any(|&(_, s)| s) {
        return Vec::new();
    }
    steps
        .into_iter()
        .filter(|&(_, s)| !s)
        .map(|(i, _)| Problem {
            index: i,
            code: "THOUGHT_SIGNATURE_MISSING",
            message: format!(
                "message {i}: its first function call has no thoughtSignature, while other steps of the current turn have one (Gemini 3 rejects it)"
            ),
        })
        .collect()
}

/// Gemini `Content`s, as the table of formats in [`super`] registers it.
pub(crate) struct Gemini;

impl super::WireFormat for Gemini {
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
        super::Words { call: "functionCall", results: "functionResponse parts", model: "model turn" }
    }
    fn id_field(&self, m: &Message, id: &str, result: bool) -> String {
        id_field(m, id, result)
    }
    fn price_list(&self) -> super::PriceList {
        super::PriceList::OpenAi
    }
    /// Gemini pairs a call turn with the turn right after it, ids or not: its own rules.
    fn validate(&self, messages: &[&Message], request: bool) -> Vec<Problem> {
        validate(messages, request, false)
    }
    fn tool_pairing(&self, messages: &[&Message]) -> Vec<Problem> {
        let mut p = validate(messages, false, true);
        crate::sort::by_key(&mut p, |p| p.index as u128);
        p
    }
    fn needs_alternation(&self) -> bool {
        true
    }
    fn link(&self, open: &[&Message], new: &mut [Message], claim: &mut dyn FnMut(&str) -> bool) {
        link(open, new, claim);
    }
    fn link_all(&self, messages: &mut [Message]) {
        let mut ids: std::collections::HashSet<String> = messages.iter().flat_map(|m| m.call_ids()).map(str::to_string).collect();
        link(&[], messages, &mut |id: &str| ids.insert(id.to_string()));
    }
    fn links(&self) -> bool {
        true
    }
    fn signed(&self, m: &Message) -> bool {
        signed(m)
    }
    fn merge(&self, neighbor: &Message, text: String, note_first: bool, mark: Synthetic) -> Message {
        merge(neighbor, &text, note_first, mark)
    }
    fn join(&self, first: &Message, second: &Message, mark: Synthetic) -> Message {
        join(first, second, mark)
    }
    fn call_label(&self, m: &Message, id: &str, result: bool) -> String {
        call_label(m, id, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;

    fn parse(index: usize, v: &Value) -> Result<Message> {
        crate::format::Format::Gemini.parse(index, v)
    }

    fn syn() -> Synthetic {
        Synthetic::in_place("TEST", "u-1")
    }

    fn read(v: Value) -> Vec<Message> {
        let mut m: Vec<Message> = v.as_array().unwrap().iter().enumerate().map(|(i, m)| parse(i, m).unwrap()).collect();
        Format::Gemini.link_all(&mut m);
        m
    }

    fn codes(v: Value, request: bool) -> Vec<(usize, &'static str)> {
        let m = read(v);
        let p = if request { Format::Gemini.validate_request(&m) } else { Format::Gemini.validate(&m) };
        p.into_iter().map(|p| (p.index, p.code)).collect()
    }

    #[test]
    fn reads_every_part() {
        let m = parse(
            0,
            &json!({"role": "model", "parts": [
                {"text": "thinking it over", "thought": true},
                {"text": "Reading both."},
                {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "c2ln"},
                {"functionCall": {"id": "fc-2", "name": "read", "args": {"path": "b"}}},
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
                {"toolCall": {"id": "t", "toolType": "GOOGLE_SEARCH_WEB", "args": {}}},
                {"someFuturePart": {"x": 1}}
            ]}),
        )
        .unwrap();
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.blocks[0], Block::Thinking("thinking it over".into()));
        assert_eq!(m.blocks[1], Block::Text("Reading both.".into()));
        assert_eq!(m.call_ids().collect::<Vec<_>>(), vec!["read#1", "fc-2"], "an id given is kept, else a positional one");
        assert_eq!(m.blocks[2], Block::ToolCall { id: "read#1".into(), name: "read".into(), arguments: "{\"path\":\"a\"}".into() });
        assert!(m.blocks[4..].iter().all(|b| matches!(b, Block::Opaque { .. })), "{:?}", m.blocks);
        assert!(signed(&m));

        let m = parse(
            1,
            &json!({"role": "user", "parts": [
                {"functionResponse": {"name": "read", "response": {"output": "A"}}},
                {"functionResponse": {"id": "fc-2", "name": "read", "response": {"error": "denied"}}},
                {"functionResponse": {"name": "ls", "response": {"files": ["a", "b"]}, "parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}},
                {"functionResponse": {"name": "grep", "response": {"result": "x"}}},
                {"text": "and then?"}
            ]}),
        )
        .unwrap();
        assert_eq!(m.role, Role::Tool, "a user content with responses belongs to the exchange");
        assert_eq!(m.result_ids().collect::<Vec<_>>(), vec!["read#1", "fc-2", "ls#1", "grep#1"]);
        assert_eq!(m.blocks[1], Block::ToolResult { call_id: "fc-2".into(), content: "denied".into(), is_error: true });
        assert_eq!(m.blocks[2], Block::ToolResult { call_id: "ls#1".into(), content: "{\"files\":[\"a\",\"b\"]}".into(), is_error: false });
        assert!(matches!(&m.blocks[3], Block::Opaque { tokens: IMAGE_TOKENS, .. }), "a response's own parts follow it");
        assert_eq!(m.blocks[4], Block::ToolResult { call_id: "grep#1".into(), content: "x".into(), is_error: false });
        let m = parse(2, &json!({"parts": [{"text": "hi"}, {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://x"}}]})).unwrap();
        assert_eq!(m.role, Role::User, "no role is the user's");
        assert!(matches!(&m.blocks[1], Block::Opaque { tokens: FILE_TOKENS, .. }));
    }

    #[test]
    fn errors_name_index_and_field() {
        let cases = [
            (json!({"role": "system", "parts": [{"text": "x"}]}), "role"),
            (json!({"role": "function", "parts": []}), "role"),
            (json!({"role": "user", "parts": {"text": "x"}}), "parts"),
            (json!({"role": "user", "parts": ["hi"]}), "parts[0]"),
            (json!({"role": "user", "parts": [{"text": 3}]}), "parts[0].text"),
            (json!({"role": "user", "parts": [{"functionCall": {"name": "f"}}]}), "parts[0].functionCall"),
            (json!({"role": "model", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}), "parts[0].functionResponse"),
            (json!({"role": "model", "parts": [{"functionCall": {"args": {}}}]}), "parts[0].functionCall.name"),
            (json!({"role": "model", "parts": [{"functionCall": {"name": "f", "args": "{}"}}]}), "parts[0].functionCall.args"),
            (json!({"role": "model", "parts": [{"functionCall": {"name": "f", "id": 3}}]}), "parts[0].functionCall.id"),
            (
                json!({"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "ok"}}]}),
                "parts[0].functionResponse.response",
            ),
        ];
        for (v, field) in cases {
            let e = parse(4, &v).unwrap_err();
            assert_eq!(e.index(), Some(4), "{v}");
            assert_eq!(e.field(), Some(field), "{v}: {}", e.message());
        }
        let e = parse(0, &json!({"role": "system", "parts": []})).unwrap_err();
        assert!(e.message().contains("systemInstruction"), "{}", e.message());
    }

    #[test]
    fn link_gives_calls_unique_ids_and_responses_their_calls() {
        let call = json!({"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"p": 1}}}, {"functionCall": {"name": "ls", "args": {}}}, {"functionCall": {"name": "read", "args": {"p": 2}}}]});
        let answer = json!({"role": "user", "parts": [
            {"functionResponse": {"name": "ls", "response": {"output": "a b"}}},
            {"functionResponse": {"name": "read", "response": {"output": "one"}}},
            {"functionResponse": {"name": "read", "response": {"output": "two"}}}]});
        // The same turn twice: the calls of the second get other ids.
        let m = read(
            json!([{"role": "user", "parts": [{"text": "go"}]}, call, answer, {"role": "model", "parts": [{"text": "again"}]}, {"role": "user", "parts": [{"text": "again"}]}, call, answer]),
        );
        let first: Vec<&str> = m[1].call_ids().collect();
        let second: Vec<&str> = m[5].call_ids().collect();
        assert!(first.iter().all(|id| id.starts_with("read#") || id.starts_with("ls#")), "{first:?}");
        assert!(first.iter().all(|id| !second.contains(id)), "{first:?} {second:?}");
        assert_eq!(m[2].result_ids().collect::<Vec<_>>(), vec![first[1], first[0], first[2]], "by name, in order");
        assert_eq!(m[6].result_ids().collect::<Vec<_>>(), vec![second[1], second[0], second[2]]);
        assert!(crate::format::validate_tool_pairing(Format::Gemini, &m).is_empty());

        // Ids the wire gives are kept; a response names its call by id.
        let m = read(json!([
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "x1", "name": "f", "args": {}}}, {"functionCall": {"id": "x2", "name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "x2", "name": "f", "response": {}}}, {"functionResponse": {"id": "x1", "name": "f", "response": {}}}]}
        ]));
        assert_eq!(m[2].result_ids().collect::<Vec<_>>(), vec!["x2", "x1"]);

        // Linking a turn at a time gives the same pairs as linking the whole list.
        let mut first = vec![parse(0, &call).unwrap()];
        let mut claimed = std::collections::HashSet::new();
        link(&[], &mut first, &mut |id| claimed.insert(id.to_string()));
        let mut second = vec![parse(1, &answer).unwrap()];
        link(&[&first[0]], &mut second, &mut |id| claimed.insert(id.to_string()));
        let ids: Vec<&str> = first[0].call_ids().collect();
        assert_eq!(second[0].result_ids().collect::<Vec<_>>(), vec![ids[1], ids[0], ids[2]]);
    }

    #[test]
    fn the_validator_has_the_apis_rules() {
        let ok = json!([
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}, {"functionCall": {"name": "g", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "g", "response": {}}}, {"functionResponse": {"name": "f", "response": {}}}]},
            {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "a", "name": "f", "response": {}}}, {"text": "hurry"}]},
            {"role": "model", "parts": [{"text": "done"}]},
            {"role": "user", "parts": [{"text": "more"}]},
            {"role": "user", "parts": [{"text": "please"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}
        ]);
        assert_eq!(codes(ok.clone(), false), vec![], "consecutive user turns are fine; the last call may wait");
        assert_eq!(codes(ok, true), vec![(8, "MISSING_RESULT")]);
        let bad = json!([
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}, {"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            {"role": "model", "parts": [{"text": "hm"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "b", "name": "f", "response": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            {"role": "model", "parts": []},
            {"role": "user", "parts": [{"text": "x"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}}]}
        ]);
        assert_eq!(
            codes(bad, false),
            vec![
                (0, "CALL_NOT_AFTER_USER"),
                (0, "MISSING_RESULT"),
                (3, "CALL_NOT_AFTER_USER"),
                (3, "MISSING_RESULT"),
                (4, "ORPHAN_RESULT"),
                (5, "ORPHAN_RESULT"),
                (6, "EMPTY_CONTENT"),
                (8, "DUPLICATE_CALL"),
            ]
        );
        assert_eq!(codes(json!([{"role": "model", "parts": [{"text": "hi"}]}]), true), vec![(0, "FIRST_NOT_USER")]);
    }

    #[test]
    fn every_step_of_the_current_turn_keeps_its_signature() {
        let step = |sig: bool| {
            let mut call = json!({"functionCall": {"name": "f", "args": {}}});
            if sig {
                call["thoughtSignature"] = json!("c2ln");
            }
            vec![
                json!({"role": "model", "parts": [call, {"functionCall": {"name": "f", "args": {}}}]}),
                json!({"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}, {"functionResponse": {"name": "f", "response": {}}}]}),
            ]
        };
        let mut list = vec![json!({"role": "user", "parts": [{"text": "go"}]})];
        list.extend(step(false));
        list.push(json!({"role": "model", "parts": [{"text": "ok"}]}));
        list.push(json!({"role": "user", "parts": [{"text": "now"}]}));
        list.extend(step(true));
        list.extend(step(true));
        assert_eq!(codes(Value::Array(list.clone()), false), vec![], "an unsigned step of an earlier turn is fine");
        list.extend(step(false));
        assert_eq!(codes(Value::Array(list), false), vec![(9, "THOUGHT_SIGNATURE_MISSING")]);
    }

    #[test]
    fn rebuild_keeps_signed_parts_thoughts_and_ids() {
        let m = read(json!([
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "x": 1, "parts": [{"text": "plan", "thought": true}, {"text": "a long explanation", "thoughtSignature": "s1"},
                {"functionCall": {"name": "read", "args": {"p": 1}}, "thoughtSignature": "s2"}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"result": "long output"}, "willContinue": false,
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}}, {"text": "note"}]}
        ]));
        let call = m[1].blocks[2].clone();
        let out = rebuild(&m[1], vec![Block::Text("short".into()), call.clone()], syn());
        assert_eq!(
            out.wire,
            json!({"role": "model", "x": 1, "parts": [{"text": "plan", "thought": true}, {"text": "short"},
                {"functionCall": {"name": "read", "args": {"p": 1}}, "thoughtSignature": "s2"}]}),
            "the thought stays first, the call keeps its signature, the shortened text loses its own"
        );
        assert_eq!(out.call_ids().collect::<Vec<_>>(), m[1].call_ids().collect::<Vec<_>>(), "canonical ids carry over");
        let same = rebuild(&m[1], m[1].blocks.clone(), syn());
        assert_eq!(same.wire, m[1].wire, "an unchanged message rebuilds to itself");

        let mut blocks = m[2].blocks.clone();
        blocks[0] = match &blocks[0] {
            Block::ToolResult { call_id, .. } => Block::ToolResult { call_id: call_id.clone(), content: "short".into(), is_error: false },
            _ => unreachable!(),
        };
        let out = rebuild(&m[2], blocks, syn());
        assert_eq!(
            out.wire["parts"][0],
            json!({"functionResponse": {"name": "read", "response": {"result": "short"}, "willContinue": false,
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}})
        );
        assert_eq!(out.result_ids().collect::<Vec<_>>(), m[2].result_ids().collect::<Vec<_>>());
        assert_eq!(out.role, Role::Tool);
        // An error result becomes `{error}`; JSON output becomes `{output}` text.
        assert_eq!(write_response(Some(&json!({"output": "x"})), "e", true), json!({"error": "e"}));
        assert_eq!(write_response(Some(&json!({"a": 1, "b": 2})), "t", false), json!({"output": "t"}));
    }

    #[test]
    fn notes_merge_and_join_keep_ids_and_part_order() {
        let m = read(json!([
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "1"}}}]},
            {"role": "user", "parts": [{"text": "and"}]}
        ]));
        let n = synthesize(Role::Tool, "note".into(), syn());
        assert_eq!(n.wire, json!({"role": "user", "parts": [{"text": "note"}]}));
        assert_eq!(synthesize(Role::Assistant, "n".into(), syn()).wire, json!({"role": "model", "parts": [{"text": "n"}]}));
        let merged = merge(&m[2], "note", true, syn());
        assert_eq!(merged.wire["parts"][1], json!({"text": "note"}), "after the responses");
        assert_eq!(merged.result_ids().collect::<Vec<_>>(), m[2].result_ids().collect::<Vec<_>>());
        let joined = join(&m[3], &m[2], syn());
        assert_eq!(joined.wire["parts"][0]["functionResponse"]["name"], "f", "responses first");
        assert_eq!(joined.wire["parts"][1], json!({"text": "and"}));
        assert_eq!(joined.result_ids().collect::<Vec<_>>(), m[2].result_ids().collect::<Vec<_>>());
        assert_eq!(joined.role, Role::Tool);
    }

    #[test]
    fn reload_calls_in_every_shape() {
        let f = Format::Gemini;
        let want = Some("u-1".to_string());
        let args = json!({"working_context_offload_uuid": "u-1"});
        assert_eq!(f.reload_call_uuid(&json!({"functionCall": {"name": "context_reload", "args": args}})), want);
        assert_eq!(f.reload_call_uuid(&json!({"id": "c", "name": "context_reload", "args": args})), want);
        assert_eq!(f.reload_call_uuid(&args), want);
        assert_eq!(f.reload_call_uuid(&json!(args.to_string())), want);
        let tool = f.reload_tool();
        assert_eq!(tool["name"], "context_reload");
        assert_eq!(tool["parametersJsonSchema"]["required"], json!(["working_context_offload_uuid"]));
    }
}
