//! The pages of the working list a load leaves unparsed.
//!
//! A Worker restores its session on every request, and a request that runs no pass reads
//! almost nothing of the working list: its running totals, the few facts per message the
//! trigger check and the rent of stale results read ([`Fact`]), the last exchange (which a new
//! message must pair with), and the messages' text, which `messages()` hands back as it is.
//! Parsing every message into its JSON tree and blocks was most of such a request. So a save
//! writes, for each page of the working list, one line in the state's head (`pageFacts`): a
//! digest, a filter of the call ids its messages make, and the facts of each of its entries.
//! A load whose every page matches its line keeps the pages before the last exchange as their
//! text and facts (the pages after them are the engine's too, so their pairing is checked with
//! the whole list's when it is parsed). The memory parses them when something needs their
//! messages (a pass, a pin, `pop`, a preparation's dry run, a sweep, a new call whose id the
//! filter may hold), checking them then as a load checks them, and the facts against what they
//! say.
//!
//! The digest covers the page's text and its line: a page or a line changed by anything but
//! the engine's save does not match, and the state is read whole, every check at once. The
//! messages' text is cut from each page at the load, as a save wrote it (an entry's head, its
//! message, its count, mark and pin); a page laid out otherwise is parsed too.
//!
//! The events are left unparsed the same way, whole: a turn that runs no pass never reads them
//! (a pass adds to them, `events()` lists them), and they were most of what a load still parsed
//! besides the last exchange. The head's `eventsDigest`, a digest of every page of them, vouches
//! for their pages ([`EventPages`]); they are parsed when read (`events()`), when a pass
//! commits, and with the working list's pages (`materialize`).

use std::ops::Range;
use std::rc::Rc;

use xxhash_rust::xxh64::xxh64;

use super::pages::{self, PAGE};
use crate::entry::Entry;
use crate::message::Role;
use crate::strategy::rent::Fact;

/// Bits of a page's call-id filter.
const FILTER_BITS: u64 = 256;

/// A page's filter of the call ids its messages make: three bits per id.
type Filter = [u64; 4];

fn filter_add(filter: &mut Filter, id: &str) {
    let h = xxh64(id.as_bytes(), 0);
    for k in 0..3 {
        let bit = (h >> (k * 16)) % FILTER_BITS;
        filter[(bit / 64) as usize] |= 1 << (bit % 64);
    }
}

fn filter_may_hold(filter: &Filter, id: &str) -> bool {
    let h = xxh64(id.as_bytes(), 0);
    (0..3).all(|k| {
        let bit = (h >> (k * 16)) % FILTER_BITS;
        filter[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    })
}

/// Writes the facts of `entries` as their codes: per entry its role's letter (`u` a real user
/// turn, `v` another user message), its tokens, then `p` when pinned, `x` when a stub, `c` when
/// it makes tool calls, `r` and the number of its tool results when it has any.
fn write_codes(out: &mut String, facts: impl Iterator<Item = Fact>) {
    for f in facts {
        out.push(match f.role {
            Role::System => 's',
            Role::User if f.real_user => 'u',
            Role::User => 'v',
            Role::Assistant => 'a',
            Role::Tool => 't',
        });
        out.push_str(&f.tokens.to_string());
        if f.pinned {
            out.push('p');
        }
        if f.stub {
            out.push('x');
        }
        if f.calls {
            out.push('c');
        }
        if f.results > 0 {
            out.push('r');
            out.push_str(&f.results.to_string());
        }
    }
}

/// The decimal number at `*at` of `b` (a `u32`), moving `at` past it.
fn number(b: &[u8], at: &mut usize) -> Option<u32> {
    let start = *at;
    let mut n = 0u64;
    while *at < b.len() && b[*at].is_ascii_digit() && *at - start < 10 {
        n = n * 10 + u64::from(b[*at] - b'0');
        *at += 1;
    }
    u32::try_from(n).ok().filter(|_| *at > start && b.get(*at).is_none_or(|c| !c.is_ascii_digit()))
}

/// The sixteen hex digits of `text` at `at`, as a number.
fn hex_at(text: &str, at: usize) -> Option<u64> {
    let digits = text.as_bytes().get(at..at + 16)?;
    digits.iter().try_fold(0u64, |n, &c| Some(n << 4 | u64::from((c as char).to_digit(16)?)))
}

/// Writes `n` as sixteen hex digits.
fn push_hex(out: &mut String, n: u64) {
    for k in (0..16).rev() {
        out.push(char::from_digit(((n >> (k * 4)) & 15) as u32, 16).unwrap_or('0'));
    }
}

/// The facts [`write_codes`] wrote; `None` for anything else.
fn read_codes(codes: &str) -> Option<Vec<Fact>> {
    let b = codes.as_bytes();
    let mut out = Vec::with_capacity(PAGE);
    let mut at = 0;
    while at < b.len() {
        let (role, real_user) = match b[at] {
            b's' => (Role::System, false),
            b'u' => (Role::User, true),
            b'v' => (Role::User, false),
            b'a' => (Role::Assistant, false),
            b't' => (Role::Tool, false),
            _ => return None,
        };
        at += 1;
        let tokens = number(b, &mut at)?;
        let mut f = Fact { role, tokens, pinned: false, results: 0, stub: false, calls: false, real_user };
        if b.get(at) == Some(&b'p') {
            f.pinned = true;
            at += 1;
        }
        if b.get(at) == Some(&b'x') {
            f.stub = true;
            at += 1;
        }
        if b.get(at) == Some(&b'c') {
            f.calls = true;
            at += 1;
        }
        if b.get(at) == Some(&b'r') {
            at += 1;
            f.results = number(b, &mut at)?;
        }
        out.push(f);
    }
    Some(out)
}

/// The line of the head's `pageFacts` for a page of `entries` whose items are `items` (its text
/// without the brackets): its digest, its filter of call ids, its entries' codes.
pub(crate) fn line(items: &str, entries: &[Entry]) -> String {
    let mut filter = Filter::default();
    for e in entries {
        for id in e.msg.call_ids() {
            filter_add(&mut filter, id);
        }
    }
    let mut rest = String::with_capacity(64 + entries.len() * 6);
    for word in filter {
        push_hex(&mut rest, word);
    }
    write_codes(&mut rest, entries.iter().map(Fact::of));
    let mut line = String::with_capacity(16 + rest.len());
    push_hex(&mut line, digest(items, &rest));
    line.push_str(&rest);
    line
}

/// The rules of the lines: a line written under other rules (its codes read otherwise) does not
/// match, and the state is read whole.
const LINE_RULES: u64 = 2;

/// The digest of a page's items and the rest of its line.
fn digest(items: &str, rest: &str) -> u64 {
    xxh64(rest.as_bytes(), xxh64(items.as_bytes(), LINE_RULES))
}

/// A page of the working list left unparsed.
#[derive(Debug)]
pub(crate) struct Page {
    /// Its text, brackets included: a save copies it.
    pub text: Rc<str>,
    /// Its line of the head's `pageFacts`: a save copies it too.
    pub line: Rc<str>,
    /// Where each entry's message lies in the page's items (`text` without its brackets), and
    /// where the entry ends.
    pub spans: Vec<(Range<usize>, usize)>,
    filter: Filter,
}

/// The pages at the front of the working list a load left unparsed (their entries' facts are
/// the first of the state's, `State::facts`).
#[derive(Debug, Default)]
pub(crate) struct Deferred {
    pub pages: Vec<Page>,
}

impl Deferred {
    /// The entries the pages hold.
    pub fn len(&self) -> usize {
        self.pages.len() * PAGE
    }

    /// Whether a message of these pages may make call `id` (the filters are not exact: a
    /// `true` means the pages must be parsed to know).
    pub fn may_call(&self, id: &str) -> bool {
        self.pages.iter().any(|p| filter_may_hold(&p.filter, id))
    }

    /// The pages of the working list `texts` that a load may leave unparsed, each matched by
    /// its line of `lines`: every page must match (else none is left), the messages of each
    /// must be cut as a save writes them, and the last exchange is parsed, with the page it
    /// begins in and every page after it. `None` when no page is left unparsed; else the pages
    /// left unparsed and their entries' facts.
    pub fn read(texts: &[String], lines: &[&str]) -> Option<(Deferred, Vec<Fact>)> {
        if texts.len() < 2 || lines.len() != texts.len() {
            return None;
        }
        let mut facts = Vec::with_capacity(texts.len() * PAGE);
        let mut filters = Vec::with_capacity(texts.len());
        for (n, (text, line)) in texts.iter().zip(lines).enumerate() {
            let rest = line.get(16..)?;
            let items = text.strip_prefix('[')?.strip_suffix(']')?;
            if hex_at(line, 0)? != digest(items, rest) {
                return None;
            }
            let mut filter = Filter::default();
            for (k, word) in filter.iter_mut().enumerate() {
                *word = hex_at(rest, k * 16)?;
            }
            let page = read_codes(rest.get(64..)?)?;
            let last = n + 1 == texts.len();
            if page.is_empty() || page.len() > PAGE || !last && page.len() != PAGE {
                return None;
            }
            facts.extend(page);
            filters.push(filter);
        }
        let k = first_parsed(&facts, texts.len());
        if k == 0 {
            return None;
        }
        let mut pages = Vec::with_capacity(k);
        for (n, filter) in filters.into_iter().take(k).enumerate() {
            let text = &texts[n];
            let spans = pages::item_spans(&text[1..text.len() - 1])?;
            if spans.len() != PAGE {
                return None;
            }
            pages.push(Page { text: Rc::from(text.as_str()), line: Rc::from(lines[n]), spans, filter });
        }
        facts.truncate(k * PAGE);
        Some((Deferred { pages }, facts))
    }
}

/// The pages of the events a load left as their text, vouched for by the head's digest of them
/// (`eventsDigest`): a save copies them as they are.
#[derive(Debug)]
pub(crate) struct EventPages {
    /// Each page's text, brackets included.
    pub texts: Vec<Rc<str>>,
    /// The head's digest of them, as [`pages_digest`] makes it.
    pub digest: u64,
}

impl EventPages {
    /// The pages `texts` when `digest` (the head's `eventsDigest`) is theirs; `None` when there
    /// are none, or another text made the digest.
    pub fn read(texts: &[String], digest: &str) -> Option<EventPages> {
        let digest = hex_at(digest, 0).filter(|_| digest.len() == 16 && !texts.is_empty())?;
        let pages = texts.iter().all(|t| t.len() >= 2 && t.starts_with('[') && t.ends_with(']'));
        (pages && digest == pages_digest(texts.iter().map(|t| &t[1..t.len() - 1])))
            .then(|| EventPages { texts: texts.iter().map(|t| Rc::from(t.as_str())).collect(), digest })
    }
}

/// The digest of a list's pages, each given as its items (its text without the brackets).
pub(crate) fn pages_digest<'a>(items: impl IntoIterator<Item = &'a str>) -> u64 {
    items.into_iter().fold(LINE_RULES, |d, items| xxh64(items.as_bytes(), d))
}

/// Writes `digest` as [`EventPages::read`] reads it.
pub(crate) fn write_digest(out: &mut String, digest: u64) {
    out.push('"');
    push_hex(out, digest);
    out.push('"');
}

/// The first page a load parses, of `pages` whose entries have `facts`: the one the last
/// exchange begins in (the trailing messages that are not the model's, the model's turn before
/// them, and the message before that): what a new message pairs with and what the trigger
/// check reads of a fresh tool result. The last page at the latest.
fn first_parsed(facts: &[Fact], pages: usize) -> usize {
    let mut i = facts.len();
    while i > 0 && facts[i - 1].role != Role::Assistant {
        i -= 1;
    }
    while i > 0 && (facts[i - 1].role == Role::Assistant || facts[i - 1].role == Role::Tool && facts[i - 1].results == 0) {
        i -= 1;
    }
    (i.saturating_sub(1) / PAGE).min(pages - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(role: Role, results: u32) -> Fact {
        Fact { role, tokens: 10, pinned: false, results, stub: false, calls: false, real_user: role == Role::User }
    }

    #[test]
    fn codes_read_back_as_written() {
        let facts = vec![
            Fact { role: Role::System, tokens: 0, pinned: true, results: 0, stub: false, calls: false, real_user: false },
            Fact { role: Role::User, tokens: 4_000_000_000, pinned: false, results: 0, stub: false, calls: false, real_user: true },
            Fact { role: Role::User, tokens: 7, pinned: true, results: 2, stub: true, calls: false, real_user: false },
            Fact { role: Role::Assistant, tokens: 12, pinned: false, results: 0, stub: false, calls: true, real_user: false },
            Fact { role: Role::Tool, tokens: 300, pinned: false, results: 1, stub: true, calls: false, real_user: false },
        ];
        let mut codes = String::new();
        write_codes(&mut codes, facts.iter().copied());
        assert_eq!(codes, "s0pu4000000000v7pxr2a12ct300xr1");
        assert_eq!(read_codes(&codes), Some(facts));
        for bad in ["q1", "u", "u1r", "u1xp", "a1cx", "u99999999999", "a1pp", "t1 "] {
            assert_eq!(read_codes(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_filter_holds_what_it_was_given() {
        let mut f = Filter::default();
        let ids: Vec<String> = (0..40).map(|k| format!("call_{k}")).collect();
        for id in &ids {
            filter_add(&mut f, id);
        }
        assert!(ids.iter().all(|id| filter_may_hold(&f, id)));
        let others = (0..1000).filter(|k| filter_may_hold(&f, &format!("other_{k}"))).count();
        assert!(others < 150, "{others} of 1000 false positives");
    }

    #[test]
    fn the_parsed_pages_begin_with_the_last_exchange() {
        use Role::*;
        // Three pages: user, then assistant/tool exchanges; the last exchange is in page 2.
        let mut facts = vec![fact(User, 0)];
        while facts.len() < 3 * PAGE - 1 {
            facts.push(fact(Assistant, 0));
            facts.push(fact(Tool, 1));
        }
        facts.truncate(3 * PAGE - 1);
        assert_eq!(first_parsed(&facts, 3), 2);
        // The model's turn opens the last page: the message before it is in the page before.
        let mut opens = facts[..2 * PAGE - 1].to_vec();
        opens.extend([fact(User, 0), fact(Assistant, 0), fact(Tool, 1)]);
        assert_eq!((opens[2 * PAGE].role, first_parsed(&opens, 3)), (Assistant, 1));
        // Results without the model's turn after them still belong to the turn before them.
        let mut trailing = facts.clone();
        trailing.extend([fact(Tool, 1), fact(Tool, 1), fact(User, 0)]);
        assert_eq!(first_parsed(&trailing, 3), 2);
        // One long exchange from the first page on: nothing is left unparsed.
        let mut long = vec![fact(User, 0), fact(Assistant, 0)];
        long.extend((0..2 * PAGE).map(|_| fact(Tool, 1)));
        assert_eq!(first_parsed(&long, 3), 0);
    }
}
