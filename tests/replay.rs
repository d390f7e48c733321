//! Corpus replay: real agent traces fed through the engine one message at a time, with a pass
//! before every model turn, in a 32k window.
//!
//! The corpus lives outside the repository (`../shared/corpus` from the crate root, or the
//! folder named by `AUTOCONTEXT_CORPUS`); without it the test prints that it was skipped. Each
//! trace is replayed twice: with no summarizer (the no-LLM ladder) and with a deterministic
//! fake summarizer (the whole ladder). After every pass the working list must be valid for the
//! provider and the request must fit the 32k window; every tenth model turn, and at the end,
//! every original must be recoverable byte-exact. The per-trace numbers (compression ratio,
//! summarize calls, the slowest pass) go to stderr and to `target/replay-report.md`.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use autocontext::{AutoContextMemory, Config, MemoryStore, TokenCounter, Tokenizer};
use common::*;
use serde_json::Value;

const WINDOW: u64 = 32_000;

fn report_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("replay-report.md")
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Mode {
    NoLlm,
    FakeLlm,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::NoLlm => "no LLM",
            Mode::FakeLlm => "fake LLM",
        }
    }
}

struct Row {
    trace: String,
    mode: Mode,
    messages: usize,
    turns: usize,
    max_tokens: u64,
    /// The whole trace as one request, uncompressed.
    original_tokens: u64,
    final_tokens: u64,
    final_messages: usize,
    events: BTreeMap<String, usize>,
    summarize_calls: usize,
    in_working: usize,
    via_reload: usize,
    /// The slowest single pass.
    max_pass: Duration,
    engine_time: Duration,
    total_time: Duration,
}

impl Row {
    /// Original tokens over final tokens.
    fn ratio(&self) -> f64 {
        self.original_tokens as f64 / self.final_tokens.max(1) as f64
    }
}

fn replay_trace(name: &str, messages: &[Value], mode: Mode) -> Row {
    let start = Instant::now();
    let session_id = format!("replay-{}", name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
    let cfg = Config { max_token: WINDOW, session_id, ..Config::default() };
    let summarizer = FakeSummarizer::digest();
    let memory = AutoContextMemory::with_counter(
        cfg,
        TokenCounter::new(Tokenizer::O200kBase).unwrap(),
        (mode == Mode::FakeLlm).then(|| summarizer.clone()),
        MemoryStore::new(),
    )
    .unwrap();
    let mut engine_time = Duration::ZERO;
    let mut max_pass = Duration::ZERO;
    let (mut turns, mut max_tokens) = (0, 0);
    // The request as the agent would send it without compression: the empty request's
    // overhead plus every message's tokens (each add's growth; no pass runs between the two
    // readings).
    let mut original_tokens = memory.token_count();
    // A pass before every model turn, and one at the end, before the next turn would start.
    let pass = |before: String, turns: usize| -> (u64, Duration) {
        let t = Instant::now();
        let r = block_on(memory.compress_if_needed())
            .unwrap_or_else(|e| panic!("{name} ({}): pass {before} failed: {e:?}", mode.name()));
        let took = t.elapsed();
        let problems = memory.validate();
        assert!(problems.is_empty(), "{name} ({}): invalid after the pass {before}: {problems:?}", mode.name());
        assert!(
            r.under_target || (r.exhausted && r.reason.is_some()),
            "{name} ({}): over the target without a reason {before}: {r:?}",
            mode.name()
        );
        let tokens = memory.token_count();
        assert!(
            tokens <= WINDOW,
            "{name} ({}): the model turn {before} needs {tokens} tokens, over the {WINDOW}-token window: {r:?}",
            mode.name()
        );
        if turns % 10 == 0 {
            check_recoverable(&memory, &format!("{name} ({}), {before}", mode.name()));
        }
        (tokens, took)
    };
    for (i, v) in messages.iter().enumerate() {
        if v["role"] == "assistant" {
            turns += 1;
            let (tokens, took) = pass(format!("before message {i}"), turns);
            max_tokens = max_tokens.max(tokens);
            max_pass = max_pass.max(took);
            engine_time += took;
        }
        let t = Instant::now();
        let grown_from = memory.token_count();
        memory
            .add(v)
            .unwrap_or_else(|e| panic!("{name} ({}): add of message {i} rejected: {e:?}", mode.name()));
        original_tokens += memory.token_count() - grown_from;
        engine_time += t.elapsed();
    }
    let (final_tokens, took) = pass("after the last message".into(), 1);
    max_pass = max_pass.max(took);
    engine_time += took;
    let what = format!("{name} ({})", mode.name());
    assert_valid(&memory, &what);
    let recovery = check_recoverable(&memory, &what);
    assert_eq!(recovery.in_working + recovery.via_reload, messages.len());
    assert_untouched_are_identical(&memory, &what);
    assert_eq!(memory.original_messages(), messages, "{what}: the original log is the trace");
    let mut events = BTreeMap::new();
    for e in memory.events() {
        *events.entry(e.event_type).or_insert(0) += 1;
    }
    Row {
        trace: name.to_string(),
        mode,
        messages: messages.len(),
        turns,
        max_tokens,
        original_tokens,
        final_tokens,
        final_messages: memory.messages().len(),
        events,
        summarize_calls: summarizer.calls(),
        in_working: recovery.in_working,
        via_reload: recovery.via_reload,
        max_pass,
        engine_time,
        total_time: start.elapsed(),
    }
}

fn short(event: &str) -> &str {
    match event {
        "TOOL_RESULT_TRUNCATE" => "trunc",
        "LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION" => "offload-p",
        "LARGE_MESSAGE_OFFLOAD" => "offload",
        "RECENT_FOCUS_WINDOW_COMPACT" => "rollup",
        "TOOL_INVOCATION_COMPRESS" => "toolrun",
        "PREVIOUS_ROUND_CONVERSATION_SUMMARY" => "round",
        "CURRENT_ROUND_LARGE_MESSAGE_SUMMARY" => "cur-large",
        "CURRENT_ROUND_MESSAGE_COMPRESS" => "cur-compress",
        "EMERGENCY_OFFLOAD" => "emergency",
        "SUMMARIZE_FAILED" => "failed",
        other => other,
    }
}

fn table(rows: &[Row], wall: Duration, load: Duration) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# Corpus replay ({} traces, window {WINDOW} tokens, pass before every model turn)\n\n",
        rows.iter().map(|r| &r.trace).collect::<std::collections::BTreeSet<_>>().len()
    ));
    out.push_str("| trace | mode | msgs | turns | max tokens | original tokens | final tokens | ratio | final msgs | originals kept / reloaded | summarize calls | largest pass ms | events | engine ms | total ms |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
    for r in rows {
        let events: Vec<String> = r.events.iter().map(|(k, v)| format!("{} {v}", short(k))).collect();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} / {} | {} | {:.1} | {} | {} | {} |\n",
            r.trace,
            r.mode.name(),
            r.messages,
            r.turns,
            r.max_tokens,
            r.original_tokens,
            r.final_tokens,
            r.ratio(),
            r.final_messages,
            r.in_working,
            r.via_reload,
            r.summarize_calls,
            r.max_pass.as_secs_f64() * 1000.0,
            if events.is_empty() { "-".to_string() } else { events.join(", ") },
            r.engine_time.as_millis(),
            r.total_time.as_millis(),
        ));
    }
    for mode in [Mode::NoLlm, Mode::FakeLlm] {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.mode == mode).collect();
        let slowest = rs.iter().max_by_key(|r| r.max_pass);
        out.push_str(&format!(
            "\n{}: {} model turns, every one within {WINDOW} tokens; {} summarize calls; slowest pass {:.1} ms ({}); engine time {} ms.",
            mode.name(),
            rs.iter().map(|r| r.turns).sum::<usize>(),
            rs.iter().map(|r| r.summarize_calls).sum::<usize>(),
            slowest.map_or(0.0, |r| r.max_pass.as_secs_f64() * 1000.0),
            slowest.map_or("-", |r| r.trace.as_str()),
            rs.iter().map(|r| r.engine_time.as_millis()).sum::<u128>(),
        ));
    }
    out.push_str(&format!(
        "\nWall time of the replay: {} ms (reading the traces included; loading the o200k vocabulary before it: {} ms).\n",
        wall.as_millis(),
        load.as_millis()
    ));
    out.push_str(
        "\n`max tokens`: the largest request right after a pass; `original tokens`: the whole trace as one request, \
         uncompressed; `final tokens`: after a last pass once every message was added; `ratio`: original / final. \
         `originals kept / reloaded`: originals found unchanged in the final working list / recovered byte-exact \
         through its offload markers. `largest pass ms`: the slowest single pass (debug build, fake summarizer \
         answering at once).\n",
    );
    out
}

#[test]
fn corpus_replay() {
    let dir = corpus_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        let _ = std::io::stderr()
            .write_all(format!("skipped: {} not found (set AUTOCONTEXT_CORPUS to replay another folder)\n", dir.display()).as_bytes());
        return;
    };
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no *.json trace", dir.display());

    // The BPE vocabulary loads on first use; load it here so no trace's time includes it.
    let load = Instant::now();
    TokenCounter::new(Tokenizer::O200kBase).unwrap().count_text("warm up").unwrap();
    let load = load.elapsed();
    let wall = Instant::now();
    let mut traces = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let messages = v["messages"].as_array().unwrap_or_else(|| panic!("{}: no messages array", f.display())).clone();
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        traces.push((name, messages));
    }

    // The biggest traces first, spread over the machine's cores (each worker builds its own
    // memories; only the traces and the rows cross threads).
    let mut jobs: Vec<(usize, Mode)> = (0..traces.len()).flat_map(|i| [(i, Mode::NoLlm), (i, Mode::FakeLlm)]).collect();
    jobs.sort_by_key(|&(i, _)| std::cmp::Reverse(traces[i].1.len()));
    let jobs = Mutex::new(jobs);
    let rows = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some((i, mode)) = jobs.lock().unwrap().pop() else { break };
                let row = replay_trace(&traces[i].0, &traces[i].1, mode);
                rows.lock().unwrap().push(row);
            });
        }
    });
    let mut rows = rows.into_inner().unwrap();
    rows.sort_by(|a, b| (&a.trace, a.mode).cmp(&(&b.trace, b.mode)));
    let report = table(&rows, wall.elapsed(), load);
    // Straight to the stderr stream, so the table shows without --nocapture too.
    let _ = std::io::stderr().write_all(format!("\n{report}").as_bytes());
    let path = report_path();
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(&path, &report).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    let _ = std::io::stderr().write_all(format!("(also written to {})\n", path.display()).as_bytes());
    assert_eq!(rows.len(), 2 * traces.len());
}
