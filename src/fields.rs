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

/// The records of a list read from JSON text as [`Slots`] ([`read_list`]), named `at` in
/// messages: what [`list`] gives for the same list parsed as a JSON value, faults included.
pub(crate) fn records<T: Record>(items: &[Slots], at: &str) -> Result<Vec<T>, Fault> {
    let mut out = Vec::with_capacity(items.len());
    for (i, s) in items.iter().enumerate() {
        out.push(T::read(&Fields::of_slots::<T>(s, &|| format!("{at}[{i}]"))?)?);
    }
    Ok(out)
}

/// A JSON array of objects (a page of the saved state) read as the [`Slots`] of the fields
/// `names` names (a record's [`Record::FIELDS`]): each item's values for those fields, without
/// a JSON object made of each first (its table, its keys), only to be read field by field and
/// dropped. A page of the events is some sixty such objects, of ten fields each.
///
/// One reader for every kind of item (records, working entries): each reader serde_json is
/// given is compiled into the module whole, some 15 KB of it.
pub(crate) fn read_list(text: &str, names: &'static [&'static str]) -> Option<Vec<Slots>> {
    use serde::de::DeserializeSeed;
    debug_assert!(names.len() <= MAX_FIELDS);
    let mut de = serde_json::Deserializer::from_str(text);
    let items = ListSeed(names).deserialize(&mut de).ok()?;
    de.end().ok()?;
    items
}

/// An item of a list of records read from text: the values of the fields the record names, in
/// its order (a field given twice is its last value, as in a JSON object), the first field it
/// does not name, and what the item is when it is not an object.
pub(crate) struct Slots {
    values: [Option<Value>; MAX_FIELDS],
    unknown: Option<String>,
    not_object: Option<&'static str>,
}

impl Slots {
    /// The value of field `i` (in the order of the names it was read with), taken out.
    pub(crate) fn take(&mut self, i: usize) -> Option<Value> {
        self.values.get_mut(i).and_then(Option::take)
    }
}

/// Reads a JSON array as the [`Slots`] of the record whose fields are named.
struct ListSeed(&'static [&'static str]);

/// Reads one item as the [`Slots`] of the record whose fields are named.
#[derive(Clone, Copy)]
struct SlotsSeed(&'static [&'static str]);

impl<'de> serde::de::DeserializeSeed<'de> for ListSeed {
    type Value = Option<Vec<Slots>>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct Items(&'static [&'static str]);
        // Every kind of value is taken, anything but an array as none (the caller's error):
        // serde's own error for a value of the wrong kind writes a number with Rust's float
        // formatting, some 20 KB of the module (see `json.rs`), and even an error of our own
        // words brings serde_json's error builder in.
        impl<'de> serde::de::Visitor<'de> for Items {
            type Value = Option<Vec<Slots>>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element_seed(SlotsSeed(self.0))? {
                    items.push(item);
                }
                Ok(Some(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<String, Value>()?.is_some() {}
                Ok(None)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
        }
        d.deserialize_any(Items(self.0))
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for SlotsSeed {
    type Value = Slots;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Slots, D::Error> {
        d.deserialize_any(self)
    }
}

/// Reads a key as the place of the field it names, or the name of a field the record does not
/// name (copied only then).
struct KeySeed(&'static [&'static str]);

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed {
    type Value = Result<usize, String>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        // A key is a string: read as any value, it is one, and no error of serde's is made.
        d.deserialize_any(self)
    }
}

impl serde::de::Visitor<'_> for KeySeed {
    type Value = Result<usize, String>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|n| *n == key).ok_or_else(|| key.to_string()))
    }
}

impl SlotsSeed {
    fn not_object(kind: &'static str) -> Slots {
        Slots { values: Default::default(), unknown: None, not_object: Some(kind) }
    }
}

impl<'de> serde::de::Visitor<'de> for SlotsSeed {
    type Value = Slots;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a record")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Slots, A::Error> {
        let mut slots = Slots { values: Default::default(), unknown: None, not_object: None };
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            match key {
                Ok(i) => slots.values[i] = Some(map.next_value()?),
                Err(name) => {
                    // Read as a value and dropped: serde's reader that skips one would be
                    // compiled in besides.
                    map.next_value::<Value>()?;
                    slots.unknown.get_or_insert(name);
                }
            }
        }
        Ok(slots)
    }
    // The kinds `kind_of` names, for the fault an item that is not an object gets.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Slots, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(Self::not_object("an array"))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Slots, E> {
        Ok(Self::not_object("a boolean"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Slots, E> {
        Ok(Self::not_object("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Slots, E> {
        Ok(Self::not_object("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Slots, E> {
        Ok(Self::not_object("a number"))
    }
    fn visit_str<E>(self, _: &str) -> Result<Slots, E> {
        Ok(Self::not_object("a string"))
    }
    fn visit_unit<E>(self) -> Result<Slots, E> {
        Ok(Self::not_object("null"))
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
                None if T::CLOSED => return Err(f.not_a_field::<T>(k)),
                None => {}
            }
        }
        Ok(f)
    }

    /// The fields of an item read as [`Slots`], with the faults [`Fields::of`] finds in the
    /// same item given as a JSON value.
    fn of_slots<T: Record>(s: &'v Slots, place: &'a dyn Fn() -> String) -> Result<Fields<'v, 'a>, Fault> {
        let mut f = Fields { names: T::FIELDS, slots: [None; MAX_FIELDS], place };
        if let Some(kind) = s.not_object {
            let place = Some(place()).filter(|p| !p.is_empty()).unwrap_or_else(|| "the value".into());
            return Err(format!("{place} must be an object, got {kind}"));
        }
        if let Some(k) = s.unknown.as_deref().filter(|_| T::CLOSED) {
            return Err(f.not_a_field::<T>(k));
        }
        for (slot, v) in f.slots.iter_mut().zip(&s.values) {
            *slot = v.as_ref().filter(|v| !v.is_null());
        }
        Ok(f)
    }

    /// What a field the closed record `T` does not name says.
    fn not_a_field<T: Record>(&self, field: &str) -> Fault {
        format!("{} is not a field of this record ({})", self.name(field), T::FIELDS.join(", "))
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

    /// What reading a list from text as slots gives, and what parsing it whole gives.
    fn both<T: Record>(text: &str) -> (Result<Vec<T>, Fault>, Result<Vec<T>, Fault>) {
        let slots = read_list(text, T::FIELDS).unwrap();
        (records::<T>(&slots, "l"), list::<T>(Some(&serde_json::from_str(text).unwrap()), "l"))
    }

    #[test]
    fn a_list_read_from_text_as_slots_reads_as_the_list_parsed_whole() {
        let texts = [
            r#"[{"s":"a","n":1,"f":0},{"other":{"s":1},"n":2,"s":"b","f":2.5,"nil":null,"b":false}]"#,
            r#"[{"s":"a","n":1,"f":0,"s":"twice","n":5}]"#,
            r#"[{"s":"a\u0022q\"","n\u0000":1,"n":3,"f":1e2}]"#,
            r#"[]"#,
        ];
        for text in texts {
            let (slots, whole) = both::<Rec>(text);
            assert_eq!(slots.unwrap(), whole.unwrap(), "{text}");
        }
        // Faults, in the same words.
        let faulty = [
            r#"[{"s":"a","n":1,"f":0},{"s":"b"}]"#,
            r#"[{"s":"a","n":1,"f":0},7]"#,
            r#"[null]"#,
            r#"[[1,{"s":"x"}]]"#,
            r#"["record"]"#,
            r#"[true]"#,
            r#"[{"s":"a","n":-1,"f":0}]"#,
            r#"[{"s":"a","n":1,"f":"x"}]"#,
            r#"[{"s":"a","n":null,"f":0}]"#,
        ];
        for text in faulty {
            let (slots, whole) = both::<Rec>(text);
            assert_eq!(slots.unwrap_err(), whole.unwrap_err(), "{text}");
        }
        for text in [r#"[{"s":1}]"#, r#"[{"s":1,"x":2,"y":3}]"#, r#"[{"y":3,"s":1}]"#] {
            let (slots, whole) = both::<Closed>(text);
            assert_eq!(slots.map(|l| l.len()), whole.map(|l| l.len()), "{text}");
        }
        for text in [r#"{"s":1}"#, "1.5", "null", r#""[]""#, r#"[{"s":1}"#, "[] []"] {
            assert!(read_list(text, Rec::FIELDS).is_none(), "{text}: not an array");
        }
    }
}
