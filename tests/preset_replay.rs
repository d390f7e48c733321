//! Every preset replays the shared corpus with the offline summarizer, and the comparison of
//! docs/strategies.md comes from here.
//!
//! Each trace is fed one message at a time with a pass before every model turn, in a 32k
//! window, once per preset (and two variants: the default ladder with `minFreedTokens`, the
//! prefix summary with background preparation). After every pass the working list must be valid
//! and the request must fit the window; at the end every original must be recoverable
//! byte-exact and every untouched message identical. Per preset the report sums, over the
//! traces: final tokens, summarize calls (in passes, and in preparations off the request path),
//! tokens sent to the summarizer, working-list edits (events), prefix rewrites (passes that
//! changed the list, each one invalidating the provider's prompt cache from its first edit on)
//! and the tokens re-sent after those first edits. It goes to stderr and to
//! `target/strategies-report.md`; `scripts/strategies-table.sh` copies it into the docs.
//!
//! The corpus lives outside the repository (`../shared/corpus`, or `AUTOCONTEXT_CORPUS`);
//! without it the test says it was skipped.

mod common;

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;
use std::time::Instant;

use autocontext::{
    AutoContextMemory, Config, HostError, MemoryStore, OfflineSummarizer, SummarizeRequest, Summarizer, Summary, TokenCounter, Tokenizer,
};
use common::*;
use serde_json::{json, Value};

const WINDOW: u64 = 32_000;

/// A preset, or a variant of one, as a row of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Row {
    AgentScope,
    AgentScopeMinFreed,
    Prefix,
    PrefixPrepared,
    Facts,
    Turns,
}

impl Row {
    const ALL: [Row; 6] = [Row::AgentScope, Row::AgentScopeMinFreed, Row::Prefix, Row::PrefixPrepared, Row::Facts, Row::Turns];

    fn name(self) -> &'static str {
        match self {
            Row::AgentScope => "`agentscope` (default)",
            Row::AgentScopeMinFreed => "`agentscope`, `minFreedTokens: 4000`",
            Row::Prefix => "`prefix-summary`",
            Row::PrefixPrepared => "`prefix-summary`, `prepare()` from 60%",
            Row::Facts => "`facts` (4 concepts)",
            Row::Turns => "`turns`",
        }
    }

    fn options(self) -> Value {
        match self {
            Row::AgentScope => json!({}),
            Row::AgentScopeMinFreed => json!({"minFreedTokens": 4000}),
            Row::Prefix | Row::PrefixPrepared => json!({"preset": "prefix-summary"}),
            Row::Facts => json!({"preset": "facts", "concepts": [
                {"keyword": "error", "description": "errors and failures met, with their messages", "factType": "multiple"},
                {"keyword": "test", "description": "tests run and their results", "factType": "multiple"},
                {"keyword": "file", "description": "files read or changed, with their paths", "factType": "multiple"},
                {"keyword": "user", "description": "what the user asked for", "factType": "single"}
            ]}),
            Row::Turns => json!({"preset": "turns"}),
        }
    }
}

/// The offline summarizer, counting calls and the tokens of every request sent to it.
#[derive(Clone)]
struct Counted {
    counter: Rc<TokenCounter>,
    calls: Rc<Cell<usize>>,
    tokens: Rc<Cell<u64>>,
}

impl Summarizer for Counted {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        self.calls.set(self.calls.get() + 1);
        let sent = self.counter.count_text(&request.system).unwrap_or(0) + self.counter.count_text(&request.prompt).unwrap_or(0);
        self.tokens.set(self.tokens.get() + sent as u64);
        OfflineSummarizer.summarize(request).await
    }
}

#[derive(Default, Clone)]
struct Numbers {
    traces: usize,
    turns: usize,
    original_tokens: u64,
    final_tokens: u64,
    max_turn_tokens: u64,
    pass_calls: usize,
    prepare_calls: usize,
    prepared_used: usize,
    sent_tokens: u64,
    edits: usize,
    rewrites: usize,
    recached_tokens: u64,
    via_reload: usize,
}

impl Numbers {
    fn add(&mut self, o: &Numbers) {
        self.traces += o.traces;
        self.turns += o.turns;
        self.original_tokens += o.original_tokens;
        self.final_tokens += o.final_tokens;
        self.max_turn_tokens = self.max_turn_tokens.max(o.max_turn_tokens);
        self.pass_calls += o.pass_calls;
        self.prepare_calls += o.prepare_calls;
        self.prepared_used += o.prepared_used;
        self.sent_tokens += o.sent_tokens;
        self.edits += o.edits;
        self.rewrites += o.rewrites;
        self.recached_tokens += o.recached_tokens;
        self.via_reload += o.via_reload;
    }
}

fn replay(name: &str, messages: &[Value], row: Row) -> Numbers {
    let mut opts = row.options();
    opts["maxToken"] = json!(WINDOW);
    opts["sessionId"] = json!(format!("presets-{}", name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")));
    let cfg = Config::from_json(&opts).unwrap();
    let counter = Rc::new(TokenCounter::new(Tokenizer::O200kBase).unwrap());
    let s = Counted { counter: counter.clone(), calls: Rc::default(), tokens: Rc::default() };
    let m = AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), Some(s.clone()), MemoryStore::new())
        .unwrap();
    let what = format!("{name} ({})", row.name());
    let mut n = Numbers { traces: 1, original_tokens: m.token_count(), ..Numbers::default() };
    let pass = |n: &mut Numbers, at: &str| {
        if row == Row::PrefixPrepared {
            let before = s.calls.get();
            let p = block_on(m.prepare()).unwrap_or_else(|e| panic!("{what}: prepare {at} failed: {e:?}"));
            assert_eq!(p.summarize_calls, s.calls.get() - before);
            n.prepare_calls += p.summarize_calls;
        }
        let r = block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("{what}: pass {at} failed: {e:?}"));
        let problems = m.validate();
        assert!(problems.is_empty(), "{what}: invalid after the pass {at}: {problems:?}");
        assert!(r.under_target || (r.exhausted && r.reason.is_some()), "{what}: over the target without a reason {at}: {r:?}");
        let tokens = m.token_count();
        assert!(tokens <= WINDOW, "{what}: the model turn {at} needs {tokens} tokens: {r:?}");
        n.max_turn_tokens = n.max_turn_tokens.max(tokens);
        n.pass_calls += r.summarize_calls;
        n.prepared_used += r.prepared_used;
        if r.compressed {
            n.rewrites += 1;
            n.edits += r.events.iter().filter(|e| e.event_type != "SUMMARIZE_FAILED").count();
            let first = r.events.iter().map(|e| e.index).min().unwrap_or(0);
            let working = m.working();
            n.recached_tokens +=
                working[first.min(working.len())..].iter().map(|msg| counter.count_message(msg).unwrap_or(0) as u64).sum::<u64>();
        }
    };
    for (i, v) in messages.iter().enumerate() {
        if v["role"] == "assistant" {
            n.turns += 1;
            pass(&mut n, &format!("before message {i}"));
        }
        let grown_from = m.token_count();
        m.add(v).unwrap_or_else(|e| panic!("{what}: add of message {i} rejected: {e:?}"));
        n.original_tokens += m.token_count() - grown_from;
    }
    pass(&mut n, "after the last message");
    n.final_tokens = m.token_count();
    let rec = check_recoverable(&m, &what);
    assert_eq!(rec.in_working + rec.via_reload, messages.len());
    n.via_reload = rec.via_reload;
    assert_untouched_are_identical(&m, &what);
    assert_eq!(block_on(m.original_messages()).expect("the log reads back"), messages, "{what}: the original log is the trace");
    assert_eq!(n.pass_calls + n.prepare_calls, s.calls.get());
    n.sent_tokens = s.tokens.get();
    n
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (k, c) in s.chars().enumerate() {
        if k > 0 && (s.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn table(rows: &[(Row, Numbers)]) -> String {
    let first = &rows[0].1;
    let mut out = format!(
        "{} traces, {} model turns, {} tokens if nothing were compressed; a {WINDOW}-token window, a pass before every model turn, the offline summarizer.\n\n",
        first.traces,
        first.turns,
        thousands(first.original_tokens)
    );
    out.push_str("| preset | final tokens | largest turn | summarize calls in passes | in `prepare()` | tokens sent to the summarizer | edits | prefix rewrites | tokens re-sent after a rewrite | originals only in the store |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (row, n) in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.name(),
            thousands(n.final_tokens),
            thousands(n.max_turn_tokens),
            n.pass_calls,
            if row == &Row::PrefixPrepared { format!("{} ({} used)", n.prepare_calls, n.prepared_used) } else { "–".into() },
            thousands(n.sent_tokens),
            n.edits,
            n.rewrites,
            thousands(n.recached_tokens),
            n.via_reload,
        ));
    }
    out
}

#[test]
fn every_preset_replays_the_corpus_with_the_guarantees() {
    let dir = corpus_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        skip_without_corpus(&format!("{} not found (set AUTOCONTEXT_CORPUS)", dir.display()));
        return;
    };
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    let wall = Instant::now();
    let traces: Vec<(String, Vec<Value>)> = files
        .iter()
        .map(|f| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            (f.file_stem().unwrap().to_string_lossy().into_owned(), v["messages"].as_array().unwrap().clone())
        })
        .collect();
    let mut jobs: Vec<(usize, Row)> = (0..traces.len()).flat_map(|i| Row::ALL.map(|r| (i, r))).collect();
    jobs.sort_by_key(|&(i, _)| traces[i].1.len());
    let jobs = Mutex::new(jobs);
    let results = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some((i, row)) = jobs.lock().unwrap().pop() else { break };
                let n = replay(&traces[i].0, &traces[i].1, row);
                results.lock().unwrap().push((row, n));
            });
        }
    });
    let mut totals: Vec<(Row, Numbers)> = Row::ALL.iter().map(|&r| (r, Numbers::default())).collect();
    for (row, n) in results.into_inner().unwrap() {
        totals.iter_mut().find(|(r, _)| *r == row).unwrap().1.add(&n);
    }
    for (_, n) in &totals {
        assert_eq!(n.traces, traces.len());
        assert!(n.max_turn_tokens <= WINDOW);
    }
    let report = table(&totals);
    let _ = std::io::stderr().write_all(format!("\n{report}\n(wall time {} ms)\n", wall.elapsed().as_millis()).as_bytes());
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let _ = std::fs::create_dir_all(&target);
    std::fs::write(target.join("strategies-report.md"), &report).unwrap();
}
