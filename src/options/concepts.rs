//! The `concepts` option: what fact retrieval keeps (the Koog design). Its own file because the
//! options read it ([`crate::options`]) and the facts rung uses it.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::options::read::OptionValue;

/// Concepts at most.
const MAX_CONCEPTS: usize = 32;

/// Whether a concept holds one value or many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactType {
    /// One current value (the latest one stated).
    Single,
    /// Every fact found.
    Multiple,
}

/// A concept whose facts survive compression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concept {
    /// Its name, as the block shows it.
    pub keyword: String,
    /// What it covers, for the summarizer.
    pub description: String,
    /// One value or many.
    pub fact_type: FactType,
}

impl Concept {
    /// The concept as JSON (`{ keyword, description, factType }`).
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "keyword": self.keyword,
            "description": self.description,
            "factType": match self.fact_type { FactType::Single => "single", FactType::Multiple => "multiple" },
        })
    }
}

/// The `concepts` option: `null` keeps none.
impl OptionValue for Vec<Concept> {
    const TS: &'static str = "readonly Concept[]";

    fn read(v: &Value, _field: &str) -> Result<Option<Self>> {
        match v {
            Value::Null => Ok(None),
            v => read_concepts(v).map(Some),
        }
    }

    fn write(&self) -> Value {
        Value::Array(self.iter().map(Concept::to_json).collect())
    }
}

/// Reads the `concepts` option.
pub(crate) fn read_concepts(v: &Value) -> Result<Vec<Concept>> {
    let Value::Array(items) = v else {
        return Err(Error::config("concepts", format!("must be an array of {{ keyword, description, factType }}, got {}", kind_of(v))));
    };
    if items.len() > MAX_CONCEPTS {
        return Err(Error::config("concepts", format!("has {} concepts; at most {MAX_CONCEPTS} (one request each per pass)", items.len())));
    }
    let mut out: Vec<Concept> = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        let at = |f: &str| format!("concepts[{k}]{f}");
        let Value::Object(o) = item else {
            return Err(Error::config(&at(""), format!("must be an object {{ keyword, description, factType }}, got {}", kind_of(item))));
        };
        for key in o.keys() {
            if !matches!(key.as_str(), "keyword" | "description" | "factType") {
                return Err(Error::config(&at(&format!(".{key}")), "is not a field of a concept (keyword, description, factType)"));
            }
        }
        let keyword = match o.get("keyword") {
            Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= 200 => s.trim().to_string(),
            Some(Value::String(_)) => return Err(Error::config(&at(".keyword"), "must be 1–200 characters, not blank")),
            Some(other) => return Err(Error::config(&at(".keyword"), format!("must be a string, got {}", kind_of(other)))),
            None => return Err(Error::config(&at(".keyword"), "is missing")),
        };
        if out.iter().any(|c| c.keyword == keyword) {
            return Err(Error::config(&at(".keyword"), format!("{keyword:?} names a concept a second time")));
        }
        let description = match o.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) if s.len() <= 4000 => s.clone(),
            Some(Value::String(_)) => return Err(Error::config(&at(".description"), "is longer than 4000 bytes")),
            Some(other) => return Err(Error::config(&at(".description"), format!("must be a string, got {}", kind_of(other)))),
        };
        let fact_type = match o.get("factType") {
            None | Some(Value::Null) => FactType::Multiple,
            Some(Value::String(s)) if s == "single" => FactType::Single,
            Some(Value::String(s)) if s == "multiple" => FactType::Multiple,
            Some(other) => return Err(Error::config(&at(".factType"), format!("must be \"single\" or \"multiple\", got {other}"))),
        };
        out.push(Concept { keyword, description, fact_type });
    }
    Ok(out)
}
