//! The nesting limit of wire messages.
//!
//! The WebAssembly binding reads JSON text with serde_json, which stops at 128 levels of arrays
//! and objects. A native host hands over `Value`s directly, and cloning or serializing a value
//! thousands of levels deep recurses through the stack until it overflows (an abort, not an
//! error). So every format refuses a message nested deeper than [`MAX_DEPTH`], with the same
//! typed error wherever it comes from; the limit leaves room for the levels a state adds around
//! a message, so every state `toJSON()` writes reads back in the binding. The check walks the
//! value with its own stack, so it cannot overflow either.

use serde_json::Value;

use crate::error::{Error, Result};

/// Arrays and objects a message may nest, itself included (a state adds four levels around it,
/// and the binding's parser reads 128).
pub const MAX_DEPTH: usize = 100;

/// `INVALID_MESSAGE` for message `index` when `v` nests deeper than [`MAX_DEPTH`].
pub(crate) fn check(index: usize, v: &Value) -> Result<()> {
    if exceeds(v, MAX_DEPTH) {
        return Err(Error::message_at(index, "", format!("is nested more than {MAX_DEPTH} levels deep")));
    }
    Ok(())
}

/// Whether `v` nests more than `max` arrays and objects (itself included).
pub(crate) fn exceeds(v: &Value, max: usize) -> bool {
    deepest(v, max) > max
}

/// How many arrays and objects `v` nests (itself included), or the first depth past `max`
/// reached: the walk stops there.
pub(crate) fn deepest(v: &Value, max: usize) -> usize {
    // Only arrays and objects go on the stack, and no iterator is boxed: every message added
    // and every state restored is walked, most of their values are strings.
    let nested = |c: &&Value| matches!(c, Value::Array(_) | Value::Object(_));
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    if nested(&v) {
        stack.push((v, 1));
    }
    let mut most = 0;
    while let Some((v, depth)) = stack.pop() {
        most = most.max(depth);
        if depth > max {
            return depth;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter().filter(nested).map(|c| (c, depth + 1))),
            Value::Object(o) => stack.extend(o.values().filter(nested).map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    most
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use serde_json::json;

    #[test]
    fn depth_counts_arrays_and_objects_only() {
        // depth of each value, by its own recursion
        fn depth(v: &Value) -> usize {
            match v {
                Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
                Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
                _ => 0,
            }
        }
        let values = [
            json!("text"),
            json!(1),
            json!([]),
            json!({}),
            json!([1, "a", null]),
            json!({"a": [1, {"b": [[], {"c": "d"}]}], "e": {}}),
            json!([[[[["deep"]]]], {"x": 1}]),
        ];
        for v in &values {
            let d = depth(v);
            for max in 0..8 {
                assert_eq!(exceeds(v, max), d > max, "{v} at most {max}");
            }
        }
    }

    /// `depth` objects around a string, built without recursion (`json!` would serialize `v`).
    fn nested(depth: usize) -> Value {
        let mut v = json!("leaf");
        for _ in 0..depth {
            v = Value::Object(serde_json::Map::from_iter([("v".to_string(), v)]));
        }
        v
    }

    fn message(extra: Value) -> Value {
        Value::Object(serde_json::Map::from_iter([
            ("role".to_string(), json!("user")),
            ("content".to_string(), json!("x")),
            ("extra".to_string(), extra),
        ]))
    }

    #[test]
    fn every_format_refuses_messages_nested_past_the_limit_without_recursing() {
        for format in Format::ALL {
            let ok = message(nested(MAX_DEPTH - 1));
            assert!(format.parse(0, &ok).is_ok(), "{}", format.name());
            for depth in [MAX_DEPTH, 100_000] {
                let deep = message(nested(depth));
                let e = format.parse(3, &deep).unwrap_err();
                assert_eq!(e.code(), crate::ErrorCode::InvalidMessage);
                assert_eq!(e.index(), Some(3));
                assert!(e.message().contains("nested more than 100"), "{}", e.message());
                // Dropping a value this deep recurses too; the test's own value is leaked.
                std::mem::forget(deep);
            }
        }
    }
}
