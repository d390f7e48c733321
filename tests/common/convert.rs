//! Converters of OpenAI chat-completions conversations to the Anthropic Messages, AI SDK,
//! Responses API and Gemini shapes, so every format sees the same traffic, and of Anthropic
//! conversations to the OpenAI shape (the Anthropic traces of the shared corpus).

use std::collections::HashMap;

use autocontext::Format;
use serde_json::{json, Value};

fn text_of(m: &Value) -> String {
    m["content"].as_str().unwrap_or("").to_string()
}

fn call_input(args: &str) -> Value {
    match serde_json::from_str::<Value>(args) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"arguments": args}),
    }
}

/// OpenAI messages as Anthropic `messages`: system messages stay with the host (dropped), tool
/// messages become `tool_result` blocks of a user message, consecutive same-side messages join
/// into one, so the result alternates and a turn after parallel calls carries several results.
/// Every third assistant message with calls opens with a signed thinking block; every seventh
/// message carries an unknown field and a `cache_control` on its last block.
pub fn to_anthropic(msgs: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut assistants = 0;
    for m in msgs {
        let (side, blocks): (&str, Vec<Value>) = match m["role"].as_str().unwrap_or("") {
            "system" => continue,
            "user" => {
                let t = text_of(m);
                ("user", vec![json!({"type": "text", "text": if t.is_empty() { "(empty)".to_string() } else { t }})])
            }
            "tool" => ("user", vec![json!({"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": text_of(m)})]),
            _ => {
                let mut b = Vec::new();
                let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
                if !calls.is_empty() {
                    assistants += 1;
                    if assistants % 3 == 0 {
                        b.push(json!({"type": "thinking", "thinking": format!("Step {assistants}: what to run next."), "signature": format!("sig-{assistants}")}));
                    }
                }
                let t = text_of(m);
                if !t.is_empty() {
                    b.push(json!({"type": "text", "text": t}));
                }
                for c in calls {
                    b.push(json!({"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                        "input": call_input(c["function"]["arguments"].as_str().unwrap_or(""))}));
                }
                if b.is_empty() {
                    b.push(json!({"type": "text", "text": "(no content)"}));
                }
                ("assistant", b)
            }
        };
        match out.last_mut() {
            Some(last) if last["role"] == side => {
                let content = last["content"].as_array_mut().unwrap();
                // Thinking only opens a message.
                content.extend(blocks.into_iter().filter(|b| b["type"] != "thinking"));
            }
            _ => out.push(json!({"role": side, "content": blocks})),
        }
    }
    for (i, m) in out.iter_mut().enumerate() {
        if i % 7 == 3 {
            m["x_trace"] = json!({"i": i});
            if let Some(last) = m["content"].as_array_mut().unwrap().last_mut() {
                last["cache_control"] = json!({"type": "ephemeral"});
            }
        }
        // A lone short text goes as a plain string, as hosts often send it.
        let plain = m["content"].as_array().unwrap().len() == 1 && m["content"][0]["type"] == "text" && i % 7 != 3;
        if plain {
            m["content"] = m["content"][0]["text"].clone();
        }
    }
    out
}

/// OpenAI messages as AI SDK `ModelMessage`s: consecutive tool messages join into one, results
/// of JSON objects become `json` outputs, every third assistant message with calls opens with a
/// signed reasoning part, and some messages use part lists and `providerOptions`.
pub fn to_ai_sdk(msgs: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut assistants = 0;
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        match role {
            "system" => out.push(json!({"role": "system", "content": text_of(m)})),
            "user" if i % 3 == 0 => out.push(json!({"role": "user", "content": [{"type": "text", "text": text_of(m)}]})),
            "user" => out.push(json!({"role": "user", "content": text_of(m)})),
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
                let t = text_of(m);
                let output = match serde_json::from_str::<Value>(&t) {
                    Ok(v @ Value::Object(_)) => json!({"type": "json", "value": v}),
                    _ => json!({"type": "text", "value": t}),
                };
                let mut part = json!({"type": "tool-result", "toolCallId": id, "toolName": names.get(&id).cloned().unwrap_or_default(), "output": output});
                if i % 5 == 0 {
                    part["providerOptions"] = json!({"test": {"i": i}});
                }
                match out.last_mut() {
                    Some(last) if last["role"] == "tool" => last["content"].as_array_mut().unwrap().push(part),
                    _ => out.push(json!({"role": "tool", "content": [part]})),
                }
            }
            _ => {
                let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
                let t = text_of(m);
                if calls.is_empty() {
                    out.push(json!({"role": "assistant", "content": t}));
                    continue;
                }
                assistants += 1;
                let mut parts = Vec::new();
                if assistants % 3 == 0 {
                    parts.push(json!({"type": "reasoning", "text": format!("Step {assistants}."),
                        "providerOptions": {"anthropic": {"signature": format!("sig-{assistants}")}}}));
                }
                if !t.is_empty() {
                    parts.push(json!({"type": "text", "text": t}));
                }
                for c in calls {
                    let id = c["id"].as_str().unwrap_or("").to_string();
                    let name = c["function"]["name"].as_str().unwrap_or("").to_string();
                    names.insert(id.clone(), name.clone());
                    parts.push(json!({"type": "tool-call", "toolCallId": id, "toolName": name,
                        "input": call_input(c["function"]["arguments"].as_str().unwrap_or(""))}));
                }
                out.push(json!({"role": "assistant", "content": parts}));
            }
        }
    }
    out
}

/// OpenAI messages as Responses API input items, in the API's spelling or (`sdk`) the OpenAI
/// Agents SDK's (`callId`, `function_call_result` with a `name` and `status`). An assistant
/// message with calls becomes its text as an assistant `message` item, then one `function_call`
/// item per call, every third such turn opening with a `reasoning` item; each tool message
/// becomes one output item. Users alternate between easy messages and `input_text` parts;
/// assistant text is an `output_text` part with an id and status, as the API returns it.
pub fn to_responses(msgs: &[Value], sdk: bool) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut turns = 0;
    let assistant_text = |i: usize, t: String| {
        json!({"type": "message", "id": format!("msg_{i}"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": t, "annotations": []}]})
    };
    for (i, m) in msgs.iter().enumerate() {
        match m["role"].as_str().unwrap_or("") {
            "system" => out.push(json!({"role": "developer", "content": text_of(m)})),
            "user" if i % 3 == 0 => {
                out.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text_of(m)}]}))
            }
            "user" => out.push(json!({"role": "user", "content": text_of(m)})),
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
                let t = text_of(m);
                out.push(if sdk {
                    let output = if i % 5 == 0 { json!({"type": "text", "text": t}) } else { json!(t) };
                    json!({"type": "function_call_result", "name": names.get(&id).cloned().unwrap_or_default(), "callId": id, "status": "completed", "output": output})
                } else {
                    json!({"type": "function_call_output", "call_id": id, "output": t})
                });
            }
            _ => {
                let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
                let t = text_of(m);
                if !calls.is_empty() {
                    turns += 1;
                    if turns % 3 == 0 {
                        out.push(json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": [{"type": "summary_text", "text": format!("Step {turns}.")}],
                            "encrypted_content": format!("enc-{turns}")}));
                    }
                }
                if !t.is_empty() || calls.is_empty() {
                    out.push(assistant_text(i, t));
                }
                for (k, c) in calls.iter().enumerate() {
                    let id = c["id"].as_str().unwrap_or("").to_string();
                    let name = c["function"]["name"].as_str().unwrap_or("").to_string();
                    names.insert(id.clone(), name.clone());
                    let args = c["function"]["arguments"].clone();
                    out.push(if sdk {
                        json!({"type": "function_call", "callId": id, "name": name, "arguments": args, "status": "completed"})
                    } else {
                        json!({"type": "function_call", "id": format!("fc_{i}_{k}"), "call_id": id, "name": name, "arguments": args, "status": "completed"})
                    });
                }
            }
        }
    }
    out
}

/// OpenAI messages as Gemini `contents`: system messages stay with the host (dropped), tool
/// messages become `functionResponse` parts of a user content, and consecutive contents of one
/// side join into one (responses first), so a turn after parallel calls carries several
/// responses. Calls come without ids in every other call turn (as ADK sends them; names pair
/// them) and with the trace's ids in the others; in every third round (a Gemini 3 model's) each
/// call turn opens with a thought and signs its first call, and every fourth final answer signs
/// its text; responses use
/// `{output}`, ADK's `{result}` or, for JSON results, the object itself (a response without an
/// id notes the trace's in its `partMetadata`, where tests find it); some user contents
/// leave out their role, and every seventh content carries an unknown field.
pub fn to_gemini(msgs: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut names: HashMap<String, (String, bool)> = HashMap::new();
    let (mut turns, mut answers, mut rounds) = (0, 0, 0);
    for (i, m) in msgs.iter().enumerate() {
        let (side, parts): (&str, Vec<Value>) = match m["role"].as_str().unwrap_or("") {
            "system" => continue,
            "user" => {
                // A round as the API counts it: a user content that is not function responses.
                if out.last().is_none_or(|l| l["role"] == "model") {
                    rounds += 1;
                }
                let t = text_of(m);
                ("user", vec![json!({"text": if t.is_empty() { "(empty)".to_string() } else { t }})])
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
                let (name, with_id) = names.get(&id).cloned().unwrap_or_default();
                let t = text_of(m);
                let response = match serde_json::from_str::<Value>(&t) {
                    Ok(v @ Value::Object(_)) => v,
                    _ if i % 2 == 0 => json!({"result": t}),
                    _ => json!({"output": t}),
                };
                let f = json!({"name": name, "response": response});
                let mut part = json!({"functionResponse": f});
                if with_id {
                    part["functionResponse"]["id"] = json!(id);
                } else {
                    // The trace's id, where a host keeps its own notes on a part (tests find results by it).
                    part["partMetadata"] = json!({"traceCallId": id});
                }
                ("user", vec![part])
            }
            _ => {
                let calls = m["tool_calls"].as_array().cloned().unwrap_or_default();
                let t = text_of(m);
                let mut p = Vec::new();
                if calls.is_empty() {
                    answers += 1;
                    let mut text = json!({"text": if t.is_empty() { "(no content)".to_string() } else { t }});
                    if answers % 4 == 0 {
                        text["thoughtSignature"] = json!(format!("c2lnLWFuc3dlci0{answers}"));
                    }
                    p.push(text);
                } else {
                    turns += 1;
                    let signed = rounds % 3 == 0;
                    if signed {
                        p.push(json!({"text": format!("Step {turns}: what to run next."), "thought": true}));
                    }
                    if !t.is_empty() {
                        p.push(json!({"text": t}));
                    }
                    for (k, c) in calls.iter().enumerate() {
                        let id = c["id"].as_str().unwrap_or("").to_string();
                        let name = c["function"]["name"].as_str().unwrap_or("").to_string();
                        let with_id = turns % 2 == 0;
                        names.insert(id.clone(), (name.clone(), with_id));
                        let mut f = json!({"name": name, "args": call_input(c["function"]["arguments"].as_str().unwrap_or(""))});
                        if with_id {
                            f["id"] = json!(id);
                        }
                        let mut part = json!({"functionCall": f});
                        if signed && k == 0 {
                            part["thoughtSignature"] = json!(format!("c2lnLXN0ZXAt{turns}"));
                        }
                        p.push(part);
                    }
                }
                ("model", p)
            }
        };
        match out.last_mut() {
            Some(last) if last["role"] == side || (side == "user" && last.get("role").is_none()) => {
                let all = last["parts"].as_array_mut().unwrap();
                let (mut front, rest): (Vec<Value>, Vec<Value>) = all
                    .drain(..)
                    .chain(parts.into_iter().filter(|p| p.get("thought").is_none()))
                    .partition(|p| p.get("functionResponse").is_some() || p.get("thought").is_some());
                front.extend(rest);
                *all = front;
            }
            _ => out.push(json!({"role": side, "parts": parts})),
        }
    }
    for (i, c) in out.iter_mut().enumerate() {
        if i % 7 == 3 {
            c["x_trace"] = json!({"i": i});
        }
        let plain_user = c["role"] == "user" && c["parts"].as_array().unwrap().iter().all(|p| p.get("text").is_some());
        if plain_user && i % 5 == 2 {
            c.as_object_mut().unwrap().remove("role");
        }
    }
    out
}

/// Whether item `i` of a list in `format` starts a model response: an assistant message, or in
/// the Responses shape the first of a response's items (reasoning, message, function calls).
pub fn starts_response(format: Format, msgs: &[Value], i: usize) -> bool {
    let responses = format == Format::OpenAiResponses;
    let model = |v: &Value| {
        v["role"] == "assistant" || v["role"] == "model" || (responses && matches!(v["type"].as_str(), Some("function_call" | "reasoning")))
    };
    model(&msgs[i]) && !(responses && i > 0 && model(&msgs[i - 1]))
}

/// `msgs` (OpenAI shape) in `format`.
pub fn convert(format: Format, msgs: &[Value]) -> Vec<Value> {
    match format {
        Format::OpenAi => msgs.to_vec(),
        Format::Anthropic => to_anthropic(msgs),
        Format::AiSdk => to_ai_sdk(msgs),
        Format::OpenAiResponses => to_responses(msgs, false),
        Format::Gemini => to_gemini(msgs),
    }
}

/// Anthropic `messages` (with the request's `system`, if any) as OpenAI chat messages: text
/// blocks join into the content, `tool_use` blocks become tool calls, each `tool_result` a tool
/// message, and the other text of a user turn that carries results a user message after them
/// (as the AI SDK shapes such a turn). Thinking, images and documents are left out.
pub fn anthropic_to_openai(system: Option<&Value>, msgs: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    match system {
        Some(Value::String(s)) if !s.is_empty() => out.push(json!({"role": "system", "content": s})),
        Some(Value::Array(parts)) => {
            let text: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
            if !text.is_empty() {
                out.push(json!({"role": "system", "content": text.join("\n")}));
            }
        }
        _ => {}
    }
    for m in msgs {
        let role = m["role"].as_str().unwrap_or("user");
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        };
        let text = |b: &[Value]| -> String {
            b.iter().filter(|x| x["type"] == "text").filter_map(|x| x["text"].as_str()).collect::<Vec<_>>().join("\n")
        };
        if role == "assistant" {
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| json!({"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": b["input"].to_string()}}))
                .collect();
            let t = text(&blocks);
            let mut msg = json!({"role": "assistant", "content": if t.is_empty() && !calls.is_empty() { Value::Null } else { json!(t) }});
            if !calls.is_empty() {
                msg["tool_calls"] = json!(calls);
            }
            out.push(msg);
        } else {
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                let content = match &b["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(parts) => text(parts),
                    _ => String::new(),
                };
                out.push(json!({"role": "tool", "tool_call_id": b["tool_use_id"], "content": content}));
            }
            let t = text(&blocks);
            if !t.is_empty() || !blocks.iter().any(|b| b["type"] == "tool_result") {
                out.push(json!({"role": "user", "content": if t.is_empty() { "(attachment)".to_string() } else { t }}));
            }
        }
    }
    out
}
