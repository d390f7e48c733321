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
