//! JSON text written from [`Value`]s, sixteen bytes of a string at a time.
//!
//! Most of what the engine writes is the text of strings: the originals an offload keeps (a
//! pass writes every byte it replaces) and the working list it hands back before each request.
//! serde_json looks up each byte of a string in its escape table; here a string is read sixteen
//! bytes at a time with SIMD instructions ([`crate::bytes16`]; eight at a time in a `u64` where
//! there are none), and a block without a quote, a backslash or a control character (nearly
//! all of them) is copied whole. The text is byte for byte what `serde_json::to_string` writes
//! (a test compares them), so payloads and their digests read as before. The same sixteen-byte
//! test finds where an object or array ends in text already read as JSON ([`container_end`]):
//! a page of the saved state gives its messages' text by cutting it, not by writing their trees
//! again (`engine/pages.rs`). And a value named in
//! words, for the messages that say what was found where something else was expected
//! ([`kind_of`]), and a number as JavaScript writes it ([`Num`], [`Fixed`]): the messages name
//! the numbers a host gave, and Rust's own float formatting would add some 16 KB of code to the
//! module for a few error messages.

use serde_json::Value;

use crate::bytes16::{self, Lanes};

/// What kind of JSON value `v` is, in words (`a string`, `an object`), for error messages: the
/// formats, the options and the summarizer's answers all say `expected ..., got {kind}`.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A number in a message as JavaScript writes it: `2` (not `2.0`), `0.75`, `1e-7`, `NaN`.
/// Through serde_json's shortest float writer, which the module has anyway.
pub(crate) struct Num(pub f64);

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if x.is_nan() {
            f.write_str("NaN")
        } else if x.is_infinite() {
            f.write_str(if x > 0.0 { "Infinity" } else { "-Infinity" })
        } else if x.fract() == 0.0 && x.abs() < 1e15 {
            write!(f, "{}", x as i64)
        } else {
            serde_json::Number::from_f64(x).map_or(Ok(()), |n| write!(f, "{n}"))
        }
    }
}

/// A number rounded to `digits` decimals (`1.50`), as `{:.2}` writes it, from integers (at
/// most 9 decimals; beyond a billion, or not finite, as [`Num`]).
pub(crate) struct Fixed(pub f64, pub u32);

impl std::fmt::Display for Fixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (x, digits) = (self.0, self.1.min(9));
        if !x.is_finite() || x.abs() >= 1e9 {
            return Num(x).fmt(f);
        }
        let scale = 10u64.pow(digits);
        let scaled = (x.abs() * scale as f64).round() as u64;
        let sign = if x < 0.0 { "-" } else { "" };
        match digits {
            0 => write!(f, "{sign}{scaled}"),
            d => write!(f, "{sign}{}.{:0width$}", scaled / scale, scaled % scale, width = d as usize),
        }
    }
}

/// A JSON object written field by field into `out`, as serde_json writes a struct (for the
/// records the state holds: writing them straight costs a tenth of building their values).
pub(crate) struct Obj<'o> {
    out: &'o mut String,
    first: bool,
}

impl<'o> Obj<'o> {
    /// Opens the object.
    pub fn new(out: &'o mut String) -> Obj<'o> {
        out.push('{');
        Obj { out, first: true }
    }

    /// Writes `"key":` (keys are the engine's own names: nothing to escape).
    fn key(&mut self, key: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\":");
        self.out
    }

    /// A string field.
    pub fn str(&mut self, key: &str, v: &str) -> &mut Self {
        let out = self.key(key);
        write_str(out, v);
        self
    }

    /// A whole number.
    pub fn int(&mut self, key: &str, v: u64) -> &mut Self {
        use std::fmt::Write;
        let _ = write!(self.key(key), "{v}");
        self
    }

    /// A number, as serde_json writes an `f64` (`2.0`, `null` when not finite).
    pub fn num(&mut self, key: &str, v: f64) -> &mut Self {
        use std::fmt::Write;
        let out = self.key(key);
        match serde_json::Number::from_f64(v) {
            Some(n) => drop(write!(out, "{n}")),
            None => out.push_str("null"),
        }
        self
    }

    /// `true`.
    pub fn yes(&mut self, key: &str) -> &mut Self {
        self.key(key).push_str("true");
        self
    }

    /// Closes the object.
    pub fn end(&mut self) {
        self.out.push('}');
    }
}

/// `v` as JSON text.
#[cfg(test)]
pub(crate) fn to_string(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v);
    out
}

/// The values of `items` as the text of one JSON array.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the binding's
pub(crate) fn array_to_string<'v>(items: impl IntoIterator<Item = &'v Value>) -> String {
    let mut out = String::new();
    write_array(&mut out, items);
    out
}

/// The values of `items` as one JSON array, appended to `out`.
pub(crate) fn write_array<'v>(out: &mut String, items: impl IntoIterator<Item = &'v Value>) {
    out.push('[');
    write_items(out, items, write);
    out.push(']');
}

/// Writes `items` joined by commas, each with `write`: an array's items without its brackets.
pub(crate) fn write_items<'a, T: ?Sized + 'a>(
    out: &mut String,
    items: impl IntoIterator<Item = &'a T>,
    mut write: impl FnMut(&mut String, &'a T),
) {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(out, item);
    }
}

/// `v` as JSON text, appended to `out`.
pub(crate) fn write(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&serde_json::to_string(n).expect("a number always serializes")),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => write_array(out, items),
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write(out, v);
            }
            out.push('}');
        }
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of the lowest byte of `w` (little-endian) that JSON must escape is set, and no
/// bit below it: a byte below 0x20, `"` or `\`. (Bits above the first such byte may be set or
/// not; only the lowest is read.)
#[inline(always)]
fn escapes(w: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    control | zero(w ^ (ONES * b'"' as u64)) | zero(w ^ (ONES * b'\\' as u64))
}

/// A bit for each of the sixteen bytes of `b` that JSON must escape (a byte below 0x20, `"` or
/// `\`), the first byte's the lowest.
#[inline(always)]
fn escapes16(b: &[u8; 16]) -> u32 {
    let v = Lanes::load(b);
    v.below(0x20).or(v.eq(b'"')).or(v.eq(b'\\')).bits()
}

/// `s` as a JSON string, with serde_json's escapes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`
/// and `\u00XX` for the other control characters; everything else as it is.
pub(crate) fn write_str(out: &mut String, s: &str) {
    write_str_in::<{ bytes16::ENABLED }>(out, s);
}

/// [`write_str`], sixteen bytes at a time when `LANES` (the same text: a test compares them).
fn write_str_in<const LANES: bool>(out: &mut String, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push('"');
    let mut start = 0; // the first byte not yet copied
    let mut i = next_escape::<LANES>(b, 0);
    while i < b.len() {
        // An escaped byte is ASCII, so `start` and `i` are character boundaries.
        out.push_str(&s[start..i]);
        escape(out, b[i]);
        start = i + 1;
        i = next_escape::<LANES>(b, start);
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Where the first byte JSON must escape (a byte below 0x20, `"` or `\`) is in `b`, from `i`
/// on, or `b`'s length when there is none: sixteen bytes at a time when `LANES`, else eight,
/// then one at a time. What the writer copies whole and what a scan skips of a string.
#[inline(always)]
fn next_escape<const LANES: bool>(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        if let Some(block) = bytes16::at(b, i).filter(|_| LANES) {
            let found = escapes16(block);
            if found != 0 {
                return i + found.trailing_zeros() as usize;
            }
            i += 16;
        } else if i + 8 <= b.len() {
            let mut word = [0; 8];
            word.copy_from_slice(&b[i..i + 8]);
            let found = escapes(u64::from_le_bytes(word));
            if found != 0 {
                return i + (found.trailing_zeros() / 8) as usize;
            }
            i += 8;
        } else if matches!(b[i], 0..=0x1f | b'"' | b'\\') {
            return i;
        } else {
            i += 1;
        }
    }
    i
}

/// Where the JSON object or array that opens at byte `start` of `text` ends: the index after
/// its closing bracket. For text a parser has read as JSON (a page of the saved state): the
/// brackets outside strings are counted, and each string is skipped to its closing quote
/// sixteen or eight bytes at a time, as [`write_str`] finds what to escape. `None` when no
/// object or array opens at `start`, or it does not close.
pub(crate) fn container_end(text: &str, start: usize) -> Option<usize> {
    container_end_in::<{ bytes16::ENABLED }>(text.as_bytes(), start)
}

/// Where the container that `depth` brackets opened before byte `from` of `text` ends, as
/// [`container_end`] finds it (`from` outside any string): the rest of an object after the
/// value of one of its fields, say.
pub(crate) fn closing(text: &str, from: usize, depth: usize) -> Option<usize> {
    closing_in::<{ bytes16::ENABLED }>(text.as_bytes(), from, depth)
}

/// [`container_end`], strings skipped sixteen bytes at a time when `LANES`.
fn container_end_in<const LANES: bool>(b: &[u8], start: usize) -> Option<usize> {
    if !matches!(b.get(start), Some(b'{' | b'[')) {
        return None;
    }
    closing_in::<LANES>(b, start, 0)
}

/// [`closing`], strings skipped sixteen bytes at a time when `LANES`.
fn closing_in<const LANES: bool>(b: &[u8], from: usize, mut depth: usize) -> Option<usize> {
    let mut i = from;
    while let Some(&c) = b.get(i) {
        match c {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' => {
                i = string_end::<LANES>(b, i + 1)?;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index after the closing quote of the JSON string whose contents begin at `i`.
fn string_end<const LANES: bool>(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        i = next_escape::<LANES>(b, i);
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            // An escape: its next byte is never the string's end.
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

#[cold]
fn escape(out: &mut String, c: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match c {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        _ => {
            out.push_str("\\u00");
            out.push(HEX[(c >> 4) as usize] as char);
            out.push(HEX[(c & 15) as usize] as char);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        for (x, js) in [(2.0, "2"), (-3.0, "-3"), (0.75, "0.75"), (1e-7, "1e-7"), (0.1 + 0.2, "0.30000000000000004"), (1e300, "1e+300")] {
            assert_eq!(Num(x).to_string(), js, "{js}");
        }
        assert_eq!([Num(f64::NAN), Num(f64::INFINITY), Num(f64::NEG_INFINITY)].map(|n| n.to_string()), ["NaN", "Infinity", "-Infinity"]);
        // Fixed decimals agree with Rust's `{:.N}` wherever the scaled number is not a tie.
        let mut x = 0.0013_f64;
        while x < 5e8 {
            for (d, v) in [(0, x), (1, x), (2, -x), (3, x)] {
                assert_eq!(Fixed(v, d).to_string(), format!("{v:.*}", d as usize), "{v} to {d}");
            }
            x = x * 1.37 + 0.011;
        }
    }

    #[test]
    fn every_string_is_written_as_serde_json_writes_it() {
        // Each escaped byte at each offset of a word, between plain ASCII and multi-byte text.
        let specials: Vec<char> = (0u8..0x20).map(char::from).chain(['"', '\\', '\u{7f}', 'é', '€', '😀', '/', 'a']).collect();
        for &c in &specials {
            for before in 0..17 {
                for after in [0, 1, 7, 8, 9] {
                    let s = format!("{}{c}{}", "x".repeat(before), "é".repeat(after));
                    let v = Value::String(s);
                    assert_eq!(to_string(&v), serde_json::to_string(&v).unwrap(), "{v:?}");
                }
            }
        }
        let all: String = (0..0x300u32).filter_map(char::from_u32).collect();
        let v = Value::String(all.repeat(3));
        assert_eq!(to_string(&v), serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn a_container_ends_at_its_own_closing_bracket() {
        use crate::bytes16::texts;
        // Brackets, quotes and backslashes inside strings, at every offset of a sixteen-byte
        // block, and nested containers.
        let mut values: Vec<Value> =
            texts::corpus().iter().chain(&texts::adversarial()).map(|s| json!({"role": "tool", "content": s})).collect();
        for before in 0..34 {
            let pad = "x".repeat(before);
            for tricky in ["\\", "\"", "}", "]", "{[", "\\\"}", "é}"] {
                values.push(json!({"a": [format!("{pad}{tricky}"), {"b": format!("{tricky}{pad}")}], "c": null}));
                values.push(json!([[format!("{pad}{tricky}{pad}")], 1.5, true]));
            }
        }
        for v in &values {
            let value = to_string(v);
            let text = format!("[{{\"message\":{value},\"tokens\":3}}]");
            let start = 12;
            for end in [container_end_in::<true>(text.as_bytes(), start), container_end_in::<false>(text.as_bytes(), start)] {
                assert_eq!(end, Some(start + value.len()), "{value}");
            }
            assert_eq!(container_end(&text, 1), Some(text.len() - 1));
            assert_eq!(container_end(&text, 0), Some(text.len()));
            // The rest of the item after its message, and of the page after it.
            assert_eq!(closing(&text, start + value.len(), 1), Some(text.len() - 1));
            assert_eq!(closing(&text, start + value.len(), 2), Some(text.len()));
        }
        assert_eq!(closing(",\"a\":\"}\"}", 0, 1), Some(9));
        assert_eq!(closing(",\"a\":1", 0, 1), None);
        // Nothing opens there, or it never closes.
        assert_eq!(container_end("{\"a\":1}", 1), None);
        assert_eq!(container_end("[1,[2]", 0), None);
        assert_eq!(container_end("{\"a\":\"}", 0), None);
        assert_eq!(container_end("{\"a\":\"\\", 0), None);
        assert_eq!(container_end("", 0), None);
    }

    #[test]
    fn sixteen_bytes_at_a_time_writes_what_eight_at_a_time_does() {
        use crate::bytes16::texts;
        for s in texts::corpus().iter().chain(&texts::adversarial()) {
            let (mut wide, mut narrow) = (String::new(), String::new());
            write_str_in::<true>(&mut wide, s);
            write_str_in::<false>(&mut narrow, s);
            assert_eq!(wide, narrow, "{s:?}");
        }
    }

    #[test]
    fn values_of_every_kind_are_written_as_serde_json_writes_them() {
        let v = json!({
            "role": "tool", "content": [{"type": "text", "text": "a\n\"b\"\\c\u{1}"}], "n": [0, -1, 1.5, 1e300, 2.5e-8,
            u64::MAX, i64::MIN], "ok": [true, false, null], "empty": {}, "list": [], "k\"ey\n": "v"
        });
        assert_eq!(to_string(&v), serde_json::to_string(&v).unwrap());
        let items = [json!(1), json!("x"), json!({"a": [1, {"b": null}]})];
        assert_eq!(array_to_string(&items), serde_json::to_string(&items).unwrap());
        assert_eq!(array_to_string(&[]), "[]");
    }
}
