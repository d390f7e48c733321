//! The offline summarizer driving the whole ladder: the bundled example conversation replayed
//! turn by turn in a 32k window, as an agent loop would, with `OfflineSummarizer` as the
//! host's summarize function. Its summaries must be accepted (shorter than what they replace,
//! so no `SUMMARIZE_FAILED`), the LLM steps must actually shrink what they touch, and every
//! guarantee must hold: valid after every pass, under the window at every model call,
//! untouched messages identical, every original recoverable.

mod common;

use std::path::Path;

use autocontext::{AutoContextMemory, MemoryStore, OfflineSummarizer};
use common::*;
use serde_json::Value;

const WINDOW: u64 = 32_000;

fn example() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("long-conversation.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).unwrap();
    v["messages"].as_array().unwrap().clone()
}

fn llm_event_types() -> Vec<&'static str> {
    autocontext::strategy::DEFAULT_LADDER.iter().filter(|s| s.uses_llm()).map(|s| s.event_type()).collect()
}

#[test]
fn the_offline_summarizer_runs_the_llm_steps_on_the_bundled_example() {
    let memory = AutoContextMemory::new(config("offline", WINDOW), OfflineSummarizer, MemoryStore::new()).unwrap();
    let mut model_turns = 0;
    for (i, m) in example().into_iter().enumerate() {
        if m["role"] == "assistant" {
            block_on(memory.compress_if_needed()).unwrap();
            assert_valid(&memory, &format!("before message {i}"));
            assert!(memory.token_count() <= WINDOW, "model turn at message {i}: {} tokens", memory.token_count());
            model_turns += 1;
        }
        memory.add(&m).unwrap();
    }
    let last = block_on(memory.compress_if_needed()).unwrap();
    assert!(last.under_target, "{last:?}");
    assert!(model_turns > 50);

    let events = memory.events();
    let failed: Vec<_> = events.iter().filter(|e| e.event_type == "SUMMARIZE_FAILED").collect();
    assert!(failed.is_empty(), "summaries refused: {failed:#?}");
    let llm = llm_event_types();
    let summarized: Vec<_> = events.iter().filter(|e| llm.contains(&e.event_type.as_str())).collect();
    assert!(!summarized.is_empty(), "no LLM step ran: {:?}", events.iter().map(|e| &e.event_type).collect::<Vec<_>>());
    for e in &summarized {
        assert!(e.tokens_after < e.tokens_before, "{} did not shrink: {} -> {}", e.event_type, e.tokens_before, e.tokens_after);
        assert!(e.tokens_after * 2 < e.tokens_before, "{} kept over half: {} -> {}", e.event_type, e.tokens_before, e.tokens_after);
    }

    // No summary names an offload in its own words (only the engine's marker line does).
    for m in memory.working().iter().filter(|m| m.synthetic.is_some()) {
        let text = m.payload_text();
        assert!(text.matches("CONTEXT_OFFLOAD").count() <= 1, "{text}");
    }
    if std::env::var_os("SHOW").is_some() {
        for e in &events {
            eprintln!("{} {} {} -> {}", e.event_type, e.message_count, e.tokens_before, e.tokens_after);
        }
        for m in memory.working().iter().filter(|m| m.synthetic.is_some()) {
            eprintln!("----\n{}", m.payload_text());
        }
    }
    assert_untouched_are_identical(&memory, "end");
    let rec = check_recoverable(&memory, "end");
    assert!(rec.via_reload > 0);
}

/// One round of an agent fixing tests: the user's request, a test run whose log lines differ only
/// in their numbers (so the summary folds them, `(+N similar)`), an edit, and an answer.
fn fixing_round(r: usize) -> Vec<Value> {
    let log: String = (0..60)
        .map(|k| format!("FAILED tests/test_ledger.py::test_case_{k} - AssertionError: expected {} got {}\n", k * 7, k * 7 + r))
        .collect();
    let args = serde_json::json!({"command": format!("pytest tests/test_ledger.py -k round_{r}")}).to_string();
    vec![
        user(&format!("Round {r}: make the ledger tests pass again.")),
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("t{r}"), "type": "function", "function": {"name": "run", "arguments": args}}]}),
        serde_json::json!({"role": "tool", "tool_call_id": format!("t{r}"), "content": log}),
        answer(&format!("Fixed the rounding in ledger/round_{r}.py; {} tests pass now.", 60 + r)),
    ]
}

#[test]
fn a_rolled_forward_summary_rewrites_the_content_of_the_one_before_never_its_wrapper() {
    // Each pass rolls the earlier prefix summary forward. Read back as content, its wrapper
    // nested (a `<system-info>` block inside another, two closing tags), its counts doubled
    // (`(+1 similar) (+1 similar)`) and its index line was summarized with it.
    let mut cfg = config("rolled", 6_000);
    cfg.strategies = Some(vec![autocontext::Strategy::PrefixSummary]);
    let memory = AutoContextMemory::new(cfg, OfflineSummarizer, MemoryStore::new()).unwrap();
    memory.add(&serde_json::json!([system("agent"), user("The ledger tests fail after the rounding change; fix them all.")])).unwrap();
    let mut summaries = Vec::new();
    for r in 0..12 {
        for m in fixing_round(r) {
            memory.add(&m).unwrap();
        }
        let result = block_on(memory.compress_if_needed()).unwrap();
        if result.events.iter().any(|e| e.event_type == "PREFIX_SUMMARY") {
            let summary =
                memory.working().iter().find(|m| m.synthetic.as_ref().is_some_and(|s| s.kind == "PREFIX_SUMMARY")).unwrap().payload_text();
            summaries.push(summary);
        }
    }
    assert!(summaries.len() >= 3, "{} prefix summaries", summaries.len());
    for (k, s) in summaries.iter().enumerate() {
        assert_eq!((s.matches("<system-info>").count(), s.matches("</system-info>").count()), (1, 1), "summary {k}:\n{s}");
        assert!(s.starts_with("<system-info>") && s.contains("</system-info>\n"), "summary {k}:\n{s}");
        assert!(s.matches("[Identifiers in what was offloaded: ").count() <= 1, "summary {k}:\n{s}");
        let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
        for l in &lines {
            assert!(l.matches(" similar)").count() <= 1 && l.matches(" (×").count() <= 1, "summary {k}, a count written twice: {l}");
        }
        let mut seen = std::collections::HashSet::new();
        assert!(lines.iter().all(|l| seen.insert(l.trim())), "summary {k} repeats a line:\n{s}");
    }
    // Folded lines keep their count from one summary to the next: it grows, it is not lost.
    let similar = |s: &str| -> usize {
        s.lines().filter_map(|l| l.rsplit_once(" (+")?.1.strip_suffix(" similar)")?.parse::<usize>().ok()).max().unwrap_or(0)
    };
    assert!(similar(summaries.last().unwrap()) >= similar(&summaries[0]), "{summaries:#?}");
}

#[test]
fn the_same_conversation_compressed_twice_costs_the_same_tokens() {
    // An offload's uuid is random, and the digits of a random uuid tokenize to 25 to 41 tokens:
    // the bundled example saved 77,032 tokens on one run and 77,033 on the next. Every uuid is
    // now drawn so that its marker counts the same, so every figure repeats.
    let run = || {
        let memory = AutoContextMemory::new(config("twice", WINDOW), OfflineSummarizer, MemoryStore::new()).unwrap();
        let mut sent = Vec::new();
        for m in example() {
            if m["role"] == "assistant" {
                block_on(memory.compress_if_needed()).unwrap();
                sent.push(memory.token_count());
            }
            memory.add(&m).unwrap();
        }
        let last = block_on(memory.compress_if_needed()).unwrap();
        let events: Vec<(String, u64, u64)> =
            memory.events().into_iter().map(|e| (e.event_type, e.tokens_before, e.tokens_after)).collect();
        (sent, last.tokens_after, events, memory.offloads().len())
    };
    let (first, second) = (run(), run());
    assert!(first.3 >= 5, "{} offloads", first.3);
    assert_eq!(first, second);
    // Every marker counts the same.
    let counter = autocontext::TokenCounter::new(autocontext::Tokenizer::O200kBase).unwrap();
    let marker_tokens: std::collections::BTreeSet<u32> =
        (0..200).map(|_| counter.count_text(&autocontext::message::offload_marker(&uuid::Uuid::new_v4().to_string())).unwrap()).collect();
    assert!(marker_tokens.len() > 3, "random uuids tokenize to {marker_tokens:?}");
}
