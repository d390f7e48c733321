//! Corpus replay: every real agent trace of the shared corpus and of traces-extra, in every wire
//! format, fed one message at a time with a pass before every model turn, in a 32k and an 8k
//! window, with a deterministic fake summarizer (and, in the 32k window, without one).
//!
//! The traces live outside the repository (`../shared/corpus` and `../shared/traces-extra`
//! from the crate root, or the folders `AUTOCONTEXT_CORPUS` and `AUTOCONTEXT_TRACES_EXTRA`
//! name); without them the test says it was skipped. OpenAI-shaped traces are converted to the
//! Anthropic, AI SDK, Responses and Gemini shapes (`common::convert`; the Responses shape in the
//! Agents SDK's spelling every other trace); Anthropic-shaped ones are replayed as recorded and
//! converted to the OpenAI shape for the others.
//!
//! After every pass: the working list is valid for the provider (no problem the trace itself
//! did not have), every thinking block in what the engine wrote is intact and first, the pass
//! reached its target or said why, the
//! request fits the 32k window, and no tool work the model had not read was rewritten (only
//! truncated). Every summarize request's `messages`, with the host's instruction appended, is a
//! valid request body. Every tenth model turn and at the end every original is recoverable; at
//! the end every marker reloads originals in one hop, untouched messages are identical and the
//! original log is the trace. The per-trace numbers go to stderr and `target/replay-report.md`.

mod common;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use autocontext::{
    AutoContextMemory, Config, Format, HostError, MemoryStore, SummarizeRequest, Summarizer, Summary, TokenCounter, Tokenizer,
};
use common::*;
use serde_json::Value;

const WINDOWS: [u64; 2] = [32_000, 8_000];

/// A trace in each format's shape (`Format::ALL` order).
struct Trace {
    name: String,
    shapes: Vec<Vec<Value>>,
}

fn extra_dir() -> PathBuf {
    match std::env::var_os("AUTOCONTEXT_TRACES_EXTRA") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("shared").join("traces-extra"),
    }
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    files
}

fn load() -> Vec<Trace> {
    let mut traces = Vec::new();
    for f in json_files(&corpus_dir()).into_iter().chain(json_files(&extra_dir())) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let messages = v["messages"].as_array().unwrap_or_else(|| panic!("{}: no messages", f.display())).clone();
        let openai = if v["format"] == "anthropic" { anthropic_to_openai(v.get("system"), &messages) } else { messages };
        let anthropic = if v["format"] == "anthropic" { v["messages"].as_array().unwrap().clone() } else { to_anthropic(&openai) };
        let shapes = Format::ALL
            .iter()
            .map(|&format| match format {
                Format::OpenAi => openai.clone(),
                Format::Anthropic => anthropic.clone(),
                Format::AiSdk => to_ai_sdk(&openai),
                Format::OpenAiResponses => to_responses(&openai, traces.len() % 2 == 1),
                Format::Gemini => to_gemini(&openai),
            })
            .collect();
        traces.push(Trace { name: f.file_stem().unwrap().to_string_lossy().into_owned(), shapes });
    }
    traces
}

/// The fake summarizer, checking every request as the host would send it.
#[derive(Clone)]
struct Checked {
    format: Format,
    inner: FakeSummarizer,
    bad: Rc<RefCell<Vec<String>>>,
    calls: Rc<Cell<usize>>,
}

impl Summarizer for Checked {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        self.calls.set(self.calls.get() + 1);
        let mut body = request.messages.clone();
        body.push(instruction(self.format));
        let parsed: Result<Vec<autocontext::Message>, _> = body.iter().enumerate().map(|(i, v)| self.format.parse(i, v)).collect();
        let problems = match parsed {
            Ok(p) => self.format.validate_request(&p).into_iter().map(|p| format!("{}: {}", p.code, p.message)).collect(),
            Err(e) => vec![format!("unreadable: {e:?}")],
        };
        if !problems.is_empty() {
            self.bad.borrow_mut().push(format!("{} request: {problems:?}", request.kind));
        }
        self.inner.summarize(request).await
    }
}

struct Row {
    trace: String,
    format: Format,
    window: u64,
    llm: bool,
    messages: usize,
    turns: usize,
    max_tokens: u64,
    over_window: usize,
    final_tokens: u64,
    events: usize,
    summarize_calls: usize,
    via_reload: usize,
    engine: Duration,
}

fn replay(trace: &Trace, format: Format, window: u64, llm: bool) -> Row {
    let msgs = &trace.shapes[Format::ALL.iter().position(|&f| f == format).unwrap()];
    let what = format!("{} ({}, {window}, {})", trace.name, format.name(), if llm { "fake LLM" } else { "no LLM" });
    let session_id = format!("r-{}", trace.name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
    let cfg = Config { max_token: window, session_id, format, ..Config::default() };
    let checked = Checked { format, inner: FakeSummarizer::digest(), bad: Rc::default(), calls: Rc::default() };
    let m = AutoContextMemory::with_counter(
        cfg,
        TokenCounter::new(Tokenizer::O200kBase).unwrap(),
        llm.then(|| checked.clone()),
        MemoryStore::new(),
    )
    .unwrap();
    // Problems the trace itself has (a recorded conversation may not alternate): the engine may
    // keep them, never add others.
    let allowed: HashSet<&str> = {
        let whole = AutoContextMemory::new(
            Config { format, max_token: 1_000_000_000, ..Config::default() },
            checked.inner.clone(),
            MemoryStore::new(),
        )
        .unwrap();
        whole.add(&Value::Array(msgs.clone())).unwrap_or_else(|e| panic!("{what}: the trace does not add: {e:?}"));
        whole.validate().into_iter().map(|p| p.code).collect()
    };
    let known = thinking_of(format, msgs);
    // A trace whose one message alone is larger than the window cannot fit it (an answer with
    // 85k tokens of web search results): the pass must say so instead.
    let counter = TokenCounter::new(Tokenizer::O200kBase).unwrap();
    let largest =
        msgs.iter().enumerate().map(|(i, v)| counter.count_message(&format.parse(i, v).unwrap()).unwrap() as u64).max().unwrap_or(0);
    let (mut turns, mut max_tokens, mut over_window) = (0, 0, 0);
    let mut engine = Duration::ZERO;
    let mut pass = |at: String, turns: usize| {
        let unread = unread_work(&m);
        let t = Instant::now();
        let r = block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("{what}: pass {at} failed: {e:?}"));
        engine += t.elapsed();
        let problems: Vec<_> = m.validate().into_iter().filter(|p| !allowed.contains(p.code)).collect();
        assert!(problems.is_empty(), "{what}: invalid after the pass {at}: {problems:?}");
        // What the engine wrote keeps thinking intact and first (recorded messages may not).
        let written: Vec<Value> = m.working().iter().filter(|w| w.synthetic.is_some()).map(|w| (*w.wire).clone()).collect();
        assert_thinking_intact(format, &written, &known, &format!("{what}, {at}"));
        assert!(r.under_target || (r.exhausted && r.reason.is_some()), "{what}: over the target without a reason {at}: {r:?}");
        assert_indexes_clean(&m, &format!("{what}, {at}"));
        let rewritten = unread_rewritten(&m, &unread);
        assert!(rewritten.is_empty(), "{what}: the pass {at} rewrote unread tool work: {rewritten:?}");
        let tokens = m.token_count();
        if window >= 32_000 && largest < window / 2 {
            assert!(tokens <= window, "{what}: the model turn {at} needs {tokens} tokens: {r:?}");
        }
        if turns % 10 == 0 {
            check_recoverable(&m, &format!("{what}, {at}"));
        }
        tokens
    };
    for (i, v) in msgs.iter().enumerate() {
        if starts_response(format, msgs, i) {
            turns += 1;
            let tokens = pass(format!("before message {i}"), turns);
            max_tokens = max_tokens.max(tokens);
            over_window += usize::from(tokens > window);
        }
        m.add(v).unwrap_or_else(|e| panic!("{what}: add of message {i} rejected: {e:?}"));
    }
    let final_tokens = pass("after the last message".into(), 1);
    let rec = check_recoverable(&m, &what);
    assert_eq!(rec.in_working + rec.via_reload, msgs.len(), "{what}");
    assert_one_hop(&m, &what);
    assert_untouched_are_identical(&m, &what);
    assert_eq!(&block_on(m.original_messages()).expect("the log reads back"), msgs, "{what}: the original log is the trace");
    let bad = checked.bad.borrow();
    assert!(bad.is_empty(), "{what}: {} summarize requests are not valid bodies: {:?}", bad.len(), &bad[..bad.len().min(3)]);
    Row {
        trace: trace.name.clone(),
        format,
        window,
        llm,
        messages: msgs.len(),
        turns,
        max_tokens,
        over_window,
        final_tokens,
        events: m.events().len(),
        summarize_calls: checked.calls.get(),
        via_reload: rec.via_reload,
        engine,
    }
}

fn table(rows: &[Row], wall: Duration) -> String {
    let mut out = format!(
        "# Replay of {} traces in {} formats, 32k and 8k windows, a pass before every model turn\n\n",
        rows.iter().map(|r| &r.trace).collect::<std::collections::BTreeSet<_>>().len(),
        Format::ALL.len()
    );
    out.push_str("Per trace and format: model turns; then, per window (fake summarizer), the largest request after a pass, turns over the window, final tokens, events, summarize calls; `no LLM` is the 32k run without a summarizer.\n\n");
    out.push_str("| trace | format | msgs | turns | 32k max | 32k final | 32k events / calls | 8k max | 8k over | 8k final | 8k events / calls | 32k no LLM final |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let mut keys: Vec<(&str, usize)> =
        rows.iter().map(|r| (r.trace.as_str(), Format::ALL.iter().position(|&f| f == r.format).unwrap())).collect();
    keys.sort();
    keys.dedup();
    let find = |t: &str, f: Format, w: u64, llm: bool| rows.iter().find(|r| r.trace == t && r.format == f && r.window == w && r.llm == llm);
    for (t, k) in keys {
        let f = Format::ALL[k];
        let (Some(a), Some(b), Some(c)) = (find(t, f, 32_000, true), find(t, f, 8_000, true), find(t, f, 32_000, false)) else { continue };
        out.push_str(&format!(
            "| {t} | {} | {} | {} | {} | {} | {} / {} | {} | {} | {} | {} / {} | {} |\n",
            f.name(),
            a.messages,
            a.turns,
            a.max_tokens,
            a.final_tokens,
            a.events,
            a.summarize_calls,
            b.max_tokens,
            b.over_window,
            b.final_tokens,
            b.events,
            b.summarize_calls,
            c.final_tokens,
        ));
    }
    /// Turns, turns over the window, summarize calls, originals only in the store, engine time.
    type Sums = (usize, usize, usize, usize, Duration);
    let mut sums: BTreeMap<(u64, bool), Sums> = BTreeMap::new();
    for r in rows {
        let s = sums.entry((r.window, r.llm)).or_default();
        s.0 += r.turns;
        s.1 += r.over_window;
        s.2 += r.summarize_calls;
        s.3 += r.via_reload;
        s.4 += r.engine;
    }
    out.push('\n');
    for ((w, llm), (turns, over, calls, reload, engine)) in sums.iter().rev() {
        out.push_str(&format!(
            "- {w} window, {}: {turns} model turns, {over} over the window, {calls} summarize calls (every one a valid request body), \
             {reload} originals only in the store, engine time {} ms.\n",
            if *llm { "fake summarizer" } else { "no summarizer" },
            engine.as_millis()
        ));
    }
    out.push_str(&format!(
        "\nAfter every pass: valid, thinking intact, no unread tool work rewritten (only truncated); every tenth turn and at the end, \
         every original recoverable; at the end, one-hop reloads and untouched messages identical. Wall time {} ms (debug build).\n",
        wall.as_millis()
    ));
    out
}

#[test]
fn every_trace_in_every_format_keeps_every_promise() {
    let traces = load();
    if traces.is_empty() {
        skip_without_corpus(&format!("no traces in {} or {}", corpus_dir().display(), extra_dir().display()));
        return;
    }
    // Every trace in every shape comes back byte-exact and adds whole.
    for t in &traces {
        for (k, format) in Format::ALL.into_iter().enumerate() {
            let m = AutoContextMemory::new(
                Config { format, max_token: 1_000_000_000, ..Config::default() },
                FakeSummarizer::digest(),
                MemoryStore::new(),
            )
            .unwrap();
            m.add(&Value::Array(t.shapes[k].clone())).unwrap_or_else(|e| panic!("{} ({}): {e:?}", t.name, format.name()));
            assert_eq!(
                serde_json::to_string(&m.messages()).unwrap(),
                serde_json::to_string(&t.shapes[k]).unwrap(),
                "{} ({})",
                t.name,
                format.name()
            );
        }
    }
    TokenCounter::new(Tokenizer::O200kBase).unwrap().count_text("warm up").unwrap();
    let mut jobs: Vec<(usize, Format, u64, bool)> = Vec::new();
    for i in 0..traces.len() {
        for format in Format::ALL {
            for window in WINDOWS {
                jobs.push((i, format, window, true));
            }
            jobs.push((i, format, WINDOWS[0], false));
        }
    }
    // The biggest traces first, spread over the machine's cores.
    jobs.sort_by_key(|&(i, ..)| traces[i].shapes[0].len());
    let wall = Instant::now();
    let jobs = Mutex::new(jobs);
    let rows = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some((i, format, window, llm)) = jobs.lock().unwrap().pop() else { break };
                let row = replay(&traces[i], format, window, llm);
                rows.lock().unwrap().push(row);
            });
        }
    });
    let rows = rows.into_inner().unwrap();
    assert_eq!(rows.len(), traces.len() * Format::ALL.len() * 3);
    let report = table(&rows, wall.elapsed());
    let _ = std::io::stderr().write_all(format!("\n{report}").as_bytes());
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let _ = std::fs::create_dir_all(&target);
    std::fs::write(target.join("replay-report.md"), &report).unwrap();
}
