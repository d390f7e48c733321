//! The saved state's pages read lately, parsed: a load that meets a page this thread read
//! before takes what it gave (the working list's entries, the offload index's records, the
//! events) instead of parsing the page again.
//!
//! A Worker or a server that keeps a session in a store loads it at every request and saves it
//! at the end; the save copies the text of every page whose entries did not change
//! ([`super::pages::KnownPage`]), so the next request's load reads the very texts the last one
//! read, all but the page that took the new message. Parsing them again (their JSON trees, then
//! each message's blocks) was most of a load, and a load most of a turn that runs no pass:
//! natively 5.2 of its 7.4 million instructions, 3.2 of them building JSON trees. An isolate
//! usually serves a session's next request too, so the thread keeps the entries of the pages it
//! read, by their text, and a load takes them. The offload index and the events change only
//! in a pass, so a load takes each of them whole when it kept all of its pages (the records are
//! copied, small as they are), and parses it whole otherwise.
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
//! one), and an entry's identifiers are found once for all who hold it, as is the page's text
//! of its messages, which `messages()` writes once and copies after that ([`Written`]). The cache holds at most
//! [`CACHED_BYTES`] of page text, the pages read last; a page met again moves to the end.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use crate::engine::events::CompressionEvent;
use crate::engine::offload::OffloadRecord;
use crate::entry::Entry;
use crate::format::Format;
use crate::hashed::Keyed;

/// Page text the cache holds at most (about three times as much memory once parsed): the
/// working list of a session of some 500,000 tokens, or of a few smaller ones.
pub(crate) const CACHED_BYTES: usize = 2 << 20;

/// A page's messages as JSON text (the items of an array), written the first time they are
/// asked for (see `pages::KnownPage`), shared by every memory that took the page.
pub(crate) type Written = Rc<std::cell::OnceCell<Box<str>>>;

/// What a page kept gave: the entries of a page of the working list (read in a format), or the
/// records of a page of the offload index or of the events.
#[derive(Clone)]
pub(crate) enum Parsed {
    Working(Format, Rc<[Entry]>, Written),
    Offloads(Rc<[OffloadRecord]>),
    Events(Rc<[CompressionEvent]>),
}

/// A page kept: its text and what it gave.
struct Kept {
    text: Rc<str>,
    parsed: Parsed,
}

#[derive(Default)]
struct Cache {
    pages: HashMap<(u64, usize), Kept, Keyed>,
    /// The keys, the page read last at the end.
    order: VecDeque<(u64, usize)>,
    bytes: usize,
}

/// Bytes at each end of a page that its key hashes.
const ENDS: usize = 256;

/// A page's key: a hash of its first and last [`ENDS`] bytes, and its length. A lookup compares
/// the whole text anyway, so the key need not hash all of it (a page is tens of kilobytes).
fn key(text: &str) -> (u64, usize) {
    let b = text.as_bytes();
    let head = xxhash_rust::xxh64::xxh64(&b[..b.len().min(ENDS)], 0);
    (xxhash_rust::xxh64::xxh64(&b[b.len().saturating_sub(ENDS)..], head), b.len())
}

thread_local! {
    static CACHE: std::cell::RefCell<Cache> = std::cell::RefCell::new(Cache::default());
}

/// What the page whose text is `text` gave, as `pick` takes it, when this thread kept it.
fn find<T>(text: &str, pick: impl FnOnce(&Parsed) -> Option<T>) -> Option<T> {
    let key = key(text);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let found = c.pages.get(&key).filter(|k| *k.text == *text).and_then(|k| pick(&k.parsed))?;
        c.touch(key);
        Some(found)
    })
}

/// The entries of the working list's page whose text is `text`, read in `format`, when this
/// thread kept them.
pub(crate) fn entries(text: &str, format: Format) -> Option<(Rc<[Entry]>, Written)> {
    if format.links() {
        return None;
    }
    find(text, |p| match p {
        Parsed::Working(f, entries, written) if *f == format => Some((Rc::clone(entries), Rc::clone(written))),
        _ => None,
    })
}

/// The records of the offload index's page whose text is `text`, when this thread kept them.
pub(crate) fn offloads(text: &str) -> Option<Rc<[OffloadRecord]>> {
    find(text, |p| match p {
        Parsed::Offloads(records) => Some(Rc::clone(records)),
        _ => None,
    })
}

/// The events of the page whose text is `text`, when this thread kept them.
pub(crate) fn events(text: &str) -> Option<Rc<[CompressionEvent]>> {
    find(text, |p| match p {
        Parsed::Events(events) => Some(Rc::clone(events)),
        _ => None,
    })
}

/// Keeps `parsed`, what parsing the page `text` gave (each item read as written).
pub(crate) fn keep(text: Rc<str>, parsed: Parsed) {
    if matches!(&parsed, Parsed::Working(format, ..) if format.links()) || text.len() > CACHED_BYTES {
        return;
    }
    let key = key(&text);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.pages.get(&key).is_some_and(|k| k.text == text) {
            c.touch(key);
            return;
        }
        // A page of the same key but another text gives way.
        if let Some(old) = c.pages.insert(key, Kept { text, parsed }) {
            c.bytes -= old.text.len();
            c.touch(key);
        } else {
            c.order.push_back(key);
        }
        c.bytes += key.1;
        while c.bytes > CACHED_BYTES {
            let Some(old) = c.order.pop_front() else { break };
            if let Some(k) = c.pages.remove(&old) {
                c.bytes -= k.text.len();
            }
        }
    });
}

/// The pages of a saved state this thread kept: per page of the working list, its entries
/// (each page at most once: a page met twice in one state is parsed the second time, so that
/// no two entries of a list share a message); the offload index's records and the events when
/// every page of theirs was kept.
#[derive(Default)]
pub(crate) struct Cached {
    pub(crate) working: Vec<Option<(Rc<[Entry]>, Written)>>,
    pub(crate) offloads: Option<Vec<Rc<[OffloadRecord]>>>,
    pub(crate) events: Option<Vec<Rc<[CompressionEvent]>>>,
}

impl Cached {
    /// What this thread kept of the pages of the state's paged fields (the working list's read
    /// in `format`).
    pub(crate) fn find([working, offload_pages, event_pages]: [&[String]; 3], format: Format) -> Cached {
        let mut cached = Cached::default();
        for page in working {
            let hit = entries(page, format).filter(|(e, _)| !cached.working.iter().flatten().any(|(c, _)| Rc::ptr_eq(c, e)));
            cached.working.push(hit);
        }
        cached.offloads = offload_pages.iter().map(|p| offloads(p)).collect();
        cached.events = event_pages.iter().map(|p| events(p)).collect();
        cached
    }

    /// The items of a list kept whole, in order.
    pub(crate) fn whole<T: Clone>(pages: &Option<Vec<Rc<[T]>>>) -> Option<Vec<T>> {
        pages.as_ref().map(|pages| pages.iter().flat_map(|p| p.iter().cloned()).collect())
    }
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
