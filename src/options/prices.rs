//! The `prices` option: what the provider bills for a token of each kind, so a pass can price
//! its edits in tokens.
//!
//! Providers cache the longest unchanged prefix of a request. A token the cache serves costs a
//! tenth of the input price (Anthropic, OpenAI's current models, Gemini's implicit cache); a
//! token after the cached prefix is written at the input price (OpenAI, Gemini) or above it
//! (Anthropic: 1.25× for the five-minute cache, 2× for the hour). So every token that stays in
//! the context pays rent on every call, and an edit of the context re-bills everything after
//! it at the write price once. The engine weighs the two ([`crate::strategy::rent`]); these
//! are the weights, as multiples of the agent model's input price, with defaults per format
//! (the provider a format's users call) and each field overridable alone:
//!
//! | format | `cacheRead` | `cacheWrite` | `cacheTtlMs` | `summarizeInput` | `summarizeOutput` |
//! |---|---:|---:|---:|---:|---:|
//! | `anthropic` | 0.1 | 1.25 | 300000 | 1 | 5 |
//! | `openai`, `openai-responses` | 0.1 | 1 | 300000 | 1 | 6 |
//! | `gemini` | 0.1 | 1 | 300000 | 1 | 6 |
//! | `ai-sdk` (any provider) | 0.1 | 1.25 | 300000 | 1 | 5 |
//!
//! The AI SDK's default is Anthropic's because a higher write price makes the engine rewrite
//! less: the safe side when the provider is unknown. `summarizeInput` and `summarizeOutput`
//! price the summarizer's calls against the agent's input price: a smaller summarizer model
//! (Haiku for a Sonnet agent: a third) is cheaper, and the engine then summarizes more readily.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::format::{Format, PriceList};
use crate::json::{kind_of, Num};
use crate::options::read::{show, OptionValue};

/// What each kind of token costs, as a multiple of the agent model's input price.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// A prompt token the provider's cache serves.
    pub cache_read: f64,
    /// A prompt token after the cached prefix (written to the cache).
    pub cache_write: f64,
    /// How long the cache lives after a request, in milliseconds: a call later than that reads
    /// nothing from it.
    pub cache_ttl_ms: u64,
    /// An input token of a summarize call.
    pub summarize_input: f64,
    /// An output token of a summarize call.
    pub summarize_output: f64,
}

impl Prices {
    /// The defaults for `format`'s provider (see the module docs).
    pub fn of(format: Format) -> Prices {
        let anthropic = Prices { cache_read: 0.1, cache_write: 1.25, cache_ttl_ms: 300_000, summarize_input: 1.0, summarize_output: 5.0 };
        match format.price_list() {
            PriceList::Anthropic => anthropic,
            PriceList::OpenAi => Prices { cache_write: 1.0, summarize_output: 6.0, ..anthropic },
        }
    }

    /// What rewriting one cached token costs beyond reading it: the write price less the read.
    pub fn rewrite(&self) -> f64 {
        (self.cache_write - self.cache_read).max(0.0)
    }
}

/// The `prices` option as given: each field the host set, the rest the format's default.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PriceOptions {
    /// `cacheRead`.
    pub cache_read: Option<f64>,
    /// `cacheWrite`.
    pub cache_write: Option<f64>,
    /// `cacheTtlMs`.
    pub cache_ttl_ms: Option<u64>,
    /// `summarizeInput`.
    pub summarize_input: Option<f64>,
    /// `summarizeOutput`.
    pub summarize_output: Option<f64>,
}

/// The fields of the option, by their JavaScript names.
const FIELDS: [&str; 5] = ["cacheRead", "cacheWrite", "cacheTtlMs", "summarizeInput", "summarizeOutput"];

/// The largest multiple of the input price a field may be (output prices run to about 8×).
const MAX_PRICE: f64 = 1000.0;
/// The longest cache lifetime: a week (the longest any provider offers is a day).
const MAX_TTL_MS: u64 = 7 * 24 * 3_600_000;

impl PriceOptions {
    /// The prices in force for `format`: those given, the format's defaults for the rest.
    pub fn resolve(&self, format: Format) -> Prices {
        let d = Prices::of(format);
        Prices {
            cache_read: self.cache_read.unwrap_or(d.cache_read),
            cache_write: self.cache_write.unwrap_or(d.cache_write),
            cache_ttl_ms: self.cache_ttl_ms.unwrap_or(d.cache_ttl_ms),
            summarize_input: self.summarize_input.unwrap_or(d.summarize_input),
            summarize_output: self.summarize_output.unwrap_or(d.summarize_output),
        }
    }

    /// Checks the prices in force for `format`: each a finite multiple from 0 to 1000, the
    /// cache read at most the write (a cache that cost more to read than to write would make
    /// rewriting pay by itself), the lifetime at most a week.
    pub fn check(&self, format: Format) -> Result<()> {
        let p = self.resolve(format);
        for (field, v) in [
            ("cacheRead", p.cache_read),
            ("cacheWrite", p.cache_write),
            ("summarizeInput", p.summarize_input),
            ("summarizeOutput", p.summarize_output),
        ] {
            if !(v.is_finite() && (0.0..=MAX_PRICE).contains(&v)) {
                return Err(Error::config(
                    &format!("prices.{field}"),
                    format!("must be a multiple of the input price from 0 to {}, got {}", Num(MAX_PRICE), Num(v)),
                ));
            }
        }
        if p.cache_read > p.cache_write {
            return Err(Error::config(
                "prices.cacheRead",
                format!(
                    "({}) must be at most prices.cacheWrite ({}): a cached token never costs more than a written one",
                    Num(p.cache_read),
                    Num(p.cache_write)
                ),
            ));
        }
        if p.cache_ttl_ms > MAX_TTL_MS {
            return Err(Error::config(
                "prices.cacheTtlMs",
                format!("must be from 0 to {MAX_TTL_MS} milliseconds (a week), got {}", p.cache_ttl_ms),
            ));
        }
        Ok(())
    }
}

/// The `prices` option: an object of the five fields, each optional; `null` keeps the defaults.
impl OptionValue for PriceOptions {
    const TS: &'static str = "Prices";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        let o = match v {
            Value::Null => return Ok(None),
            Value::Object(o) => o,
            other => {
                return Err(Error::config(
                    field,
                    format!("must be an object such as {{ cacheRead: 0.1, cacheWrite: 1.25 }}, got {}", kind_of(other)),
                ))
            }
        };
        for key in o.keys() {
            if !FIELDS.contains(&key.as_str()) {
                return Err(Error::config(&format!("{field}.{key}"), format!("is not a field of prices ({})", FIELDS.join(", "))));
            }
        }
        let number = |name: &str| -> Result<Option<f64>> {
            match o.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(other) => Err(Error::config(&format!("{field}.{name}"), format!("must be a number, got {}", show(other)))),
            }
        };
        let ttl = match o.get("cacheTtlMs") {
            None | Some(Value::Null) => None,
            Some(v) => Some(u64::read(v, &format!("{field}.cacheTtlMs"))?.unwrap_or(0)),
        };
        Ok(Some(PriceOptions {
            cache_read: number("cacheRead")?,
            cache_write: number("cacheWrite")?,
            cache_ttl_ms: ttl,
            summarize_input: number("summarizeInput")?,
            summarize_output: number("summarizeOutput")?,
        }))
    }

    fn write(&self) -> Value {
        let mut out = Map::new();
        let mut put = |name: &str, v: Option<Value>| {
            if let Some(v) = v {
                out.insert(name.into(), v);
            }
        };
        put("cacheRead", self.cache_read.map(Value::from));
        put("cacheWrite", self.cache_write.map(Value::from));
        put("cacheTtlMs", self.cache_ttl_ms.map(Value::from));
        put("summarizeInput", self.summarize_input.map(Value::from));
        put("summarizeOutput", self.summarize_output.map(Value::from));
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_follow_the_format_and_fields_override_alone() {
        let given = PriceOptions::read(&json!({"cacheWrite": 2, "cacheTtlMs": 3_600_000}), "prices").unwrap().unwrap();
        let p = given.resolve(Format::Anthropic);
        assert_eq!((p.cache_read, p.cache_write, p.cache_ttl_ms, p.summarize_output), (0.1, 2.0, 3_600_000, 5.0));
        assert_eq!(PriceOptions::default().resolve(Format::OpenAi).cache_write, 1.0);
        assert_eq!(PriceOptions::read(&given.write(), "prices").unwrap(), Some(given));
    }

    #[test]
    fn bad_prices_name_their_field() {
        for (v, field) in [
            (json!({"cacheRead": -1}), "prices.cacheRead"),
            (json!({"cacheRead": 2}), "prices.cacheRead"),
            (json!({"cacheWrite": "high"}), "prices.cacheWrite"),
            (json!({"cacheTtlMs": 1.5}), "prices.cacheTtlMs"),
            (json!({"cacheTtlMs": 1e12}), "prices.cacheTtlMs"),
            (json!({"summarizeOutput": 5000}), "prices.summarizeOutput"),
            (json!({"write": 1}), "prices.write"),
            (json!(3), "prices"),
        ] {
            let e = PriceOptions::read(&v, "prices").and_then(|p| p.unwrap_or_default().check(Format::Anthropic)).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidConfig, "{v}");
            assert_eq!(e.field(), Some(field), "{v}: {}", e.message());
        }
    }
}
