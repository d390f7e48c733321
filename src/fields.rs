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

use serde_json::Value;

use crate::json::kind_of;

/// A record the engine saves: its fields' names, and how it is read from them.
pub(crate) trait Record: Sized {
    /// Every field the record has, as saved.
    const FIELDS: &'static [&'static str];
    /// Whether a field not in [`Record::FIELDS`] is a fault (a record whose every field
    /// matters) rather than ignored.
    const CLOSED: bool = false;
    /// The record from its fields.
    fn read(f: &Fields) -> Result<Self, Fault>;
}

/// Most fields a record has.
const MAX_FIELDS: usize = 12;

/// The fields of one JSON object, found in one walk over its entries (no lookup per field),
/// and where the object sits, for messages (`state.events[3]`; written only for a fault).
pub(crate) struct Fields<'v, 'a> {
    names: &'static [&'static str],
    slots: [Option<&'v Value>; MAX_FIELDS],
    place: &'a dyn Fn() -> String,
}

/// A reading fault: what is wrong, and where.
pub(crate) type Fault = String;

/// `v` read as the record `T`; `at` names it in messages (empty for the value itself).
pub(crate) fn record<T: Record>(v: &Value, at: &str) -> Result<T, Fault> {
    record_at(v, &|| at.to_string())
}

/// `v` read as the record `T`, named in messages by what `place` writes.
pub(crate) fn record_at<T: Record>(v: &Value, place: &dyn Fn() -> String) -> Result<T, Fault> {
    T::read(&Fields::of::<T>(v, place)?)
}

/// A list of records named `at` in messages, which may be absent or null (an empty list).
pub(crate) fn list<T: Record>(v: Option<&Value>, at: &str) -> Result<Vec<T>, Fault> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().enumerate().map(|(i, v)| record_at(v, &|| format!("{at}[{i}]"))).collect(),
        Some(other) => Err(format!("{at} must be an array, got {}", kind_of(other))),
    }
}

/// `v` as a list of strings, named `at` in messages, each string being `what`
/// (`state.pending must hold offload uuids, got a number`).
pub(crate) fn strings(v: &Value, at: &str, what: &str) -> Result<Vec<String>, Fault> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|u| u.as_str().map(str::to_string).ok_or_else(|| format!("{at} must hold {what}, got {}", kind_of(u))))
            .collect(),
        other => Err(format!("{at} must be an array, got {}", kind_of(other))),
    }
}

impl<'v, 'a> Fields<'v, 'a> {
    /// The fields of `v` as the record `T` names them; `v` must be an object.
    fn of<T: Record>(v: &'v Value, place: &'a dyn Fn() -> String) -> Result<Fields<'v, 'a>, Fault> {
        debug_assert!(T::FIELDS.len() <= MAX_FIELDS, "a record of more than {MAX_FIELDS} fields");
        let mut f = Fields { names: T::FIELDS, slots: [None; MAX_FIELDS], place };
        let Value::Object(obj) = v else {
            let place = Some(place()).filter(|p| !p.is_empty()).unwrap_or_else(|| "the value".into());
            return Err(format!("{place} must be an object, got {}", kind_of(v)));
        };
        for (k, v) in obj {
            match T::FIELDS.iter().position(|n| n == k) {
                Some(i) => f.slots[i] = Some(v).filter(|v| !v.is_null()),
                None if T::CLOSED => return Err(format!("{} is not a field of this record ({})", f.name(k), T::FIELDS.join(", "))),
                None => {}
            }
        }
        Ok(f)
    }

    /// A field's name in messages.
    pub fn name(&self, field: &str) -> String {
        match (self.place)() {
            p if p.is_empty() => field.to_string(),
            p => format!("{p}.{field}"),
        }
    }

    /// The field's value, `None` when absent or null.
    pub fn get(&self, field: &str) -> Option<&'v Value> {
        let i = self.names.iter().position(|n| *n == field);
        debug_assert!(i.is_some(), "{field} is not among the record's fields");
        i.and_then(|i| self.slots[i])
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
        self.required(field)?;
        Ok(self.opt_str(field)?.unwrap_or_default())
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

    /// A list of records in a field, which may be absent (an empty list).
    pub fn list<T: Record>(&self, field: &str) -> Result<Vec<T>, Fault> {
        list(self.get(field), &self.name(field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A record of every kind of field.
    #[derive(Debug, PartialEq)]
    struct Rec {
        s: String,
        n: u64,
        f: f64,
        b: bool,
        nil: Option<String>,
    }

    impl Record for Rec {
        const FIELDS: &'static [&'static str] = &["s", "n", "f", "b", "nil", "absent", "neg", "frac"];
        fn read(f: &Fields) -> Result<Rec, Fault> {
            Ok(Rec { s: f.str("s")?, n: f.u64("n")?, f: f.f64("f")?, b: f.flag("b")?, nil: f.opt_str("nil")? })
        }
    }

    /// Reads one field of a record, for the faults.
    struct One<const K: usize>;
    impl<const K: usize> Record for One<K> {
        const FIELDS: &'static [&'static str] = &["s", "n", "f", "b", "nil", "absent", "neg", "frac"];
        fn read(f: &Fields) -> Result<Self, Fault> {
            match K {
                0 => f.str("absent").map(drop),
                1 => f.u64("nil").map(drop),
                2 => f.str("n").map(drop),
                3 => f.u64("neg").map(drop),
                4 => f.u64("frac").map(drop),
                5 => f.flag("s").map(drop),
                _ => f.opt_str("absent").map(drop),
            }
            .map(|()| One)
        }
    }

    /// A record that knows only `s`, and refuses other fields.
    struct Closed;
    impl Record for Closed {
        const FIELDS: &'static [&'static str] = &["s"];
        const CLOSED: bool = true;
        fn read(_: &Fields) -> Result<Closed, Fault> {
            Ok(Closed)
        }
    }

    #[test]
    fn fields_are_read_as_serde_reads_them_and_faults_name_the_field() {
        let v = json!({"s": "x", "n": 3, "f": 1.5, "b": true, "nil": null, "neg": -1, "frac": 2.5, "other": [1]});
        assert_eq!(record::<Rec>(&v, "rec").unwrap(), Rec { s: "x".into(), n: 3, f: 1.5, b: true, nil: None });
        assert_eq!(record::<Rec>(&json!({"s": "x", "n": 3, "f": 2}), "").unwrap().f, 2.0, "an integer is a number");
        assert!(record::<One<9>>(&v, "rec").is_ok(), "an absent optional field");
        assert_eq!(record::<One<0>>(&v, "rec").err().unwrap(), "rec.absent is missing");
        assert_eq!(record::<One<1>>(&v, "rec").err().unwrap(), "rec.nil is missing");
        assert_eq!(record::<One<2>>(&v, "rec").err().unwrap(), "rec.n must be a string, got 3");
        assert_eq!(record::<One<3>>(&v, "rec").err().unwrap(), "rec.neg must be a whole number, got -1");
        assert_eq!(record::<One<4>>(&v, "rec").err().unwrap(), "rec.frac must be a whole number, got 2.5");
        assert_eq!(record::<One<5>>(&v, "").err().unwrap(), "s must be true or false, got a string");
        assert!(record::<Closed>(&json!({"s": 1}), "rec").is_ok());
        assert_eq!(record::<Closed>(&v, "rec").err().unwrap(), "rec.n is not a field of this record (s)");
        assert_eq!(record::<Rec>(&json!([]), "rec").err().unwrap(), "rec must be an object, got an array");
        assert_eq!(record::<Rec>(&json!(1), "").err().unwrap(), "the value must be an object, got a number");
        let two = json!([{"s": "a", "n": 1, "f": 0}, {"s": "b", "n": 2, "f": 0}]);
        assert_eq!(list::<Rec>(Some(&two), "l").unwrap().iter().map(|r| r.n).collect::<Vec<_>>(), [1, 2]);
        assert!(list::<Rec>(None, "l").unwrap().is_empty());
        assert!(list::<Rec>(Some(&Value::Null), "l").unwrap().is_empty());
        assert_eq!(list::<Rec>(Some(&json!([{"s": "a", "n": 1, "f": 0}, {"s": "b"}])), "l").unwrap_err(), "l[1].n is missing");
        assert_eq!(list::<Rec>(Some(&json!([{"s": "a", "n": 1, "f": 0}, 7])), "l").unwrap_err(), "l[1] must be an object, got a number");
        assert_eq!(list::<Rec>(Some(&json!({})), "l").unwrap_err(), "l must be an array, got an object");
        assert_eq!(strings(&json!(["a", "b"]), "s", "names").unwrap(), ["a", "b"]);
        assert_eq!(strings(&json!(["a", 1]), "s", "names").unwrap_err(), "s must hold names, got a number");
        assert_eq!(strings(&Value::Null, "s", "names").unwrap_err(), "s must be an array, got null");
    }
}
