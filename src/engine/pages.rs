//! The saved state in pages: what `save` writes of the state's long lists, and what `load` reads
//! back (see `js/saved-pages.ts`). The state's text is cut where its items begin and end, never
//! parsed, so a page is the very text the engine wrote for its items; a page read back is parsed
//! once, where the state is.
//!
//! The cut walks the text to find where each item ends, stepping over strings sixteen bytes at
//! a time ([`crate::bytes16`]): a state is mostly message text inside strings, and a byte at a
//! time the walk took longer than writing the text.

use serde_json::Value;

use crate::bytes16::{self, Lanes};
use crate::error::{Error, ErrorCode, Result};

/// The state's fields kept in pages, in order.
const FIELDS: [&str; 3] = ["working", "offloads", "events"];
/// Items per page.
pub const PAGE: usize = 32;

/// Where the string opening at `at` ends (just past its closing quote).
fn string_end(b: &[u8], at: usize) -> usize {
    string_end_in::<{ bytes16::ENABLED }>(b, at)
}

/// [`string_end`], sixteen bytes at a time when `LANES` (the same answer: a test compares them).
#[inline(always)]
fn string_end_in<const LANES: bool>(b: &[u8], mut at: usize) -> usize {
    at += 1;
    while at < b.len() {
        if let Some(block) = bytes16::at(b, at).filter(|_| LANES) {
            let lanes = Lanes::load(block);
            let found = lanes.eq(b'"').or(lanes.eq(b'\\')).bits();
            if found == 0 {
                at += 16;
                continue;
            }
            at += found.trailing_zeros() as usize;
        }
        match b[at] {
            b'"' => return at + 1,
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
    b.len()
}

/// Where the value beginning at `at` ends (just past it).
fn value_end(b: &[u8], at: usize) -> usize {
    value_end_in::<{ bytes16::ENABLED }>(b, at)
}

/// [`value_end`], its strings stepped over by [`string_end_in`].
fn value_end_in<const LANES: bool>(b: &[u8], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at < b.len() {
        match b[at] {
            b'"' => {
                at = string_end_in::<LANES>(b, at);
                if depth == 0 {
                    return at;
                }
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                if depth == 0 {
                    return at;
                }
                depth -= 1;
                if depth == 0 {
                    return at + 1;
                }
            }
            b',' if depth == 0 => return at,
            _ => {}
        }
        at += 1;
    }
    b.len()
}

/// Cuts the state's text (a JSON object without whitespace, as the engine writes it) into its
/// head, the text without the paged fields, and the pages of each paged field: `[head, counts,
/// pages...]`, `counts` being how many pages each field has (`"3,1,2"`). A page is the text of
/// a JSON array of at most [`PAGE`] items, byte for byte the engine's text of them.
pub(crate) fn split(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut head = String::with_capacity(4096);
    head.push('{');
    let mut pages: [Vec<String>; 3] = Default::default();
    let mut at = 1;
    while at < b.len() && b[at] == b'"' {
        let key_end = string_end(b, at);
        let start = key_end + 1;
        let end = value_end(b, start);
        let field = FIELDS.iter().position(|f| &text[at + 1..key_end - 1] == *f);
        match field {
            Some(f) if b.get(start) == Some(&b'[') => {
                let mut items: Vec<(usize, usize)> = Vec::new();
                let mut i = start + 1;
                while i < end - 1 {
                    let e = value_end(b, i);
                    items.push((i, e));
                    i = e + 1;
                }
                for chunk in items.chunks(PAGE) {
                    pages[f].push(format!("[{}]", &text[chunk[0].0..chunk[chunk.len() - 1].1]));
                }
            }
            _ => {
                if head.len() > 1 {
                    head.push(',');
                }
                head.push_str(&text[at..end]);
            }
        }
        at = end + 1;
    }
    head.push('}');
    let counts = pages.iter().map(|p| p.len().to_string()).collect::<Vec<_>>().join(",");
    let mut out = Vec::with_capacity(2 + pages.iter().map(Vec::len).sum::<usize>());
    out.push(head);
    out.push(counts);
    for p in pages {
        out.extend(p);
    }
    out
}

/// Puts the pages read back into the head (a JSON object): `counts[i]` pages of field `i`,
/// taken in order from `pages`, each parsed as a JSON array. The head's `autocontextPages` goes.
///
/// A page that is not a JSON array is a `STORE_FAILED` error whose index is its place in
/// `pages` (the class names its key).
pub(crate) fn join(head: &mut Value, counts: &[u32], pages: &[String]) -> Result<()> {
    let Value::Object(map) = head else {
        return Err(Error::new(ErrorCode::InvalidState, "state: the head of a paged state must be an object").at_field("state"));
    };
    map.remove("autocontextPages");
    let mut next = 0usize;
    for (field, &count) in FIELDS.iter().zip(counts) {
        let mut items = Vec::new();
        for _ in 0..count {
            let page = pages.get(next).map(|p| serde_json::from_str::<Vec<Value>>(p));
            let Some(Ok(page)) = page else {
                return Err(Error::new(ErrorCode::StoreFailed, format!("page {next} of the saved state is not a page"))
                    .at_field("page")
                    .at_index(next));
            };
            items.extend(page);
            next += 1;
        }
        map.insert((*field).to_string(), Value::Array(items));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_stepped_over_sixteen_bytes_at_a_time_as_one_at_a_time() {
        // Every corpus string and adversarial string written as JSON, at every alignment, and
        // then the array of all of them item by item: the same ends either way.
        use crate::bytes16::texts;
        let strings: Vec<String> = texts::corpus().into_iter().chain(texts::adversarial()).collect();
        let mut array = String::from("[");
        for (n, s) in strings.iter().enumerate() {
            let mut written = String::new();
            crate::json::write_str(&mut written, s);
            for pad in 0..16 {
                let text = format!("{}{written}", " ".repeat(pad));
                let b = text.as_bytes();
                assert_eq!(string_end_in::<true>(b, pad), b.len(), "{s:?}");
                assert_eq!(string_end_in::<false>(b, pad), b.len(), "{s:?}");
            }
            if n > 0 {
                array.push(',');
            }
            array.push_str(&format!("{{\"k\":[{written},{{\"x\":{written}}}]}}"));
        }
        array.push(']');
        let b = array.as_bytes();
        let (mut wide, mut narrow) = (1, 1);
        while wide < b.len() - 1 {
            let (w, n) = (value_end_in::<true>(b, wide), value_end_in::<false>(b, narrow));
            assert_eq!(w, n);
            assert!(serde_json::from_str::<Value>(&array[wide..w]).is_ok(), "an item from {wide}");
            (wide, narrow) = (w + 1, n + 1);
        }
    }
}
