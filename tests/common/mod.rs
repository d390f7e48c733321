//! Helpers shared by the native integration tests: fake summarizers and stores, builders of
//! OpenAI-format conversations, `block_on`, and the recoverability checker.
//!
//! Each test file includes this module with `mod common;` and uses only part of it.
#![allow(dead_code)]

mod convert;
mod corpus;
mod rng;
#[allow(unused_imports)] // not every test converts, reads the corpus or draws random inputs
pub use {
    convert::{anthropic_to_openai, convert, starts_response, to_ai_sdk, to_anthropic, to_gemini, to_responses},
    corpus::{corpus_dir, groups, skip_without_corpus, traces},
    rng::Rng,
};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use autocontext::message::find_markers;
use autocontext::strategy::{Strategy, DEFAULT_LADDER};
use autocontext::{AutoContextMemory, Config, Format, HostError, MemoryStore, OffloadStore, SummarizeRequest, Summarizer, Summary};
use serde_json::{json, Value};

/// Runs a future to completion on the current thread.
pub fn block_on<F: Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

// ---------------------------------------------------------------------------------------------
// Summarizers
// ---------------------------------------------------------------------------------------------

/// The payload a [`FakeSummarizer`] in failing mode puts in its `HostError`, so a test can
/// check that the very same value comes back as the error's cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummarizerBoom {
    pub tag: String,
}

/// What a [`FakeSummarizer`] does when called.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Returns this text, with usage (input = prompt chars / 4, output = text chars / 4).
    Fixed(String),
    /// Returns a short deterministic digest of the prompt (its length and first characters).
    Digest,
    /// Fails with a `HostError` carrying a `SummarizerBoom { tag }` payload.
    Fail(String),
    /// Returns only whitespace.
    Empty,
}

/// A summarizer for tests: counts its calls, keeps every request, and can measure how many
/// calls were in flight at the same time (with `rendezvous`, each call waits — by yielding to
/// the executor, never blocking — until that many calls have started, or gives up after a few
/// thousand polls so a sequential engine cannot hang the test).
#[derive(Clone)]
pub struct FakeSummarizer {
    pub mode: Mode,
    pub calls: Rc<Cell<usize>>,
    pub requests: Rc<RefCell<Vec<SummarizeRequest>>>,
    pub in_flight: Rc<Cell<usize>>,
    pub max_in_flight: Rc<Cell<usize>>,
    pub rendezvous: Option<usize>,
}

impl FakeSummarizer {
    pub fn new(mode: Mode) -> Self {
        FakeSummarizer {
            mode,
            calls: Rc::default(),
            requests: Rc::default(),
            in_flight: Rc::default(),
            max_in_flight: Rc::default(),
            rendezvous: None,
        }
    }
    pub fn fixed(text: &str) -> Self {
        Self::new(Mode::Fixed(text.to_string()))
    }
    pub fn digest() -> Self {
        Self::new(Mode::Digest)
    }
    pub fn failing(tag: &str) -> Self {
        Self::new(Mode::Fail(tag.to_string()))
    }
    pub fn empty() -> Self {
        Self::new(Mode::Empty)
    }
    pub fn with_rendezvous(mut self, n: usize) -> Self {
        self.rendezvous = Some(n);
        self
    }
    pub fn calls(&self) -> usize {
        self.calls.get()
    }
}

/// Resolves once `started` reaches `n` (or after a bounded number of polls).
struct Rendezvous {
    started: Rc<Cell<usize>>,
    n: usize,
    polls: usize,
}

impl Future for Rendezvous {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.started.get() >= self.n || self.polls > 5_000 {
            return Poll::Ready(());
        }
        self.polls += 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Summarizer for FakeSummarizer {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        self.calls.set(self.calls.get() + 1);
        self.requests.borrow_mut().push(request.clone());
        self.in_flight.set(self.in_flight.get() + 1);
        self.max_in_flight.set(self.max_in_flight.get().max(self.in_flight.get()));
        if let Some(n) = self.rendezvous {
            Rendezvous { started: self.calls.clone(), n, polls: 0 }.await;
        }
        self.in_flight.set(self.in_flight.get() - 1);
        let input = (request.prompt.chars().count() / 4) as u64;
        match &self.mode {
            Mode::Fixed(t) => {
                Ok(Summary { text: t.clone(), input_tokens: Some(input), output_tokens: Some((t.chars().count() / 4) as u64 + 1) })
            }
            Mode::Digest => {
                let head: String = request.prompt.chars().take(160).collect();
                let text = format!("[{} summary of {} chars] {}", request.kind, request.prompt.len(), head);
                let out = (text.chars().count() / 4) as u64;
                Ok(Summary { text, input_tokens: Some(input), output_tokens: Some(out) })
            }
            Mode::Fail(tag) => {
                Err(HostError::with_payload(format!("summarizer exploded ({tag})"), Box::new(SummarizerBoom { tag: tag.clone() })))
            }
            Mode::Empty => Ok(Summary { text: "   \n ".into(), input_tokens: None, output_tokens: None }),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Stores
// ---------------------------------------------------------------------------------------------

/// The payload a [`FlakyStore`] puts in its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreBoom {
    pub op: &'static str,
    pub key: String,
}

/// A `MemoryStore` that counts its calls and fails on demand: `fail_put_at(n)` makes the n-th
/// put from now on (1-based, counted from the call) fail, `fail_puts()` fails every put,
/// `fail_gets()` every get, `fail_deletes()` every delete. Clones share everything.
#[derive(Clone, Default)]
pub struct FlakyStore {
    pub inner: MemoryStore,
    pub puts: Rc<Cell<usize>>,
    pub gets: Rc<Cell<usize>>,
    pub deletes: Rc<Cell<usize>>,
    fail_put_number: Rc<Cell<Option<usize>>>,
    fail_all_puts: Rc<Cell<bool>>,
    fail_all_gets: Rc<Cell<bool>>,
    fail_all_deletes: Rc<Cell<bool>>,
}

impl FlakyStore {
    pub fn new() -> Self {
        Self::default()
    }
    /// Makes the `n`-th put after this call fail (1 = the next one).
    pub fn fail_put_at(&self, n: usize) {
        self.fail_put_number.set(Some(self.puts.get() + n));
    }
    pub fn fail_puts(&self, on: bool) {
        self.fail_all_puts.set(on);
    }
    pub fn fail_gets(&self, on: bool) {
        self.fail_all_gets.set(on);
    }
    pub fn fail_deletes(&self, on: bool) {
        self.fail_all_deletes.set(on);
    }
    pub fn keys(&self) -> Vec<String> {
        self.inner.keys()
    }
    /// The keys of offloads (not of the log's chunks).
    pub fn offload_keys(&self) -> Vec<String> {
        offload_keys(self.inner.keys())
    }
}

/// The keys of offloads among store keys (the log's chunks left out).
pub fn offload_keys(keys: Vec<String>) -> Vec<String> {
    keys.into_iter().filter(|k| !k.contains("/log-")).collect()
}

impl OffloadStore for FlakyStore {
    async fn get(&self, key: &str) -> Result<Option<String>, HostError> {
        self.gets.set(self.gets.get() + 1);
        if self.fail_all_gets.get() {
            return Err(HostError::with_payload("get failed", Box::new(StoreBoom { op: "get", key: key.into() })));
        }
        self.inner.get(key).await
    }
    async fn put(&self, key: &str, value: &str) -> Result<(), HostError> {
        self.puts.set(self.puts.get() + 1);
        if self.fail_all_puts.get() || self.fail_put_number.get() == Some(self.puts.get()) {
            return Err(HostError::with_payload("put failed", Box::new(StoreBoom { op: "put", key: key.into() })));
        }
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), HostError> {
        self.deletes.set(self.deletes.get() + 1);
        if self.fail_all_deletes.get() {
            return Err(HostError::with_payload("delete failed", Box::new(StoreBoom { op: "delete", key: key.into() })));
        }
        self.inner.delete(key).await
    }
}

// ---------------------------------------------------------------------------------------------
// Conversation builders (OpenAI chat-completions shape)
// ---------------------------------------------------------------------------------------------

pub fn system(text: &str) -> Value {
    json!({"role": "system", "content": text})
}

pub fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// A final answer of the model.
pub fn answer(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// One tool call object with id `id`.
pub fn call(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": format!("{{\"path\":\"/src/{id}.rs\"}}")}})
}

/// An assistant message calling one tool per id (parallel calls when several).
pub fn assistant_calls(ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids.iter().map(|id| call(id, "read_file")).collect();
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

/// A tool result for `id` with exactly `chars` characters of readable, varied text.
pub fn tool_result(id: &str, chars: usize) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": filler(id, chars)})
}

/// `chars` characters of text that tokenizes like prose and differs per seed.
pub fn filler(seed: &str, chars: usize) -> String {
    const WORDS: [&str; 16] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima", "mike", "november",
        "oscar", "papa",
    ];
    let mut s = String::with_capacity(chars + 16);
    let mut k = seed.bytes().fold(7usize, |a, b| a.wrapping_mul(31).wrapping_add(b as usize));
    let mut line = 0;
    while s.len() < chars {
        k = k.wrapping_mul(1103515245).wrapping_add(12345);
        s.push_str(WORDS[(k >> 8) % WORDS.len()]);
        line += 1;
        if line % 12 == 0 {
            s.push_str(&format!(" {}\n", (k >> 4) % 1000));
        } else {
            s.push(' ');
        }
    }
    s.truncate(chars);
    s
}

/// One complete tool round: user question, an assistant with `n_calls` parallel calls, their
/// results of `result_chars` each, and a final answer. Call ids are `<tag>-c<k>`.
pub fn tool_round(tag: &str, n_calls: usize, result_chars: usize) -> Vec<Value> {
    let ids: Vec<String> = (0..n_calls).map(|k| format!("{tag}-c{k}")).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut out = vec![user(&format!("question {tag}")), assistant_calls(&refs)];
    for id in &ids {
        out.push(tool_result(id, result_chars));
    }
    out.push(answer(&format!("answer to {tag}")));
    out
}

/// A config with a fixed session id and the given window, in the reference's geometry: its
/// ladder (the default without the prefix summary and the stale-result stubs, which a pass
/// makes when they pay rather than when the window is full), a pass that stops at the trigger
/// (`targetRatio` = `tokenRatio`) and tool results truncated above 20,000 characters. The tests' windows are computed for a pass that
/// frees just enough, to reach one step at a time. The default policy (its ladder, low-water
/// mark, truncation limit and reserve) is what tests/replay.rs replays the corpora with and
/// tests/properties.rs generates sessions for; tests/engine.rs tests it.
pub fn config(session: &str, max_token: u64) -> Config {
    let d = Config::default();
    let reference = DEFAULT_LADDER.iter().copied().filter(|&s| s != Strategy::PrefixSummary && s != Strategy::ToolResultStub).collect();
    Config {
        session_id: session.to_string(),
        max_token,
        target_ratio: Some(d.token_ratio),
        tool_result_limit: 20_000,
        strategies: Some(reference),
        ..d
    }
}

/// Request tokens of a list of messages as the engine counts them (a throwaway memory with a
/// window far above it).
pub fn tokens_of(messages: &[Value]) -> u64 {
    let m = AutoContextMemory::new(config("measure", 1_000_000_000), FakeSummarizer::empty(), MemoryStore::new()).unwrap();
    m.add(&Value::Array(messages.to_vec())).unwrap();
    m.token_count()
}

/// Tokens one message costs, as the engine counts it (o200k_base plus per-message overhead).
pub fn message_tokens(v: &Value) -> u64 {
    let m = autocontext::Format::OpenAi.parse(0, v).unwrap();
    autocontext::TokenCounter::new(autocontext::Tokenizer::O200kBase).unwrap().count_message(&m).unwrap() as u64
}

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

/// Every offload marker in any string of `v`.
pub fn markers_in(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.extend(find_markers(s)),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// Whether two wire values are byte-exact equal: deep-equal and with every object's keys in the
/// same order (serde_json keeps insertion order, so this is what serializing them would show).
/// Comparing values rather than serialized strings keeps the checks fast in debug builds.
pub fn same_wire(a: &Value, b: &Value) -> bool {
    fn order(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().zip(y.iter()).all(|((ka, va), (kb, vb))| ka == kb && order(va, vb))
            }
            (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| order(p, q)),
            _ => true,
        }
    }
    a == b && order(a, b)
}

/// A cheap bucket key for wire messages (role, ids, content length and start).
fn fingerprint(v: &Value) -> String {
    let content = match v.get("content") {
        Some(Value::String(s)) => {
            let mut end = s.len().min(48);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!("s{}:{}", s.len(), &s[..end])
        }
        Some(Value::Array(a)) => format!("a{}", a.len()),
        other => format!("{other:?}"),
    };
    let calls = v.get("tool_calls").and_then(Value::as_array).map_or(0, Vec::len);
    format!("{}|{}|{}|{}", v["role"], v["tool_call_id"], calls, content)
}

/// What [`check_recoverable`] found.
#[derive(Debug, Default)]
pub struct Recovery {
    /// Originals found unchanged in the working list.
    pub in_working: usize,
    /// Originals recovered only through reloads.
    pub via_reload: usize,
    /// Distinct uuids reloaded (transitively).
    pub reloads: usize,
}

/// A multiset of wire values, bucketed by fingerprint.
#[derive(Default)]
struct Pool {
    buckets: HashMap<String, Vec<(Value, bool)>>,
}

impl Pool {
    fn insert(&mut self, v: Value) {
        self.buckets.entry(fingerprint(&v)).or_default().push((v, false));
    }
    /// Takes one unused value byte-exact equal to `v`.
    fn take(&mut self, v: &Value) -> bool {
        let Some(bucket) = self.buckets.get_mut(&fingerprint(v)) else {
            return false;
        };
        match bucket.iter_mut().find(|(x, used)| !*used && same_wire(x, v)) {
            Some(slot) => {
                slot.1 = true;
                true
            }
            None => false,
        }
    }
}

/// Guarantee 2: every original message is either in the working list unchanged or recoverable
/// byte-exact by one reload of a uuid named by a marker in the working list (markers inside
/// what a reload gives are not followed), counted with multiplicity. Panics with a precise description otherwise (`what` names the case).
pub fn check_recoverable<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>, what: &str) -> Recovery {
    let originals = block_on(memory.original_messages()).expect("the log reads back");
    let working = memory.messages();

    let mut queue: Vec<String> = working.iter().flat_map(markers_in).collect();
    let mut in_working = Pool::default();
    for w in working {
        in_working.insert(w);
    }
    let mut reloaded = Pool::default();
    let mut seen = std::collections::HashSet::new();
    while let Some(uuid) = queue.pop() {
        if !seen.insert(uuid.clone()) {
            continue;
        }
        let msgs = block_on(memory.reload(&uuid))
            .unwrap_or_else(|e| panic!("{what}: marker uuid {uuid} in the working list does not reload: {e:?}"));
        assert!(!msgs.is_empty(), "{what}: offload {uuid} is empty");
        // One hop: the markers inside what a reload gives are not followed.
        for m in msgs {
            reloaded.insert(m);
        }
    }

    let mut rec = Recovery { reloads: seen.len(), ..Default::default() };
    for (i, o) in originals.iter().enumerate() {
        if in_working.take(o) {
            rec.in_working += 1;
        } else if reloaded.take(o) {
            rec.via_reload += 1;
        } else {
            let shown: String = o.to_string().chars().take(300).collect();
            panic!("{what}: original message {i} is neither in the working list nor recoverable by reload: {shown}");
        }
    }
    rec
}

/// The host's instruction after a summarize request's `messages`: a user message of `format`.
pub fn instruction(format: autocontext::Format) -> Value {
    match format {
        autocontext::Format::Gemini => json!({"role": "user", "parts": [{"text": "Summarize the conversation above."}]}),
        _ => json!({"role": "user", "content": "Summarize the conversation above."}),
    }
}

/// Guarantee 1 for what the summarizer is asked: every request `s` received, with the host's
/// instruction appended, is a valid request body in `format`. Returns the requests' kinds.
pub fn assert_requests_valid(format: autocontext::Format, s: &FakeSummarizer, what: &str) -> Vec<String> {
    let mut kinds = Vec::new();
    for (k, q) in s.requests.borrow().iter().enumerate() {
        let mut body = q.messages.clone();
        body.push(instruction(format));
        let parsed: Vec<autocontext::Message> = body
            .iter()
            .enumerate()
            .map(|(i, v)| format.parse(i, v).unwrap_or_else(|e| panic!("{what}: request {k} ({}) message {i}: {e:?}", q.kind)))
            .collect();
        let problems = format.validate_request(&parsed);
        assert!(problems.is_empty(), "{what}: the {} request {k} is not a valid body: {problems:?}\n{}", q.kind, Value::Array(body));
        kinds.push(q.kind.clone());
    }
    kinds
}

/// Guarantee 1: the working list is valid for the provider.
pub fn assert_valid<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>, what: &str) {
    let problems = memory.validate();
    assert!(problems.is_empty(), "{what}: the working list is invalid: {problems:?}");
}

/// Guarantee 3 (list form): the working messages the engine did not write are, in order, a
/// subsequence of the originals, each deep-equal (byte-exact) to what was added.
pub fn assert_untouched_are_identical<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>, what: &str) {
    let originals = block_on(memory.original_messages()).expect("the log reads back");
    let working = memory.working();
    let mut j = 0;
    for (i, m) in working.iter().enumerate() {
        if m.synthetic.is_some() {
            continue;
        }
        while j < originals.len() && !same_wire(&originals[j], &m.wire) {
            j += 1;
        }
        assert!(j < originals.len(), "{what}: untouched working message {i} differs from every original after it: {}", *m.wire);
        j += 1;
    }
}

/// Whether `b` is a thinking block (Anthropic), a reasoning part (AI SDK), a reasoning item
/// (Responses) or a part that carries a thought or a thought signature (Gemini).
pub fn is_thinking(format: Format, b: &Value) -> bool {
    match format {
        Format::Anthropic => b["type"] == "thinking" || b["type"] == "redacted_thinking",
        Format::Gemini => b["thought"] == true || b.get("thoughtSignature").is_some(),
        _ => b["type"] == "reasoning",
    }
}

/// The content parts of a wire message (`content`, or Gemini's `parts`).
fn parts_of(m: &Value) -> Option<&Vec<Value>> {
    m["content"].as_array().or_else(|| m["parts"].as_array())
}

/// The thinking blocks (or reasoning parts, or Responses reasoning items, or Gemini's thought
/// and signed parts) of a list, as JSON text.
pub fn thinking_of(format: Format, messages: &[Value]) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for m in messages {
        if format == Format::OpenAiResponses && is_thinking(format, m) {
            out.insert(m.to_string());
        }
        if let Some(parts) = parts_of(m) {
            out.extend(parts.iter().filter(|b| is_thinking(format, b)).map(|b| b.to_string()));
        }
    }
    out
}

/// Every thinking block or reasoning part in `working` is byte-identical to one of the
/// originals' (`known`, from [`thinking_of`]; signatures intact), and none was reordered behind
/// other content; a Responses reasoning item is one of the originals (the validator checks that
/// the rest of its response follows it); a Gemini part with a thought signature is one of the
/// originals' (a rewritten part loses its signature), and thoughts come first.
pub fn assert_thinking_intact(format: Format, working: &[Value], known: &std::collections::HashSet<String>, what: &str) {
    let is_thinking = |b: &Value| is_thinking(format, b);
    for (i, w) in working.iter().enumerate() {
        if format == Format::OpenAiResponses && is_thinking(w) {
            assert!(known.contains(&w.to_string()), "{what}: reasoning item changed at working item {i}: {w}");
        }
        let Some(parts) = parts_of(w) else { continue };
        let mut seen_other = false;
        for b in parts {
            if is_thinking(b) {
                let leads = format != Format::Gemini || b["thought"] == true;
                assert!(!(seen_other && leads), "{what}: thinking after other content in working message {i}: {w}");
                assert!(known.contains(&b.to_string()), "{what}: thinking block changed in working message {i}: {b}");
            } else {
                seen_other = true;
            }
        }
    }
}

/// Guarantee 2, in one hop: every copy in the working list (a message shrunk in place) reloads
/// to exactly the one message it copies, and no offload a marker in the working list names
/// holds a copy the engine wrote (a truncated result, a preview), only originals and the
/// summaries and notes the model saw.
pub fn assert_one_hop<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>, what: &str) {
    let originals: std::collections::HashSet<String> =
        block_on(memory.original_messages()).expect("the log reads back").iter().map(Value::to_string).collect();
    let working = memory.working();
    let copies: std::collections::HashSet<String> =
        working.iter().filter(|w| w.synthetic.as_ref().is_some_and(|s| s.copy)).map(|w| w.wire.to_string()).collect();
    let mut seen = std::collections::HashSet::new();
    for w in &working {
        for u in markers_in(&w.wire) {
            if !seen.insert(u.clone()) {
                continue;
            }
            let back = block_on(memory.reload(&u)).unwrap_or_else(|e| panic!("{what}: marker {u} does not reload: {e:?}"));
            let of_copy = w.synthetic.as_ref().is_some_and(|s| s.copy && s.offload.as_deref() == Some(u.as_str()));
            if of_copy {
                // The message it copies: an original, or a message the model saw that the engine
                // wrote (a note joined to a turn), never another copy (checked below).
                assert_eq!(back.len(), 1, "{what}: the offload of a copy holds one message");
            }
            for b in &back {
                assert!(!copies.contains(&b.to_string()), "{what}: offload {u} holds a copy the engine wrote");
                let truncated = b.to_string().contains("characters omitted; call context_reload");
                assert!(!truncated || originals.contains(&b.to_string()), "{what}: offload {u} holds a truncated copy (two hops)");
            }
        }
    }
}

/// The tool work the model has not read in `memory`'s working list: the last assistant message
/// (with the rest of its response, in the Responses shape), when it calls tools, and the results
/// after it.
pub fn unread_work<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>) -> Vec<autocontext::Message> {
    let w = memory.working();
    let Some(mut last) = w.iter().rposition(|m| m.role == autocontext::Role::Assistant) else { return Vec::new() };
    if !w[last].has_calls() {
        return Vec::new();
    }
    while last > 0 && memory.format().continues_turn(&w[last - 1], &w[last]) {
        last -= 1;
    }
    w[last..].iter().filter(|m| m.has_calls() || m.has_results() || m.role == autocontext::Role::Tool).map(|m| (**m).clone()).collect()
}

/// Whether `memory` still holds every message of `unread` as it was, or (a result) truncated in
/// place, the one step allowed to touch unread work; the messages that were rewritten otherwise.
pub fn unread_rewritten<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>, unread: &[autocontext::Message]) -> Vec<Value> {
    let working = memory.working();
    unread
        .iter()
        .filter(|u| {
            let ids: Vec<&str> = u.result_ids().collect();
            !working.iter().any(|w| {
                same_wire(&w.wire, &u.wire)
                    || (!ids.is_empty()
                        && w.synthetic.as_ref().is_some_and(|s| s.kind == "TOOL_RESULT_TRUNCATE")
                        && w.result_ids().collect::<Vec<_>>() == ids)
            })
        })
        .map(|u| (*u.wire).clone())
        .collect()
}

/// A memory's observable state, for "nothing changed" checks.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub messages: Vec<Value>,
    pub originals: usize,
    pub events: Vec<autocontext::CompressionEvent>,
    pub offloads: Vec<String>,
    pub tokens: u64,
}

pub fn snapshot<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>) -> Snapshot {
    Snapshot {
        messages: memory.messages(),
        originals: block_on(memory.original_messages()).expect("the log reads back").len(),
        events: memory.events(),
        offloads: memory.offloads().into_iter().map(|o| o.uuid).collect(),
        tokens: memory.token_count(),
    }
}

/// The identifier index of every message the engine wrote in `memory`'s working list holds no
/// uuid and no marker, and no index line is longer than `identifierIndexChars`.
pub fn assert_indexes_clean<S: Summarizer, O: OffloadStore>(memory: &AutoContextMemory<S, O>, what: &str) {
    const OPENING: &str = "[Identifiers in what was offloaded: ";
    let limit = memory.config().identifier_index_chars as usize;
    for w in memory.working().iter().filter(|w| w.synthetic.is_some()) {
        for text in w.blocks.iter().filter_map(|b| match b {
            autocontext::Block::Text(t) => Some(t.as_str()),
            autocontext::Block::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        }) {
            for line in text.lines().filter(|l| l.starts_with(OPENING)) {
                assert!(line.len() <= limit, "{what}: an index line of {} characters: {line}", line.len());
                assert!(!line.contains("CONTEXT_OFFLOAD"), "{what}: a marker in the index: {line}");
                let b = line.as_bytes();
                let uuid_at = (0..b.len().saturating_sub(35))
                    .find(|&i| (0..36).all(|k| if [8, 13, 18, 23].contains(&k) { b[i + k] == b'-' } else { b[i + k].is_ascii_hexdigit() }));
                assert!(uuid_at.is_none(), "{what}: a uuid in the index: {line}");
            }
        }
    }
}
