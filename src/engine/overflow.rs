//! Overflow handling: recognizing a provider's "context too long" error and compacting hard.
//!
//! Whatever the estimate says, a provider may still refuse a request as too long (another
//! tokenizer, hidden framing, tool schemas, the output reservation). The host hands the error
//! to [`crate::AutoContextMemory::handle_overflow`] as it got it (the SDK's error object, its JSON
//! body, or its message). The error is recognized by the shapes providers really send:
//!
//! - OpenAI: code `context_length_exceeded`, "This model's maximum context length is N tokens.
//!   However, your messages resulted in M tokens" (or "you requested M tokens (A in the
//!   messages, B in the completion)"); the Responses API's "Your input exceeds the context
//!   window of this model".
//! - Anthropic: `invalid_request_error` "prompt is too long: M tokens > N maximum", and "input
//!   length and `max_tokens` exceed context limit: A + B > N".
//! - Gemini: 400 `INVALID_ARGUMENT` "The input token count (M) exceeds the maximum number of
//!   tokens allowed (N)".
//! - OpenAI-compatible servers: vLLM ("maximum context length is N tokens. However, your
//!   request has M input tokens"), llama.cpp (`exceed_context_size_error` with `n_prompt_tokens`
//!   and `n_ctx`), OpenRouter ("This endpoint's maximum context length is N tokens. However, you
//!   requested about M tokens").
//!
//! Errors about the output alone (`max_tokens: 10000 > 4096, which is the maximum allowed
//! number of output tokens`) and malformed requests are not overflows: compacting would not
//! help, and the answer says not to retry. When the numbers are there, the provider's count
//! raises the calibration factor; then a pass compacts to a fraction of the target
//! ([`AGGRESSIVE`]) and the answer says whether a retry can succeed.

use serde_json::Value;

use crate::engine::calibration::Calibration;

/// An overflow compacts to this share of the usual target.
pub const AGGRESSIVE: f64 = 0.6;

/// A recognized overflow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Overflow {
    /// `openai`, `anthropic`, `gemini` or `openai-compatible`.
    pub provider: &'static str,
    /// The provider's limit for the input, when stated.
    pub limit: Option<u64>,
    /// What the provider counted in the refused input, when stated.
    pub requested: Option<u64>,
}

/// Every string in the error (objects, arrays, and JSON hidden inside strings), lowercased, and
/// the numbers of a few known fields.
fn collect(v: &Value, depth: usize, texts: &mut Vec<String>, fields: &mut Vec<(String, u64)>) {
    if depth > 8 {
        return;
    }
    match v {
        Value::String(s) => {
            let t = s.trim();
            if (t.starts_with('{') || t.starts_with('[')) && t.len() < 1_000_000 {
                if let Ok(inner) = serde_json::from_str::<Value>(t) {
                    collect(&inner, depth + 1, texts, fields);
                }
            }
            // Bodies embedded after a status: `400 {"type":"error",...}`.
            if let Some(p) = t.find('{').filter(|&p| p > 0) {
                if let Ok(inner) = serde_json::from_str::<Value>(&t[p..]) {
                    collect(&inner, depth + 1, texts, fields);
                }
            }
            texts.push(s.to_lowercase());
        }
        Value::Array(a) => a.iter().for_each(|x| collect(x, depth + 1, texts, fields)),
        Value::Object(o) => {
            for (k, x) in o {
                if let Some(n) = x.as_u64() {
                    fields.push((k.to_ascii_lowercase(), n));
                }
                collect(x, depth + 1, texts, fields);
            }
        }
        _ => {}
    }
}

/// The integers right after `prefix` in `text` (digits with `,` or `_` separators).
fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let p = text.find(prefix)? + prefix.len();
    let digits: String = text[p..]
        .trim_start_matches([' ', '(', ':'])
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',' || *c == '_')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Recognizes a context-length error (see the module docs).
pub fn classify(error: &Value) -> Option<Overflow> {
    let mut texts = Vec::new();
    let mut fields = Vec::new();
    collect(error, 0, &mut texts, &mut fields);
    let all = texts.join("\n");
    let field = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, n)| *n);

    // Anthropic.
    if let Some(requested) = number_after(&all, "prompt is too long:") {
        let limit = all.find("prompt is too long:").and_then(|p| number_after(&all[p..], "tokens >"));
        return Some(Overflow { provider: "anthropic", limit, requested: Some(requested) });
    }
    if all.contains("exceed context limit") {
        let p = all.find("exceed context limit").unwrap_or(0);
        let input = number_after(&all[p..], "context limit:");
        let limit = all[p..].find('>').and_then(|q| number_after(&all[p + q..], ">"));
        let output = all[p..].find('+').and_then(|q| number_after(&all[p + q..], "+"));
        return Some(Overflow { provider: "anthropic", limit: limit.map(|l| l.saturating_sub(output.unwrap_or(0))), requested: input });
    }
    // Gemini.
    if all.contains("input token count") && all.contains("exceeds the maximum number of tokens") {
        return Some(Overflow {
            provider: "gemini",
            limit: number_after(&all, "maximum number of tokens allowed"),
            requested: number_after(&all, "input token count"),
        });
    }
    // llama.cpp's server.
    if all.contains("exceed_context_size_error") || all.contains("exceeds the available context size") {
        return Some(Overflow { provider: "openai-compatible", limit: field("n_ctx"), requested: field("n_prompt_tokens") });
    }
    // OpenAI and the servers that copy its message (vLLM, OpenRouter, LiteLLM, ...).
    let stated = ["maximum context length is", "maximum context length of"].iter().find_map(|p| number_after(&all, p));
    let code = all.contains("context_length_exceeded");
    if stated.is_some() || code || all.contains("exceeds the context window") || all.contains("context window exceeded") {
        let requested = number_after(&all, "your messages resulted in")
            .or_else(|| {
                let p = all.find("you requested")?;
                // "you requested 4203 tokens (3703 in the messages, 500 in the completion)":
                // the messages are what compaction can shrink.
                number_after(&all[p..], "tokens (")
                    .or_else(|| number_after(&all[p..], "you requested about"))
                    .or_else(|| number_after(&all[p..], "you requested"))
            })
            .or_else(|| number_after(&all, "your request has"));
        let openai = code || all.contains("invalid_request_error") || all.contains("exceeds the context window");
        let compatible = all.contains("badrequesterror") || all.contains("your request has") || all.contains("endpoint's maximum");
        return Some(Overflow { provider: if openai && !compatible { "openai" } else { "openai-compatible" }, limit: stated, requested });
    }
    // Other servers' wordings of the same thing.
    const OTHERS: [&str; 6] = [
        "context length exceeded",
        "context_window_exceeded",
        "input is too long",
        "prompt is too long",
        "too many input tokens",
        "maximum context length",
    ];
    if OTHERS.iter().any(|p| all.contains(p)) && !all.contains("output tokens") {
        return Some(Overflow { provider: "openai-compatible", limit: None, requested: None });
    }
    None
}

/// The target of the compaction after overflow `o`: [`AGGRESSIVE`] of the trigger
/// (`trigger_tokens`, in provider tokens), or of `tokenRatio` of the provider's stated limit
/// when lower, in the estimate's units.
pub(crate) fn target(o: &Overflow, trigger_tokens: u64, token_ratio: f64, calibration: &Calibration) -> u64 {
    let mut budget = trigger_tokens;
    if let Some(limit) = o.limit {
        budget = budget.min((limit as f64 * token_ratio) as u64);
    }
    ((calibration.estimate_of(budget) as f64) * AGGRESSIVE).floor().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn is(v: Value, provider: &str, limit: Option<u64>, requested: Option<u64>) {
        let o = classify(&v).unwrap_or_else(|| panic!("not recognized: {v}"));
        assert_eq!((o.provider, o.limit, o.requested), (provider, limit, requested), "{v}");
    }

    #[test]
    fn recognizes_the_providers_real_errors() {
        is(
            json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            "openai",
            Some(128_000),
            Some(130_412),
        );
        is(
            json!("This model's maximum context length is 4097 tokens. However, you requested 4268 tokens (4012 in the messages, 256 in the completion). Please reduce the length of the messages or completion."),
            "openai-compatible", Some(4097), Some(4012),
        );
        is(
            json!({"type": "error", "sequence_number": 2, "error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "param": "input"}}),
            "openai",
            None,
            None,
        );
        is(
            json!({"status": 400, "message": "400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 209353 tokens > 199999 maximum\"}}"}),
            "anthropic",
            Some(199_999),
            Some(209_353),
        );
        is(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}),
            "anthropic",
            Some(191_808),
            Some(199_759),
        );
        is(
            json!({"error": {"code": 400, "message": "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}),
            "gemini",
            Some(1_048_576),
            Some(1_200_293),
        );
        is(
            json!({"message": "{\"error\":{\"message\":\"{\\n  \\\"error\\\": {\\n    \\\"code\\\": 400,\\n    \\\"message\\\": \\\"The input token count (3475108) exceeds the maximum number of tokens allowed (1048576).\\\",\\n    \\\"status\\\": \\\"INVALID_ARGUMENT\\\"\\n  }\\n}\\n\",\"code\":400,\"status\":\"Bad Request\"}}"}),
            "gemini",
            Some(1_048_576),
            Some(3_475_108),
        );
        is(
            json!({"object": "error", "message": "This model's maximum context length is 2048 tokens. However, your request has 2100 input tokens. Please reduce the length of the input messages.", "type": "BadRequestError", "param": "input_tokens", "code": 400}),
            "openai-compatible",
            Some(2048),
            Some(2100),
        );
        is(
            json!({"error": {"code": 400, "message": "the request exceeds the available context size. try increasing the context size or enable context shift", "type": "exceed_context_size_error", "n_prompt_tokens": 14429, "n_ctx": 8192}}),
            "openai-compatible",
            Some(8192),
            Some(14_429),
        );
        is(
            json!("400 This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically."),
            "openai-compatible", Some(32_768), Some(42_832),
        );
    }

    #[test]
    fn other_errors_are_not_overflows() {
        for v in [
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens for claude-3-5-sonnet-20240620"}}),
            json!({"error": {"message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "type": "invalid_request_error", "code": null}}),
            json!({"error": {"message": "Rate limit reached for gpt-4o", "type": "requests", "code": "rate_limit_exceeded"}}),
            json!("fetch failed"),
            json!(null),
        ] {
            assert_eq!(classify(&v), None, "{v}");
        }
    }
}
