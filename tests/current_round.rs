//! The turn in progress: what the model has not read yet is never summarized by any step,
//! whatever the pressure (a single pending result, several steps with a half-delivered parallel
//! exchange, a result too large for the window), and what it has read shrinks in place, keeping
//! roles, call ids and calls, oldest first and only as far as the budget needs.
//!
//! The reference summarized unread results into assistant prose and its agents repeated their
//! tool calls forever; these tests hold the engine to the opposite.

mod common;

use std::collections::HashSet;

use autocontext::strategy::Strategy;
use autocontext::{AutoContextMemory, Config, HostError, SummarizeRequest, Summarizer, Summary, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

fn memory<S: Summarizer + Clone>(cfg: Config, summarizer: &S) -> AutoContextMemory<S, FlakyStore> {
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), Some(summarizer.clone()), FlakyStore::new())
        .unwrap()
}

/// `max_token` whose trigger (`× 0.75`) is `target` or just above it.
fn window_for(target: u64) -> u64 {
    (target as f64 / 0.75).ceil() as u64
}

/// Every call id a request shows the summarizer, in its wire messages or its prompt.
fn ids_shown(q: &SummarizeRequest, ids: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        let in_wire = q
            .messages
            .iter()
            .any(|m| m["tool_call_id"] == *id || m["tool_calls"].as_array().is_some_and(|c| c.iter().any(|c| c["id"] == *id)));
        if in_wire || q.prompt.contains(&format!("id=\"{id}\"")) {
            out.push(id.to_string());
        }
    }
    out
}

/// Earlier rounds heavy enough that the target can only be met by taking them all.
fn heavy_history() -> Vec<Value> {
    let mut msgs = vec![system("You are a coding agent.")];
    for r in 0..3 {
        msgs.extend(tool_round(&format!("old{r}"), 6, 4_000));
    }
    msgs
}

#[test]
fn unread_results_are_never_summarized_never_flattened_and_only_truncation_shrinks_them() {
    let single = vec![user("run the tests"), assistant_calls(&["live"]), tool_result("live", 8_000)];
    let mut multi = vec![user("fix the parser")];
    for k in 0..4 {
        let id = format!("step{k}");
        multi.push(json!({"role": "assistant", "content": format!("Step {k}."), "tool_calls": [call(&id, "bash")]}));
        multi.push(tool_result(&id, 4_000));
    }
    // The last step: two parallel calls, one result delivered, one still running. Unread results
    // are above largePayloadThreshold, so only the in-flight rule keeps them from the LLM steps.
    multi.push(assistant_calls(&["live", "pending"]));
    multi.push(tool_result("live", 8_000));
    let large = vec![user("read the build log"), assistant_calls(&["live"]), tool_result("live", 60_000)];

    for (name, turn) in [("single", single), ("multi-step", multi), ("large", large)] {
        let mut msgs = heavy_history();
        let current = msgs.len();
        msgs.extend(turn.iter().cloned());
        let n = msgs.len();
        // The unread tail: the last call message and the one result delivered for it.
        let call_at = n - 2;
        let summarizer = FakeSummarizer::digest();
        let m = memory(config(name, window_for(tokens_of(&msgs) / 8)), &summarizer);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed, "{name}: {r:?}");
        assert!(r.under_target || (r.exhausted && r.reason.is_some()), "{name}: {r:?}");
        assert!(summarizer.calls() > 0, "{name}: the LLM steps ran");
        for q in summarizer.requests.borrow().iter() {
            let shown = ids_shown(q, &["live", "pending"]);
            assert!(shown.is_empty(), "{name}: a {} request showed the unread call(s) {shown:?}", q.kind);
        }
        let out = m.messages();
        let working = m.working();
        // The unread exchange is still there, at the end, as the same call and a tool result.
        assert_eq!(out[out.len() - 2], msgs[call_at], "{name}: the open call is byte-identical");
        let last = &out[out.len() - 1];
        assert_eq!((last["role"].as_str(), last["tool_call_id"].as_str()), (Some("tool"), Some("live")), "{name}");
        match working.last().unwrap().synthetic.as_ref() {
            None => assert_eq!(last, &msgs[n - 1], "{name}: untouched"),
            Some(mark) => {
                assert_eq!(name, "large", "{name}: only the oversized result may change");
                assert_eq!(mark.kind, "TOOL_RESULT_TRUNCATE", "{name}: only truncation may shrink it");
                let content = last["content"].as_str().unwrap();
                assert!(content.starts_with(&msgs[n - 1]["content"].as_str().unwrap()[..2_000]), "the head stays");
                assert_eq!(markers_in(last).len(), 1);
            }
        }
        if name == "large" {
            assert!(working.last().unwrap().synthetic.is_some(), "the oversized result was truncated");
        }
        // The user's request of the turn stays.
        assert!(out.contains(&msgs[current]), "{name}: the current user message stays");
        assert_valid(&m, name);
        check_recoverable(&m, name);
        assert_untouched_are_identical(&m, name);
    }
}

#[test]
fn a_large_current_round_message_is_summarized_in_place_with_role_ids_and_calls() {
    let calls = json!([call("k1", "read_file"), call("k2", "grep")]);
    let msgs = vec![
        system("agent"),
        user("review the module"),
        json!({"role": "assistant", "content": format!("My plan, at length: {}", filler("plan", 7_000)), "tool_calls": calls, "x-trace": "t-1"}),
        json!({"role": "tool", "tool_call_id": "k1", "name": "read_file", "content": filler("k1", 7_000)}),
        tool_result("k2", 100),
        json!({"role": "assistant", "content": "Both read; one more file.", "tool_calls": [call("k3", "read_file")]}),
        tool_result("k3", 7_000),
    ];
    let big: u64 = [2, 3].iter().map(|&i| message_tokens(&msgs[i])).sum();
    // Enough to need both large answered messages (each is estimated to lose 70%).
    let target = tokens_of(&msgs) - message_tokens(&msgs[2]) * 7 / 10 - message_tokens(&msgs[3]) / 2;
    assert!(tokens_of(&msgs) - target < big);
    let summarizer = FakeSummarizer::fixed("the module parses config files; parse() ignores errors");
    let m = memory(config("large-msg", window_for(target)), &summarizer).with_ladder(&[Strategy::CurrentRoundLargeMessage]);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");

    let requests = summarizer.requests.borrow();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|q| q.kind == "large_message" && q.target_chars.is_some()));
    // Each message without the rest of its exchange goes to the host as text a provider accepts:
    // the calls on the assistant's side, the result on the user's.
    for (q, (i, role)) in requests.iter().zip([(2, "assistant"), (3, "user")]) {
        assert_eq!(q.messages.len(), 1, "{i}");
        let m = &q.messages[0];
        assert_eq!(m["role"], role);
        assert!(m.get("tool_calls").is_none() && m.get("tool_call_id").is_none(), "{m}");
        let original = msgs[i]["content"].as_str().unwrap();
        assert!(m["content"].as_str().unwrap().contains(&original[..400]), "{i}: the text is shown whole");
    }
    let out = m.messages();
    // The assistant keeps its calls byte for byte and its other fields; only its text shrank.
    assert_eq!(out[2]["role"], "assistant");
    assert_eq!(out[2]["tool_calls"], msgs[2]["tool_calls"]);
    assert_eq!(out[2]["x-trace"], "t-1");
    assert!(out[2]["content"].as_str().unwrap().starts_with("the module parses"));
    // The result keeps role, call id and name, with the summary and the marker as its content.
    assert_eq!(
        (out[3]["role"].as_str(), out[3]["tool_call_id"].as_str(), out[3]["name"].as_str()),
        (Some("tool"), Some("k1"), Some("read_file"))
    );
    assert!(out[3]["content"].as_str().unwrap().starts_with("the module parses"));
    for i in [2, 3] {
        let uuids = markers_in(&out[i]);
        assert_eq!(uuids.len(), 1);
        assert_eq!(block_on(m.reload(&uuids[0])).unwrap(), vec![msgs[i].clone()]);
    }
    assert_eq!(&out[4..], &msgs[4..], "the small result and the unread step stay");
    assert_eq!(out.len(), msgs.len(), "in place: one for one");
    assert!(r.events.iter().all(|e| e.event_type == "CURRENT_ROUND_LARGE_MESSAGE_SUMMARY" && e.replacement_count == 1));
    assert_valid(&m, "large message");
    check_recoverable(&m, "large message");
}

/// A summarizer that honours `targetChars`: its digests are as long as asked, so what the
/// engine expects a summary to save is what it saves.
#[derive(Clone, Default)]
struct ToLength {
    requests: std::rc::Rc<std::cell::RefCell<Vec<SummarizeRequest>>>,
}

impl Summarizer for ToLength {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        self.requests.borrow_mut().push(request.clone());
        let n = request.target_chars.expect("current-round requests ask for a length");
        Ok(Summary { text: filler(&request.prompt[request.prompt.len() - 40..], n), input_tokens: None, output_tokens: None })
    }
}

/// One current turn of six answered steps (results of 3000 characters) and an unread result.
fn answered_turn() -> (Vec<Value>, Vec<usize>) {
    let mut msgs = vec![system("agent"), user("find the regression")];
    let mut results = Vec::new();
    for k in 0..6 {
        let id = format!("s{k}");
        msgs.push(json!({"role": "assistant", "content": format!("Checking commit {k}."), "tool_calls": [call(&id, "git_show")]}));
        results.push(msgs.len());
        msgs.push(tool_result(&id, 3_000));
    }
    msgs.push(assistant_calls(&["unread"]));
    msgs.push(tool_result("unread", 3_000));
    (msgs, results)
}

#[test]
fn current_round_compression_takes_answered_results_oldest_first_and_only_as_many_as_needed() {
    let (msgs, results) = answered_turn();
    let total = tokens_of(&msgs);
    let t: Vec<u64> = results.iter().map(|&i| message_tokens(&msgs[i])).collect();
    // Two results' savings (70% each) fall short; a third is needed.
    let excess = (t[0] + t[1]) * 7 / 10 + t[2] * 35 / 100;
    let summarizer = ToLength::default();
    // A pass compacting to where it starts (no low-water mark): "as many as needed" is exact.
    let cfg = Config { target_ratio: Some(0.75), ..config("oldest", window_for(total - excess)) };
    let m = memory(cfg, &summarizer).with_ladder(&[Strategy::CurrentRoundCompress]);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");

    let requests = summarizer.requests.borrow();
    assert_eq!(requests.len(), 3, "only as many as needed");
    let out = m.messages();
    let working = m.working();
    for (k, &i) in results.iter().enumerate() {
        let shrunk = working[i].synthetic.is_some();
        assert_eq!(shrunk, k < 3, "result {k}: oldest first");
        if shrunk {
            assert_eq!((out[i]["role"].as_str(), out[i]["tool_call_id"].as_str()), (Some("tool"), Some(format!("s{k}").as_str())));
            assert_eq!(markers_in(&out[i]).len(), 1);
            // The exchange's call is shown with the result, so the digest can name the tool.
            assert_eq!(requests[k].messages, msgs[i - 1..=i].to_vec());
            assert_eq!(requests[k].kind, "current_round");
        } else {
            assert_eq!(out[i], msgs[i]);
        }
    }
    // Minimal: without the last of the three, the request would still be over the target.
    let last = r.events.last().unwrap();
    assert!(r.tokens_after + (last.tokens_before - last.tokens_after) >= r.target_tokens, "{r:?}");
    assert_eq!(out.len(), msgs.len());
    assert_valid(&m, "oldest first");
    check_recoverable(&m, "oldest first");
}

#[test]
fn current_round_compression_never_takes_an_unread_result_even_when_short_of_the_target() {
    let (msgs, results) = answered_turn();
    let summarizer = ToLength::default();
    let m = memory(config("answered-only", window_for(tokens_of(&msgs) / 4)), &summarizer).with_ladder(&[Strategy::CurrentRoundCompress]);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.exhausted && !r.under_target && r.reason.is_some(), "{r:?}");
    let requests = summarizer.requests.borrow();
    let asked: HashSet<String> =
        requests.iter().flat_map(|q| q.messages.iter().filter_map(|v| v["tool_call_id"].as_str().map(str::to_string))).collect();
    let want: HashSet<String> = (0..6).map(|k| format!("s{k}")).collect();
    assert_eq!(asked, want, "every answered result, and nothing else");
    let out = m.messages();
    assert_eq!(&out[out.len() - 2..], &msgs[msgs.len() - 2..], "the unread exchange is untouched");
    assert!(results.iter().all(|&i| m.working()[i].synthetic.is_some()));
    assert_valid(&m, "answered only");
    check_recoverable(&m, "answered only");
}
