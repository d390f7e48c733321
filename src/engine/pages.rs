//! The saved state in pages: what `save` writes of the state's long lists, and what `load` reads
//! back (see `js/saved-pages.ts`). The state's writer notes where each list's items begin and
//! end as it writes them ([`Cuts`]), and the text is cut there, never parsed or walked again: a
//! page is the very text the engine wrote for its items; a page read back is parsed once, where
//! the state is. (Walking the written text to find the items, a byte at a time, took longer than
//! writing it.)

use std::ops::Range;
use std::rc::{Rc, Weak};

use serde_json::Value;

use crate::entry::Entry;
use crate::error::{Error, ErrorCode, Result};
use crate::message::Message;

/// The state's fields kept in pages, in order.
pub(crate) const FIELDS: [&str; 3] = ["working", "offloads", "events"];
/// Items per page.
pub const PAGE: usize = 32;

/// Where a paged list lies in the state's text: the whole field (from the comma before its key
/// to the end of its array) and each page of its items (from its first item's start to its
/// last item's end).
#[derive(Debug, Default)]
pub(crate) struct ListCut {
    pub(crate) field: (usize, usize),
    pub(crate) pages: Vec<(usize, usize)>,
}

/// The cuts of the paged lists, in the order of [`FIELDS`].
pub(crate) type Cuts = [ListCut; 3];

/// Writes `items` as a JSON array, a page of [`PAGE`] items at a time: `page` writes the items
/// of page `n` (without the brackets), and `cut` notes where each page is.
pub(crate) fn write_list<'a, T>(out: &mut String, cut: &mut ListCut, items: &'a [T], mut page: impl FnMut(&mut String, usize, &'a [T])) {
    out.push('[');
    for (n, items) in items.chunks(PAGE).enumerate() {
        if n > 0 {
            out.push(',');
        }
        let start = out.len();
        page(out, n, items);
        cut.pages.push((start, out.len()));
    }
    out.push(']');
}

/// Writes a list of `pages` (each a page's text, brackets included) as one JSON array, as
/// [`write_list`] writes one, noting in `cut` where each page's items are.
pub(crate) fn write_texts(out: &mut String, cut: &mut ListCut, pages: &[Rc<str>]) {
    out.push('[');
    for (n, page) in pages.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        let start = out.len();
        out.push_str(&page[1..page.len() - 1]);
        cut.pages.push((start, out.len()));
    }
    out.push(']');
}

/// A page of the working list whose text the memory already has (it read the page in a load,
/// or wrote it in a save), with the entries it holds. Most of a list does not change between
/// two saves, so a save copies these texts instead of writing their messages again: a Worker
/// that restores its session, adds a message and saves writes one page, not the list.
///
/// The entries are known by their message (held weakly: the text never keeps a message alive,
/// and the address of one it names is not reused while the page is kept), their count and their
/// pin, which is everything the state writes of an entry: a message is never changed in place
/// (a change replaces it).
///
/// It also keeps its messages' own text, as `messages()` writes them (their wire values joined
/// by commas), once a caller asked for them: cut from the page's text ([`messages_in`]), or
/// written when the page is not laid out as this writer lays it. The list a turn sends is
/// mostly pages that did not change.
#[derive(Debug)]
pub(crate) struct KnownPage {
    entries: Vec<(Weak<Message>, u32, bool)>,
    /// The page's text, brackets included.
    text: Rc<str>,
    messages: std::cell::OnceCell<Box<str>>,
    /// Its line of the head's facts (`deferred.rs`), once a save wrote it.
    line: std::cell::OnceCell<Rc<str>>,
}

impl KnownPage {
    /// The page of `entries` whose text is `text`.
    pub fn new(entries: &[Entry], text: Rc<str>) -> KnownPage {
        KnownPage {
            entries: entries.iter().map(|e| (Rc::downgrade(&e.msg), e.tokens, e.pinned)).collect(),
            text,
            messages: std::cell::OnceCell::new(),
            line: std::cell::OnceCell::new(),
        }
    }

    /// The page's line of the head's facts, made by `make` from its items the first time.
    pub fn line(&self, make: impl FnOnce(&str) -> String) -> Rc<str> {
        Rc::clone(self.line.get_or_init(|| Rc::from(make(&self.text[1..self.text.len() - 1]))))
    }

    /// The text of the page's messages, written now if no one asked before, when it holds
    /// exactly `entries`.
    pub fn messages_of(&self, entries: &[Entry]) -> Option<&str> {
        self.items_of(entries)?;
        Some(self.messages.get_or_init(|| {
            let items = &self.text[1..self.text.len() - 1];
            messages_in(items, entries)
                .unwrap_or_else(|| {
                    let mut out = String::new();
                    crate::json::write_items(&mut out, entries, |o, e| crate::json::write(o, &e.msg.wire));
                    out
                })
                .into_boxed_str()
        }))
    }

    /// The page's items without its brackets, when it holds exactly `entries`.
    pub fn items_of(&self, entries: &[Entry]) -> Option<&str> {
        let same =
            self.entries.len() == entries.len()
                && self.entries.iter().zip(entries).all(|((m, tokens, pinned), e)| {
                    std::ptr::eq(m.as_ptr(), Rc::as_ptr(&e.msg)) && *tokens == e.tokens && *pinned == e.pinned
                });
        same.then(|| &self.text[1..self.text.len() - 1])
    }
}

/// How a working entry begins in the state's text: its message comes first.
pub(crate) const ENTRY_HEAD: &str = "{\"message\":";

/// A working entry as the state holds it: `{"message": …, "tokens": …}`, its mark and its pin
/// after them when it has them.
pub(crate) fn write_entry(out: &mut String, e: &Entry) {
    out.push_str(ENTRY_HEAD);
    crate::json::write(out, &e.msg.wire);
    write_entry_tail(out, e);
}

/// What [`write_entry`] writes after the message.
fn write_entry_tail(out: &mut String, e: &Entry) {
    out.push_str(",\"tokens\":");
    out.push_str(&e.tokens.to_string());
    if let Some(s) = &e.msg.synthetic {
        out.push_str(",\"synthetic\":");
        s.write(out);
    }
    if e.pinned {
        out.push_str(",\"pinned\":true");
    }
    out.push('}');
}

/// Where each item of a page of the working list lies in `items` (the page's text without its
/// brackets), when every item is laid out as [`write_entry`] lays one out: its message's span
/// (after the entry's head, before `,"tokens":`) and the end of the item. `None` for items laid
/// out otherwise. Finding where a message ends skips its strings sixteen bytes at a time.
pub(crate) fn item_spans(items: &str) -> Option<Vec<(Range<usize>, usize)>> {
    let mut out = Vec::with_capacity(PAGE);
    let mut at = 0;
    while at < items.len() {
        if !out.is_empty() {
            if items.as_bytes()[at] != b',' {
                return None;
            }
            at += 1;
        }
        if !items.get(at..)?.starts_with(ENTRY_HEAD) {
            return None;
        }
        let start = at + ENTRY_HEAD.len();
        let end = crate::json::container_end(items, start)?;
        if !items.get(end..)?.starts_with(",\"tokens\":") {
            return None;
        }
        at = crate::json::closing(items, end, 1)?;
        out.push((start..end, at));
    }
    Some(out)
}

/// The text of `entries`' messages as `messages()` writes them (their wire values joined by
/// commas), cut from `items`, the text of a page's items they were read from or written as:
/// when each item is exactly what [`write_entry`] writes of its entry around its message, the
/// message is the text between, and it need not be written again. A load reads a page's
/// messages as JSON trees, and writing the trees back out was most of what `messages()` cost
/// after it.
///
/// `None` when an item is not laid out so (a page another writer wrote, say); the messages are
/// then written from their trees.
pub(crate) fn messages_in(items: &str, entries: &[Entry]) -> Option<String> {
    let spans = item_spans(items).filter(|s| s.len() == entries.len())?;
    let mut tail = String::new();
    for ((span, end), e) in spans.iter().zip(entries) {
        tail.clear();
        write_entry_tail(&mut tail, e);
        if items[span.end..*end] != tail {
            return None;
        }
    }
    // Made at its size: the text is kept as it is (boxed), and shrinking it would copy it again.
    let mut out = String::with_capacity(spans.iter().map(|(s, _)| s.len() + 1).sum::<usize>().saturating_sub(1));
    crate::json::write_items(&mut out, &spans, |o, (span, _)| o.push_str(&items[span.clone()]));
    Some(out)
}

/// The pages of a list of records (the offload index, the events) whose text the memory has,
/// by position, with the records each holds: a save copies the text of a page whose records
/// are the same, as it copies a [`KnownPage`]. Both lists change only in a pass (and then
/// mostly at their end), so a turn without one writes none of their pages. The records are
/// compared by value: they are small, and a copy of them is kept.
#[derive(Debug)]
pub(crate) struct KnownRecords<T> {
    pages: Vec<(Rc<[T]>, Rc<str>)>,
}

impl<T> Default for KnownRecords<T> {
    fn default() -> Self {
        KnownRecords { pages: Vec::new() }
    }
}

impl<T: PartialEq + Clone> KnownRecords<T> {
    /// The pages of a list read back (`texts`, of `sizes` items), `records` being the list as
    /// read. None known when the list is not every item as its pages hold it (a load drops the
    /// oldest events beyond the number kept).
    pub fn read(records: &[T], texts: &[Rc<str>], sizes: &[usize]) -> Self {
        if sizes.iter().sum::<usize>() != records.len() || texts.len() != sizes.len() {
            return KnownRecords::default();
        }
        let mut at = 0;
        let pages = sizes
            .iter()
            .zip(texts)
            .map(|(&n, text)| {
                at += n;
                (Rc::from(&records[at - n..at]), Rc::clone(text))
            })
            .collect();
        KnownRecords { pages }
    }

    /// The items of page `n` without its brackets, when it holds exactly `records`.
    pub fn items_of(&self, n: usize, records: &[T]) -> Option<&str> {
        let (known, text) = self.pages.get(n)?;
        (**known == *records).then(|| &text[1..text.len() - 1])
    }

    /// Known after a save cut `records` into the pages `texts`.
    pub fn saved(&mut self, records: &[T], texts: &[String]) {
        let old = std::mem::take(&mut self.pages);
        self.pages = records
            .chunks(PAGE)
            .zip(texts)
            .enumerate()
            .map(|(n, (page, text))| match old.get(n) {
                Some((known, text)) if **known == *page => (Rc::clone(known), Rc::clone(text)),
                _ => (Rc::from(page), Rc::from(text.as_str())),
            })
            .collect();
    }
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
    let mut out = vec![head, cuts.iter().map(|c| c.pages.len().to_string()).collect::<Vec<_>>().join(",")];
    for c in cuts {
        for &(from, to) in &c.pages {
            let mut page = String::with_capacity(to - from + 2);
            page.push('[');
            page.push_str(&text[from..to]);
            page.push(']');
            out.push(page);
        }
    }
    out
}

/// `items` (the pages of a saved state, or what is known of each) cut into those of each paged
/// field: `counts[i]` of field `i`, in order (fewer when `items` run out).
pub(crate) fn lists<'a, T>(items: &'a [T], counts: &[u32]) -> [&'a [T]; 3] {
    let mut rest = items;
    std::array::from_fn(|i| {
        let (list, after) = rest.split_at(counts.get(i).map_or(0, |&n| n as usize).min(rest.len()));
        rest = after;
        list
    })
}

/// The items of a page's text, when it is a JSON array: what a load, and a parse of a page a
/// load left unparsed, read of each page.
pub(crate) fn parse(text: &str) -> Option<Vec<Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => Some(items),
        _ => None,
    }
}

/// Puts the pages read back into the head (a JSON object): `counts[i]` pages of field `i`,
/// taken in order from `pages`, each parsed as a JSON array. The head's `autocontextPages` goes.
///
/// A page that is not a JSON array is a `STORE_FAILED` error whose index is its place in
/// `pages` (the class names its key).
///
/// The first `unparsed[i]` pages of field `i` are left out (see `deferred.rs`; a working page
/// left out holds [`PAGE`] items, the events' are not counted), and the head's `pageFacts` and
/// `eventsDigest` go too.
///
/// Returns how many items each page held, in order.
pub(crate) fn join(head: &mut Value, counts: &[u32], pages: &[String], unparsed: [usize; 3]) -> Result<Vec<usize>> {
    let Value::Object(map) = head else {
        return Err(Error::new(ErrorCode::InvalidState, "state: the head of a paged state must be an object").at_field("state"));
    };
    map.remove("autocontextPages");
    map.remove("pageFacts");
    map.remove("eventsDigest");
    let mut next = 0usize;
    let mut sizes = Vec::with_capacity(pages.len());
    for (i, (field, &count)) in FIELDS.iter().zip(counts).enumerate() {
        let mut items = Vec::new();
        for n in 0..count as usize {
            if n < unparsed[i] {
                sizes.push(if i == 0 { PAGE } else { 0 });
                next += 1;
                continue;
            }
            let Some(page) = pages.get(next).and_then(|p| parse(p)) else {
                return Err(Error::new(ErrorCode::StoreFailed, format!("page {next} of the saved state is not a page"))
                    .at_field("page")
                    .at_index(next));
            };
            sizes.push(page.len());
            items.extend(page);
            next += 1;
        }
        map.insert((*field).to_string(), Value::Array(items));
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of a page, with messages whose text holds what an entry's layout does.
    fn tricky_entries() -> Vec<Entry> {
        use crate::format::Format;
        use crate::message::Synthetic;
        use serde_json::json;
        let values = [
            json!({"role": "system", "content": "{\"message\":{},\"tokens\":1} ],[ \\\" é😀"}),
            json!({"role": "user", "content": "look", "meta": {"tokens": 5, "message": {"tokens": [1, {"}": "]"}]}}}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a,\\\"tokens\\\":2}\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "x".repeat(100) + "\\" + &"\"".repeat(17)}),
        ];
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut m = Format::OpenAi.parse(i, v).unwrap();
                if i == 3 {
                    m.synthetic = Some(Synthetic::in_place("TOOL_RESULT_TRUNCATE", "0b7f3e2c-9a41-4d6e-8f3a-2c1d5e6f7a8b"));
                }
                Entry::with_pin(Rc::new(m), 10 + i as u32, i == 1)
            })
            .collect()
    }

    #[test]
    fn a_pages_messages_are_cut_from_its_text_when_each_item_is_laid_out_as_the_writer_lays_it() {
        let entries = tricky_entries();
        let mut items = String::new();
        crate::json::write_items(&mut items, &entries, write_entry);
        let mut written = String::new();
        crate::json::write_items(&mut written, &entries, |o, e| crate::json::write(o, &e.msg.wire));
        assert_eq!(messages_in(&items, &entries).as_deref(), Some(written.as_str()));
        assert_eq!(messages_in(&items[..0], &[]).as_deref(), Some(""));
        // Items not laid out as the writer lays them, or not these entries: written instead.
        let spaced = items.replacen("\"message\":", "\"message\": ", 1);
        let mut reordered = entries.clone();
        reordered.swap(0, 1);
        let mut recounted = entries.clone();
        recounted[2].tokens += 1;
        let mut unpinned = entries.clone();
        unpinned[1].pinned = false;
        for (what, items, entries) in [
            ("spaced", spaced.as_str(), &entries[..]),
            ("reordered", &items, &reordered[..]),
            ("recounted", &items, &recounted[..]),
            ("unpinned", &items, &unpinned[..]),
            ("fewer entries", &items, &entries[..3]),
            ("more entries", &items[..items.rfind(",{").unwrap()], &entries[..]),
            ("cut short", &items[..items.len() - 1], &entries[..]),
        ] {
            assert_eq!(messages_in(items, entries), None, "{what}");
        }
    }

    #[test]
    fn item_spans_find_each_message_as_a_save_wrote_it() {
        let items = r#"{"message":{"role":"user","content":"a \"}\" b"},"tokens":3},{"message":{"role":"tool","content":"x"},"tokens":1,"pinned":true}"#;
        let spans = item_spans(items).expect("laid out as a save writes it");
        let messages: Vec<&str> = spans.iter().map(|(s, _)| &items[s.clone()]).collect();
        assert_eq!(messages, [r#"{"role":"user","content":"a \"}\" b"}"#, r#"{"role":"tool","content":"x"}"#]);
        assert_eq!(spans.iter().map(|(_, end)| *end).collect::<Vec<_>>(), [items.find("},{").unwrap() + 1, items.len()]);
        assert_eq!(item_spans(""), Some(vec![]));
        for bad in [
            r#"{"tokens":3,"message":{}}"#,
            r#"{"message":{},"tokens":3} "#,
            r#"{"message":{}}"#,
            r#"{"message":{},"tokens":3},"#,
            r#"{"message":{},"tokens":3}{"message":{},"tokens":3}"#,
            r#"{"message":{},"tokens":3"#,
        ] {
            assert_eq!(item_spans(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_known_page_of_records_is_copied_only_while_it_holds_the_same_records() {
        // A list that lost its first record (the oldest event dropped, an offload record
        // retired) has pages of the same lengths and other records: none is copied.
        let records: Vec<u32> = (0..PAGE as u32 * 2 + 3).collect();
        let texts: Vec<String> = records.chunks(PAGE).map(|p| format!("{p:?}")).collect();
        let mut known = KnownRecords::default();
        known.saved(&records, &texts);
        for (n, page) in records.chunks(PAGE).enumerate() {
            assert_eq!(known.items_of(n, page), Some(&texts[n][1..texts[n].len() - 1]));
        }
        let shifted: Vec<u32> = (1..PAGE as u32 * 2 + 4).collect();
        for (n, page) in shifted.chunks(PAGE).enumerate() {
            assert_eq!(known.items_of(n, page), None, "page {n}");
        }
        // A save of the shifted list knows its pages from then on, and keeps the known text of a
        // page that did not change.
        let grown: Vec<u32> = (0..PAGE as u32 * 2 + 5).collect();
        let grown_texts: Vec<String> = grown.chunks(PAGE).map(|p| format!("{p:?} ")).collect();
        known.saved(&grown, &grown_texts);
        assert_eq!(known.items_of(0, &grown[..PAGE]), Some(&texts[0][1..texts[0].len() - 1]));
        assert_eq!(known.items_of(2, &grown[2 * PAGE..]), Some(&grown_texts[2][1..grown_texts[2].len() - 1]));
        assert_eq!(known.items_of(3, &[]), None);
    }
}
