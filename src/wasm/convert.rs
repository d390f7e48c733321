//! JSON text in, JSON text out: every value that crosses the boundary, converted in one place.
//!
//! Inputs that are not valid JSON are the caller's fault and get the code of what they were
//! meant to be (`INVALID_MESSAGE` for messages, `INVALID_CONFIG` for options, ...). Outputs are
//! serialized from types that always serialize, so writing them cannot fail. Errors that come
//! with a result (failed summaries) travel beside its text as real `Error` objects.

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::JsValue;

use super::error::{js_error, to_js};
use crate::bytes16;
use crate::error::{Error, ErrorCode, HostError};
use crate::format::{Format, Problem};
use crate::host::Summary;

/// Parses JSON text from the host; `what` names it in the error.
pub(crate) fn parse(text: &str, code: ErrorCode, what: &str) -> Result<Value, JsValue> {
    serde_json::from_str(text).map_err(|e| js_error(code, format!("{what}: not valid JSON ({e})")))
}

/// A JSON array of strings named `at` (the keys a host listed), or what is wrong with it.
pub(crate) fn string_list(text: &str, at: &str) -> Result<Vec<String>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{at}: {e}"))?;
    crate::fields::strings(&v, at, "strings")
}

/// Serializes a value the binding returns.
pub(crate) fn to_text<T: Serialize + ?Sized>(value: &T) -> String {
    // Only types whose serialization cannot fail (plain data, string keys) are passed here.
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

/// JSON text for JavaScript to parse, with every character outside ASCII written as a `\u`
/// escape (a surrogate pair of them outside the Basic Multilingual Plane). `JSON.parse` reads
/// the same value from it, the same strings to the code unit; but JavaScript decodes ASCII from
/// the module's memory several times faster than UTF-8 (a one-byte string, copied), and parses
/// a one-byte string faster too. Only for valid JSON text, where such characters appear in
/// strings alone, and only for texts JavaScript parses (the texts of a saved state and the
/// pages a save writes stay as the engine wrote them). The texts are mostly ASCII: the next
/// character to escape is looked for sixteen bytes at a time (`bytes16::find_within`).
pub(crate) fn ascii_json(text: String) -> String {
    let bytes = text.as_bytes();
    let Some(first) = bytes16::find_within(bytes, 0, 0x80, 0xff) else {
        return text;
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(text.len() + (text.len() - first) / 2 + 16);
    out.extend_from_slice(&bytes[..first]);
    let mut at = first;
    while at < bytes.len() {
        let run = bytes16::find_within(bytes, at, 0x80, 0xff).unwrap_or(bytes.len());
        out.extend_from_slice(&bytes[at..run]);
        at = run;
        let Some(c) = text[at..].chars().next() else { break };
        let mut units = [0u16; 2];
        for &unit in c.encode_utf16(&mut units).iter() {
            out.extend_from_slice(b"\\u");
            for shift in [12, 8, 4, 0] {
                out.push(HEX[usize::from((unit >> shift) & 0xf)]);
            }
        }
        at += c.len_utf8();
    }
    // Only ASCII bytes were written.
    String::from_utf8(out).unwrap_or_default()
}

/// A JSON text result together with the errors that came with it, as
/// `{ result: string, errors: Error[] }` (the errors keep their host causes).
pub(crate) fn with_errors(text: String, errors: Vec<Error>) -> JsValue {
    let list = js_sys::Array::new();
    for e in errors {
        list.push(&to_js(e));
    }
    let out = js_sys::Object::new();
    // Setting properties on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(&out, &JsValue::from_str("result"), &JsValue::from_str(&text));
    let _ = js_sys::Reflect::set(&out, &JsValue::from_str("errors"), &list);
    out.into()
}

/// Reads a wire-format name.
pub(crate) fn format(name: &str) -> Result<Format, JsValue> {
    Format::from_name(name).ok_or_else(|| {
        super::error::js_field_error(
            ErrorCode::InvalidConfig,
            "format",
            format!("option `format` must be {}, got {name:?}", Format::names()),
        )
    })
}

/// Reads what the summarize adapter resolved to: JSON text of
/// `{"text": string, "inputTokens"?: number, "outputTokens"?: number}`.
pub(crate) fn summary(text: &str) -> Result<Summary, HostError> {
    let bad = |why: String| HostError::new(format!("summarize returned an unusable result: {why}"));
    let v: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON ({e})")))?;
    let obj = v.as_object().ok_or_else(|| bad("expected an object with a `text` string".into()))?;
    let text = match obj.get("text") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(bad("`text` must be a string".into())),
    };
    let count = |key: &str| -> Result<Option<u64>, HostError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => {
                match n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0 && f.is_finite()).map(|f| f.round() as u64)) {
                    Some(n) => Ok(Some(n)),
                    None => Err(bad(format!("`{key}` must be a non-negative number, got {n}"))),
                }
            }
            Some(_) => Err(bad(format!("`{key}` must be a number"))),
        }
    };
    Ok(Summary { text, input_tokens: count("inputTokens")?, output_tokens: count("outputTokens")? })
}

/// Problems a provider would reject a wire list for: messages that cannot be read, then the
/// tool pairing of the messages that can (their indices and texts are those of the whole list).
pub(crate) fn validate(messages: &Value, format: Format, request: bool) -> Vec<Problem> {
    let items: Vec<&Value> = match messages {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    };
    let mut problems = Vec::new();
    let mut parsed = Vec::with_capacity(items.len());
    let mut index_of = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        match format.parse(i, v) {
            Ok(m) => {
                parsed.push(m);
                index_of.push(i);
            }
            Err(e) => problems.push(Problem { index: i, code: "INVALID_MESSAGE", message: e.message().to_string() }),
        }
    }
    let found = if request { format.validate_request(&parsed) } else { format.validate(&parsed) };
    for mut p in found {
        let real = index_of.get(p.index).copied().unwrap_or(p.index);
        if real != p.index {
            p.message = p.message.replacen(&format!("message {}", p.index), &format!("message {real}"), 1);
            p.index = real;
        }
        problems.push(p);
    }
    crate::sort::by_key(&mut problems, |p| p.index as u128);
    problems
}
