//! Summarize requests shared with the agent's prompt cache (`summarizeFromCache`): in every
//! format, the request's messages are the agent's request byte for byte, then one instruction
//! that names the span, and the whole is a request the provider accepts. Without the option a
//! summary of history reads long tool results as head and tail (`summaryResultLimit`).

mod common;

use autocontext::{AutoContextMemory, Config, Format, MemoryStore, Strategy};
use common::*;
use serde_json::{json, Value};

/// An agent run: a task, rounds of tool work, the newest results not answered yet.
fn agent_run() -> Vec<Value> {
    let mut msgs = vec![system("agent"), user("investigate the failing tests")];
    for r in 0..6 {
        msgs.extend(tool_round(&format!("r{r}"), 2, 2_500));
    }
    msgs.push(user("and the last one?"));
    msgs.push(assistant_calls(&["last-c0"]));
    msgs.push(tool_result("last-c0", 600));
    msgs
}

fn memory(format: Format, shared: bool, strategies: Vec<Strategy>) -> (AutoContextMemory<FakeSummarizer, MemoryStore>, FakeSummarizer) {
    let msgs = convert(format, &agent_run());
    let mut cfg = Config {
        format,
        max_token: (tokens_of(&agent_run()) as f64 / 0.75 / 2.0) as u64,
        session_id: format!("shared-{}", format.name()),
        ..Config::default()
    };
    cfg.summarize_from_cache = shared;
    cfg.strategies = Some(strategies);
    cfg.min_compression_token_threshold = 500;
    let s = FakeSummarizer::fixed("the agent ran the tests and read the sources");
    let m = AutoContextMemory::new(cfg, s.clone(), MemoryStore::new()).unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    (m, s)
}

#[test]
fn shared_requests_are_the_agents_request_then_one_instruction_in_every_format() {
    for format in Format::ALL {
        for ladder in [vec![Strategy::PrefixSummary], vec![Strategy::PreviousRoundSummary]] {
            let what = format!("{} {:?}", format.name(), ladder);
            let (m, s) = memory(format, true, ladder);
            let sent = m.messages();
            let r = block_on(m.compress_if_needed()).unwrap();
            assert!(r.compressed && s.calls() > 0, "{what}: {r:?}");
            for q in s.requests.borrow().iter() {
                assert!(q.from_cache, "{what}: a request not shared");
                let n = sent.len();
                // Byte for byte, all but the last message (which takes the instruction where
                // turns must alternate and it is the user's).
                assert_eq!(&q.messages[..n - 1], &sent[..n - 1], "{what}: the agent's request, byte for byte");
                let joined = q.messages.len() == n;
                if !joined {
                    assert_eq!(q.messages[n - 1], sent[n - 1], "{what}");
                }
                let parsed: Vec<autocontext::Message> = q.messages.iter().enumerate().map(|(i, v)| format.parse(i, v).unwrap()).collect();
                assert!(format.validate_request(&parsed).is_empty(), "{what}: {:?}", format.validate_request(&parsed));
                let ask = parsed.last().unwrap().payload_text();
                assert!(ask.contains("of the conversation above (counting its messages from 1)"), "{what}: {ask}");
                assert!(ask.contains(&q.system), "{what}: the summarizer's instructions travel in the last message");
                // The prompt is the classic one, for hosts that read it instead.
                assert!(q.prompt.starts_with("<conversation>"), "{what}");
            }
            assert_valid(&m, &what);
            check_recoverable(&m, &what);
        }
    }
}

#[test]
fn without_the_option_messages_are_the_span_and_long_results_go_as_head_and_tail() {
    for format in Format::ALL {
        let what = format.name();
        let (m, s) = memory(format, false, vec![Strategy::PrefixSummary]);
        let sent = m.messages();
        block_on(m.compress_if_needed()).unwrap();
        let q = &s.requests.borrow()[0];
        assert!(!q.from_cache);
        assert!(q.messages.len() < sent.len(), "{what}: the span alone");
        // Each 2,500-character result reads as its head and tail.
        assert!(q.prompt.contains("characters of this result left out here"), "{what}");
        let whole = filler("r4-c0", 2_500);
        assert!(q.prompt.contains(&whole[..1_000]) && !q.prompt.contains(&whole), "{what}: head kept, middle out");
        // The option at 0 sends results whole.
        let mut cfg = m.config().clone();
        cfg.summary_result_limit = 0;
        cfg.session_id = format!("whole-{what}");
        let s2 = FakeSummarizer::fixed("the agent ran the tests and read the sources");
        let m2 = AutoContextMemory::new(cfg, s2.clone(), MemoryStore::new()).unwrap();
        m2.add(&Value::Array(convert(format, &agent_run()))).unwrap();
        block_on(m2.compress_if_needed()).unwrap();
        assert!(s2.requests.borrow()[0].prompt.contains(&whole), "{what}");
    }
}

#[test]
fn a_list_that_cannot_end_a_request_falls_back_to_the_span() {
    // The last call has no result yet: the agent's list cannot be sent as it is.
    let mut msgs = agent_run();
    msgs.pop();
    let mut cfg = Config { max_token: (tokens_of(&msgs) as f64 / 0.75 / 2.0) as u64, session_id: "pending".into(), ..Config::default() };
    cfg.summarize_from_cache = true;
    cfg.strategies = Some(vec![Strategy::PrefixSummary]);
    let s = FakeSummarizer::fixed("summary");
    let m = AutoContextMemory::new(cfg, s.clone(), MemoryStore::new()).unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    let q = &s.requests.borrow()[0];
    assert!(!q.from_cache, "a request with a call waiting for its result is not sent");
    assert_requests_valid(Format::OpenAi, &s, "pending");
    // The option reads from JSON and round-trips.
    let c = Config::from_json(&json!({"summarizeFromCache": true, "summaryResultLimit": 900, "keepTask": false})).unwrap();
    assert!(c.summarize_from_cache && !c.keep_task && c.summary_result_limit == 900);
    assert_eq!(Config::from_json(&c.to_json()).unwrap(), Config { session_id: c.session_id.clone(), ..c.clone() });
    assert_eq!(Config::from_json(&json!({"summaryResultLimit": 12})).unwrap_err().field(), Some("summaryResultLimit"));
}
