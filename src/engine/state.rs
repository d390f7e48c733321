//! The memory's state and its one owner: the working list, the append-only original log (its
//! tail: the rest is in the host's store, see [`super::log`]), the offload index (its older
//! records retired to the store, see [`super::retired`]), the most recent events, the plan, the
//! calibration, what is known of the provider's cache, and the pending deletes (offloads a failed pass wrote and could not delete, see
//! [`super::sweep`]).
//!
//! Everything that changes the state goes through here: [`State::add`] (checked, all or
//! nothing), [`State::set_pinned`], [`State::commit`] (a pass's result, all at once) and
//! [`State::restore`]. The facade ([`super::AutoContextMemory`]) reads it; a pass
//! ([`super::pass`]) takes a snapshot of it and hands back a result to commit. Persistence lives
//! here too: [`State::to_json`] writes the versioned state, [`State::restore`] reads it back,
//! checking everything again (version, options, every message, pairing, that every marked
//! offload is one of this session's) so a tampered or future state fails with `INVALID_STATE`
//! instead of misbehaving later. A working message's token count is read back when the state was
//! written under the same counting rules ([`COUNT_VERSION`]) with a built-in tokenizer, and
//! counted again otherwise (a host's tokenizer may have changed between save and restore):
//! counting is most of a restore, and a Worker restores on every request. Offloaded originals
//! and the flushed part of the log live in the host's store, not in the state, so the state is
//! sized by the working list and the offload index, not by the history. A load from pages may
//! leave the working list's first pages unparsed, read by the facts the state's head keeps of
//! them ([`super::deferred`]); they are parsed, and checked as a restore checks them, when
//! something needs their messages ([`State::materialize`]).
//!
//! Version 2 of the state holds the log as `log: {messages, head, tail, tokens}` and the retired
//! records as `retired` (the same shape); version 1 held every original in `original`, and
//! restores as a log whose tail is all of it (the first flush writes it to the store).

use std::borrow::Cow;
use std::collections::HashSet;
use std::rc::Rc;

use serde_json::{json, Value};

use crate::engine::cache::CacheWatch;
use crate::engine::calibration::Calibration;
use crate::engine::events::CompressionEvent;
use crate::engine::offload::OffloadRecord;
use crate::entry::Entry;
use crate::error::{Error, ErrorCode, Result};
use crate::fields;
use crate::format::Format;
use crate::message::{Message, Role, Synthetic};
use crate::options::Config;
use crate::plan::Plan;
use crate::strategy::rent::Fact;
use crate::tokens::{TokenCounter, Tokenizer, COUNT_VERSION, REQUEST_OVERHEAD};

use super::deferred::{Deferred, EventPages};
use super::log::{Chain, Log};
use super::pages::{self, Cuts, KnownPage, KnownRecords, PAGE};
use super::retired::{self, Retired};
use super::texts::Texts;

/// The state format version this build writes and reads.
pub const STATE_VERSION: u64 = 2;

/// The steps that rewrite one message in place into a shorter copy of it.
const COPY_KINDS: [&str; 5] = [
    "TOOL_RESULT_TRUNCATE",
    "LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION",
    "LARGE_MESSAGE_OFFLOAD",
    "CURRENT_ROUND_LARGE_MESSAGE_SUMMARY",
    "CURRENT_ROUND_MESSAGE_COMPRESS",
];

/// The state of one memory.
#[derive(Default)]
pub(crate) struct State {
    /// The working list's entries; when a load left its first pages unparsed ([`State::deferred`]),
    /// those after them.
    pub working: Vec<Entry>,
    /// The pages at the front of the working list a load left unparsed (see
    /// [`super::deferred`]); [`State::materialize`] parses them.
    pub deferred: Option<Deferred>,
    /// The facts of every working entry ([`Fact`]), those of the pages left unparsed included:
    /// what the trigger check reads on every call, kept as the list changes.
    pub facts: Vec<Fact>,
    /// The working list's tokens (those of the pages left unparsed included).
    pub working_tokens: u64,
    /// Everything added: the tail here, the rest in the store.
    pub log: Log,
    pub offloads: Vec<OffloadRecord>,
    pub offload_ids: HashSet<String>,
    /// Offload records retired from the index: the tail here, the rest in the store.
    pub retired: Retired,
    /// The most recent events; none while a load left them unparsed ([`State::unparsed_events`]).
    pub events: Vec<CompressionEvent>,
    /// The events' pages a load left unparsed (see [`super::deferred`]); [`State::read_events`]
    /// parses them.
    pub unparsed_events: Option<EventPages>,
    /// The tool call ids of the working list (an id may not be reused while the list holds it);
    /// of the parsed entries only, while pages are left unparsed.
    pub call_ids: HashSet<String>,
    /// Bumped by every commit that rewrites the working list.
    pub generation: u64,
    /// The host's current plan.
    pub plan: Option<Plan>,
    /// Offloads written by a pass that was dropped (cancelled by a native host) before it
    /// committed or deleted them; the next pass deletes them first.
    pub abandoned: Vec<String>,
    /// How the token estimate compares with the provider's counts.
    pub calibration: Calibration,
    /// When the last model call was made, and whether the provider caches at all.
    pub cache: CacheWatch,
    /// Real user messages in the working list (the turns `maxContextTurns` counts).
    pub turns: usize,
    /// The working list's version, and where each recent change began.
    pub versions: Versions,
    /// The real user turns when the last pass ended at or over `msgThreshold`, and why. Until a
    /// turn is added or removed (or a pin changes), the count alone runs no pass: what made that
    /// pass stop (the current round, what the model has not read, what is kept) is all that came
    /// since, and a pass on every add would only find so again. Saved with the state
    /// (`countStuck`): a Worker restores its session at every request, and the pass a live
    /// memory would not run, a restored one must not run either.
    pub count_stuck: Option<(usize, String)>,
    /// The pages of the working list whose text the memory read or wrote last, by position:
    /// what a save copies instead of writing again ([`pages::KnownPage`]).
    pub known_pages: Vec<Option<KnownPage>>,
    /// The pages of the offload index and of the events whose text the memory read or wrote last.
    pub known_offloads: KnownRecords<OffloadRecord>,
    pub known_events: KnownRecords<CompressionEvent>,
    /// The texts of the originals the last pass offloaded, for the log's flush after it.
    pub texts: Texts,
}

/// The events the state keeps: the most recent ones. Every event also reaches the host as it
/// happens (each pass's result, `onEvent`); keeping them all would grow the state with the
/// history, one event or more per pass.
pub const MAX_EVENTS: usize = 256;

/// Changes of the working list remembered for [`Versions::first_changed_since`].
const MAX_CHANGES: usize = 64;

/// The working list's version: every change bumps it and records the first index it changed,
/// so a host holding the list at a recent version asks only for what changed since (a turn
/// adds a message or two; a pass rewrites from its first edit on).
#[derive(Debug, Default)]
pub(crate) struct Versions {
    version: u64,
    /// `(version after the change, first index it changed)`, oldest first.
    changes: std::collections::VecDeque<(u64, usize)>,
}

impl Versions {
    /// The current version.
    pub fn current(&self) -> u64 {
        self.version
    }

    fn bump(&mut self, first_changed: usize) {
        self.version += 1;
        if self.changes.len() == MAX_CHANGES {
            self.changes.pop_front();
        }
        self.changes.push_back((self.version, first_changed));
    }

    /// The first index of the working list that changed since `version`: `None` when nothing
    /// did, 0 when `version` is too old (or not one of this list's).
    pub fn first_changed_since(&self, version: u64) -> Option<usize> {
        if version == self.version {
            return None;
        }
        let oldest_known = self.changes.front().map_or(self.version, |(v, _)| v - 1);
        if version > self.version || version < oldest_known {
            return Some(0);
        }
        self.changes.iter().filter(|(v, _)| *v > version).map(|(_, first)| *first).min().or(Some(0))
    }
}

/// What a pass hands to [`State::commit`].
pub(crate) struct Commit {
    /// The working list the pass made from the snapshot (messages added since are appended).
    pub work: Vec<Entry>,
    /// The offloads it wrote, as `(uuid, digest, message count)`.
    pub offloads: Vec<(String, String, usize)>,
    /// Its events.
    pub events: Vec<CompressionEvent>,
}

impl State {
    /// Whether the message count calls for a pass: at or over `threshold`, unless a pass already
    /// stopped there in this turn ([`State::count_stuck`]).
    pub fn count_pressure(&self, threshold: usize) -> bool {
        self.len() >= threshold && self.count_stuck.as_ref().is_none_or(|(turns, _)| *turns != self.turns)
    }

    /// Records how a pass ended for [`State::count_pressure`]: under `threshold` messages, the
    /// count calls for passes again; exhausted at or over it, not until the turns change.
    pub fn passed(&mut self, threshold: usize, result: &super::CompressResult) {
        if self.len() < threshold {
            self.count_stuck = None;
        } else if let Some(why) = result.reason.as_ref().filter(|_| result.exhausted) {
            self.count_stuck = Some((self.turns, why.clone()));
        }
    }

    /// Whether a load left pages unparsed: the working list's first ones, or the events'.
    pub fn unparsed(&self) -> bool {
        self.deferred.is_some() || self.unparsed_events.is_some()
    }

    /// Parses the events' pages a load left unparsed, with the checks a load runs; on an error
    /// (`INVALID_STATE`) they stay as they were.
    pub fn read_events(&mut self) -> Result<()> {
        let Some(p) = &self.unparsed_events else { return Ok(()) };
        let (mut items, mut sizes) = (Vec::new(), Vec::with_capacity(p.texts.len()));
        for (n, text) in p.texts.iter().enumerate() {
            let Some(page) = pages::parse(text) else {
                return Err(bad(format!("state.events: page {n} is not a page of events")));
            };
            sizes.push(page.len());
            items.extend(page);
        }
        let events = events_of(Some(&Value::Array(items)))?;
        self.known_events = KnownRecords::read(&events, &p.texts, &sizes);
        self.events = events;
        self.unparsed_events = None;
        Ok(())
    }

    /// The working list's length.
    pub fn len(&self) -> usize {
        self.deferred.as_ref().map_or(0, Deferred::len) + self.working.len()
    }

    /// Parses the pages of the working list a load left unparsed ([`super::deferred`]), with the
    /// checks a load runs (every message in `format`, every mark an offload of this session,
    /// tool pairing), and that each entry is what the head's facts say. All or nothing: on an
    /// error (`INVALID_STATE`) the pages stay as they were.
    pub fn materialize(&mut self, format: Format) -> Result<()> {
        let Some(d) = &self.deferred else { return Ok(()) };
        let mut entries = Vec::with_capacity(d.len() + self.working.len());
        let mut known = Vec::with_capacity(d.pages.len() + self.known_pages.len());
        let check_mark = mark_check(&self.offloads, &self.offload_ids);
        for (n, page) in d.pages.iter().enumerate() {
            let start = entries.len();
            let Some(items) = pages::parse(&page.text).filter(|items| items.len() == page.spans.len()) else {
                return Err(bad(format!("state.working: page {n} is not the page its facts describe")));
            };
            let mut all_read = true;
            for item in items {
                let i = entries.len();
                let (m, pinned, tokens, as_read) = read_item(i, item, &|i, v| format.parse_owned(i, v), &check_mark, true)?;
                let tokens = tokens.ok_or_else(|| bad(format!("state.working[{i}] has no count")))?;
                all_read &= as_read;
                entries.push(Entry::with_pin(Rc::new(m), tokens, pinned));
            }
            if let Some(i) = (start..entries.len()).find(|&i| Fact::of(&entries[i]) != self.facts[i]) {
                return Err(bad(format!("state.working[{i}] is not what the state's facts of page {n} say")));
            }
            known.push(all_read.then(|| KnownPage::new(&entries[start..], Rc::clone(&page.text))));
        }
        entries.extend(self.working.iter().cloned());
        if let Some(p) = crate::format::validate_tool_pairing(format, &entries).first() {
            return Err(bad(format!("state.working is not a valid conversation: {}", p.message)));
        }
        known.append(&mut self.known_pages);
        self.known_pages = known;
        self.call_ids = call_ids_of(&entries);
        self.working = entries;
        self.deferred = None;
        Ok(())
    }

    /// Request tokens of the working list now.
    pub fn request_tokens(&self, config: &Config) -> u64 {
        request_tokens(self.working_tokens, config)
    }

    /// Adds one wire message, or an array of them; all or nothing (see
    /// [`super::AutoContextMemory::add`]).
    ///
    /// A borrowed value is copied a message at a time, each once it is known to be a message:
    /// a copy of a value nested too deep would recurse past the stack.
    pub fn add(&mut self, config: &Config, counter: &TokenCounter, value: Cow<'_, Value>, pinned: bool) -> Result<()> {
        let items: Vec<Cow<'_, Value>> = match value {
            Cow::Owned(Value::Array(a)) => a.into_iter().map(Cow::Owned).collect(),
            Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
            other => vec![other],
        };
        let base = self.log.len() as usize;
        let format = config.format;
        let mut parsed = Vec::with_capacity(items.len());
        for (k, v) in items.into_iter().enumerate() {
            let m = match v {
                Cow::Owned(v) => format.parse_owned(k, v),
                Cow::Borrowed(v) => format.parse(k, v),
            };
            parsed.push(m.map_err(|e| e.offset_index(base))?);
        }
        if self.deferred.as_ref().is_some_and(|d| parsed.iter().flat_map(Message::call_ids).any(|id| d.may_call(id))) {
            // A new call may reuse an id of the pages left unparsed: only they can say.
            self.materialize(format)?;
        }
        {
            // Gemini's calls without ids get unique ones, and their responses those ids.
            let open: Vec<&Message> = self.working[format.open_turn(&self.working)..].iter().map(|e| &*e.msg).collect();
            let (known, mut claimed) = (&self.call_ids, HashSet::new());
            format.link(&open, &mut parsed, &mut |id: &str| !known.contains(id) && claimed.insert(id.to_string()));
        }
        {
            let mut open = open_exchange(format, &self.working);
            let mut new_calls: HashSet<&str> = HashSet::new();
            for (k, m) in parsed.iter().enumerate() {
                let index = base + k;
                let prev = if k == 0 { self.working.last().map(|e| &*e.msg) } else { Some(&parsed[k - 1]) };
                let continues = prev.is_some_and(|p| format.continues_turn(p, m));
                check_pairing(format, index, m, continues, &mut open, &self.call_ids, &mut new_calls)?;
            }
        }
        let mut entries = Vec::with_capacity(parsed.len());
        for m in parsed {
            let tokens = counter.count_message(&m)?;
            entries.push(Entry::with_pin(Rc::new(m), tokens, pinned));
        }
        if !entries.is_empty() {
            self.versions.bump(self.len());
        }
        for e in entries {
            self.turns += usize::from(e.msg.is_real_user());
            for id in e.msg.call_ids() {
                self.call_ids.insert(id.to_string());
            }
            self.working_tokens += e.tokens as u64;
            self.log.push(e.msg.wire.shared(), e.tokens as u64);
            self.facts.push(Fact::of(&e));
            self.working.push(e);
        }
        Ok(())
    }

    /// Takes back the newest message added, which the working list must still hold as added.
    pub fn pop(&mut self) -> Result<Option<Value>> {
        let replaced = || {
            Error::new(ErrorCode::InvalidState, "the most recent message was compressed into a summary and cannot be taken back on its own")
        };
        if self.log.last().is_none() {
            // Nothing waits in the log's tail: nothing was added, or the newest message is in
            // the store (a flush writes it once a pass replaced it; a message taken back left
            // the one before it there).
            return if self.working.last().is_some_and(|e| e.msg.synthetic.is_some()) { Err(replaced()) } else { Ok(None) };
        }
        if !self.newest_untouched() {
            return Err(replaced());
        }
        let e = self.working.pop().expect("checked above");
        self.facts.pop();
        self.versions.bump(self.len());
        self.working_tokens -= e.tokens as u64;
        self.turns -= usize::from(e.msg.is_real_user());
        for id in e.msg.call_ids() {
            self.call_ids.remove(id);
        }
        Ok(self.log.pop().map(|v| (*v).clone()))
    }

    /// Whether the working list holds the newest message added as added: the last add can be
    /// taken back, and a flush keeps it in the log's tail (it writes it once a pass replaced
    /// it).
    pub fn newest_untouched(&self) -> bool {
        self.log.last().is_some_and(|last| self.working.last().is_some_and(|e| e.msg.synthetic.is_none() && e.msg.wire == *last))
    }

    /// Pins or unpins working message `index`.
    /// The state's pages left unparsed must be parsed first ([`State::materialize`]).
    pub fn set_pinned(&mut self, index: usize, pinned: bool) -> Result<()> {
        debug_assert!(self.deferred.is_none());
        let n = self.working.len();
        let Some(e) = self.working.get_mut(index) else {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("index {index} is not a working message (the working list has {n})"),
            )
            .at_field("index"));
        };
        e.pinned = pinned;
        self.facts[index].pinned = pinned;
        self.count_stuck = None;
        Ok(())
    }

    /// The working list's version, the first index that changed since `version`, and the wire
    /// messages from there on (none when nothing changed).
    ///
    /// Of the parsed messages only: those of pages left unparsed are not values yet
    /// ([`State::materialize`] parses them).
    pub fn messages_since(&self, version: Option<u64>) -> (u64, usize, Vec<Value>) {
        let skip = self.deferred.as_ref().map_or(0, Deferred::len);
        let from = self.changed_from(version).max(skip);
        let tail = self.working[(from - skip).min(self.working.len())..].iter().map(|e| (*e.msg.wire).clone()).collect();
        (self.versions.current(), from, tail)
    }

    /// [`State::messages_since`] as the JSON text of `{version, from, messages}`, written from
    /// the messages themselves (no copy of them first).
    pub fn messages_since_text(&self, version: Option<u64>) -> String {
        let from = self.changed_from(version);
        let mut out = format!(r#"{{"version":{},"from":{from},"messages":"#, self.versions.current());
        self.write_messages(&mut out, from);
        out.push('}');
        out
    }

    /// The wire messages of the working list from `from` on, as a JSON array: a whole page
    /// whose text the memory knows is written once and copied after that ([`KnownPage`]); the
    /// messages of a page left unparsed are cut from its text.
    pub fn write_messages(&self, out: &mut String, from: usize) {
        let skip = self.deferred.as_ref().map_or(0, Deferred::len);
        out.reserve(self.len().saturating_sub(from) * 256);
        out.push('[');
        let mut at = from.min(self.len());
        if let Some(d) = &self.deferred {
            while at < skip {
                if at > from {
                    out.push(',');
                }
                let page = &d.pages[at / PAGE];
                out.push_str(&page.text[1..][page.spans[at % PAGE].0.clone()]);
                at += 1;
            }
        }
        while at < self.len() {
            if at > from {
                out.push(',');
            }
            let i = at - skip;
            let end = (i + PAGE).min(self.working.len());
            let known = (i % PAGE == 0).then(|| self.known_pages.get(i / PAGE)).flatten().and_then(Option::as_ref);
            match known.and_then(|k| k.messages_of(&self.working[i..end])) {
                Some(text) => {
                    out.push_str(text);
                    at = end + skip;
                }
                None => {
                    crate::json::write(out, &self.working[i].msg.wire);
                    at += 1;
                }
            }
        }
        out.push(']');
    }

    /// The first working index changed since `version` (0 for none: everything).
    fn changed_from(&self, version: Option<u64>) -> usize {
        match version {
            None => 0,
            Some(v) => self.versions.first_changed_since(v).unwrap_or(self.len()),
        }
    }

    /// The offload record of `uuid`, if this session wrote it.
    pub fn offload(&self, uuid: &str) -> Option<OffloadRecord> {
        self.offloads.iter().find(|o| o.uuid == uuid).cloned()
    }

    /// Commits a pass's result made from the first `snapshot_len` messages of the working list
    /// (the pass has checked that the state did not move under it): the messages added since
    /// stay after it. Returns the number of working messages now.
    pub fn commit(&mut self, snapshot_len: usize, result: Commit) -> usize {
        debug_assert!(!self.unparsed(), "a pass parses what a load left unparsed first");
        let Commit { mut work, offloads, events } = result;
        work.extend(self.working[snapshot_len..].iter().cloned());
        let same = self.working.iter().zip(&work).take_while(|(a, b)| Rc::ptr_eq(&a.msg, &b.msg)).count();
        if same < self.working.len() || same < work.len() {
            self.versions.bump(same);
        }
        self.working_tokens = sum_tokens(&work);
        self.turns = count_turns(&work);
        self.call_ids = call_ids_of(&work);
        self.facts = Fact::all(&work);
        self.working = work;
        for (uuid, digest, count) in offloads {
            self.offload_ids.insert(uuid.clone());
            self.offloads.push(OffloadRecord { uuid, message_count: count, digest: Some(digest) });
        }
        for uuid in retired::retire(&mut self.offloads, &self.working, &mut self.retired) {
            self.offload_ids.remove(&uuid);
        }
        self.events.extend(events);
        keep_recent(&mut self.events);
        self.generation += 1;
        self.working.len()
    }

    /// Whether the state moved since a pass took its snapshot of `snapshot_len` messages at
    /// `generation` (restored, or compressed elsewhere).
    pub fn moved(&self, generation: u64, snapshot_len: usize) -> bool {
        self.generation != generation || self.working.len() < snapshot_len
    }

    /// The whole state as versioned JSON, with the options in force: [`State::to_json_text`]
    /// read back.
    pub fn to_json(&self, config: &Config) -> Value {
        serde_json::from_str(&self.to_json_text(config)).expect("the state's text is JSON")
    }

    /// The whole state as versioned JSON text. The working list and the log's tail (nearly all
    /// of it) are written straight from the entries; the rest, small, through a [`Value`].
    pub fn to_json_text(&self, config: &Config) -> String {
        self.write_json(config, &mut Cuts::default(), false)
    }

    /// [`State::to_json_text`] as a save writes it, with the facts of each page of the working
    /// list (`pageFacts`, see [`super::deferred`]), and where its paged lists' items lie in it
    /// (see [`super::pages`]).
    pub fn to_json_cut(&self, config: &Config) -> (String, Cuts) {
        let mut cuts = Cuts::default();
        (self.write_json(config, &mut cuts, true), cuts)
    }

    /// The state's text, noting in `cuts` where the paged lists and their items are; with the
    /// pages' facts when `facts`.
    fn write_json(&self, config: &Config, cuts: &mut Cuts, facts: bool) -> String {
        let mut out = String::with_capacity(64 + self.len() * 64);
        out.push_str(&format!("{{\"autocontext\":{STATE_VERSION},\"counts\":{COUNT_VERSION}"));
        let working = &mut cuts[0];
        working.field.0 = out.len();
        out.push_str(",\"working\":[");
        let mut lines: Vec<Rc<str>> = Vec::new();
        let unparsed = self.deferred.as_ref().map_or(&[][..], |d| &d.pages[..]);
        for page in unparsed {
            if !working.pages.is_empty() {
                out.push(',');
            }
            let start = out.len();
            out.push_str(&page.text[1..page.text.len() - 1]);
            working.pages.push((start, out.len()));
            if facts {
                lines.push(Rc::clone(&page.line));
            }
        }
        for (n, entries) in self.working.chunks(PAGE).enumerate() {
            if !working.pages.is_empty() {
                out.push(',');
            }
            let start = out.len();
            let known = self.known_pages.get(n).and_then(Option::as_ref).filter(|k| k.items_of(entries).is_some());
            match known {
                Some(k) => {
                    out.push_str(k.items_of(entries).unwrap_or_default());
                    if facts {
                        lines.push(k.line(|items| super::deferred::line(items, entries)));
                    }
                }
                None => {
                    crate::json::write_items(&mut out, entries, pages::write_entry);
                    if facts {
                        lines.push(Rc::from(super::deferred::line(&out[start..], entries)));
                    }
                }
            }
            working.pages.push((start, out.len()));
        }
        out.push(']');
        working.field.1 = out.len();
        out.push_str(",\"log\":");
        self.log.write_json(&mut out);
        out.push_str(",\"retired\":");
        self.retired.0.write_json(&mut out);
        out.push_str(",\"config\":");
        crate::json::write(&mut out, &config.to_json());
        let [_, offloads, event_cut] = cuts;
        offloads.field.0 = out.len();
        out.push_str(",\"offloads\":");
        pages::write_list(&mut out, offloads, &self.offloads, |out, n, page| match self.known_offloads.items_of(n, page) {
            Some(items) => out.push_str(items),
            None => crate::json::write_items(out, page, |o, r| r.write(o)),
        });
        offloads.field.1 = out.len();
        event_cut.field.0 = out.len();
        out.push_str(",\"events\":");
        match &self.unparsed_events {
            Some(p) => pages::write_texts(&mut out, event_cut, &p.texts),
            None => pages::write_list(&mut out, event_cut, &self.events, |out, n, page| match self.known_events.items_of(n, page) {
                Some(items) => out.push_str(items),
                None => crate::json::write_items(out, page, |o, e| e.write(o)),
            }),
        }
        event_cut.field.1 = out.len();
        out.push_str(",\"plan\":");
        crate::json::write(&mut out, &json!(self.plan));
        out.push_str(",\"calibration\":");
        crate::json::write(&mut out, &json!((self.calibration.samples > 0).then_some(self.calibration)));
        if !self.abandoned.is_empty() {
            out.push_str(",\"pending\":");
            out.push('[');
            crate::json::write_items(&mut out, &self.abandoned, |o, u| crate::json::write_str(o, u));
            out.push(']');
        }
        if let Some(cache) = self.cache.to_json() {
            out.push_str(",\"cache\":");
            crate::json::write(&mut out, &cache);
        }
        if let Some((turns, why)) = &self.count_stuck {
            out.push_str(&format!(",\"countStuck\":[{turns},"));
            crate::json::write_str(&mut out, why);
            out.push(']');
        }
        if facts {
            out.push_str(",\"pageFacts\":[");
            crate::json::write_items(&mut out, &lines, |o, l| crate::json::write_str(o, l));
            out.push(']');
            let digest = match &self.unparsed_events {
                Some(p) => Some(p.digest),
                None => Some(super::deferred::pages_digest(event_cut.pages.iter().map(|&(a, b)| &out[a..b])))
                    .filter(|_| !self.events.is_empty()),
            };
            if let Some(digest) = digest {
                out.push_str(",\"eventsDigest\":");
                super::deferred::write_digest(&mut out, digest);
            }
        }
        out.push('}');
        out
    }

    /// Whether `state` can be a state at all: an object, nested no deeper than one
    /// [`State::to_json`] writes. Checked before anything copies it: a copy of a value nested
    /// too deep would recurse past the stack. True when no message in it can nest deeper than
    /// a message may, so the restore need not walk each message again.
    pub fn check_shape(state: &Value) -> Result<bool> {
        use crate::format::depth::{deepest, MAX_DEPTH};
        if !state.is_object() {
            return Err(bad("state must be an object made by toJSON()"));
        }
        // Messages sit four levels down (state, list, item, message); deeper is not a state
        // toJSON() made.
        let depth = deepest(state, MAX_DEPTH + 4);
        if depth > MAX_DEPTH + 4 {
            return Err(bad(format!("state is nested more than {} levels deep", MAX_DEPTH + 4)));
        }
        // A message sits at least three levels down (a version 1 state's `original` list), so
        // within this depth none nests more than MAX_DEPTH.
        Ok(depth <= MAX_DEPTH + 2)
    }

    /// Reads a state [`State::to_json`] wrote: its options, the token counter (`counter` when
    /// the state was made with a host tokenizer) and the state.
    ///
    /// The state is taken, not borrowed: its messages become the memory's as they are, never
    /// copied (a Worker restores its session on every request).
    pub fn restore(state: Value, counter: Option<TokenCounter>) -> Result<(Config, TokenCounter, State)> {
        Self::restore_read(state, counter, None, None).map(|(config, counter, state, _)| (config, counter, state))
    }

    /// [`State::restore`], and for each working entry whether the state's text of it is what
    /// the writer writes of it now (its count read, its mark as saved), so that the page it came
    /// in can be kept ([`State::know_pages`]).
    ///
    /// With `deferred`, the pages at the front of the working list a load left unparsed and
    /// their entries' facts: the state's `working` holds the entries after them. With
    /// `offloads`, the offload index a load read from its pages ([`super::offload::read_pages`]),
    /// checked here as the state's own list is.
    pub(crate) fn restore_read(
        state: Value,
        counter: Option<TokenCounter>,
        deferred: Option<(Deferred, Vec<Fact>)>,
        offloads: Option<Vec<OffloadRecord>>,
    ) -> Result<(Config, TokenCounter, State, Vec<bool>)> {
        let shallow = State::check_shape(&state)?;
        let Value::Object(mut obj) = state else { unreachable!("checked to be an object") };
        let version = match obj.get("autocontext").and_then(Value::as_u64) {
            Some(v @ 1..=STATE_VERSION) => v,
            Some(v) if v > STATE_VERSION => {
                return Err(bad(format!("state version {v} is newer than this autocontext reads ({STATE_VERSION}); upgrade autocontext")))
            }
            _ => return Err(bad("state has no valid `autocontext` version field; was it made by toJSON()?")),
        };
        let config =
            Config::from_json(obj.get("config").unwrap_or(&Value::Null)).map_err(|e| bad(format!("state.config: {}", e.message())))?;
        let counter = match counter {
            Some(c) => c,
            None => TokenCounter::new(config.tokenizer).map_err(|e| bad(format!("state: {}", e.message())))?,
        };
        let format = config.format;
        let parse = |i: usize, v: Value| if shallow { format.parse_owned_shallow(i, v) } else { format.parse_owned(i, v) };
        let offloads = match offloads {
            Some(read) => read,
            None => fields::list::<OffloadRecord>(obj.get("offloads"), "state.offloads").map_err(bad)?,
        };
        let mut offload_ids = HashSet::new();
        for o in &offloads {
            if !crate::engine::reload::is_uuid(&o.uuid) || !offload_ids.insert(o.uuid.clone()) {
                return Err(bad(format!("state.offloads: {:?} is not a valid, unique offload uuid", o.uuid)));
            }
            if o.digest.as_deref().is_some_and(|d| !crate::engine::offload::is_digest(d)) {
                return Err(bad(format!("state.offloads: offload {} has a malformed digest {:?}", o.uuid, o.digest)));
            }
        }
        let retired = match obj.get_mut("retired") {
            None | Some(Value::Null) => Retired::default(),
            Some(r) => {
                let Some(Value::Array(items)) = r.get_mut("tail").map(Value::take) else {
                    return Err(bad("state.retired.tail must be an array"));
                };
                let mut tail = Vec::with_capacity(items.len());
                for (i, v) in items.into_iter().enumerate() {
                    let o: OffloadRecord = fields::record_at(&v, &|| format!("state.retired.tail[{i}]")).map_err(bad)?;
                    if !crate::engine::reload::is_uuid(&o.uuid)
                        || offload_ids.contains(&o.uuid)
                        || o.digest.as_deref().is_some_and(|d| !crate::engine::offload::is_digest(d))
                    {
                        return Err(bad(format!("state.retired.tail: {:?} is not a valid offload record outside the index", o.uuid)));
                    }
                    tail.push((Rc::new(v), 1));
                }
                Retired(Log::restore(Chain::Index, r, &config.session_id, tail).map_err(|e| bad(format!("state.{e}")))?)
            }
        };
        let pending = match obj.get("pending") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => fields::strings(v, "state.pending", "offload uuids").map_err(bad)?,
        };
        for u in &pending {
            // A pending delete of an offload the index names would delete a live original.
            if !crate::engine::reload::is_uuid(u) || offload_ids.contains(u) {
                return Err(bad(format!("state.pending: {u:?} is not an offload uuid outside the offload index")));
            }
        }
        let events = events_of(obj.get("events"))?;

        let calibration = Calibration::from_json(obj.get("calibration"))?;
        let count_stuck = match obj.get("countStuck") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => match (a.len(), a.first().and_then(Value::as_u64), a.get(1).and_then(Value::as_str)) {
                (2, Some(turns), Some(why)) => Some((turns as usize, why.to_string())),
                _ => return Err(bad("state.countStuck must be [turns, reason]")),
            },
            Some(_) => return Err(bad("state.countStuck must be [turns, reason]")),
        };
        let cache = CacheWatch::from_json(obj.get("cache"))?;
        let plan = match obj.get("plan") {
            None | Some(Value::Null) => None,
            Some(p) => Some(Plan::from_json(p).map_err(|e| bad(format!("state.plan: {}", e.message())))?),
        };
        let (tail_values, field) = if version == 1 {
            (obj.get_mut("original").map(Value::take), "original")
        } else {
            (obj.get_mut("log").and_then(|l| l.get_mut("tail")).map(Value::take), "log.tail")
        };
        let Some(Value::Array(tail_values)) = tail_values else {
            return Err(bad(format!("state.{field} must be an array")));
        };
        // The counts the state carries, when they were made as this build counts.
        let counted = counter.kind() != Tokenizer::Custom && obj.get("counts").and_then(Value::as_u64) == Some(COUNT_VERSION);
        let tail_tokens = match obj.get("log").and_then(|l| l.get("tokens")) {
            Some(Value::Array(t)) if counted && version > 1 && t.len() == tail_values.len() => Some(t),
            _ => None,
        };
        let mut tail = Vec::with_capacity(tail_values.len());
        for (i, v) in tail_values.into_iter().enumerate() {
            let m = parse(i, v).map_err(|e| bad(format!("state.{field}: {}", e.message())))?;
            let tokens = match tail_tokens {
                Some(t) => t[i]
                    .as_u64()
                    .filter(|&t| t <= u64::from(u32::MAX))
                    .ok_or_else(|| bad(format!("state.log.tokens[{i}] must be a whole number of tokens")))?,
                None => u64::from(counter.count_message(&m).map_err(|e| bad(format!("state.{field}[{i}]: {}", e.message())))?),
            };
            tail.push((m.wire.into_shared(), tokens));
        }
        let log = if version == 1 {
            Log::from_originals(tail)
        } else {
            Log::restore(Chain::Messages, obj.get("log").unwrap_or(&Value::Null), &config.session_id, tail)
                .map_err(|e| bad(format!("state.{e}")))?
        };

        let working_values = match obj.get_mut("working").map(Value::take) {
            Some(Value::Array(a)) => a,
            _ => return Err(bad("state.working must be an array")),
        };
        // The entries before these stay in their pages, unparsed.
        let skip = deferred.as_ref().map_or(0, |(d, _)| d.len());
        if skip > 0 && !counted {
            return Err(bad("state.working: pages left unparsed need the counts the state carries"));
        }
        let check_mark = mark_check(&offloads, &offload_ids);
        let mut read = Vec::with_capacity(working_values.len());
        let mut as_read = Vec::with_capacity(working_values.len());
        for (k, item) in working_values.into_iter().enumerate() {
            let (m, pinned, tokens, read_as_written) = read_item(skip + k, item, &parse, &check_mark, counted)?;
            as_read.push(read_as_written);
            read.push((m, (pinned, tokens)));
        }
        let (mut messages, known): (Vec<Message>, Vec<(bool, Option<u32>)>) = read.into_iter().unzip();
        format.link_all(&mut messages);
        let mut working = Vec::with_capacity(messages.len());
        let mut working_tokens = 0u64;
        for (i, (m, (pinned, tokens))) in messages.into_iter().zip(known).enumerate() {
            let entry = Entry::with_pin(Rc::new(m), 0, pinned);
            let tokens = match tokens {
                Some(t) => t,
                None => counter.count_message(&entry.msg).map_err(|e| bad(format!("state.working[{}]: {}", skip + i, e.message())))?,
            };
            working_tokens += tokens as u64;
            working.push(Entry { tokens, ..entry });
        }
        // Pairing is what the engine relies on; the format's softer rules (Anthropic's
        // alternation) may already be broken by what the host added, and restore keeps that.
        // With pages left unparsed, the entries after them may answer calls in them: the whole
        // list is checked when they are parsed ([`State::materialize`]).
        if let Some(p) = crate::format::validate_tool_pairing(format, &working).first().filter(|_| skip == 0) {
            return Err(bad(format!("state.working is not a valid conversation: {}", p.message)));
        }
        drop(check_mark);
        let (deferred, mut facts) = deferred.map_or((None, Vec::new()), |(d, facts)| (Some(d), facts));
        let (unparsed_turns, unparsed_tokens) =
            (facts.iter().filter(|f| f.real_user).count(), facts.iter().map(|f| f.tokens as u64).sum::<u64>());
        facts.extend(working.iter().map(Fact::of));
        let state = State {
            count_stuck,
            turns: count_turns(&working) + unparsed_turns,
            call_ids: call_ids_of(&working),
            facts,
            versions: Versions::default(),
            working,
            deferred,
            working_tokens: working_tokens + unparsed_tokens,
            log,
            offloads,
            offload_ids,
            retired,
            events,
            unparsed_events: None,
            generation: 0,
            plan,
            abandoned: pending,
            calibration,
            cache,
            known_pages: Vec::new(),
            known_offloads: KnownRecords::default(),
            known_events: KnownRecords::default(),
            texts: Texts::default(),
        };
        Ok((config, counter, state, as_read))
    }

    /// Keeps the texts of the working list's `pages` (each [`PAGE`] entries, the last at most
    /// as many) the state was read from, except those holding an entry not read as written
    /// (`as_read`): the next save copies them. `sizes` are the pages' item counts as read; pages
    /// not cut as the writer cuts them are not kept.
    pub(crate) fn know_pages(&mut self, pages: &[String], sizes: &[usize], as_read: &[bool]) {
        let n = self.working.len().div_ceil(PAGE);
        if pages.len() != n || sizes.len() != n || self.working.chunks(PAGE).zip(sizes).any(|(c, s)| c.len() != *s) {
            return;
        }
        self.known_pages = self
            .working
            .chunks(PAGE)
            .zip(pages)
            .zip(as_read.chunks(PAGE))
            .map(|((entries, text), read)| read.iter().all(|r| *r).then(|| KnownPage::new(entries, Rc::from(text.as_str()))))
            .collect();
    }

    /// [`State::to_json_cut`] cut into the pages a save writes (see
    /// [`super::AutoContextMemory::to_json_pages`]); the working list's pages are kept for the
    /// next save.
    pub fn save_pages(&mut self, config: &Config) -> Vec<String> {
        let (text, cuts) = self.to_json_cut(config);
        let out = pages::cut(&text, &cuts);
        let mut old = std::mem::take(&mut self.known_pages).into_iter();
        let unparsed = self.deferred.as_ref().map_or(0, |d| d.pages.len());
        self.known_pages = self
            .working
            .chunks(PAGE)
            .zip(&out[2 + unparsed..])
            .map(|(entries, text)| match old.next().flatten() {
                Some(k) if k.items_of(entries).is_some() => Some(k),
                _ => Some(KnownPage::new(entries, Rc::from(text.as_str()))),
            })
            .collect();
        let [working, offloads, _] = [&cuts[0], &cuts[1], &cuts[2]].map(|c| c.pages.len());
        let (offload_texts, event_texts) = out[2 + working..].split_at(offloads);
        self.known_offloads.saved(&self.offloads, offload_texts);
        self.known_events.saved(&self.events, event_texts);
        out
    }
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidState, message)
}

/// The check of a mark as read, against the offload index: whether it names an offload of this
/// session (an error if not), and whether it is upgraded. States from before copies were
/// marked: a message a shrinking step rewrote in place, whose offload holds one message, is a
/// copy of that message.
fn mark_check<'a>(offloads: &'a [OffloadRecord], offload_ids: &'a HashSet<String>) -> impl Fn(usize, &Synthetic) -> Result<bool> + 'a {
    let single: HashSet<&str> = offloads.iter().filter(|o| o.message_count == 1).map(|o| o.uuid.as_str()).collect();
    move |i: usize, s: &Synthetic| -> Result<bool> {
        let Some(u) = &s.offload else { return Ok(false) };
        if !offload_ids.contains(u) {
            return Err(bad(format!("state.working[{i}] names offload {u}, which this session did not create")));
        }
        Ok(!s.copy && s.in_place && COPY_KINDS.contains(&s.kind.as_str()) && single.contains(u.as_str()))
    }
}

/// Working item `i` of a state (`{message, tokens, synthetic, pinned}`): its message read by
/// `parse`, its mark checked (and upgraded) by `check_mark`, its pin, its count when the state's
/// counts are this build's (`counted`), and whether it was read as written (its count read, its
/// mark not upgraded).
fn read_item(
    i: usize,
    item: Value,
    parse: &dyn Fn(usize, Value) -> Result<Message>,
    check_mark: &dyn Fn(usize, &Synthetic) -> Result<bool>,
    counted: bool,
) -> Result<(Message, bool, Option<u32>, bool)> {
    let Value::Object(mut item) = item else { return Err(bad(format!("state.working[{i}] has no message"))) };
    let wire = item.remove("message").ok_or_else(|| bad(format!("state.working[{i}] has no message")))?;
    let mut m = parse(i, wire).map_err(|e| bad(format!("state.working: {}", e.message())))?;
    let mut upgraded = false;
    if let Some(s) = item.remove("synthetic") {
        let mut s: Synthetic = fields::record_at(&s, &|| format!("state.working[{i}].synthetic")).map_err(bad)?;
        if check_mark(i, &s)? {
            s.copy = true;
            upgraded = true;
        }
        m.synthetic = Some(s);
    }
    let pinned = match item.get("pinned") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad(format!("state.working[{i}].pinned must be true or false"))),
    };
    let tokens = match item.get("tokens") {
        Some(t) if counted => Some(
            t.as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| bad(format!("state.working[{i}].tokens must be a whole number of tokens")))?,
        ),
        _ => None,
    };
    Ok((m, pinned, tokens, tokens.is_some() && !upgraded))
}

/// Real user messages of a list of entries.
pub(crate) fn count_turns(work: &[Entry]) -> usize {
    work.iter().filter(|e| e.msg.is_real_user()).count()
}

/// The events of a state's `events` field, the most recent kept.
fn events_of(value: Option<&Value>) -> Result<Vec<CompressionEvent>> {
    let mut events = fields::list::<CompressionEvent>(value, "state.events").map_err(bad)?;
    keep_recent(&mut events);
    Ok(events)
}

/// Drops all but the [`MAX_EVENTS`] most recent events.
fn keep_recent(events: &mut Vec<CompressionEvent>) {
    let over = events.len().saturating_sub(MAX_EVENTS);
    events.drain(..over);
}

/// The tool call ids of a list of entries.
fn call_ids_of(work: &[Entry]) -> HashSet<String> {
    // Made at about its size: a restore makes it for every working message.
    let mut ids = HashSet::with_capacity(work.len());
    ids.extend(work.iter().flat_map(|e| e.msg.call_ids()).map(str::to_string));
    ids
}

/// Tokens of a list of entries.
pub(crate) fn sum_tokens(work: &[Entry]) -> u64 {
    work.iter().map(|e| e.tokens as u64).sum()
}

/// Tokens of a request whose messages count `messages`: the request overhead and
/// `reservedTokens` added.
pub(crate) fn request_tokens(messages: u64, config: &Config) -> u64 {
    messages + REQUEST_OVERHEAD + config.reserved_tokens
}

/// A call of the exchange still open: its id, whether a result answered it, and the message
/// that made it (which names it in an error, in the format's words).
struct OpenCall<'a> {
    id: String,
    answered: bool,
    from: &'a Message,
}

/// The calls of the exchange still open at the end of `working`, and which are answered. The
/// exchange opens with the last message before the trailing results, together with the messages
/// of the same response before it (the items of one Responses API response).
fn open_exchange(format: Format, working: &[Entry]) -> Option<Vec<OpenCall<'_>>> {
    let mut answered: Vec<&str> = Vec::new();
    let mut end = working.len();
    while end > 0 {
        let m = &working[end - 1].msg;
        if !m.has_results() && m.role != Role::Tool {
            break;
        }
        answered.extend(m.result_ids());
        end -= 1;
    }
    let mut start = end.checked_sub(1)?;
    while start > 0 && format.continues_turn(&working[start - 1].msg, &working[start].msg) {
        start -= 1;
    }
    let calls: Vec<OpenCall<'_>> = working[start..end]
        .iter()
        .flat_map(|e| e.msg.call_ids().map(|id| OpenCall { id: id.to_string(), answered: answered.contains(&id), from: &e.msg }))
        .collect();
    (!calls.is_empty()).then_some(calls)
}

/// Checks that message `m` (at `index`) keeps tool pairing after the exchange `open`, and
/// updates it. `continues` says `m` is part of the response before it (its calls join that
/// exchange). An error says what is wrong in the format's words ([`Format::words`]), naming
/// each call as the format does ([`Format::call_label`]).
fn check_pairing<'a>(
    format: Format,
    index: usize,
    m: &'a Message,
    continues: bool,
    open: &mut Option<Vec<OpenCall<'a>>>,
    seen: &HashSet<String>,
    new_calls: &mut HashSet<&'a str>,
) -> Result<()> {
    let w = format.words();
    // A tool message without results (an AI SDK approval response) neither answers nor
    // closes anything.
    if m.has_results() || m.role == Role::Tool {
        for id in m.result_ids() {
            let fault = |what: String| Error::message_at(index, &format.id_field(m, id, true), what);
            let label = || format.call_label(m, id, true);
            let Some(calls) = open.as_mut() else {
                return Err(fault(format!("answers {} {}, but no {} before it made that call", w.call, label(), w.model)));
            };
            match calls.iter_mut().find(|c| c.id == id) {
                Some(c) if c.answered => return Err(fault(format!("answers {} {} a second time", w.call, label()))),
                Some(c) => c.answered = true,
                None => return Err(fault(format!("answers {} {}, which the open {} did not make", w.call, label(), w.model))),
            }
        }
        return Ok(());
    }
    if !continues {
        if let Some(calls) = open.as_ref() {
            let missing: Vec<String> = calls.iter().filter(|c| !c.answered).map(|c| format.call_label(c.from, &c.id, false)).collect();
            if !missing.is_empty() {
                return Err(Error::message_at(
                    index,
                    "",
                    format!(
                        "the conversation moves on while {}(s) [{}] still wait for their {}; add the {} first",
                        w.call,
                        missing.join(", "),
                        w.results,
                        w.results
                    ),
                ));
            }
        }
        *open = None;
    }
    for id in m.call_ids() {
        if seen.contains(id) || !new_calls.insert(id) {
            return Err(Error::message_at(index, &format.id_field(m, id, false), format!("reuses {} id {id:?}", w.call)));
        }
        open.get_or_insert_with(Vec::new).push(OpenCall { id: id.to_string(), answered: false, from: m });
    }
    Ok(())
}
