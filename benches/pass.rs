//! Native benchmark of one compression pass: the largest trace of the shared corpus added whole,
//! then one `compress_if_needed()` in a 32,000-token window, with no summarizer (the no-LLM
//! ladder) and with an instant one (the whole ladder), into an in-memory store, each run on
//! texts new to the thread.
//!
//! `cargo bench --bench pass [-- --out <file.json>] [-- --quick]`
//!
//! This is the engine alone, without the WebAssembly engine or the JavaScript binding around
//! it: `npm run bench` puts it beside the same pass measured in Node (docs/benchmarks.md), so
//! the report can tell the core's time from what crossing into JavaScript costs. Speed is
//! reported, never asserted.

use std::path::PathBuf;
use std::time::Instant;

use autocontext::{AutoContextMemory, Config, HostError, MemoryStore, SummarizeRequest, Summarizer, Summary};
use serde_json::{json, Value};

mod common;
use common::{corpus_dir, largest, median, unseen};

/// A summarizer that answers at once with a fixed short text.
struct InstantSummarizer;

impl Summarizer for InstantSummarizer {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        let text = format!("Summary of a {} span: the requests, the tool calls and what they returned.", request.kind);
        Ok(Summary { text, input_tokens: None, output_tokens: None })
    }
}

/// One pass in a fresh memory; returns (pass ms, add ms, tokens before, after, messages after, events).
fn once<S: Summarizer>(messages: &Value, summarizer: Option<S>, round: usize) -> (f64, f64, u64, u64, usize, usize) {
    let config = Config { max_token: 32_000, session_id: format!("bench-{round}"), ..Config::default() };
    let counter = autocontext::TokenCounter::new(config.tokenizer).expect("the default tokenizer");
    let memory = AutoContextMemory::with_counter(config, counter, summarizer, MemoryStore::new()).expect("a valid config");
    let start = Instant::now();
    memory.add(messages).expect("the trace is valid");
    let add_ms = start.elapsed().as_secs_f64() * 1000.0;
    let start = Instant::now();
    let result = futures_executor::block_on(memory.compress_if_needed()).expect("the pass succeeds");
    let pass_ms = start.elapsed().as_secs_f64() * 1000.0;
    (pass_ms, add_ms, result.tokens_before, result.tokens_after, memory.working().len(), result.events.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let rounds = if args.iter().any(|a| a == "--quick") { 2 } else { 15 };
    let Some((name, messages)) = largest() else {
        eprintln!("pass: no corpus at {} (set AUTOCONTEXT_CORPUS)", corpus_dir().display());
        std::process::exit(1);
    };
    let mut modes = Vec::new();
    for (k, mode) in ["no summarizer", "instant summarizer"].into_iter().enumerate() {
        let runs: Vec<_> = (0..rounds)
            .map(|r| {
                let messages = Value::Array(unseen(&messages, k * rounds + r));
                if mode == "no summarizer" {
                    once::<InstantSummarizer>(&messages, None, r)
                } else {
                    once(&messages, Some(InstantSummarizer), r)
                }
            })
            .collect();
        let pass_ms = median(runs.iter().map(|r| r.0).collect());
        let add_ms = median(runs.iter().map(|r| r.1).collect());
        let (_, _, before, after, kept, events) = runs[0];
        println!("{mode:<20} pass {pass_ms:7.2} ms   add {add_ms:7.2} ms   {before} -> {after} tokens, {kept} messages, {events} events");
        modes.push(json!({"mode": mode, "passMs": pass_ms, "addMs": add_ms, "tokensBefore": before, "tokensAfter": after, "after": kept, "events": events}));
    }
    if let Some(path) = out {
        let report = json!({"trace": name, "messages": messages.len(), "rounds": rounds, "modes": modes});
        std::fs::write(&path, serde_json::to_string_pretty(&report).expect("JSON")).expect("write the report");
    }
}
