//! The working list's pages read lately, parsed: a load that meets a page this thread read
//! before takes its entries instead of parsing the page again.
//!
//! A Worker or a server that keeps a session in a store loads it at every request and saves it
//! at the end; the save copies the text of every page whose entries did not change
//! ([`super::pages::KnownPage`]), so the next request's load reads the very texts the last one
//! read, all but the page that took the new message. Parsing them again (their JSON trees, then
//! each message's blocks) was most of a load, and a load most of a turn that runs no pass:
//! natively 5.2 of its 7.4 million instructions, 3.2 of them building JSON trees. An isolate
//! usually serves a session's next request too, so the thread keeps the entries of the pages it
//! read, by their text, and a load takes them.
//!
//! A page's entries are what parsing its text gives, whatever state it came in: a message, its
//! count and its pin are written in the page (the state's other fields only check them, and the
//! restore runs those checks again on a page it takes from here). So a page is kept only when
//! its entries are exactly its text's: each read as written (its count valid for this build, its
//! mark not upgraded), in a format whose messages do not depend on the list around them. Only
//! pages a load parsed are kept, never the texts a save wrote: a message the engine built is
//! what its strategy made of it, which reading its text back need not give block for block.
//!
//! The entries are shared, never copied: messages never change in place (a change replaces
//! one), and an entry's identifiers are found once for all who hold it. The cache holds at most
//! [`CACHED_BYTES`] of page text, the pages read last; a page met again moves to the end.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use crate::entry::Entry;
use crate::format::Format;
use crate::hashed::{text_key, Keyed};

/// Page text the cache holds at most (about three times as much memory once parsed): the
/// working list of a session of some 500,000 tokens, or of a few smaller ones.
pub(crate) const CACHED_BYTES: usize = 2 << 20;

/// A page kept: its text, the format it was read in, its entries.
struct Kept {
    text: Rc<str>,
    format: Format,
    entries: Rc<[Entry]>,
}

#[derive(Default)]
struct Cache {
    pages: HashMap<(u64, usize), Kept, Keyed>,
    /// The keys, the page read last at the end.
    order: VecDeque<(u64, usize)>,
    bytes: usize,
}

thread_local! {
    static CACHE: std::cell::RefCell<Cache> = std::cell::RefCell::new(Cache::default());
}

/// The entries of the page whose text is `text`, read in `format`, when this thread kept them.
pub(crate) fn find(text: &str, format: Format) -> Option<Rc<[Entry]>> {
    if format.links() {
        return None;
    }
    let key = text_key(text);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let kept = c.pages.get(&key).filter(|k| k.format == format && *k.text == *text)?;
        let entries = Rc::clone(&kept.entries);
        c.touch(key);
        Some(entries)
    })
}

/// Keeps `entries`, what parsing the page `text` gave in `format` (each read as written).
pub(crate) fn keep(text: Rc<str>, format: Format, entries: &[Entry]) {
    if format.links() || text.len() > CACHED_BYTES {
        return;
    }
    let key = text_key(&text);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.pages.contains_key(&key) {
            c.touch(key);
            return;
        }
        c.bytes += text.len();
        c.pages.insert(key, Kept { text, format, entries: entries.into() });
        c.order.push_back(key);
        while c.bytes > CACHED_BYTES {
            let Some(old) = c.order.pop_front() else { break };
            if let Some(k) = c.pages.remove(&old) {
                c.bytes -= k.text.len();
            }
        }
    });
}

impl Cache {
    /// Moves `key` to the end of the order: read last.
    fn touch(&mut self, key: (u64, usize)) {
        if let Some(at) = self.order.iter().rposition(|k| *k == key) {
            self.order.remove(at);
        }
        self.order.push_back(key);
    }
}
