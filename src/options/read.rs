//! How an option's value is read from JSON, written back, and named in TypeScript, by its type.
//!
//! An option's Rust type decides all three ([`OptionValue`]), so a row of the declaration
//! ([`super::Config`]) names its type once and gets its reader, its writer and its TypeScript
//! type from it. Every reader fails with `INVALID_CONFIG` naming the option and saying what it
//! expected and what it got, so a wrong value fails construction instead of misbehaving later.
//! The readers of the option types with rules of their own (presets and strategy names,
//! concepts, prompts) live beside those types.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::format::Format;
use crate::json::{kind_of, Num};
use crate::tokens::Tokenizer;

/// A type an option can have.
pub trait OptionValue: Sized {
    /// Its TypeScript type, as the generated declarations name it.
    const TS: &'static str;

    /// Reads the value given for option `field`; `None` keeps the default (a `null` where the
    /// type takes it as "unset").
    fn read(v: &Value, field: &str) -> Result<Option<Self>>;

    /// The value as the options' JSON, as [`OptionValue::read`] reads it back.
    fn write(&self) -> Value;
}

/// Integers: a JSON number without a fraction, in range.
macro_rules! integer {
    ($($t:ty),*) => {$(
        impl OptionValue for $t {
            const TS: &'static str = "number";

            fn read(v: &Value, field: &str) -> Result<Option<Self>> {
                let n = match v {
                    Value::Number(n) => {
                        n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64))
                    }
                    _ => None,
                };
                let n = n.ok_or_else(|| Error::config(field, format!("must be a non-negative integer, got {}", show(v))))?;
                <$t>::try_from(n).map(Some).map_err(|_| Error::config(field, format!("is too large: {n}")))
            }

            fn write(&self) -> Value {
                json!(self)
            }
        }
    )*};
}

integer!(u32, u64);

impl OptionValue for f64 {
    const TS: &'static str = "number";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        v.as_f64().map(Some).ok_or_else(|| Error::config(field, format!("must be a number, got {}", show(v))))
    }

    fn write(&self) -> Value {
        json!(self)
    }
}

impl OptionValue for bool {
    const TS: &'static str = "boolean";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        match v {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(*b)),
            v => Err(Error::config(field, format!("must be true or false, got {}", show(v)))),
        }
    }

    fn write(&self) -> Value {
        json!(self)
    }
}

impl OptionValue for String {
    const TS: &'static str = "string";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        match v {
            Value::String(s) => Ok(Some(s.clone())),
            other => Err(Error::config(field, format!("must be a string, got {}", kind_of(other)))),
        }
    }

    fn write(&self) -> Value {
        json!(self)
    }
}

/// An option that may be unset: `null` leaves it unset.
impl<T: OptionValue> OptionValue for Option<T> {
    const TS: &'static str = T::TS;

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        match v {
            Value::Null => Ok(None),
            v => Ok(T::read(v, field)?.map(Some)),
        }
    }

    fn write(&self) -> Value {
        self.as_ref().map_or(Value::Null, T::write)
    }
}

/// The tools of `pinnedTools`: a list of distinct, non-blank names.
impl OptionValue for Vec<String> {
    const TS: &'static str = "readonly string[]";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        let items = match v {
            Value::Null => return Ok(None),
            Value::Array(items) => items,
            v => return Err(Error::config(field, format!("must be an array of tool names, got {}", kind_of(v)))),
        };
        if items.len() > MAX_NAMES {
            return Err(Error::config(field, format!("lists {} names; at most {MAX_NAMES}", items.len())));
        }
        let mut out: Vec<String> = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            match item {
                Value::String(s) if !s.trim().is_empty() && s.len() <= 256 => {
                    if !out.contains(s) {
                        out.push(s.clone());
                    }
                }
                Value::String(_) => return Err(Error::config(&format!("{field}[{k}]"), "must be a tool name of 1–256 bytes, not blank")),
                other => return Err(Error::config(&format!("{field}[{k}]"), format!("must be a string, got {}", kind_of(other)))),
            }
        }
        Ok(Some(out))
    }

    fn write(&self) -> Value {
        json!(self)
    }
}

/// The most names a list option (`pinnedTools`) may hold.
const MAX_NAMES: usize = 256;

impl OptionValue for Format {
    const TS: &'static str = "FormatName";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        match v.as_str().and_then(Format::from_name) {
            Some(f) => Ok(Some(f)),
            None => Err(Error::config(field, format!("must be {}, got {v}", Format::names()))),
        }
    }

    fn write(&self) -> Value {
        json!(self.name())
    }
}

impl OptionValue for Tokenizer {
    const TS: &'static str = "TokenizerName | TokenCounterFn";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        match v.as_str().and_then(Tokenizer::from_name) {
            Some(t) => Ok(Some(t)),
            None => Err(Error::config(field, format!("must be \"o200k_base\", \"cl100k_base\", \"estimate\" or a function, got {v}"))),
        }
    }

    fn write(&self) -> Value {
        json!(self.name())
    }
}

/// A value as an error message shows it: a string quoted, a number as written, else its kind.
pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        other => kind_of(other).to_string(),
    }
}

/// Checks an integer option is from 1 to `max`.
pub(crate) fn positive(field: &str, v: u64, max: u64) -> Result<()> {
    if v == 0 || v > max {
        return Err(Error::config(field, format!("must be an integer from 1 to {max}, got {v}")));
    }
    Ok(())
}

/// Checks a share is in (0, 1].
pub(crate) fn ratio(field: &str, v: f64) -> Result<()> {
    if !(v > 0.0 && v <= 1.0) {
        return Err(Error::config(field, format!("must be a number in (0, 1], got {}", Num(v))));
    }
    Ok(())
}
