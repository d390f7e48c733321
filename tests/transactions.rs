//! Guarantee 4: a pass commits all or nothing. A failing store leaves the memory exactly as it
//! was and no orphan key behind; a failing summarizer never aborts the pass but falls back to a
//! non-LLM step and says so in a `SUMMARIZE_FAILED` event; one pass at a time; messages added
//! while a pass awaits the host are kept. What the summarizer threw comes back as the cause of the
//! pass's `failures`.

mod common;

use autocontext::{AutoContextMemory, Config, ErrorCode, TokenCounter, Tokenizer};
use common::*;
use futures_util::future::join;
use serde_json::Value;

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

fn memory(cfg: Config, summarizer: Option<FakeSummarizer>, store: FlakyStore) -> Mem {
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), summarizer, store).unwrap()
}

fn window_for(target: u64) -> u64 {
    (target as f64 / 0.75).ceil() as u64
}

/// A history whose pass needs several steps that write to the store: one huge result to
/// truncate, large results to offload, and (with a summarizer) rounds to summarize.
fn history() -> Vec<Value> {
    let mut msgs = vec![system("you are an agent")];
    msgs.extend(tool_round("huge", 1, 45_000));
    for r in 0..3 {
        msgs.extend(tool_round(&format!("big{r}"), 2, 7_000));
    }
    for r in 0..2 {
        msgs.extend(tool_round(&format!("many{r}"), 10, 4_000));
    }
    msgs.push(user("what now?"));
    msgs
}

fn target_for(msgs: &[Value]) -> u64 {
    window_for(tokens_of(msgs) / 4)
}

/// A config whose passes compact to where they start (no low-water mark), so the steps before
/// the emergency one reach the target.
fn shallow(session: &str, max_token: u64) -> Config {
    Config { target_ratio: Some(0.75), ..config(session, max_token) }
}

#[test]
fn a_failing_put_at_any_point_of_a_pass_changes_nothing_and_leaves_no_orphan_key() {
    let msgs = history();
    // A target the steps before the emergency one reach (which would take everything into one
    // offload): several offloads of several steps.
    let target = window_for(tokens_of(&msgs) / 2);
    // Count the puts a successful pass makes (no-LLM ladder).
    let dry_store = FlakyStore::new();
    let dry = memory(shallow("dry", target), None, dry_store.clone());
    dry.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(dry.compress_if_needed()).unwrap();
    assert!(r.compressed);
    // The pass's puts, not the log's chunk written after it.
    let puts = dry_store.puts.get() - (dry_store.keys().len() - dry_store.offload_keys().len());
    let kinds: std::collections::BTreeSet<String> = r.events.iter().map(|e| e.event_type.clone()).collect();
    assert!(puts >= 3 && kinds.len() >= 2, "the pass should write from several steps: {puts} puts, {kinds:?}");

    for k in 1..=puts {
        let store = FlakyStore::new();
        let m = memory(shallow(&format!("fail{k}"), target), None, store.clone());
        m.add(&Value::Array(msgs.clone())).unwrap();
        let before = snapshot(&m);
        store.fail_put_at(k);
        let mut e = block_on(m.compress_if_needed()).expect_err("the pass must fail");
        assert_eq!(e.code(), ErrorCode::StoreFailed, "put {k}: {e:?}");
        let payload = e.cause_mut().expect("the store's error is the cause").take_payload().expect("payload");
        let boom = payload.downcast::<StoreBoom>().expect("the store's own error value");
        assert_eq!(boom.op, "put");
        assert!(boom.key.starts_with(&format!("fail{k}/")), "{}", boom.key);
        assert_eq!(snapshot(&m), before, "put {k}: the memory changed");
        assert!(store.offload_keys().is_empty(), "put {k}: orphan keys {:?}", store.offload_keys());
        // Every key the pass tried is deleted again, the failed one too (a put that failed may
        // still have landed).
        let log_puts = store.keys().len() - store.offload_keys().len();
        assert_eq!(store.deletes.get(), store.puts.get() - log_puts, "put {k}: every put is deleted again");

        // The same memory compresses fine once the store recovers.
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed && r.under_target, "{r:?}");
        assert_eq!(store.offload_keys().len(), m.offloads().len());
        assert_valid(&m, "after recovery");
        check_recoverable(&m, "after recovery");
    }
}

#[test]
fn a_failing_put_after_the_summarizer_ran_records_nothing() {
    let msgs = history();
    let store = FlakyStore::new();
    let summarizer = FakeSummarizer::fixed("what the round found");
    let m = memory(config("llm-put", target_for(&msgs)), Some(summarizer.clone()), store.clone());
    m.add(&Value::Array(msgs)).unwrap();
    let before = snapshot(&m);
    store.fail_puts(true);
    let e = block_on(m.compress_if_needed()).expect_err("the pass must fail");
    assert_eq!(e.code(), ErrorCode::StoreFailed);
    assert_eq!(snapshot(&m), before);
    assert!(store.offload_keys().is_empty());
    assert!(m.events().is_empty(), "no phantom events");
}

#[test]
fn a_failing_summarizer_falls_back_and_reports_each_failure() {
    let msgs = history();
    let store = FlakyStore::new();
    let summarizer = FakeSummarizer::failing("quota");
    let m = memory(config("llm-fail", target_for(&msgs)), Some(summarizer.clone()), store.clone());
    m.add(&Value::Array(msgs)).unwrap();
    let r = block_on(m.compress_if_needed()).expect("a failing summarizer never aborts the pass");
    assert!(summarizer.calls() > 0, "the ladder needed the LLM");
    assert!(r.compressed && r.under_target, "{r:?}");
    let failed: Vec<_> = r.events.iter().filter(|e| e.event_type == "SUMMARIZE_FAILED").collect();
    assert_eq!(failed.len(), summarizer.calls(), "one failure event per failed call");
    for f in &failed {
        let error = f.error.as_deref().unwrap_or("");
        assert!(error.contains("summarizer exploded (quota)"), "the host's message is kept: {error}");
        assert_eq!(f.replacement_count, 0);
        assert!(f.offload_uuid.is_none());
    }
    // Failures are listed before the changes of the pass; every change has its offload.
    let first_change = r.events.iter().position(|e| e.event_type != "SUMMARIZE_FAILED").unwrap();
    assert!(r.events[first_change..].iter().all(|e| e.event_type != "SUMMARIZE_FAILED"));
    let uuids: Vec<String> = r.events.iter().filter_map(|e| e.offload_uuid.clone()).collect();
    let mut keys: Vec<String> = uuids.iter().map(|u| format!("llm-fail/{u}")).collect();
    keys.sort();
    assert_eq!(store.offload_keys(), keys, "exactly the offloads of the recorded changes are stored");
    assert_eq!(m.events(), r.events);
    assert_valid(&m, "fallback");
    check_recoverable(&m, "fallback");
    assert_untouched_are_identical(&m, "fallback");
}

#[test]
fn an_empty_or_too_long_summary_counts_as_a_failure() {
    for (tag, summarizer, want) in [
        ("empty", FakeSummarizer::empty(), "empty summary"),
        ("long", FakeSummarizer::fixed(&"VERBOSE-SUMMARY ".repeat(20_000)), "not shorter"),
    ] {
        let msgs = history();
        let m = memory(config(tag, target_for(&msgs)), Some(summarizer.clone()), FlakyStore::new());
        m.add(&Value::Array(msgs)).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(summarizer.calls() > 0);
        let failed: Vec<_> = r.events.iter().filter(|e| e.event_type == "SUMMARIZE_FAILED").collect();
        assert_eq!(failed.len(), summarizer.calls(), "{tag}");
        assert!(failed.iter().all(|f| f.error.as_deref().unwrap_or("").contains(want)), "{tag}: {failed:?}");
        for w in m.messages() {
            let text = serde_json::to_string(&w).unwrap();
            assert!(!text.contains("VERBOSE-SUMMARY"), "{tag}: a rejected summary reached the working list");
        }
        assert_valid(&m, tag);
        check_recoverable(&m, tag);
    }
}

#[test]
fn a_second_pass_while_one_awaits_the_host_is_refused() {
    let msgs = history();
    let summarizer = FakeSummarizer::fixed("summary").with_rendezvous(1_000);
    let m = memory(config("busy", target_for(&msgs)), Some(summarizer.clone()), FlakyStore::new());
    m.add(&Value::Array(msgs)).unwrap();
    let (first, second) = block_on(join(m.compress_if_needed(), m.compress_if_needed()));
    let first = first.unwrap();
    assert!(first.compressed);
    let e = second.expect_err("the second pass started while the first awaited the summarizer");
    assert_eq!(e.code(), ErrorCode::LimitExceeded);
    // And the memory is usable again afterwards.
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.under_target);
    assert_valid(&m, "after the busy pass");
}

/// Pending for `n` polls, then ready: lets another future run while a pass awaits the host.
struct YieldFor(usize);

impl std::future::Future for YieldFor {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 == 0 {
            return std::task::Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[test]
fn messages_added_while_a_pass_awaits_the_host_are_kept() {
    let mut msgs = history();
    msgs.pop();
    msgs.push(user("read one more file"));
    msgs.push(assistant_calls(&["late"]));
    msgs.push(tool_result("late", 300));
    let summarizer = FakeSummarizer::fixed("summary").with_rendezvous(1_000);
    let m = memory(config("concurrent-add", target_for(&msgs)), Some(summarizer.clone()), FlakyStore::new());
    m.add(&Value::Array(msgs)).unwrap();
    let late = answer("the late file says hello");
    let (r, added) = block_on(join(m.compress_if_needed(), async {
        YieldFor(3).await;
        let calls_when_added = summarizer.calls();
        m.add(&late).map(|_| calls_when_added)
    }));
    let r = r.unwrap();
    let calls_when_added = added.unwrap();
    assert!(calls_when_added > 0, "the add happened while the pass awaited the summarizer");
    assert!(r.compressed);
    assert_eq!(m.messages().last(), Some(&late), "the message added during the pass is kept, at the end");
    assert_eq!(block_on(m.original_messages()).expect("the log reads back").last(), Some(&late));
    assert_eq!(r.messages_after, m.messages().len());
    assert_valid(&m, "concurrent add");
    check_recoverable(&m, "concurrent add");
    assert_eq!(m.token_count(), tokens_of(&m.messages()), "the running total includes the late message");
}

#[test]
fn a_failing_get_is_a_store_error_with_the_hosts_cause() {
    let msgs = history();
    let store = FlakyStore::new();
    let m = memory(config("get", target_for(&msgs)), None, store.clone());
    m.add(&Value::Array(msgs)).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    let uuid = m.offloads()[0].uuid.clone();
    store.fail_gets(true);
    let mut e = block_on(m.reload(&uuid)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreFailed);
    let boom = e.cause_mut().unwrap().take_payload().unwrap().downcast::<StoreBoom>().unwrap();
    assert_eq!(boom.op, "get");
    assert_eq!(boom.key, format!("get/{uuid}"));
    // The model's reload tool reports a failing store as an error for the host too.
    let call = serde_json::json!({"working_context_offload_uuid": uuid});
    assert_eq!(block_on(m.handle_reload_call(&call)).unwrap_err().code(), ErrorCode::StoreFailed);
    store.fail_gets(false);
    assert!(block_on(m.reload(&uuid)).is_ok());
}

#[test]
fn each_failed_summary_hands_the_hosts_error_back_as_the_cause() {
    let msgs = history();
    let summarizer = FakeSummarizer::failing("overloaded");
    let m = memory(config("causes", target_for(&msgs)), Some(summarizer.clone()), FlakyStore::new());
    m.add(&Value::Array(msgs.clone())).unwrap();
    let mut r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && summarizer.calls() > 0, "{r:?}");
    let failed: Vec<(usize, String)> = r
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.event_type == "SUMMARIZE_FAILED")
        .map(|(k, e)| (k, e.error.clone().unwrap_or_default()))
        .collect();
    assert_eq!(r.failures.len(), summarizer.calls(), "one error per failed call");
    assert_eq!(r.failures.len(), failed.len(), "one error per SUMMARIZE_FAILED event");
    for (e, (k, event_error)) in r.failures.iter_mut().zip(&failed) {
        assert_eq!(e.code(), ErrorCode::SummarizeFailed);
        assert!(e.message().contains(&format!("event {k} of this pass")), "{}", e.message());
        let strategy = event_error.split(':').next().unwrap();
        assert!(e.message().starts_with(strategy), "the error names the strategy of event {k} ({strategy}): {}", e.message());
        assert!(e.message().contains("summarizer exploded (overloaded)"), "{}", e.message());
        let payload = e.cause_mut().expect("the host's error is the cause").take_payload().expect("with its payload");
        assert_eq!(*payload.downcast::<SummarizerBoom>().expect("the host's own value"), SummarizerBoom { tag: "overloaded".into() });
    }
    // The errors are for the host only: the serialized result and the stored events are as before.
    let json = serde_json::to_value(&r).unwrap();
    assert!(json.get("failures").is_none());
    assert_eq!(m.events(), r.events);

    // A rejected summary (empty) is a failure without a host cause.
    let m = memory(config("no-cause", target_for(&msgs)), Some(FakeSummarizer::empty()), FlakyStore::new());
    m.add(&Value::Array(msgs)).unwrap();
    let mut r = block_on(m.compress_if_needed()).unwrap();
    assert!(!r.failures.is_empty());
    for e in &mut r.failures {
        assert_eq!(e.code(), ErrorCode::SummarizeFailed);
        assert!(e.message().contains("empty summary"), "{}", e.message());
        assert!(e.cause_mut().is_none());
    }

    // A pass whose summaries all work has none.
    let m = memory(config("fine", target_for(&history())), Some(FakeSummarizer::fixed("ok")), FlakyStore::new());
    m.add(&Value::Array(history())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.failures.is_empty(), "{r:?}");
}
