//! The saved state in pages: what `save` writes of the state's long lists, and what `load` reads
//! back (see `js/saved-pages.ts`). The state's writer notes where each list's items begin and
//! end as it writes them ([`Cuts`]), and the text is cut there, never parsed or walked again: a
//! page is the very text the engine wrote for its items; a page read back is parsed once, where
//! the state is. (Walking the written text to find the items, a byte at a time, took longer than
//! writing it.)

use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};

/// The state's fields kept in pages, in order.
pub(crate) const FIELDS: [&str; 3] = ["working", "offloads", "events"];
/// Items per page.
pub const PAGE: usize = 32;

/// Where a paged list lies in the state's text: the whole field (from the comma before its key
/// to the end of its array) and each item.
#[derive(Debug, Default)]
pub(crate) struct ListCut {
    pub(crate) field: (usize, usize),
    pub(crate) items: Vec<(usize, usize)>,
}

/// The cuts of the paged lists, in the order of [`FIELDS`].
pub(crate) type Cuts = [ListCut; 3];

/// Writes `items` as a JSON array (each with `write`), noting in `cut` where each item is.
pub(crate) fn write_list<'a, T: 'a>(
    out: &mut String,
    cut: &mut ListCut,
    items: impl IntoIterator<Item = &'a T>,
    write: impl Fn(&mut String, &'a T),
) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let start = out.len();
        write(out, item);
        cut.items.push((start, out.len()));
    }
    out.push(']');
}

/// Cuts the state's text at `cuts` into its head, the text without the paged fields, and the
/// pages of each paged field: `[head, counts, pages...]`, `counts` being how many pages each
/// field has (`"3,1,2"`). A page is the text of a JSON array of at most [`PAGE`] items, byte for
/// byte the engine's text of them. No paged field is the state's first (its version is), so
/// each is cut with the comma before it.
pub(crate) fn cut(text: &str, cuts: &Cuts) -> Vec<String> {
    let mut fields: Vec<&ListCut> = cuts.iter().collect();
    fields.sort_by_key(|c| c.field.0);
    let mut head = String::with_capacity(4096);
    let mut at = 0;
    for c in &fields {
        head.push_str(&text[at..c.field.0]);
        at = c.field.1;
    }
    head.push_str(&text[at..]);
    let mut out = vec![head, cuts.iter().map(|c| c.items.len().div_ceil(PAGE).to_string()).collect::<Vec<_>>().join(",")];
    for c in cuts {
        for chunk in c.items.chunks(PAGE) {
            out.push(format!("[{}]", &text[chunk[0].0..chunk[chunk.len() - 1].1]));
        }
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
            let page = pages.get(next).map(|p| serde_json::from_str::<Value>(p));
            let Some(Ok(Value::Array(page))) = page else {
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
