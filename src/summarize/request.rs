//! Reading a [`SummarizeRequest`] back from JSON, for hosts that call a built-in summarizer
//! directly with the request the engine gave them.

use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::host::SummarizeRequest;
use crate::json::kind_of;

fn invalid(field: &str, message: String) -> Error {
    Error::new(ErrorCode::InvalidArgument, format!("summarize request: `{field}` {message}"))
}

fn text(obj: &serde_json::Map<String, Value>, field: &str, required: bool) -> Result<String> {
    match obj.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) if !required => Ok(String::new()),
        None | Some(Value::Null) => Err(invalid(field, "is missing".into())),
        Some(other) => Err(invalid(field, format!("must be a string, got {}", kind_of(other)))),
    }
}

/// The request in `value`, as the engine hands it to the host: `prompt` (required), `kind`,
/// `system`, `messages` and `targetChars` (optional). Other fields (`signal`, `timeoutMs`,
/// `schema`) are ignored.
///
/// # Errors
/// `INVALID_ARGUMENT` when `value` is not an object or a field has the wrong type.
pub fn request_from_json(value: &Value) -> Result<SummarizeRequest> {
    let Value::Object(obj) = value else {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            format!("summarize request must be an object with a `prompt`, got {}", kind_of(value)),
        ));
    };
    let prompt = text(obj, "prompt", true)?;
    let kind = text(obj, "kind", false)?;
    let system = text(obj, "system", false)?;
    let messages = match obj.get("messages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => return Err(invalid("messages", format!("must be an array, got {}", kind_of(other)))),
    };
    let target_chars = match obj.get("targetChars") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.is_finite() && f >= 0.0 => Some(f.round().min(usize::MAX as f64) as usize),
            _ => return Err(invalid("targetChars", format!("must be a non-negative number, got {n}"))),
        },
        Some(other) => return Err(invalid("targetChars", format!("must be a number, got {}", kind_of(other)))),
    };
    Ok(SummarizeRequest { kind, system, prompt, messages, target_chars, timeout_ms: None, schema: None, from_cache: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_fields_the_engine_writes() {
        let r = request_from_json(&json!({
            "kind": "round", "system": "s", "prompt": "p", "messages": [{"role": "user"}],
            "targetChars": 120.4, "timeoutMs": 5, "signal": {}
        }))
        .unwrap();
        assert_eq!((r.kind.as_str(), r.system.as_str(), r.prompt.as_str()), ("round", "s", "p"));
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.target_chars, Some(120));
        let bare = request_from_json(&json!({"prompt": "only"})).unwrap();
        assert_eq!((bare.kind.as_str(), bare.target_chars), ("", None));
    }

    #[test]
    fn refuses_malformed_requests() {
        for (v, needle) in [
            (json!("text"), "must be an object"),
            (json!({}), "`prompt` is missing"),
            (json!({"prompt": 3}), "`prompt` must be a string"),
            (json!({"prompt": "p", "targetChars": -1}), "`targetChars` must be a non-negative number"),
            (json!({"prompt": "p", "targetChars": "9"}), "`targetChars` must be a number"),
            (json!({"prompt": "p", "messages": {}}), "`messages` must be an array"),
        ] {
            let e = request_from_json(&v).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidArgument);
            assert!(e.message().contains(needle), "{}", e.message());
        }
    }
}
