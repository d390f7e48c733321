//! The log of everything added: append-only, exact, and kept in the host's store, so the engine's
//! memory and its state are sized by the working list, not by the history.
//!
//! Added messages wait in the log's tail (in memory, and in `toJSON()`'s state) until a flush
//! writes them to the store as one chunk under `<sessionId>/log-<first>-<digest>`: a JSON object
//! holding the index of its first message, the key of the chunk before it, and the messages
//! exactly as added. The state keeps only the newest chunk's key, the count and the tail, and
//! reading the log back follows the chain from the newest chunk to the first.
//!
//! Chunks are never rewritten or deleted, and a chunk's key names its content (the digest of its
//! text, which covers the key of the chunk before it). So every state ever saved can still read
//! its whole log, and two writers on one session (two tabs that restored the same state) write
//! different keys instead of overwriting each other's chunks: the loser of a save (`CONFLICT`)
//! leaves chunks no state names, and nothing the winner wrote is touched.
//!
//! A flush never writes the newest message while the working list holds it as added: it stays
//! in the tail, so the last add can still be taken back (the OpenAI Agents SDK's `popItem`)
//! without rewriting a chunk. Once a pass replaced it (a fresh tool result truncated, most
//! often, and often the largest message of the conversation), it cannot be taken back, and
//! the flush writes it too: kept, it made every state saved until the next add carry it whole.
//!
//! Each chunk's text names the memory that wrote it (`writer`, random per memory, never saved in
//! the state), so two memories restored from one state never write the same key even when they
//! add the same messages. That is what lets `sweep()` delete a chunk no saved state reaches: a
//! chunk a killed or refused writer left can never be a live writer's chunk of the same key.

use std::rc::Rc;

use futures_util::FutureExt;
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::fields::{Fault, Fields, Record};
use crate::host::OffloadStore;

use super::texts::Texts;

/// A flush that is not forced waits for this many messages in the tail...
pub(crate) const FLUSH_MESSAGES: usize = 64;
/// ...or for this many tokens.
pub(crate) const FLUSH_TOKENS: u64 = 32_768;
/// The most messages one chunk holds (a long tail, as a version-1 state migrates, is written in
/// several chunks).
const CHUNK_MESSAGES: usize = 256;

/// A chunk's text: `{"autocontextLog":1,"first":…,"prev":…,"writer":…,"messages":[…]}`, written
/// from the messages in place (no copy of them into a JSON tree first); a message whose text
/// the pass before wrote into an offload is copied from there ([`Texts`]).
fn chunk_text<'v>(
    first: u64,
    prev: Option<&str>,
    writer: &str,
    messages: impl IntoIterator<Item = &'v Rc<Value>>,
    texts: &Texts,
    size: usize,
) -> String {
    use crate::json::write_str;
    let mut out = String::with_capacity(size + 256);
    out.push_str(&format!(r#"{{"autocontextLog":1,"first":{first},"prev":"#));
    match prev {
        Some(p) => write_str(&mut out, p),
        None => out.push_str("null"),
    }
    out.push_str(r#","writer":"#);
    write_str(&mut out, writer);
    out.push_str(r#","messages":["#);
    crate::json::write_items(&mut out, messages, |out, v| super::texts::write(out, texts, v));
    out.push_str("]}");
    out
}

/// Which chain of chunks a [`Log`] is: the messages added, or the offload records retired from
/// the state's offload index (see [`super::state`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chain {
    /// Everything added, as added: keys `<sessionId>/log-<first>-<digest>`.
    #[default]
    Messages,
    /// Offload records no working message names any more: keys `<sessionId>/index-<first>-<digest>`.
    Index,
}

impl Chain {
    /// The word in its chunks' keys.
    fn name(self) -> &'static str {
        match self {
            Chain::Messages => "log",
            Chain::Index => "index",
        }
    }

    /// Its field in the state.
    pub fn field(self) -> &'static str {
        match self {
            Chain::Messages => "log",
            Chain::Index => "retired",
        }
    }
}

/// The log: how many messages were added, the newest chunk in the store, and the tail.
#[derive(Debug, Clone)]
pub(crate) struct Log {
    /// Which chain it is.
    chain: Chain,
    /// The writer named in the chunks this memory writes: random, never in the state.
    writer: Rc<str>,
    /// Messages added in all.
    len: u64,
    /// The key of the newest chunk in the store; `None` before the first flush.
    head: Option<String>,
    /// Messages added since the newest chunk, as added (the newest one is always here), with
    /// their tokens.
    tail: Vec<(Rc<Value>, u64)>,
    /// Tokens of the tail, as counted when added.
    tail_tokens: u64,
    /// Messages taken back ([`Log::pop`]): a flush planned before one does not apply.
    pops: u64,
}

impl Default for Log {
    fn default() -> Self {
        Log { chain: Chain::default(), writer: writer_name(), len: 0, head: None, tail: Vec::new(), tail_tokens: 0, pops: 0 }
    }
}

/// A random name for the chunks of one memory: 12 hex digits.
fn writer_name() -> Rc<str> {
    crate::random::uuid_v4().simple().to_string()[..12].into()
}

/// One chunk as the store holds it.
struct Chunk {
    /// `autocontextLog`: the chunk format's version.
    version: u64,
    first: u64,
    prev: Option<String>,
    messages: Vec<Value>,
}

/// A chunk's fields but its messages, which [`Chunk::parse`] moves out of the parsed value.
impl Record for Chunk {
    const FIELDS: &'static [&'static str] = &["autocontextLog", "first", "prev"];
    fn read(f: &Fields) -> std::result::Result<Chunk, Fault> {
        Ok(Chunk { version: f.u64("autocontextLog")?, first: f.u64("first")?, prev: f.opt_str("prev")?, messages: Vec::new() })
    }
}

impl Chunk {
    /// Reads a chunk from its text.
    fn parse(text: &str) -> std::result::Result<Chunk, Fault> {
        let mut v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut chunk: Chunk = crate::fields::record(&v, "")?;
        chunk.messages = match v.get_mut("messages").map(Value::take) {
            Some(Value::Array(m)) => m,
            _ => return Err("messages must be an array".into()),
        };
        Ok(chunk)
    }
}

/// A chunk to write: its key, text, and how many tail messages it takes.
struct Write {
    key: String,
    text: String,
    count: usize,
    tokens: u64,
}

impl Log {
    /// An empty log of `chain`.
    pub fn new(chain: Chain) -> Log {
        Log { chain, ..Log::default() }
    }

    /// Messages added in all.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The key of the newest chunk.
    pub fn head(&self) -> Option<&str> {
        self.head.as_deref()
    }

    /// The tail, as added.
    pub fn tail(&self) -> impl Iterator<Item = &Value> {
        self.tail.iter().map(|(v, _)| &**v)
    }

    /// Appends a message as added, with its token count.
    pub fn push(&mut self, value: Rc<Value>, tokens: u64) {
        self.len += 1;
        self.tail_tokens += tokens;
        self.tail.push((value, tokens));
    }

    /// Removes the newest message (always in the tail); `None` when nothing was added.
    pub fn pop(&mut self) -> Option<Rc<Value>> {
        let (v, tokens) = self.tail.pop()?;
        self.len -= 1;
        self.tail_tokens -= tokens;
        self.pops += 1;
        Some(v)
    }

    /// The newest message added.
    pub fn last(&self) -> Option<&Value> {
        self.tail.last().map(|(v, _)| &**v)
    }

    /// Whether a flush that is not forced would write now.
    pub fn wants_flush(&self) -> bool {
        self.tail.len() > FLUSH_MESSAGES || self.tail_tokens >= FLUSH_TOKENS && self.tail.len() > 1
    }

    /// The chunks that would write all of the tail, but its newest message if `keep_newest`, in
    /// order.
    fn writes(&self, session_id: &str, texts: &Texts, keep_newest: bool) -> Vec<Write> {
        let n = self.tail.len().saturating_sub(usize::from(keep_newest));
        let mut out: Vec<Write> = Vec::new();
        let mut first = self.len - self.tail.len() as u64;
        let mut prev = self.head.clone();
        for part in self.tail[..n].chunks(CHUNK_MESSAGES) {
            // About four bytes a token, and room for each message's fields.
            let size = part.iter().map(|(_, t)| *t as usize * 9 / 2 + 128).sum();
            let text = chunk_text(first, prev.as_deref(), &self.writer, part.iter().map(|(v, _)| v), texts, size);
            let key = format!("{session_id}/{}-{first}-{}", self.chain.name(), crate::engine::offload::digest(&text));
            let tokens = part.iter().map(|(_, t)| t).sum();
            out.push(Write { key: key.clone(), text, count: part.len(), tokens });
            first += part.len() as u64;
            prev = Some(key);
        }
        out
    }

    /// The state's `log` field (or `retired`), as JSON text appended to `out`: the count of
    /// items, the newest chunk's key, the tail, and for the messages the tail's counts (which a
    /// restore reads instead of counting: see the state's `counts`). Written straight from the
    /// tail, which a state saved on every turn would otherwise copy into a tree first.
    pub fn write_json(&self, out: &mut String) {
        out.push_str("{\"messages\":");
        out.push_str(&self.len.to_string());
        out.push_str(",\"head\":");
        match &self.head {
            Some(k) => crate::json::write_str(out, k),
            None => out.push_str("null"),
        }
        out.push_str(",\"tail\":");
        crate::json::write_array(out, self.tail.iter().map(|(v, _)| &**v));
        if self.chain == Chain::Messages {
            out.push_str(",\"tokens\":[");
            for (i, (_, t)) in self.tail.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&t.to_string());
            }
            out.push(']');
        }
        out.push('}');
    }

    /// A log read from a state's `log` field: `tail` must be the messages it names, already
    /// parsed by the caller, with their tokens.
    pub fn restore(chain: Chain, value: &Value, session_id: &str, tail: Vec<(Rc<Value>, u64)>) -> std::result::Result<Log, String> {
        let len = value.get("messages").and_then(Value::as_u64).ok_or(format!("{}.messages must be a whole number", chain.field()))?;
        let head = match value.get("head") {
            None | Some(Value::Null) => None,
            Some(Value::String(k)) if is_chunk_key(session_id, chain, k) => Some(k.clone()),
            Some(other) => {
                return Err(format!("{}.head {other} is not a {} chunk key of session {session_id:?}", chain.field(), chain.name()))
            }
        };
        if (tail.len() as u64) > len || head.is_none() && tail.len() as u64 != len {
            return Err(format!("{}.messages ({len}) does not match the chunks and the tail ({} items)", chain.field(), tail.len()));
        }
        Ok(Log { chain, len, head, tail_tokens: tail.iter().map(|(_, t)| t).sum(), tail, ..Log::default() })
    }

    /// A log of a version-1 state, whose `original` array held everything: all of it is the
    /// tail, written to the store by the first flush.
    pub fn from_originals(values: Vec<(Rc<Value>, u64)>) -> Log {
        let mut log = Log::default();
        for (v, t) in values {
            log.push(v, t);
        }
        log
    }
}

/// Whether `key` has the shape of a key of a chunk of `chain` of `session_id`.
fn is_chunk_key(session_id: &str, chain: Chain, key: &str) -> bool {
    let Some(rest) = key
        .strip_prefix(session_id)
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|r| r.strip_prefix(chain.name()))
        .and_then(|r| r.strip_prefix('-'))
    else {
        return false;
    };
    let Some((first, digest)) = rest.split_once('-') else {
        return false;
    };
    !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()) && crate::engine::offload::is_digest(digest)
}

/// The first index a chunk key names.
fn first_of(key: &str) -> Option<u64> {
    let (_, name_first_digest) = key.rsplit_once('/')?;
    let mut parts = name_first_digest.split('-');
    parts.next()?;
    parts.next()?.parse().ok()
}

/// The chunks a flush writes, in order, and what the log was when they were made.
pub(crate) struct Flush {
    writes: Vec<Write>,
    head: Option<String>,
    pops: u64,
    keep_newest: bool,
}

impl Flush {
    /// How many chunks it writes.
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// The key and text of chunk `k`, in the order to write them.
    pub fn chunk(&self, k: usize) -> (&str, &str) {
        (&self.writes[k].key, &self.writes[k].text)
    }
}

impl Log {
    /// The chunks that write the tail to the store (all but its newest message if
    /// `keep_newest`, the message the last add can still take back; when not `force`, only once
    /// [`Log::wants_flush`]); `None` when there is nothing to write.
    pub fn plan_flush(&self, session_id: &str, force: bool, texts: &Texts, keep_newest: bool) -> Option<Flush> {
        if !force && !self.wants_flush() || self.tail.len() <= usize::from(keep_newest) {
            return None;
        }
        Some(Flush { writes: self.writes(session_id, texts, keep_newest), head: self.head.clone(), pops: self.pops, keep_newest })
    }

    /// Records that chunk `k` of `flush` is in the store: drops its messages from the tail and
    /// returns how many. `None` when the log moved since the flush was planned (another flush or
    /// a pop came first); the chunk then stays unnamed and the tail as it is.
    pub fn flushed(&mut self, flush: &mut Flush, k: usize) -> Option<usize> {
        let w = &flush.writes[k];
        if self.head != flush.head || self.pops != flush.pops || self.tail.len() < w.count + usize::from(flush.keep_newest) {
            return None;
        }
        self.tail.drain(..w.count);
        self.tail_tokens -= w.tokens;
        self.head = Some(w.key.clone());
        flush.head = self.head.clone();
        Some(w.count)
    }
}

/// One page of the log read back: the messages of the chunk under `key`, checked (its key names
/// its content, it continues the chain), and the key of the chunk before it.
pub(crate) async fn read_chunk<O: OffloadStore>(
    store: &O,
    session_id: &str,
    chain: Chain,
    key: &str,
) -> Result<(Vec<Value>, Option<String>)> {
    check_key(session_id, chain, key)?;
    let text = store
        .get(key)
        .await
        .map_err(|e| Error::host(ErrorCode::StoreFailed, &format!("the offload store failed to get log chunk {key}"), e))?;
    parse_chunk(session_id, chain, key, text)
}

/// `INVALID_ARGUMENT` unless `key` is a chunk key of `chain` of `session_id`.
fn check_key(session_id: &str, chain: Chain, key: &str) -> Result<()> {
    if !is_chunk_key(session_id, chain, key) {
        return Err(
            Error::new(ErrorCode::InvalidArgument, format!("{key:?} is not a log chunk key of session {session_id:?}")).at_field("key")
        );
    }
    Ok(())
}

/// The chunk under `key` from the store's `text` for it, checked as [`read_chunk`] does.
fn parse_chunk(session_id: &str, chain: Chain, key: &str, text: Option<String>) -> Result<(Vec<Value>, Option<String>)> {
    let failed = |what: String| Error::new(ErrorCode::StoreFailed, format!("log chunk {key}: {what}; the log before it cannot be read"));
    let text = text.ok_or_else(|| failed("the store has no such key".into()))?;
    if !key.ends_with(&crate::engine::offload::digest(&text)) {
        return Err(failed("the store's value is not the chunk written under this key".into()));
    }
    let chunk = Chunk::parse(&text).map_err(|e| failed(format!("not a log chunk ({e})")))?;
    if chunk.version != 1 || Some(chunk.first) != first_of(key) {
        return Err(failed("not a log chunk of this version".into()));
    }
    if let Some(p) = &chunk.prev {
        if !is_chunk_key(session_id, chain, p) || first_of(p).is_none_or(|f| f >= chunk.first) {
            return Err(failed(format!("names {p:?} as the chunk before it")));
        }
    } else if chunk.first != 0 {
        return Err(failed("names no chunk before it, but does not start the log".into()));
    }
    Ok((chunk.messages, chunk.prev))
}

/// How many chunks [`walk`] reads at once.
const READ_AHEAD: usize = 16;

/// Every chunk of `chain` from `head` back to the first, newest first: calls `visit` with each
/// key and its items. `known` are keys the store holds (a listing, possibly with other chunks
/// and other keys): a chain's chunks are ordered by the first index their keys name, so the
/// walk reads the next [`READ_AHEAD`] of them at once instead of one get after another, and
/// holds at most that many. A chunk `known` does not hold is read alone.
///
/// # Errors
/// `STORE_FAILED` when the store fails or a chunk is missing or changed.
pub(crate) async fn walk<O: OffloadStore>(
    store: &O,
    session_id: &str,
    chain: Chain,
    head: Option<String>,
    known: &[String],
    mut visit: impl FnMut(&str, Vec<Value>),
) -> Result<()> {
    let mut order: Vec<(u64, &str)> =
        known.iter().filter(|k| is_chunk_key(session_id, chain, k)).filter_map(|k| Some((first_of(k)?, k.as_str()))).collect();
    order.sort_unstable_by(|a, b| b.cmp(a));
    let mut read: std::collections::HashMap<String, Option<String>> = std::collections::HashMap::new();
    let mut at = head;
    while let Some(key) = at {
        check_key(session_id, chain, &key)?;
        if !read.contains_key(&key) {
            let first = first_of(&key).unwrap_or(0);
            // The chunks from this one's index down: this one, and those the walk reaches next.
            let from = order.partition_point(|(f, _)| *f > first);
            let mut batch: Vec<&str> = order[from..].iter().take(READ_AHEAD).map(|(_, k)| *k).collect();
            if !batch.contains(&key.as_str()) {
                batch.insert(0, &key);
            }
            read.retain(|k, _| first_of(k).is_some_and(|f| f < first));
            // Boxed store calls: join_all is compiled once per result type, not once per call site.
            let texts = futures_util::future::join_all(batch.iter().map(|k| store.get(k).boxed_local())).await;
            for (k, text) in batch.into_iter().zip(texts) {
                let text =
                    text.map_err(|e| Error::host(ErrorCode::StoreFailed, &format!("the offload store failed to get log chunk {k}"), e))?;
                read.insert(k.to_string(), text);
            }
        }
        let text = read.remove(&key).flatten();
        let (items, prev) = parse_chunk(session_id, chain, &key, text)?;
        visit(&key, items);
        at = prev;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_chunk_reads_as_the_object_it_names() {
        let messages = [json!({"role": "user", "content": "a \"quoted\"\nline"}), json!({"role": "assistant", "content": null})];
        let shared: Vec<Rc<Value>> = messages.iter().cloned().map(Rc::new).collect();
        // The second message's text as a pass's payload holds it.
        let mut kept = Texts::default();
        let body = format!("[{}]", messages[1]);
        kept.keep(body.clone(), [Rc::clone(&shared[1])], std::iter::once(1..body.len() - 1));
        for prev in [None, Some("s/log-0-0123456789abcdef")] {
            let want = json!({"autocontextLog": 1, "first": 7, "prev": prev, "writer": "w1", "messages": messages});
            for texts in [&Texts::default(), &kept] {
                assert_eq!(chunk_text(7, prev, "w1", &shared, texts, 0), want.to_string());
            }
        }
    }
}
