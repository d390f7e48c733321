//! A JSON object's fields read as typed values, for the records the engine saves and reads back
//! (offload records, events, the calibration, the plan, a log chunk).
//!
//! The engine reads every message as a `serde_json::Value` (a wire value is kept as it came), so
//! its records are read from values too. serde's derived readers would do it, but each record
//! type's reader, serde's value deserializer behind them and the float formatting their error
//! messages pull in came to some 50 KB of the module's code, for a dozen small records; these
//! few functions replace them. The rules are serde's defaults: an unknown field is ignored
//! (unless the reader asks [`Fields::only`]), an optional field may be absent or null, a whole
//! number is a JSON integer. A fault is a message naming the field and what it held.

use serde_json::{Map, Value};

use crate::json::kind_of;

/// The fields of one JSON object, and where it sits for messages (`[3]`, `expand[0]`).
pub(crate) struct Fields<'v> {
    obj: &'v Map<String, Value>,
    at: String,
}

/// A reading fault: what is wrong, and where.
pub(crate) type Fault = String;

impl<'v> Fields<'v> {
    /// The fields of `v`, which must be an object; `at` names it in messages (empty for the
    /// value itself).
    pub fn of(v: &'v Value, at: impl Into<String>) -> Result<Fields<'v>, Fault> {
        let at = at.into();
        match v {
            Value::Object(obj) => Ok(Fields { obj, at }),
            other => Err(format!("{} must be an object, got {}", if at.is_empty() { "the value" } else { &at }, kind_of(other))),
        }
    }

    /// A field's name in messages.
    pub fn name(&self, field: &str) -> String {
        if self.at.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.at)
        }
    }

    /// The field's value, `None` when absent or null.
    pub fn get(&self, field: &str) -> Option<&'v Value> {
        self.obj.get(field).filter(|v| !v.is_null())
    }

    /// A field that must be there.
    fn required(&self, field: &str) -> Result<&'v Value, Fault> {
        self.get(field).ok_or_else(|| format!("{} is missing", self.name(field)))
    }

    /// What a field of the wrong kind says (a number is named as itself).
    fn wrong(&self, field: &str, want: &str, got: &Value) -> Fault {
        match got {
            Value::Number(n) => format!("{} must be {want}, got {n}", self.name(field)),
            other => format!("{} must be {want}, got {}", self.name(field), kind_of(other)),
        }
    }

    /// A string field that may be absent.
    pub fn opt_str(&self, field: &str) -> Result<Option<String>, Fault> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.wrong(field, "a string", other)),
        }
    }

    /// A string field.
    pub fn str(&self, field: &str) -> Result<String, Fault> {
        self.opt_str(field)?.ok_or_else(|| format!("{} is missing", self.name(field)))
    }

    /// A whole number that may be absent.
    pub fn opt_u64(&self, field: &str) -> Result<Option<u64>, Fault> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| self.wrong(field, "a whole number", v)),
        }
    }

    /// A whole number that may be absent, and fits a `u32`.
    pub fn opt_u32(&self, field: &str) -> Result<Option<u32>, Fault> {
        match self.opt_u64(field)? {
            Some(v) => u32::try_from(v).map(Some).map_err(|_| format!("{} is too large ({v})", self.name(field))),
            None => Ok(None),
        }
    }

    /// A whole number.
    pub fn u64(&self, field: &str) -> Result<u64, Fault> {
        self.required(field)?;
        Ok(self.opt_u64(field)?.unwrap_or(0))
    }

    /// A whole number that fits a `usize`.
    pub fn usize(&self, field: &str) -> Result<usize, Fault> {
        let v = self.u64(field)?;
        usize::try_from(v).map_err(|_| format!("{} is too large ({v})", self.name(field)))
    }

    /// A number that may be absent.
    pub fn opt_f64(&self, field: &str) -> Result<Option<f64>, Fault> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| self.wrong(field, "a number", v)),
        }
    }

    /// A number.
    pub fn f64(&self, field: &str) -> Result<f64, Fault> {
        self.required(field)?;
        Ok(self.opt_f64(field)?.unwrap_or(0.0))
    }

    /// `true` or `false`, `false` when absent.
    pub fn flag(&self, field: &str) -> Result<bool, Fault> {
        match self.get(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.wrong(field, "true or false", other)),
        }
    }

    /// Fails on a field not in `known` (a record whose every field matters).
    pub fn only(&self, known: &[&str]) -> Result<(), Fault> {
        match self.obj.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(format!("{} is not a field of this record ({})", self.name(k), known.join(", "))),
            None => Ok(()),
        }
    }
}

/// A list of records named `at` in messages, which may be absent (an empty list), each read
/// by `read` from the fields of the item (`at[i]`).
pub(crate) fn list<T>(v: Option<&Value>, at: &str, read: impl Fn(&Fields) -> Result<T, Fault>) -> Result<Vec<T>, Fault> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().enumerate().map(|(i, v)| read(&Fields::of(v, format!("{at}[{i}]"))?)).collect(),
        Some(other) => Err(format!("{at} must be an array, got {}", kind_of(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_read_as_serde_reads_them_and_faults_name_the_field() {
        let v = json!({"s": "x", "n": 3, "f": 1.5, "b": true, "nil": null, "neg": -1, "frac": 2.5, "a": [1]});
        let f = Fields::of(&v, "rec").unwrap();
        assert_eq!(f.str("s").unwrap(), "x");
        assert_eq!(f.opt_str("nil").unwrap(), None, "null is absent");
        assert_eq!(f.opt_str("absent").unwrap(), None);
        assert_eq!(f.u64("n").unwrap(), 3);
        assert_eq!(f.f64("n").unwrap(), 3.0, "an integer is a number");
        assert_eq!(f.f64("f").unwrap(), 1.5);
        assert!(f.flag("b").unwrap() && !f.flag("absent").unwrap());
        assert_eq!(f.str("absent").unwrap_err(), "rec.absent is missing");
        assert_eq!(f.u64("nil").unwrap_err(), "rec.nil is missing");
        assert_eq!(f.str("n").unwrap_err(), "rec.n must be a string, got 3");
        assert_eq!(f.u64("neg").unwrap_err(), "rec.neg must be a whole number, got -1");
        assert_eq!(f.u64("frac").unwrap_err(), "rec.frac must be a whole number, got 2.5");
        assert_eq!(f.flag("s").unwrap_err(), "rec.s must be true or false, got a string");
        assert!(f.only(&["s", "n", "f", "b", "nil", "neg", "frac", "a"]).is_ok());
        assert_eq!(f.only(&["s"]).unwrap_err(), "rec.n is not a field of this record (s)");
        assert_eq!(Fields::of(&json!([]), "rec").err().unwrap(), "rec must be an object, got an array");
        let read = |f: &Fields| f.u64("n");
        assert_eq!(list(Some(&json!([{"n": 1}, {"n": 2}])), "l", read).unwrap(), [1, 2]);
        assert_eq!(list(None, "l", read).unwrap(), Vec::<u64>::new());
        assert_eq!(list(Some(&json!([{"n": 1}, {"m": 2}])), "l", read).unwrap_err(), "l[1].n is missing");
        assert_eq!(list(Some(&json!([{"n": 1}, 7])), "l", read).unwrap_err(), "l[1] must be an object, got a number");
        assert_eq!(list(Some(&json!({})), "l", read).unwrap_err(), "l must be an array, got an object");
    }
}
