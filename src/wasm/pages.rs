//! The saved state in pages: what `save` writes of the state's long lists, and what `load` reads
//! back (see `js/saved-pages.ts`). The state's text is cut where its items begin and end, never
//! parsed, so a page is the very text the engine wrote for its items; a page read back is parsed
//! once, where the state is.

use serde_json::Value;
use wasm_bindgen::JsValue;

use super::error::js_field_error;
use crate::error::ErrorCode;

/// The state's fields kept in pages, in order.
const FIELDS: [&str; 3] = ["working", "offloads", "events"];
/// Items per page.
const PAGE: usize = 32;

/// Where the string opening at `at` ends (just past its closing quote).
fn string_end(b: &[u8], mut at: usize) -> usize {
    at += 1;
    while at < b.len() {
        match b[at] {
            b'"' => return at + 1,
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
    b.len()
}

/// Where the value beginning at `at` ends (just past it).
fn value_end(b: &[u8], mut at: usize) -> usize {
    let mut depth = 0usize;
    while at < b.len() {
        match b[at] {
            b'"' => {
                at = string_end(b, at);
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
/// A page that is not a JSON array is a `STORE_FAILED` error whose `index` is its place in
/// `pages` (the wrapper names its key).
pub(crate) fn join(head: &mut Value, counts: &[u32], pages: &[String]) -> Result<(), JsValue> {
    let Value::Object(map) = head else {
        return Err(js_field_error(ErrorCode::InvalidState, "state", "state: the head of a paged state must be an object"));
    };
    map.remove("autocontextPages");
    let mut next = 0usize;
    for (field, &count) in FIELDS.iter().zip(counts) {
        let mut items = Vec::new();
        for _ in 0..count {
            let page = pages.get(next).map(|p| serde_json::from_str::<Vec<Value>>(p));
            let Some(Ok(page)) = page else {
                let err = js_field_error(ErrorCode::StoreFailed, "page", format!("page {next} of the saved state is not a page"));
                let _ = js_sys::Reflect::set(&err, &JsValue::from_str("index"), &JsValue::from_f64(next as f64));
                return Err(err);
            };
            items.extend(page);
            next += 1;
        }
        map.insert((*field).to_string(), Value::Array(items));
    }
    Ok(())
}
