//! Prepared summaries: answers obtained before the pass that needs them.
//!
//! A compression pass that calls the host's LLM makes the agent wait for it, on the request
//! path. Once usage passes `prepareRatio` of the window, [`crate::AutoContextMemory::prepare`]
//! runs the ladder on a snapshot of the working list, as the next pass will when the trigger is
//! reached, without writing or changing anything; the summaries it obtains are kept here. When
//! the pass comes, each summarize request it makes is looked up first: a request identical to
//! one already answered (same kind, instructions, schema, length and transcript of the same
//! messages, offload uuids aside) is answered from here without calling the host; a span that
//! changed makes a different request and is summarized afresh. So a prepared summary is only
//! ever used for exactly the text it summarizes.
//!
//! Spans that only grow at their end (a prefix summary, facts, trimmed turns) would never repeat
//! a request once new messages arrive. For those, a preparation also leaves a hint: the first
//! message it kept. The next pass tries that cut first and uses it when it frees enough, so the
//! request is the prepared one; otherwise it cuts afresh.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use crate::host::SummarizeRequest;
use crate::message::Message;
use crate::options::presets::Strategy;

/// Prepared answers kept at most (the oldest go first).
const MAX_ENTRIES: usize = 64;

/// A prepared answer.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub text: String,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// The offload uuids of the request it answered, in order of first appearance.
    uuids: Vec<String>,
}

/// Where a preparation cut a growing span: the first message it kept.
#[derive(Debug, Clone)]
pub(crate) struct Hint {
    pub strategy: Strategy,
    pub first_kept: Rc<Message>,
}

/// The prepared answers and cuts of one memory.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: Vec<(u64, Cached)>,
    hints: Vec<Hint>,
}

impl Cache {
    /// Number of prepared answers.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn insert(&mut self, key: u64, value: Cached) {
        self.entries.retain(|(k, _)| *k != key);
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push((key, value));
    }

    fn get(&self, key: u64) -> Option<&Cached> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn take(&mut self, key: u64) -> Option<Cached> {
        let at = self.entries.iter().position(|(k, _)| *k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Replaces the hints of the strategies in `hints`.
    pub fn set_hints(&mut self, hints: Vec<Hint>) {
        self.hints.retain(|h| !hints.iter().any(|n| n.strategy == h.strategy));
        self.hints.extend(hints);
    }
}

/// What the summarize calls of one pass (or preparation) share.
pub(crate) struct Summaries {
    cache: Rc<RefCell<Cache>>,
    /// A preparation: answers are kept for the pass, none are consumed.
    record: bool,
    /// Host calls made.
    calls: Cell<usize>,
    /// Requests answered from prepared summaries.
    reused: Cell<usize>,
    /// Cuts chosen during a preparation.
    new_hints: RefCell<Vec<Hint>>,
}

impl Summaries {
    /// For a pass: prepared answers are used (and consumed).
    pub fn for_pass(cache: Rc<RefCell<Cache>>) -> Summaries {
        Summaries { cache, record: false, calls: Cell::new(0), reused: Cell::new(0), new_hints: RefCell::default() }
    }

    /// For a preparation: answers are recorded.
    pub fn for_prepare(cache: Rc<RefCell<Cache>>) -> Summaries {
        Summaries { record: true, ..Summaries::for_pass(cache) }
    }

    /// Whether this is a preparation.
    pub fn preparing(&self) -> bool {
        self.record
    }

    /// Host calls made so far.
    pub fn calls(&self) -> usize {
        self.calls.get()
    }

    /// Requests answered from prepared summaries so far.
    pub fn reused(&self) -> usize {
        self.reused.get()
    }

    pub(crate) fn count_call(&self) {
        self.calls.set(self.calls.get() + 1);
    }

    /// The prepared answer to `request`, its offload uuids renamed to the request's.
    pub(crate) fn lookup(&self, request: &SummarizeRequest) -> Option<Cached> {
        // Nothing prepared, nothing to find: skip hashing the request (its prompt is the span).
        if self.cache.borrow().len() == 0 {
            return None;
        }
        let (key, uuids) = key(request);
        let found = if self.record { self.cache.borrow().get(key).cloned() } else { self.cache.borrow_mut().take(key) };
        let mut c = found?;
        if c.uuids.len() != uuids.len() {
            return None;
        }
        for (old, new) in c.uuids.iter().zip(&uuids) {
            if old != new {
                c.text = c.text.replace(old.as_str(), new);
            }
        }
        c.uuids = uuids;
        self.reused.set(self.reused.get() + 1);
        Some(c)
    }

    /// Keeps the answer to `request` when preparing.
    pub(crate) fn record(&self, request: &SummarizeRequest, text: &str, input_tokens: Option<u64>, output_tokens: Option<u64>) {
        if !self.record {
            return;
        }
        let (key, uuids) = key(request);
        self.cache.borrow_mut().insert(key, Cached { text: text.to_string(), input_tokens, output_tokens, uuids });
    }

    /// The first kept message of the last preparation's cut for `strategy`.
    pub(crate) fn hint(&self, strategy: Strategy) -> Option<Rc<Message>> {
        self.cache.borrow().hints.iter().find(|h| h.strategy == strategy).map(|h| h.first_kept.clone())
    }

    /// Records, when preparing, where `strategy` cut.
    pub(crate) fn set_hint(&self, strategy: Strategy, first_kept: Rc<Message>) {
        if self.record {
            let mut hints = self.new_hints.borrow_mut();
            hints.retain(|h| h.strategy != strategy);
            hints.push(Hint { strategy, first_kept });
        }
    }

    /// The cuts chosen during this preparation.
    pub(crate) fn take_hints(&self) -> Vec<Hint> {
        std::mem::take(&mut self.new_hints.borrow_mut())
    }
}

/// The identity of a request, and its offload uuids in order. Uuids are replaced by their rank
/// before hashing: a preparation and the pass write the same offloads under different uuids.
fn key(request: &SummarizeRequest) -> (u64, Vec<String>) {
    let mut uuids: Vec<String> = Vec::new();
    let mut canon = String::with_capacity(request.prompt.len());
    let text = &request.prompt;
    let mut last = 0;
    for (s, e) in find_uuids(text) {
        let u = &text[s..e];
        let rank = match uuids.iter().position(|x| x == u) {
            Some(r) => r,
            None => {
                uuids.push(u.to_string());
                uuids.len() - 1
            }
        };
        canon.push_str(&text[last..s]);
        canon.push_str(&format!("\u{0}{rank}\u{0}"));
        last = e;
    }
    canon.push_str(&text[last..]);
    let mut h = DefaultHasher::new();
    request.kind.hash(&mut h);
    request.system.hash(&mut h);
    canon.hash(&mut h);
    request.target_chars.hash(&mut h);
    request.schema.as_ref().map(|s| s.to_string()).hash(&mut h);
    (h.finish(), uuids)
}

/// Byte ranges of the hyphenated uuids in `text`.
fn find_uuids(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 36 <= b.len() {
        // The hyphens first: one comparison turns away almost every position of ordinary text.
        let is_uuid = [8, 13, 18, 23].iter().all(|&k| b[i + k] == b'-')
            && (0..36).all(|k| match k {
                8 | 13 | 18 | 23 => true,
                _ => b[i + k].is_ascii_hexdigit(),
            });
        let bounded = (i == 0 || !b[i - 1].is_ascii_alphanumeric()) && (i + 36 == b.len() || !b[i + 36].is_ascii_alphanumeric());
        if is_uuid && bounded {
            out.push((i, i + 36));
            i += 36;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(prompt: &str) -> SummarizeRequest {
        SummarizeRequest {
            kind: "round".into(),
            system: "s".into(),
            prompt: prompt.into(),
            messages: vec![],
            target_chars: None,
            timeout_ms: Some(5),
            schema: None,
            from_cache: false,
        }
    }

    #[test]
    fn identity_ignores_offload_uuids_but_nothing_else() {
        let a = "x 0b0e5a52-1111-4c1d-9d2e-000000000001 y 0b0e5a52-1111-4c1d-9d2e-000000000002 z 0b0e5a52-1111-4c1d-9d2e-000000000001";
        let b = "x 9f0e5a52-2222-4c1d-9d2e-00000000000a y 9f0e5a52-2222-4c1d-9d2e-00000000000b z 9f0e5a52-2222-4c1d-9d2e-00000000000a";
        let c = "x 9f0e5a52-2222-4c1d-9d2e-00000000000a y 9f0e5a52-2222-4c1d-9d2e-00000000000a z 9f0e5a52-2222-4c1d-9d2e-00000000000a";
        assert_eq!(key(&req(a)).0, key(&req(b)).0);
        assert_ne!(key(&req(a)).0, key(&req(c)).0, "a different pattern of uuids is a different text");
        assert_ne!(key(&req(a)).0, key(&req(&a.replace('x', "w"))).0);
        assert_eq!(key(&req(a)).1.len(), 2);

        let prepared = Summaries::for_prepare(Rc::default());
        prepared.record(&req(a), "saw 0b0e5a52-1111-4c1d-9d2e-000000000002", Some(10), Some(2));
        let pass = Summaries::for_pass(prepared.cache.clone());
        let got = pass.lookup(&req(b)).unwrap();
        assert_eq!(got.text, "saw 9f0e5a52-2222-4c1d-9d2e-00000000000b", "uuids are renamed to the pass's");
        assert!(pass.lookup(&req(b)).is_none(), "a pass consumes what it uses");
        assert_eq!(pass.reused(), 1);
    }

    #[test]
    fn uuids_are_found_whole_and_bounded() {
        let u = "0b0e5a52-1111-4c1d-9d2e-000000000001";
        assert_eq!(find_uuids(u), vec![(0, 36)]);
        let text = format!("{u}{u} ({u}) a{u} {u}b -{u}- 0b0e5a52-1111-4c1d-9d2e-00000000000g {}", &u[..35]);
        let found: Vec<&str> = find_uuids(&text).iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(found, vec![u, u], "only the one in parentheses and the one between hyphens: {text}");
        assert_eq!(find_uuids("-".repeat(100).as_str()), vec![]);
        assert_eq!(find_uuids("é0b0e5a52-1111-4c1d-9d2e-000000000001"), vec![(2, 38)]);
    }
}
