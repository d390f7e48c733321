//! Background compaction: `prepare` computes the summaries the next pass needs while the host's
//! summarizer is slow, off the request path; the pass then swaps them in without calling the
//! host when their spans are unchanged, and summarizes afresh what changed.
//!
//! The summarizer here is a gate the test opens and closes: while closed, a call never
//! answers. Futures are polled by hand, so "the pass completed without waiting for the host" is
//! shown by the pass being ready at its first poll while every host call would hang, not by a
//! clock.

mod common;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use autocontext::strategy::{Strategy, DEFAULT_LADDER};
use autocontext::{AutoContextMemory, Config, HostError, MemoryStore, SummarizeRequest, Summarizer, Summary, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

#[derive(Clone, Default)]
struct Gated {
    open: Rc<Cell<bool>>,
    waiting: Rc<RefCell<Vec<Waker>>>,
    calls: Rc<Cell<usize>>,
    requests: Rc<RefCell<Vec<SummarizeRequest>>>,
}

impl Gated {
    /// Lets the calls waiting (and all later ones) answer.
    fn open(&self) {
        self.open.set(true);
        for w in self.waiting.borrow_mut().drain(..) {
            w.wake();
        }
    }
    /// From now on a call never answers.
    fn close(&self) {
        self.open.set(false);
    }
}

struct Gate(Gated);

impl Future for Gate {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.open.get() {
            Poll::Ready(())
        } else {
            self.0.waiting.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        }
    }
}

impl Summarizer for Gated {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        self.calls.set(self.calls.get() + 1);
        self.requests.borrow_mut().push(request.clone());
        Gate(self.clone()).await;
        let n = self.calls.get();
        let text = if request.kind == "prefix" {
            format!(
                r#"{{"task_overview": "audit #{n}", "current_state": "state #{n}", "important_discoveries": "", "next_steps": "go on", "context_to_preserve": ""}}"#
            )
        } else {
            format!("summary #{n} of a {}", request.kind)
        };
        Ok(Summary { text, input_tokens: Some(100), output_tokens: Some(20) })
    }
}

/// Polls once with a waker that does nothing.
fn poll_once<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

// The tests' windows assume a pass that stops at the trigger: their options say so
// (`targetRatio` 0.75; the prefix summary's reserve of a tenth of the window, and tool results
// truncated above 20,000 characters).
fn memory(opts: Value, s: &Gated) -> AutoContextMemory<Gated, MemoryStore> {
    let mut o = opts;
    o["sessionId"] = json!("background");
    let cfg = Config::from_json(&o).unwrap();
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), Some(s.clone()), MemoryStore::new()).unwrap()
}

/// Adds rounds until the request reaches `tokens`; returns how many were added.
fn grow(m: &AutoContextMemory<Gated, MemoryStore>, tag: &str, tokens: u64) -> usize {
    let mut k = 0;
    while m.token_count() < tokens {
        m.add(&Value::Array(tool_round(&format!("{tag}{k}"), 1, 1600))).unwrap();
        k += 1;
    }
    k
}

#[test]
fn a_prepared_prefix_summary_takes_the_hosts_latency_off_the_request_path() {
    let s = Gated::default();
    let m = memory(
        json!({"preset": "prefix-summary", "maxToken": 10000, "targetRatio": 0.75, "reserveRatio": 0.1, "toolResultLimit": 20000}),
        &s,
    );
    m.add(&json!([system("you are an auditor"), user("audit the repository")])).unwrap();
    grow(&m, "a", 6100);
    assert!(!m.needs_compression(), "{} tokens: past prepareRatio (6000), below the trigger (7500)", m.token_count());

    // The preparation waits for the slow summarizer...
    let mut prep = pin!(m.prepare());
    assert!(poll_once(prep.as_mut()).is_pending());
    assert_eq!(s.calls.get(), 1);
    assert_eq!(s.requests.borrow()[0].kind, "prefix");
    // ...and meanwhile the agent goes on: adds work, and its pass below the trigger is instant.
    m.add(&Value::Array(tool_round("meanwhile", 1, 1600))).unwrap();
    let mut pass = pin!(m.compress_if_needed());
    let Poll::Ready(r) = poll_once(pass.as_mut()) else { panic!("a pass waited for the preparation") };
    assert!(!r.unwrap().compressed);
    // A second preparation while one runs returns at once.
    let mut again = pin!(m.prepare());
    let Poll::Ready(again) = poll_once(again.as_mut()) else { panic!("a second preparation waited") };
    assert!(!again.unwrap().prepared);

    s.open();
    let Poll::Ready(done) = poll_once(prep.as_mut()) else { panic!("the preparation did not finish once answered") };
    let done = done.unwrap();
    assert!(done.prepared && done.summarize_calls == 1 && done.ready == 1, "{done:?}");
    let snap = snapshot(&m);
    assert_eq!(snap.events, vec![], "a preparation changes nothing");

    // From now on every host call would hang. The agent reaches the trigger; its pass
    // completes at the first poll, with the prepared summary.
    s.close();
    grow(&m, "b", 7600);
    assert!(m.needs_compression());
    let mut pass = pin!(m.compress_if_needed());
    let Poll::Ready(r) = poll_once(pass.as_mut()) else { panic!("the pass waited for the host") };
    let r = r.unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    assert_eq!((r.summarize_calls, r.prepared_used), (0, 1), "{r:?}");
    assert_eq!(s.calls.get(), 1, "no call after the preparation");
    assert_eq!(r.events[0].event_type, "PREFIX_SUMMARY");
    assert_eq!(m.messages()[1], user("audit the repository"), "the task stays");
    let summary = m.messages()[2]["content"].as_str().unwrap().to_string();
    assert!(summary.contains("audit #1") && summary.contains("state #1"), "the prepared answer is the summary: {summary}");
    assert_valid(&m, "prepared");
    check_recoverable(&m, "prepared");
    assert_untouched_are_identical(&m, "prepared");
}

#[test]
fn a_span_that_changed_since_the_preparation_is_summarized_afresh() {
    let s = Gated::default();
    s.open();
    let m = memory(
        json!({"preset": "prefix-summary", "maxToken": 10000, "targetRatio": 0.75, "reserveRatio": 0.1, "toolResultLimit": 20000}),
        &s,
    );
    m.add(&json!([system("you are an auditor"), user("audit the repository")])).unwrap();
    grow(&m, "a", 6100);
    let done = block_on(m.prepare()).unwrap();
    assert!(done.prepared && done.summarize_calls == 1, "{done:?}");
    let prepared = s.requests.borrow()[0].messages.len();
    // Far more arrives than the prepared cut can free: the pass cuts afresh, and the span it
    // summarizes is not the prepared one, so the host is called for it.
    for k in 0..3 {
        m.add(&Value::Array(tool_round(&format!("huge{k}"), 1, 19_000))).unwrap();
    }
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    assert_eq!((r.summarize_calls, r.prepared_used), (1, 0), "{r:?}");
    let fresh = r.events[0].message_count;
    assert!(fresh > prepared, "the new span ({fresh} messages) is longer than the prepared one ({prepared})");
    assert_ne!(s.requests.borrow()[1].prompt, s.requests.borrow()[0].prompt);
    let summary = m.messages()[2]["content"].as_str().unwrap().to_string();
    assert!(summary.contains("audit #2"), "{summary}");
    check_recoverable(&m, "changed");
}

#[test]
fn prepared_round_summaries_are_reused_and_only_new_rounds_are_summarized() {
    let s = Gated::default();
    s.open();
    // The reference's ladder: with the stale-result stubs first, stubs alone would free what
    // this window needs, and no round would be summarized.
    let reference: Vec<&str> = DEFAULT_LADDER.iter().filter(|&&s| s != Strategy::ToolResultStub).map(|s| s.name()).collect();
    let opts = json!({"maxToken": 10000, "targetRatio": 0.75, "minCompressionTokenThreshold": 300, "largePayloadThreshold": 100000, "offloadSinglePreview": 200, "strategies": reference});
    let m = memory(opts, &s);
    m.add(&json!([system("agent")])).unwrap();
    grow(&m, "a", 6100);
    let done = block_on(m.prepare()).unwrap();
    assert!(done.prepared && done.summarize_calls > 1, "{done:?}");
    let prepared = done.summarize_calls;
    assert!(s.requests.borrow().iter().all(|r| r.kind == "round"));

    grow(&m, "b", 7600);
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    assert_eq!(r.prepared_used, prepared, "every prepared round summary was used: {r:?}");
    // The rounds that were not complete when the preparation ran are summarized now.
    assert_eq!(r.summarize_calls, s.calls.get() - prepared);
    assert!(r.summarize_calls < prepared, "{r:?}");
    assert_valid(&m, "rounds");
    check_recoverable(&m, "rounds");
}

#[test]
fn prepare_on_add_says_when_to_start_and_below_the_ratio_nothing_is_prepared() {
    let s = Gated::default();
    s.open();
    let m = memory(json!({"preset": "prefix-summary", "maxToken": 10000, "prepareOnAdd": true, "prepareRatio": 0.5}), &s);
    m.add(&json!([system("agent"), user("go")])).unwrap();
    let early = block_on(m.prepare()).unwrap();
    assert!(!early.prepared && early.reason.as_deref() == Some("usage is below prepareRatio of the window"), "{early:?}");
    assert!(!m.should_prepare());
    grow(&m, "a", 5000);
    assert!(m.should_prepare(), "past prepareRatio");
    block_on(m.prepare()).unwrap();
    assert!(!m.should_prepare(), "just prepared");
    grow(&m, "b", 7600);
    assert!(!m.should_prepare(), "at the trigger the pass itself runs");

    let off = memory(
        json!({"preset": "prefix-summary", "maxToken": 10000, "targetRatio": 0.75, "reserveRatio": 0.1, "toolResultLimit": 20000}),
        &s,
    );
    off.add(&Value::Array(tool_round("x", 1, 30_000))).unwrap();
    assert!(!off.should_prepare(), "prepareOnAdd is off by default");
}
