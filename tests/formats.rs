//! The wire formats end to end: lossless round trips, the validators, several results per
//! message through every in-place strategy, thinking kept intact, alternating turns, the items
//! of one Responses API response kept together, the reload tool and its pages, approvals, token
//! counts, state round trips, and the bundled example replayed in the Anthropic, AI SDK and
//! Responses shapes with the validator asserted after every pass and on every summarize request
//! (the shared corpus replays in every shape in `replay.rs`).
//!
//! The conversations are OpenAI-shaped (the bundled example, the builders of `common`) and
//! converted by `common::convert` (`to_anthropic`, `to_ai_sdk`, `to_responses`), so every format
//! sees the same traffic.

mod common;

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use autocontext::format::{validate_tool_pairing, Format};
use autocontext::{AutoContextMemory, Config, MemoryStore, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

type Mem = AutoContextMemory<FakeSummarizer, MemoryStore>;

fn memory(format: Format, cfg: Config, summarizer: Option<FakeSummarizer>) -> Mem {
    let mut cfg = cfg;
    cfg.format = format;
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), summarizer, MemoryStore::new()).unwrap()
}

fn bundled_example() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join("long-conversation.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["messages"].as_array().unwrap().clone()
}

/// Wire roles alternate (Anthropic's strict reading).
fn assert_alternates(messages: &[Value], what: &str) {
    for (i, w) in messages.windows(2).enumerate() {
        assert_ne!(w[0]["role"], w[1]["role"], "{what}: messages {i} and {} are both {}", i + 1, w[0]["role"]);
    }
}

fn check_all(memory: &Mem, format: Format, what: &str) {
    check_with(memory, format, &thinking_of(format, &block_on(memory.original_messages()).expect("the log reads back")), what);
}

/// [`check_all`] with the originals' thinking blocks known in advance (the replay's hot loop).
fn check_with(memory: &Mem, format: Format, known: &std::collections::HashSet<String>, what: &str) {
    let problems = memory.validate();
    assert!(problems.is_empty(), "{what}: invalid {} list: {problems:?}", format.name());
    let working = memory.messages();
    if format == Format::Anthropic {
        assert_alternates(&working, what);
    }
    assert_thinking_intact(format, &working, known, what);
}

fn events(m: &Mem) -> Vec<String> {
    m.events().into_iter().map(|e| e.event_type).collect()
}

fn window_for(target: u64) -> u64 {
    (target as f64 / 0.75).ceil() as u64
}

// ---------------------------------------------------------------------------------------------
// Round trips and validators
// ---------------------------------------------------------------------------------------------

#[test]
fn untouched_messages_come_back_identical_in_every_format() {
    let example = bundled_example();
    for format in Format::ALL {
        let msgs = convert(format, &example);
        let m = memory(format, config(&format!("rt-{}", format.name()), 10_000_000), None);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let out = m.messages();
        assert_eq!(out.len(), msgs.len());
        for (a, b) in out.iter().zip(&msgs) {
            assert!(same_wire(a, b), "{}: {a} differs from {b}", format.name());
        }
        assert!(m.validate().is_empty(), "{}: {:?}", format.name(), m.validate());
        // Byte-exact, key order included.
        assert_eq!(serde_json::to_string(&out).unwrap(), serde_json::to_string(&msgs).unwrap());
    }
}

#[test]
fn converted_lists_are_valid_and_carry_several_results_per_message() {
    let example = bundled_example();
    let a = to_anthropic(&example);
    assert_alternates(&a, "converted");
    assert!(a.iter().any(|m| m["content"].as_array().is_some_and(|c| c.iter().filter(|b| b["type"] == "tool_result").count() > 1)));
    let s = to_ai_sdk(&example);
    assert!(s.iter().any(|m| m["role"] == "tool" && m["content"].as_array().unwrap().len() > 1));
    for (format, msgs) in [(Format::Anthropic, a), (Format::AiSdk, s)] {
        let parsed: Vec<_> = msgs.iter().enumerate().map(|(i, v)| format.parse(i, v).unwrap()).collect();
        assert!(format.validate(&parsed).is_empty(), "{}: {:?}", format.name(), format.validate(&parsed));
    }
}

#[test]
fn validators_enforce_each_providers_rules() {
    let parse = |f: Format, v: Value| -> Vec<autocontext::Message> {
        v.as_array().unwrap().iter().enumerate().map(|(i, m)| f.parse(i, m).unwrap()).collect()
    };
    let codes =
        |f: Format, v: Value| -> Vec<(usize, &'static str)> { f.validate(&parse(f, v)).into_iter().map(|p| (p.index, p.code)).collect() };
    // Anthropic: parallel calls answered in one turn, results first, then text.
    let ok = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "tool_use", "id": "a", "name": "f", "input": {}}, {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "1"},
            {"type": "tool_result", "tool_use_id": "a", "content": "2"}, {"type": "text", "text": "and then?"}]},
        {"role": "assistant", "content": "done"}
    ]);
    assert_eq!(codes(Format::Anthropic, ok), vec![]);
    let bad = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}, {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "wait"}, {"type": "tool_result", "tool_use_id": "a", "content": "1"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", "content": "?"}]}
    ]);
    assert_eq!(
        codes(Format::Anthropic, bad),
        vec![(1, "MISSING_RESULT"), (2, "TOOL_RESULT_NOT_FIRST"), (3, "THINKING_ONLY"), (4, "ROLES_NOT_ALTERNATING"), (5, "ORPHAN_RESULT"),]
    );
    // AI SDK: results by id across one tool message, approvals answered.
    let ok = json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "f", "input": {}},
            {"type": "tool-call", "toolCallId": "b", "toolName": "f", "input": {}},
            {"type": "tool-approval-request", "approvalId": "p1", "toolCallId": "b"}]},
        {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "p1", "approved": true}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "b", "toolName": "f", "output": {"type": "text", "value": "1"}},
            {"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "json", "value": {"n": 2}}}]},
        {"role": "assistant", "content": "done"}
    ]);
    assert_eq!(codes(Format::AiSdk, ok), vec![]);
    let bad = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "f", "input": {}}]},
        {"role": "user", "content": "hurry"},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "text", "value": "late"}}]},
        {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "none", "approved": false}]}
    ]);
    assert_eq!(codes(Format::AiSdk, bad), vec![(1, "MISSING_RESULT"), (3, "ORPHAN_RESULT"), (4, "APPROVAL_WITHOUT_REQUEST")]);
}

#[test]
fn responses_items_of_one_response_open_one_exchange() {
    let parse = |v: &Value| -> Vec<autocontext::Message> {
        v.as_array().unwrap().iter().enumerate().map(|(i, m)| Format::OpenAiResponses.parse(i, m).unwrap()).collect()
    };
    let codes = |v: Value| -> Vec<(usize, &'static str)> {
        Format::OpenAiResponses.validate(&parse(&v)).into_iter().map(|p| (p.index, p.code)).collect()
    };
    // Reasoning, text and two parallel calls in one response, answered out of order, in both
    // spellings; a compaction item and a hosted call travel along.
    let ok = json!([
        {"type": "compaction", "encrypted_content": "ENC"},
        {"role": "user", "content": "read a and b"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "two files"}], "encrypted_content": "E1"},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Reading.", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "a", "name": "read", "arguments": "{}"},
        {"type": "function_call", "callId": "b", "name": "read", "arguments": "{}", "status": "completed"},
        {"type": "function_call_result", "callId": "b", "name": "read", "status": "completed", "output": {"type": "text", "text": "B"}},
        {"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": "A"}]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Both read."}]}
    ]);
    assert_eq!(codes(ok.clone()), vec![]);
    let s = autocontext::structure::Structure::analyze(Format::OpenAiResponses, &parse(&ok), 0);
    assert_eq!(s.unit(5).span, 2..8, "reasoning, text, both calls and both outputs are one exchange");
    assert!(s.unit(5).exchange && s.unit(5).complete);
    assert_eq!(s.unit(8).span, 8..10, "the hosted call stays with the answer of its response");
    let bad = json!([
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"role": "user", "content": "hurry"},
        {"type": "function_call_output", "call_id": "a", "output": "late"},
        {"type": "reasoning", "summary": []},
        {"role": "user", "content": [{"type": "output_text", "text": "I am not the model"}]},
        {"role": "assistant", "content": [{"type": "input_text", "text": "wrong part type"}]}
    ]);
    assert_eq!(
        codes(bad),
        vec![
            (1, "MISSING_RESULT"),
            (3, "ORPHAN_RESULT"),
            (4, "REASONING_WITHOUT_FOLLOWER"),
            (5, "PART_TYPE_FOR_ROLE"),
            (6, "PART_TYPE_FOR_ROLE")
        ]
    );

    // add() takes the items of a response one by one and holds the turn open until every call
    // has its output; errors name the spelling's own id field.
    let m = memory(Format::OpenAiResponses, config("responses-add", 100_000), None);
    let items = ok.as_array().unwrap();
    for item in &items[..6] {
        m.add(item).unwrap();
    }
    let e = m.add(&json!({"role": "user", "content": "well?"})).unwrap_err();
    assert_eq!(e.index(), Some(6), "{}", e.message());
    let e =
        m.add(&json!({"type": "function_call_result", "callId": "zz", "name": "read", "status": "completed", "output": "?"})).unwrap_err();
    assert_eq!((e.index(), e.field()), (Some(6), Some("callId")), "{}", e.message());
    m.add(&Value::Array(items[6..].to_vec())).unwrap();
    assert!(m.validate().is_empty(), "{:?}", m.validate());
    let e = m.add(&json!({"type": "function_call", "call_id": "a", "name": "read", "arguments": "{}"})).unwrap_err();
    assert_eq!((e.index(), e.field()), (Some(10), Some("call_id")), "{}", e.message());
    assert_eq!(m.messages(), items.to_vec(), "untouched items come back as they came");
}

#[test]
fn responses_results_shrink_in_their_own_spelling_and_requests_stay_valid() {
    for sdk in [false, true] {
        let what = if sdk { "agents sdk spelling" } else { "api spelling" };
        let mut openai = Vec::new();
        for r in 0..6 {
            openai.extend(tool_round(&format!("r{r}"), 2, 6_000));
            openai.push(answer(&format!("answer {r}")));
        }
        openai.push(user("and now?"));
        let msgs = to_responses(&openai, sdk);
        let summarizer = FakeSummarizer::digest();
        let mut cfg = config(&format!("responses-{sdk}"), window_for(9_000));
        cfg.tool_result_limit = 3_000;
        let m = memory(Format::OpenAiResponses, cfg, Some(summarizer.clone()));
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed && r.under_target, "{what}: {r:?}");
        check_all(&m, Format::OpenAiResponses, what);
        check_recoverable(&m, what);
        assert_untouched_are_identical(&m, what);
        assert_requests_valid(Format::OpenAiResponses, &summarizer, what);
        assert!(events(&m).contains(&"TOOL_RESULT_TRUNCATE".to_string()), "{what}: {:?}", events(&m));
        assert!(m.working().iter().any(|w| w.synthetic.as_ref().is_some_and(|s| !s.in_place)), "{what}: {:?}", events(&m));
        // Every item the engine rewrote in place kept its type, its spelling and its fields.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        for w in m.working().iter().filter(|w| w.synthetic.as_ref().is_some_and(|s| s.in_place)) {
            let orig =
                msgs.iter().find(|o| o["type"] == w.wire["type"] && o["call_id"] == w.wire["call_id"] && o["callId"] == w.wire["callId"]);
            let orig = orig.unwrap_or_else(|| panic!("{what}: rewritten item matches no original: {}", w.wire));
            assert_eq!(keys(&w.wire), keys(orig), "{what}");
        }
        // What the engine wrote is a user note or a completed assistant message.
        for w in m.working().iter().filter(|w| w.synthetic.as_ref().is_some_and(|s| !s.in_place)) {
            assert!(
                w.wire["role"] == "user" || (w.wire["type"] == "message" && w.wire["content"][0]["type"] == "output_text"),
                "{}",
                w.wire
            );
        }
    }
}

#[test]
fn an_approval_response_keeps_the_exchange_open_until_the_result() {
    let m = memory(Format::AiSdk, config("approval", 100_000), None);
    m.add(&json!([
        {"role": "user", "content": "delete the file"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "d1", "toolName": "rm", "input": {"path": "x"}},
            {"type": "tool-approval-request", "approvalId": "ap", "toolCallId": "d1"}]},
        {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "ap", "approved": true}]}
    ]))
    .unwrap();
    // The call still waits for its result: a new user turn is refused, the result accepted.
    let e = m.add(&json!({"role": "user", "content": "well?"})).unwrap_err();
    assert_eq!(e.index(), Some(3));
    m.add(&json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "d1", "toolName": "rm", "output": {"type": "text", "value": "deleted"}}]}))
        .unwrap();
    m.add(&json!({"role": "assistant", "content": "Deleted."})).unwrap();
    assert!(m.validate().is_empty(), "{:?}", m.validate());
}

#[test]
fn pairing_errors_name_the_formats_own_id_field() {
    let cases = [
        (
            Format::Anthropic,
            json!({"role": "user", "content": [{"type": "text", "text": "x"}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}, {"type": "tool_result", "tool_use_id": "zz", "content": "2"}]}),
            "content[1].tool_use_id",
        ),
        (
            Format::AiSdk,
            json!({"role": "user", "content": "x"}),
            json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "zz", "toolName": "f", "output": {"type": "text", "value": "1"}}]}),
            "content[0].toolCallId",
        ),
    ];
    for (format, first, bad, field) in cases {
        let m = memory(format, config("fields", 100_000), None);
        let call = match format {
            Format::Anthropic => json!({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}),
            _ => json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "f", "input": {}}]}),
        };
        m.add(&json!([first, call])).unwrap();
        let e = m.add(&bad).unwrap_err();
        assert_eq!((e.index(), e.field()), (Some(2), Some(field)), "{}: {}", format.name(), e.message());
        let reuse = match format {
            Format::Anthropic => json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "again"}, {"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]),
            _ => {
                json!([{"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "text", "value": "1"}}]},
                {"role": "assistant", "content": [{"type": "text", "text": "again"}, {"type": "tool-call", "toolCallId": "a", "toolName": "f", "input": {}}]}])
            }
        };
        let e = m.add(&reuse).unwrap_err();
        let want = if format == Format::Anthropic { "content[1].id" } else { "content[1].toolCallId" };
        assert_eq!((e.index(), e.field()), (Some(3), Some(want)), "{}: {}", format.name(), e.message());
    }
}

// ---------------------------------------------------------------------------------------------
// Several results per message, thinking, alternation
// ---------------------------------------------------------------------------------------------

/// One Anthropic round whose user turn answers three parallel calls: two large results and a
/// small one, then the final answer.
fn parallel_round(tag: &str, big: usize) -> Vec<Value> {
    vec![
        json!({"role": "user", "content": format!("question {tag}")}),
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("plan {tag}"), "signature": format!("sig-{tag}")},
            {"type": "tool_use", "id": format!("{tag}-a"), "name": "read", "input": {"p": "a"}},
            {"type": "tool_use", "id": format!("{tag}-b"), "name": "read", "input": {"p": "b"}},
            {"type": "tool_use", "id": format!("{tag}-c"), "name": "read", "input": {"p": "c"}}]}),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("{tag}-a"), "content": filler(&format!("{tag}a"), big)},
            {"type": "tool_result", "tool_use_id": format!("{tag}-b"), "content": [{"type": "text", "text": filler(&format!("{tag}b"), big)}]},
            {"type": "tool_result", "tool_use_id": format!("{tag}-c"), "content": "small", "is_error": true}]}),
        json!({"role": "assistant", "content": format!("answer {tag}")}),
    ]
}

fn results_of(m: &Value) -> Vec<(String, String)> {
    m["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let text = match &b["content"] {
                Value::String(s) => s.clone(),
                Value::Array(a) => a.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
                _ => String::new(),
            };
            (b["tool_use_id"].as_str().unwrap().to_string(), text)
        })
        .collect()
}

#[test]
fn truncation_shrinks_each_large_result_of_a_turn_and_keeps_every_id() {
    let msgs = parallel_round("t", 30_000);
    let mut cfg = config("multi-trunc", window_for(12_000));
    cfg.tool_result_limit = 5_000;
    let m = memory(Format::Anthropic, cfg, None);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.under_target, "{r:?}");
    assert_eq!(events(&m), vec!["TOOL_RESULT_TRUNCATE"], "one edit for the whole turn");
    let out = m.messages();
    let results = results_of(&out[2]);
    assert_eq!(results.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), vec!["t-a", "t-b", "t-c"]);
    assert!(results[0].1.contains("CONTEXT_OFFLOAD") && results[1].1.contains("CONTEXT_OFFLOAD"));
    assert_eq!(results[2].1, "small");
    assert_eq!(out[2]["content"][2]["is_error"], true, "is_error survives");
    check_all(&m, Format::Anthropic, "multi-trunc");
    check_recoverable(&m, "multi-trunc");
}

#[test]
fn offload_and_current_round_summaries_handle_several_results_per_message() {
    // Offload: an earlier round's multi-result turn shrinks to one preview per result.
    let mut msgs = parallel_round("o", 8_000);
    msgs.extend(parallel_round("p", 100));
    msgs.push(json!({"role": "user", "content": "now?"}));
    let mut cfg = config("multi-offload", window_for(2_500));
    cfg.last_keep = 1;
    let m = memory(Format::Anthropic, cfg, None);
    m.add(&Value::Array(msgs)).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    assert!(events(&m).iter().any(|e| e.starts_with("LARGE_MESSAGE_OFFLOAD")), "{:?}", events(&m));
    let results = results_of(&m.messages()[2]);
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|(_, t)| t.contains("CONTEXT_OFFLOAD")));
    check_all(&m, Format::Anthropic, "multi-offload");
    check_recoverable(&m, "multi-offload");

    // Current round, answered: the summary is written once, the other results point to it.
    let mut msgs = parallel_round("c", 9_000);
    msgs.pop();
    msgs.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c-d", "name": "read", "input": {}}]}));
    msgs.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c-d", "content": "tiny"}]}));
    let summarizer = FakeSummarizer::fixed("digest of the three files");
    let mut cfg = config("multi-current", window_for(2_500));
    cfg.large_payload_threshold = 100_000;
    cfg.offload_single_preview = 100;
    let m = memory(Format::Anthropic, cfg, Some(summarizer.clone()));
    m.add(&Value::Array(msgs)).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    assert_eq!(events(&m), vec!["CURRENT_ROUND_MESSAGE_COMPRESS"]);
    let out = m.messages();
    let results = results_of(&out[2]);
    assert_eq!(results.iter().filter(|(_, t)| t.contains("digest of the three files")).count(), 1, "{results:?}");
    assert!(results[1].1.starts_with("[Summarized together with the result of c-a.]"));
    assert_eq!(out[1], block_on(m.original_messages()).expect("the log reads back")[1], "the calling turn, thinking and all, is untouched");
    check_all(&m, Format::Anthropic, "multi-current");
    check_recoverable(&m, "multi-current");
}

#[test]
fn a_rewritten_assistant_turn_keeps_its_signed_thinking_first() {
    for format in [Format::Anthropic, Format::AiSdk] {
        let long = filler("explain", 12_000);
        let msgs = match format {
            Format::Anthropic => vec![
                json!({"role": "user", "content": "fix it"}),
                json!({"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "I should look first.", "signature": "SIG-1"},
                    {"type": "redacted_thinking", "data": "ENCRYPTED"},
                    {"type": "text", "text": long},
                    {"type": "tool_use", "id": "x1", "name": "read", "input": {"p": 1}}]}),
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x1", "content": "ok"}]}),
                json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "done", "signature": "SIG-2"},
                    {"type": "tool_use", "id": "x2", "name": "read", "input": {"p": 2}}]}),
            ],
            _ => vec![
                json!({"role": "user", "content": "fix it"}),
                json!({"role": "assistant", "content": [
                    {"type": "reasoning", "text": "I should look first.", "providerOptions": {"anthropic": {"signature": "SIG-1"}}},
                    {"type": "text", "text": long},
                    {"type": "tool-call", "toolCallId": "x1", "toolName": "read", "input": {"p": 1}}]}),
                json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "x1", "toolName": "read", "output": {"type": "text", "value": "ok"}}]}),
                json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "x2", "toolName": "read", "input": {"p": 2}}]}),
            ],
        };
        let mut cfg = config("thinking", window_for(2_000));
        cfg.large_payload_threshold = 5_000;
        let m = memory(format, cfg, Some(FakeSummarizer::fixed("short version")));
        m.add(&Value::Array(msgs.clone())).unwrap();
        block_on(m.compress_if_needed()).unwrap();
        assert_eq!(events(&m), vec!["CURRENT_ROUND_LARGE_MESSAGE_SUMMARY"], "{}", format.name());
        let out = m.messages();
        let before = msgs[1]["content"].as_array().unwrap();
        let after = out[1]["content"].as_array().unwrap();
        let kept = if format == Format::Anthropic { 2 } else { 1 };
        assert_eq!(&after[..kept], &before[..kept], "{}: thinking byte-exact and first", format.name());
        assert!(after[kept]["text"].as_str().unwrap().starts_with("short version"));
        assert_eq!(after[kept + 1], before[kept + 1], "the call is the same block");
        check_all(&m, format, "thinking");
        check_recoverable(&m, "thinking");
    }
}

/// A Gemini function-call turn of one call to `read`, signed (as Gemini 3 signs its first call)
/// when `sig` is given, with an optional text part before the call.
fn gemini_call(text: Option<&str>, p: u32, sig: Option<&str>) -> Value {
    let mut call = json!({"functionCall": {"name": "read", "args": {"p": p}}});
    if let Some(sig) = sig {
        call["thoughtSignature"] = json!(sig);
    }
    let mut parts = vec![json!({"text": format!("Thinking about {p}."), "thought": true})];
    if let Some(t) = text {
        parts.push(json!({"text": t}));
    }
    parts.push(call);
    json!({"role": "model", "parts": parts})
}

fn gemini_response(output: &str) -> Value {
    json!({"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"output": output}}}]})
}

#[test]
fn gemini_turns_pair_without_ids_and_add_refuses_what_the_api_refuses() {
    let m = memory(Format::Gemini, config("gemini-add", 100_000), None);
    m.add(&json!([
        {"role": "user", "parts": [{"text": "read a, b and the list"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"p": "a"}}}, {"functionCall": {"name": "ls", "args": {}}},
            {"functionCall": {"name": "read", "args": {"p": "b"}}}]}
    ]))
    .unwrap();
    // The responses, in another order than the calls, with no ids: they pair by name.
    let answer = json!({"role": "user", "parts": [
        {"functionResponse": {"name": "ls", "response": {"output": "a b"}}},
        {"functionResponse": {"name": "read", "response": {"output": "A"}}},
        {"functionResponse": {"name": "read", "response": {"output": "B"}}}]});
    m.add(&answer).unwrap();
    let w = m.working();
    let calls: Vec<&str> = w[1].call_ids().collect();
    assert_eq!(w[2].result_ids().collect::<Vec<_>>(), vec![calls[1], calls[0], calls[2]]);
    // A second response turn answers nothing: the API wants all of them in the turn after the calls.
    let e = m.add(&gemini_response("late")).unwrap_err();
    assert_eq!((e.index(), e.field()), (Some(3), Some("parts[0].functionResponse")), "{}", e.message());
    // The same turn again later gets ids of its own (add refuses a reused id).
    m.add(&json!([{"role": "model", "parts": [{"text": "Done."}]}, {"role": "user", "parts": [{"text": "again"}]}, w[1].wire, answer]))
        .unwrap();
    assert!(m.validate().is_empty(), "{:?}", m.validate());
    assert_eq!(m.messages()[5], w[1].wire, "ids never reach the wire");
    // A call turn after a model turn is refused by the validator, as the API refuses it.
    let codes: Vec<&str> = Format::Gemini
        .validate(&[
            Format::Gemini.parse(0, &json!({"role": "user", "parts": [{"text": "x"}]})).unwrap(),
            Format::Gemini.parse(1, &json!({"role": "model", "parts": [{"text": "hm"}]})).unwrap(),
            Format::Gemini.parse(2, &gemini_call(None, 1, None)).unwrap(),
        ])
        .into_iter()
        .map(|p| p.code)
        .collect();
    assert_eq!(codes, vec!["CALL_NOT_AFTER_USER"]);
}

#[test]
fn gemini_signed_turns_of_the_current_tool_loop_are_never_rewritten() {
    // Gemini 3 in one long turn: every step signs its first call; an answered step carries a
    // long text. No step may rewrite a signed turn of the current turn in place.
    let long = filler("explain", 12_000);
    let msgs = vec![
        json!({"role": "user", "parts": [{"text": "fix it"}]}),
        gemini_call(Some(&long), 1, Some("SIG-1")),
        gemini_response("ok"),
        gemini_call(None, 2, Some("SIG-2")),
    ];
    let mut cfg = config("gemini-signed", window_for(2_000));
    cfg.large_payload_threshold = 5_000;
    let summarizer = FakeSummarizer::fixed("short version");
    let m = memory(Format::Gemini, cfg, Some(summarizer.clone()));
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.under_target || r.exhausted, "{r:?}");
    assert!(!events(&m).contains(&"CURRENT_ROUND_LARGE_MESSAGE_SUMMARY".to_string()), "{:?}", events(&m));
    check_all(&m, Format::Gemini, "signed");
    check_recoverable(&m, "signed");
    let out = m.messages();
    assert_eq!(out.last().unwrap(), &msgs[3], "the unread step is as it came");
    for w in &out {
        for p in w["parts"].as_array().unwrap() {
            if p.get("thoughtSignature").is_some() {
                assert!(msgs.iter().any(|o| o["parts"].as_array().unwrap().contains(p)), "a signed part was rewritten: {p}");
            }
        }
    }
    // The same step in an earlier round may shrink: its call keeps its signature, its text is new.
    let mut earlier = msgs.clone();
    earlier.push(gemini_response("ok"));
    earlier.push(json!({"role": "model", "parts": [{"text": "Fixed."}]}));
    earlier.push(json!({"role": "user", "parts": [{"text": "thanks; one more thing"}]}));
    earlier.push(json!({"role": "model", "parts": [{"text": "Sure."}]}));
    earlier.push(json!({"role": "user", "parts": [{"text": "what now?"}]}));
    let mut cfg = config("gemini-signed-earlier", window_for(1_500));
    cfg.large_payload_threshold = 5_000;
    cfg.last_keep = 1;
    let m = memory(Format::Gemini, cfg, None);
    m.add(&Value::Array(earlier.clone())).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    assert!(events(&m).iter().any(|e| e.starts_with("LARGE_MESSAGE_OFFLOAD")), "{:?}", events(&m));
    let shrunk = &m.messages()[1];
    let parts = shrunk["parts"].as_array().unwrap();
    assert_eq!(parts[0], earlier[1]["parts"][0], "the thought first, as it was");
    assert!(parts[1]["text"].as_str().unwrap().contains("CONTEXT_OFFLOAD") && parts[1].get("thoughtSignature").is_none());
    assert_eq!(parts[2], earlier[1]["parts"][2], "the call part keeps its signature");
    check_all(&m, Format::Gemini, "signed earlier");
    check_recoverable(&m, "signed earlier");
}

#[test]
fn gemini_notes_are_user_or_model_text_and_requests_stay_valid() {
    let mut openai = Vec::new();
    for r in 0..6 {
        openai.extend(tool_round(&format!("g{r}"), 2, 6_000));
        openai.push(answer(&format!("answer {r}")));
    }
    openai.push(user("and now?"));
    let msgs = to_gemini(&openai);
    let summarizer = FakeSummarizer::digest();
    // The default ladder, prefix summary included.
    let cfg = Config { session_id: "gemini-notes".into(), max_token: window_for(9_000), tool_result_limit: 3_000, ..Config::default() };
    let m = memory(Format::Gemini, cfg, Some(summarizer.clone()));
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    check_all(&m, Format::Gemini, "notes");
    check_recoverable(&m, "notes");
    assert_untouched_are_identical(&m, "notes");
    assert!(!assert_requests_valid(Format::Gemini, &summarizer, "notes").is_empty(), "{:?}", events(&m));
    for w in m.working().iter().filter(|w| w.synthetic.as_ref().is_some_and(|s| !s.in_place)) {
        let role = w.wire["role"].as_str().unwrap();
        assert!(role == "user" || role == "model", "{}", w.wire);
        assert!(w.wire["parts"].as_array().unwrap().iter().all(|p| p["text"].is_string()), "{}", w.wire);
    }
    // A truncated response keeps its name and its response key.
    let truncated = m.working().into_iter().find(|w| w.synthetic.as_ref().is_some_and(|s| s.kind == "TOOL_RESULT_TRUNCATE"));
    let t = truncated.expect("a truncation").wire.clone();
    let f = &t["parts"][0]["functionResponse"];
    assert_eq!(f["name"], "read_file");
    assert!(f["response"]["output"].as_str().or(f["response"]["result"].as_str()).unwrap().contains("CONTEXT_OFFLOAD"), "{t}");
}

#[test]
fn the_engines_own_messages_keep_anthropic_turns_alternating() {
    // Long earlier rounds of tool work, each ending in an answer, then a current question:
    // every summary, notice and rollup must fit between user and assistant turns.
    let mut openai = Vec::new();
    for r in 0..8 {
        openai.extend(tool_round(&format!("r{r}"), 2, 3_000));
        openai.push(answer(&format!("follow-up remark {r}")));
    }
    openai.push(user("and now the last question"));
    let msgs = to_anthropic(&openai);
    assert_alternates(&msgs, "input");
    let cases: [(&str, Option<FakeSummarizer>, u32); 3] =
        [("no-llm", None, 40), ("llm", Some(FakeSummarizer::digest()), 40), ("rollup", Some(FakeSummarizer::digest()), 12)];
    for (name, summarizer, threshold) in cases {
        let mut cfg = config(&format!("alt-{name}"), window_for(3_000));
        cfg.msg_threshold = threshold;
        cfg.last_keep = 2;
        cfg.min_compression_token_threshold = 500;
        cfg.min_consecutive_tool_messages = 1;
        cfg.history_rollup_keep_recent_rounds = 1;
        cfg.history_rollup_keep_recent_tokens = 100;
        let m = memory(Format::Anthropic, cfg, summarizer);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed, "{name}: {r:?}");
        check_all(&m, Format::Anthropic, name);
        check_recoverable(&m, name);
        assert_untouched_are_identical(&m, name);
        // A later pass over the compressed list keeps it alternating too.
        m.add(&json!({"role": "assistant", "content": filler("late", 4_000)})).unwrap();
        m.add(&json!({"role": "user", "content": "one more"})).unwrap();
        block_on(m.compress_if_needed()).unwrap();
        check_all(&m, Format::Anthropic, name);
        check_recoverable(&m, name);
        let last = m.messages().last().cloned().unwrap();
        assert_eq!(last, json!({"role": "user", "content": "one more"}), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Reload tool, pages, tokens, state
// ---------------------------------------------------------------------------------------------

#[test]
fn reload_tool_definitions_follow_each_format() {
    let oa = Format::OpenAi.reload_tool();
    assert_eq!(oa["type"], "function");
    assert_eq!(oa["function"]["name"], "context_reload");
    assert_eq!(oa["function"]["parameters"]["required"], json!(["working_context_offload_uuid"]));
    assert_eq!(oa["function"]["parameters"]["properties"]["page"]["type"], "integer");
    let an = Format::Anthropic.reload_tool();
    assert_eq!(an["name"], "context_reload");
    assert_eq!(an["input_schema"], oa["function"]["parameters"]);
    let ai = Format::AiSdk.reload_tool();
    assert_eq!(ai["inputSchema"], oa["function"]["parameters"]);
    assert!(ai["description"].as_str().unwrap().contains("CONTEXT_OFFLOAD"));
    assert!(ai.get("name").is_none(), "the AI SDK names tools by their key");
    let rs = Format::OpenAiResponses.reload_tool();
    assert_eq!((&rs["type"], &rs["name"], &rs["strict"]), (&json!("function"), &json!("context_reload"), &json!(false)));
    assert_eq!(rs["parameters"], oa["function"]["parameters"]);
}

fn offloaded(format: Format, limit: u32) -> (Mem, String) {
    let mut cfg = config(&format!("reload-{}", format.name()), window_for(1_500));
    cfg.tool_result_limit = 1_000;
    cfg.offload_reload_limit = limit;
    let m = memory(format, cfg, None);
    let msgs = convert(format, &[user("read it"), assistant_calls(&["r1"]), tool_result("r1", 9_000), answer("read")]);
    m.add(&Value::Array(msgs)).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    let uuid = m.offloads()[0].uuid.clone();
    (m, uuid)
}

#[test]
fn handle_reload_call_takes_each_formats_call_and_pages_long_content() {
    for format in Format::ALL {
        let (m, uuid) = offloaded(format, 100_000);
        let args = json!({"working_context_offload_uuid": uuid});
        let call = match format {
            Format::OpenAi => json!({"id": "c", "type": "function", "function": {"name": "context_reload", "arguments": args.to_string()}}),
            Format::Anthropic => json!({"type": "tool_use", "id": "c", "name": "context_reload", "input": args}),
            Format::AiSdk => json!({"type": "tool-call", "toolCallId": "c", "toolName": "context_reload", "input": args}),
            Format::OpenAiResponses => {
                json!({"type": "function_call", "call_id": "c", "name": "context_reload", "arguments": args.to_string()})
            }
            Format::Gemini => json!({"functionCall": {"name": "context_reload", "args": args}}),
        };
        let whole = block_on(m.handle_reload_call(&call)).unwrap();
        assert!(whole.starts_with(&format!("Original content of offload {uuid} (1 message):")), "{}: {whole:.200}", format.name());
        // Gemini's first call turn of a converted trace has no ids: its own is made up.
        let id = if format == Format::Gemini { "<tool_result id=\"read_file#1" } else { "<tool_result id=\"r1\">" };
        assert!(whole.contains(id), "{}: readable transcript, not JSON: {whole:.300}", format.name());
        assert!(!whole.contains("\"tool_call_id\""));
        assert_eq!(block_on(m.handle_reload_call(&args)).unwrap(), whole, "{}: parsed arguments work too", format.name());

        // Paged: every page within the limit, together the whole transcript, each pointing on.
        let (m, uuid) = offloaded(format, 2_000);
        let mut body = String::new();
        let mut page = 1;
        loop {
            let text = block_on(m.handle_reload_call(&json!({"working_context_offload_uuid": uuid, "page": page}))).unwrap();
            assert!(text.chars().count() <= 2_000, "{}: page {page} has {} chars", format.name(), text.chars().count());
            let (head, rest) = text.split_once(":\n").unwrap();
            assert!(head.ends_with(&format!("page {page} of ")) || head.contains(&format!("page {page} of")), "{head}");
            let (chunk, note) = rest.rsplit_once("\n[Page ").unwrap();
            body.push_str(chunk);
            if note.contains("the end of offload") {
                break;
            }
            assert!(note.contains(&format!("page {}", page + 1)), "{note}");
            page += 1;
            assert!(page < 50);
        }
        assert!(page >= 5, "9000 characters in pages of under 2000");
        let whole_body = whole.split_once(":\n").unwrap().1.to_string();
        assert_eq!(body, whole_body, "{}: the pages are the transcript", format.name());
        let past = block_on(m.handle_reload_call(&json!({"working_context_offload_uuid": uuid, "page": page + 1}))).unwrap();
        assert!(past.contains(&format!("has {page} pages")), "{past}");
        let bad = block_on(m.handle_reload_call(&json!({"working_context_offload_uuid": uuid, "page": 0}))).unwrap();
        assert!(bad.contains("whole number from 1"), "{bad}");
    }
}

#[test]
fn tokens_count_what_is_sent_in_every_format() {
    let counter = TokenCounter::new(Tokenizer::O200kBase).unwrap();
    let conv = [user("read it"), assistant_calls(&["k1"]), tool_result("k1", 4_000), answer("it says hello")];
    let totals: Vec<u64> = Format::ALL
        .iter()
        .map(|&f| convert(f, &conv).iter().enumerate().map(|(i, v)| counter.count_message(&f.parse(i, v).unwrap()).unwrap() as u64).sum())
        .collect();
    // Text, arguments and results are counted alike; only framing differs.
    let text = counter.count_text(&filler("k1", 4_000)).unwrap() as u64;
    for (f, t) in Format::ALL.iter().zip(&totals) {
        assert!(*t > text && *t < text + 60, "{}: {t} tokens for {text} tokens of result", f.name());
    }
    // Images and documents count their fixed estimates.
    let img = Format::Anthropic
        .parse(
            0,
            &json!({"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}}]}),
        )
        .unwrap();
    assert_eq!(
        counter.count_message(&img).unwrap(),
        4 + autocontext::format::anthropic::IMAGE_TOKENS + autocontext::format::anthropic::DOCUMENT_TOKENS
    );
    let img = Format::AiSdk
        .parse(0, &json!({"role": "user", "content": [{"type": "image", "image": "https://x/y.png"}, {"type": "file", "data": "JVBE", "mediaType": "application/pdf"}]}))
        .unwrap();
    assert_eq!(
        counter.count_message(&img).unwrap(),
        4 + autocontext::format::ai_sdk::IMAGE_TOKENS + autocontext::format::ai_sdk::FILE_TOKENS
    );
    // reservedTokens counts against the window in every format.
    for format in Format::ALL {
        let mut cfg = config("reserved", 100_000);
        cfg.reserved_tokens = 5_000;
        let m = memory(format, cfg, None);
        m.add(&Value::Array(convert(format, &conv))).unwrap();
        let plain = memory(format, config("plain", 100_000), None);
        plain.add(&Value::Array(convert(format, &conv))).unwrap();
        assert_eq!(m.token_count(), plain.token_count() + 5_000);
    }
}

#[test]
fn state_round_trips_in_every_format() {
    for format in [Format::Anthropic, Format::AiSdk, Format::OpenAiResponses, Format::Gemini] {
        let (m, uuid) = offloaded(format, 16_000);
        let state = m.to_json();
        assert_eq!(state["config"]["format"], format.name());
        let restored: Mem = AutoContextMemory::from_json(&state, None, MemoryStore::new(), None).unwrap();
        assert_eq!(restored.messages(), m.messages());
        assert_eq!(restored.token_count(), m.token_count());
        assert_eq!(restored.config().format, format);
        assert!(restored.offloads().iter().any(|o| o.uuid == uuid));
    }
    // A host's non-alternating Anthropic list restores (the API merges such turns).
    let m = memory(Format::Anthropic, config("two-users", 100_000), None);
    m.add(&json!([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])).unwrap();
    assert_eq!(m.validate()[0].code, "ROLES_NOT_ALTERNATING");
    let restored: Mem = AutoContextMemory::from_json(&m.to_json(), None, MemoryStore::new(), None).unwrap();
    assert_eq!(restored.messages().len(), 2);
}

// ---------------------------------------------------------------------------------------------
// Replay in the Anthropic, AI SDK and Responses shapes
// ---------------------------------------------------------------------------------------------

const WINDOW: u64 = 32_000;

/// Replays a converted trace message by message, with a pass before every model turn, and
/// checks validity, alternation and thinking after every pass, recoverability every fiftieth
/// turn and at the end, and the messages of every summarize request. Returns (turns, events,
/// final tokens).
fn replay(format: Format, name: &str, msgs: &[Value], llm: bool) -> (usize, usize, u64) {
    let session_id = format!("fmt-{}-{}", format.name(), name.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
    let cfg = Config { max_token: WINDOW, session_id, ..Config::default() };
    let summarizer = FakeSummarizer::digest();
    let m = memory(format, cfg, llm.then(|| summarizer.clone()));
    let what = format!("{name} ({}, {})", format.name(), if llm { "fake LLM" } else { "no LLM" });
    let known = thinking_of(format, msgs);
    let mut turns = 0;
    for (i, v) in msgs.iter().enumerate() {
        if starts_response(format, msgs, i) {
            let r = block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("{what}: pass before message {i}: {e:?}"));
            assert!(r.under_target || r.exhausted, "{what}: {r:?}");
            check_with(&m, format, &known, &format!("{what}, before message {i}"));
            turns += 1;
            // Recoverability mid-trace is replay.rs's job (the OpenAI shape); here at a few
            // points and at the end.
            if turns % 50 == 0 {
                check_recoverable(&m, &format!("{what}, before message {i}"));
            }
        }
        m.add(v).unwrap_or_else(|e| panic!("{what}: add of message {i}: {e:?}"));
    }
    check_all(&m, format, &what);
    let rec = check_recoverable(&m, &what);
    assert_eq!(rec.in_working + rec.via_reload, msgs.len(), "{what}");
    assert_untouched_are_identical(&m, &what);
    assert_eq!(block_on(m.original_messages()).expect("the log reads back"), msgs, "{what}: the original log is the trace");
    assert!(validate_tool_pairing(format, &m.working()).is_empty());
    assert_requests_valid(format, &summarizer, &what);
    (turns, m.events().len(), m.token_count())
}

#[test]
fn the_bundled_example_replays_in_the_anthropic_ai_sdk_responses_and_gemini_shapes() {
    // The shared corpus replays in every shape in replay.rs; here the bundled example, which
    // the repository carries.
    let traces = [("bundled-example".to_string(), bundled_example())];
    TokenCounter::new(Tokenizer::O200kBase).unwrap().count_text("warm up").unwrap();
    let mut jobs: Vec<(usize, Format, bool)> = Vec::new();
    for i in 0..traces.len() {
        for format in [Format::Anthropic, Format::AiSdk, Format::OpenAiResponses, Format::Gemini] {
            for llm in [false, true] {
                jobs.push((i, format, llm));
            }
        }
    }
    jobs.sort_by_key(|&(i, _, _)| traces[i].1.len());
    // The Responses shape takes the Agents SDK's spelling in every other trace.
    let converted: Vec<[Vec<Value>; 4]> =
        traces.iter().enumerate().map(|(i, (_, m))| [to_anthropic(m), to_ai_sdk(m), to_responses(m, i % 2 == 1), to_gemini(m)]).collect();
    // Round-trip identity first: every trace in every shape comes back byte-exact.
    for ((name, openai), shapes) in traces.iter().zip(&converted) {
        for (format, msgs) in [
            (Format::OpenAi, openai),
            (Format::Anthropic, &shapes[0]),
            (Format::AiSdk, &shapes[1]),
            (Format::OpenAiResponses, &shapes[2]),
            (Format::Gemini, &shapes[3]),
        ] {
            let m = memory(format, config("identity", 1_000_000_000), None);
            m.add(&Value::Array(msgs.clone())).unwrap_or_else(|e| panic!("{name} ({}): {e:?}", format.name()));
            assert_eq!(serde_json::to_string(&m.messages()).unwrap(), serde_json::to_string(msgs).unwrap(), "{name} ({})", format.name());
            assert!(m.validate().is_empty(), "{name} ({}): {:?}", format.name(), m.validate());
        }
    }
    let jobs = Mutex::new(jobs);
    let rows = Mutex::new(Vec::new());
    let start = Instant::now();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some((i, format, llm)) = jobs.lock().unwrap().pop() else { break };
                let msgs = &converted[i][match format {
                    Format::Anthropic => 0,
                    Format::AiSdk => 1,
                    Format::OpenAiResponses => 2,
                    _ => 3,
                }];
                let row = replay(format, &traces[i].0, msgs, llm);
                rows.lock().unwrap().push((traces[i].0.clone(), format.name(), llm, msgs.len(), row));
            });
        }
    });
    let mut rows = rows.into_inner().unwrap();
    rows.sort();
    let mut report = format!("\nformat replay: {} runs in {} ms\n", rows.len(), start.elapsed().as_millis());
    for (name, format, llm, n, (turns, events, tokens)) in &rows {
        report.push_str(&format!(
            "  {name:<58} {format:<9} {:<8} {n:>4} msgs {turns:>4} turns {events:>4} events {tokens:>6} final tokens\n",
            if *llm { "fake LLM" } else { "no LLM" }
        ));
    }
    let _ = std::io::stderr().write_all(report.as_bytes());
    assert_eq!(rows.len(), traces.len() * 8);
}

// ---------------------------------------------------------------------------------------------
// Robustness in the new shapes
// ---------------------------------------------------------------------------------------------

const WORDS: [&str; 16] = [
    "",
    "user",
    "assistant",
    "tool",
    "system",
    "text",
    "tool_use",
    "tool_result",
    "tool-call",
    "tool-result",
    "reasoning",
    "thinking",
    "image",
    "x",
    "日本語🦀",
    "<!-- CONTEXT_OFFLOAD: uuid=",
];
const FIELDS: [&str; 14] = [
    "role",
    "content",
    "type",
    "text",
    "id",
    "name",
    "input",
    "tool_use_id",
    "toolCallId",
    "toolName",
    "output",
    "value",
    "is_error",
    "approvalId",
];

fn junk(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth == 0 { 4 } else { 6 }) {
        0 => Value::Null,
        1 => json!(rng.below(3) as i64 - 1),
        2 => json!(WORDS[rng.below(WORDS.len() as u64) as usize]),
        3 => json!(rng.below(2) == 0),
        4 => Value::Array((0..rng.below(4)).map(|_| junk(rng, depth - 1)).collect()),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.below(5) {
                m.insert(FIELDS[rng.below(FIELDS.len() as u64) as usize].into(), junk(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

#[test]
fn random_input_in_every_format_is_accepted_or_a_typed_error() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for format in Format::ALL {
        let m = memory(format, config("junk", 50_000), None);
        for _ in 0..3_000 {
            let v = match rng.below(3) {
                0 => junk(&mut rng, 4),
                _ => json!({"role": WORDS[rng.below(5) as usize], "content": junk(&mut rng, 3)}),
            };
            if let Err(e) = m.add(&v) {
                assert!(matches!(e.code(), autocontext::ErrorCode::InvalidMessage), "{}: {e:?} for {v}", format.name());
                assert!(e.index().is_some(), "{e:?}");
            }
        }
        assert!(validate_tool_pairing(format, &m.working()).is_empty(), "{}", format.name());
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.under_target || r.exhausted, "{r:?}");
        assert!(validate_tool_pairing(format, &m.working()).is_empty(), "{}", format.name());
        check_recoverable(&m, format.name());
    }
}

#[test]
fn random_sessions_under_extreme_options_stay_valid_in_every_shape() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..12 {
        let mut openai = Vec::new();
        for r in 0..(3 + rng.below(6)) {
            let tag = format!("s{case}r{r}");
            openai.extend(tool_round(&tag, 1 + rng.below(3) as usize, 200 + rng.below(9_000) as usize));
            if rng.below(3) == 0 {
                openai.push(answer(&filler(&tag, rng.below(7_000) as usize + 1)));
            }
        }
        openai.push(user("go on"));
        for format in [Format::Anthropic, Format::AiSdk, Format::OpenAiResponses, Format::Gemini] {
            let msgs = convert(format, &openai);
            let mut cfg = config(&format!("rand-{case}-{}", format.name()), 1_000 + rng.below(12_000));
            cfg.msg_threshold = 4 + rng.below(40) as u32;
            cfg.last_keep = rng.below(u64::from(cfg.msg_threshold) / 2) as u32;
            cfg.tool_result_limit = 100 + rng.below(6_000) as u32;
            cfg.large_payload_threshold = 300 + rng.below(6_000) as u32;
            cfg.offload_single_preview = 50;
            cfg.min_compression_token_threshold = 1 + rng.below(2_000) as u32;
            cfg.min_consecutive_tool_messages = 1 + rng.below(4) as u32;
            cfg.history_rollup_keep_recent_rounds = rng.below(3) as u32;
            cfg.history_rollup_keep_recent_tokens = rng.below(3_000);
            let summarizer = match rng.below(4) {
                0 => None,
                1 => Some(FakeSummarizer::failing("boom")),
                2 => Some(FakeSummarizer::empty()),
                _ => Some(FakeSummarizer::digest()),
            };
            let m = memory(format, cfg, summarizer);
            let what = format!("case {case}, {}", format.name());
            for (i, v) in msgs.iter().enumerate() {
                if starts_response(format, &msgs, i) || i + 1 == msgs.len() {
                    block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("{what}: {e:?}"));
                    check_all(&m, format, &what);
                }
                m.add(v).unwrap_or_else(|e| panic!("{what}: add {i}: {e:?}"));
            }
            block_on(m.compress_if_needed()).unwrap();
            check_all(&m, format, &what);
            check_recoverable(&m, &what);
            assert_untouched_are_identical(&m, &what);
        }
    }
}

#[test]
fn every_preset_keeps_every_shape_valid() {
    let mut openai = Vec::new();
    for r in 0..10 {
        openai.extend(tool_round(&format!("p{r}"), 1 + r % 3, 1_500 + 700 * (r % 4)));
        if r % 3 == 0 {
            openai.push(answer(&filler(&format!("p{r}"), 2_500)));
        }
    }
    openai.push(user("what next?"));
    for preset in ["agentscope", "prefix-summary", "facts", "turns"] {
        for format in [Format::Anthropic, Format::AiSdk, Format::OpenAiResponses, Format::Gemini] {
            let what = format!("{preset}, {}", format.name());
            let mut options = json!({
                "preset": preset, "format": format.name(), "maxToken": 6_000, "msgThreshold": 30, "lastKeep": 4,
                "sessionId": format!("preset-{preset}"),
            });
            if preset == "turns" {
                options["maxContextTurns"] = json!(4);
            }
            if preset == "facts" {
                options["concepts"] = json!([{"keyword": "file", "description": "files read", "factType": "multiple"}]);
            }
            let cfg = Config::from_json(&options).unwrap_or_else(|e| panic!("{what}: {e:?}"));
            let m = memory(format, cfg, Some(FakeSummarizer::digest()));
            let msgs = convert(format, &openai);
            let mut passes = 0;
            for (i, v) in msgs.iter().enumerate() {
                if starts_response(format, &msgs, i) {
                    block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("{what}: pass before {i}: {e:?}"));
                    check_all(&m, format, &what);
                    passes += 1;
                }
                m.add(v).unwrap_or_else(|e| panic!("{what}: add {i}: {e:?}"));
            }
            block_on(m.compress_if_needed()).unwrap();
            check_all(&m, format, &what);
            check_recoverable(&m, &what);
            assert_untouched_are_identical(&m, &what);
            assert!(passes > 10 && !m.events().is_empty(), "{what}: {:?}", m.events());
        }
    }
}
