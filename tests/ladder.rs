//! The rest of the ladder: current-round in-place compression never touches what the model has
//! not read, historical tool runs, the rolling history summary, the emergency step and what it
//! keeps, bounded summary concurrency and the plan hint.

mod common;

use autocontext::{AutoContextMemory, Config, MemoryStore, NoSummarizer, Plan, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

fn memory(cfg: Config, summarizer: Option<FakeSummarizer>) -> Mem {
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), summarizer, FlakyStore::new()).unwrap()
}

fn window_for(target: u64) -> u64 {
    (target as f64 / 0.75).ceil() as u64
}

fn ids_in(request: &autocontext::SummarizeRequest) -> Vec<String> {
    request.messages.iter().filter_map(|m| m["tool_call_id"].as_str().map(str::to_string)).collect()
}

/// One long current round (the task lives in one user turn, as in SWE agents): answered
/// exchanges, then a parallel exchange whose results the model has not read yet.
fn long_turn() -> Vec<Value> {
    let mut msgs = vec![system("You solve issues."), user("fix the failing test")];
    for k in 0..8 {
        let id = format!("step{k}");
        msgs.push(json!({"role": "assistant", "content": format!("Let me look at part {k}."), "tool_calls": [call(&id, "bash")]}));
        msgs.push(tool_result(&id, 4_000));
    }
    msgs.push(assistant_calls(&["fresh1", "fresh2"]));
    msgs.push(tool_result("fresh1", 4_500));
    msgs.push(tool_result("fresh2", 4_500));
    msgs
}

#[test]
fn current_round_results_shrink_in_place_but_unread_ones_are_never_summarized() {
    let msgs = long_turn();
    let n = msgs.len();
    let summarizer = FakeSummarizer::fixed("exit 0; 3 files changed");
    let m = memory(config("inflight", window_for(tokens_of(&msgs) / 2)), Some(summarizer.clone()));
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    assert!(summarizer.calls() > 0);
    for q in summarizer.requests.borrow().iter() {
        let ids = ids_in(q);
        assert!(!ids.iter().any(|i| i.starts_with("fresh")), "an unread result was sent to the summarizer: {ids:?}");
    }
    let out = m.messages();
    assert_eq!(&out[n - 3..], &msgs[n - 3..], "the unread exchange is byte-identical");
    assert_eq!(&out[..2], &msgs[..2], "system and the user's task stay");
    // Whatever was shrunk kept its shape: a tool message answering the same call.
    let working = m.working();
    for (i, w) in working.iter().enumerate() {
        if w.synthetic.as_ref().is_some_and(|s| s.kind == "CURRENT_ROUND_MESSAGE_COMPRESS") {
            assert_eq!(out[i]["role"], "tool");
            assert!(out[i]["tool_call_id"].as_str().unwrap().starts_with("step"));
            assert!(out[i]["content"].as_str().unwrap().starts_with("exit 0; 3 files changed"));
            assert_eq!(markers_in(&out[i]).len(), 1);
        }
    }
    assert!(m.events().iter().any(|e| e.event_type == "CURRENT_ROUND_MESSAGE_COMPRESS"), "{:?}", m.events());
    assert_valid(&m, "in flight");
    check_recoverable(&m, "in flight");
    assert_untouched_are_identical(&m, "in flight");
}

#[test]
fn emergency_keeps_system_first_and_current_user_and_unread_results() {
    let mut msgs = vec![system("policy"), user("the first request, which frames the whole task")];
    msgs.push(answer("understood"));
    for r in 0..6 {
        msgs.extend(tool_round(&format!("old{r}"), 2, 4_000));
        if r == 2 {
            msgs.push(json!({"role": "developer", "content": "a mid-conversation instruction"}));
        }
    }
    let current = msgs.len();
    msgs.push(user("the current request"));
    msgs.push(assistant_calls(&["now1"]));
    msgs.push(tool_result("now1", 4_000));
    let n = msgs.len();
    let m = memory(config("emergency", window_for(tokens_of(&msgs) / 5)), None);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    let out = m.messages();
    for keep in [&msgs[0], &msgs[1], &msgs[current], &msgs[n - 2], &msgs[n - 1]] {
        assert!(out.contains(keep), "{keep} was offloaded");
    }
    let mid = json!({"role": "developer", "content": "a mid-conversation instruction"});
    assert!(out.contains(&mid), "system messages are never offloaded");
    let notices: Vec<&Value> = out
        .iter()
        .zip(m.working())
        .filter(|(_, w)| w.synthetic.as_ref().is_some_and(|s| s.kind == "EMERGENCY_OFFLOAD"))
        .map(|(v, _)| v)
        .collect();
    assert!(!notices.is_empty());
    for notice in notices {
        let text = notice["content"].as_str().unwrap();
        assert!(text.contains("context_reload"), "{text}");
        assert_eq!(markers_in(notice).len(), 1);
    }
    assert_valid(&m, "emergency");
    check_recoverable(&m, "emergency");
    assert_untouched_are_identical(&m, "emergency");
}

#[test]
fn emergency_reaches_the_target_in_one_pass_over_many_small_rounds() {
    let mut msgs = vec![system("policy"), user("first"), answer("ok")];
    for r in 0..80 {
        msgs.push(user(&format!("q{r} {}", filler(&format!("q{r}"), 600))));
        msgs.push(answer(&format!("a{r} {}", filler(&format!("a{r}"), 600))));
    }
    msgs.push(user("the current request"));
    let mut cfg = config("many-rounds", window_for(tokens_of(&msgs) / 10));
    cfg.msg_threshold = 1_000;
    let m = memory(cfg, None);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.under_target && !r.exhausted, "the unprotected history was enough, yet: {r:?}");
    assert_eq!(m.messages()[..2], msgs[..2]);
    assert_eq!(m.messages().last(), msgs.last());
    assert_valid(&m, "many rounds");
    check_recoverable(&m, "many rounds");
}

#[test]
fn historical_tool_runs_become_one_summary_each_without_splitting_exchanges() {
    let mut msgs = vec![system("agent"), user("investigate")];
    for k in 0..5 {
        let ids = [format!("run{k}a"), format!("run{k}b")];
        msgs.push(assistant_calls(&[&ids[0], &ids[1]]));
        msgs.push(tool_result(&ids[0], 4_000));
        msgs.push(tool_result(&ids[1], 4_000));
    }
    msgs.push(answer("found it"));
    for r in 0..3 {
        msgs.extend(tool_round(&format!("recent{r}"), 1, 300));
    }
    let mut cfg = config("runs", window_for(tokens_of(&msgs) / 2));
    cfg.last_keep = 12;
    let summarizer = FakeSummarizer::fixed("ran grep and cat on ten files; the bug is in parse()");
    let m = memory(cfg, Some(summarizer.clone()));
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    let runs: Vec<_> = r.events.iter().filter(|e| e.event_type == "TOOL_INVOCATION_COMPRESS").collect();
    assert_eq!(runs.len(), 1, "{:?}", r.events);
    assert_eq!(runs[0].message_count % 3, 0, "whole exchanges of one call message and two results");
    assert_eq!(summarizer.requests.borrow()[0].kind, "tool_calls");
    let out = m.messages();
    let s = &out[runs[0].index];
    assert_eq!(s["role"], "assistant");
    assert!(s.get("tool_calls").is_none());
    assert_eq!(&out[..2], &msgs[..2]);
    assert_valid(&m, "tool runs");
    check_recoverable(&m, "tool runs");
}

#[test]
fn rollups_fold_into_one_another_and_older_originals_stay_reachable() {
    let mut cfg = config("rollup", 10_000_000);
    cfg.msg_threshold = 30;
    cfg.last_keep = 10;
    cfg.history_rollup_keep_recent_rounds = 2;
    cfg.history_rollup_keep_recent_tokens = 50;
    let summarizer = FakeSummarizer::digest();
    let m = memory(cfg, Some(summarizer.clone()));
    m.add(&system("agent")).unwrap();
    let mut generations = Vec::new();
    for r in 0..60 {
        m.add(&user(&format!("question {r}: {}", filler(&format!("q{r}"), 300)))).unwrap();
        if m.needs_compression() {
            let res = block_on(m.compress_if_needed()).unwrap();
            assert!(res.under_target);
            if res.compressed {
                let gens: Vec<u32> = m
                    .working()
                    .iter()
                    .filter_map(|w| w.synthetic.as_ref().filter(|s| s.kind == "RECENT_FOCUS_WINDOW_COMPACT"))
                    .map(|s| s.generation.unwrap_or(1))
                    .collect();
                assert_eq!(gens.len(), 1, "one rolling summary at a time: {gens:?}");
                generations.push(gens[0]);
            }
        }
        m.add(&answer(&format!("answer {r}: {}", filler(&format!("a{r}"), 300)))).unwrap();
        assert_valid(&m, "rollup");
    }
    assert!(generations.len() >= 3, "{generations:?}");
    assert!(generations.windows(2).all(|w| w[1] == w[0] + 1), "each rollup absorbs the previous one: {generations:?}");
    assert!(m.messages().len() < 40);
    assert_eq!(m.messages()[0], system("agent"));
    let rec = check_recoverable(&m, "rollup");
    assert_eq!(rec.reloads, 1, "one reload of the newest rollup gives the originals of every older one: {rec:?}");
    let newest = m.working().iter().find_map(|w| w.synthetic.as_ref().filter(|s| s.kind == "RECENT_FOCUS_WINDOW_COMPACT")?.offload.clone());
    let back = block_on(m.reload(&newest.unwrap())).unwrap();
    assert_eq!(m.messages()[1], user(&format!("question 0: {}", filler("q0", 300))), "the task stays verbatim");
    assert_eq!(back[0], answer(&format!("answer 0: {}", filler("a0", 300))), "the first round rolled up, not a summary of it");
    assert!(back.iter().all(|v| markers_in(v).is_empty()), "originals only");
    assert!(summarizer.requests.borrow().iter().all(|q| q.kind == "rollup"));
}

#[test]
fn summaries_run_at_most_max_concurrent_summaries_at_once() {
    let mut msgs = vec![system("s")];
    for r in 0..6 {
        msgs.extend(tool_round(&format!("big{r}"), 10, 4_500));
    }
    msgs.push(user("next"));
    for (limit, want) in [(2u32, 2usize), (4, 4), (16, 6)] {
        let mut cfg = config(&format!("bound{limit}"), window_for(tokens_of(&msgs) / 2));
        cfg.max_concurrent_summaries = limit;
        // All six rounds' exchanges lie before a one-message tail: one step, six summaries (the
        // most recent round too, unprotected here).
        cfg.last_keep = 1;
        cfg.protect_last_round = false;
        let summarizer = FakeSummarizer::fixed("summary").with_rendezvous(6);
        let m = memory(cfg, Some(summarizer.clone()));
        m.add(&Value::Array(msgs.clone())).unwrap();
        block_on(m.compress_if_needed()).unwrap();
        assert_eq!(summarizer.calls(), 6);
        assert_eq!(summarizer.max_in_flight.get(), want, "maxConcurrentSummaries {limit}");
    }
}

#[test]
fn every_summarize_request_ends_with_the_plan_hint_while_a_plan_is_set() {
    let mut msgs = vec![system("s")];
    for r in 0..3 {
        msgs.extend(tool_round(&format!("big{r}"), 10, 4_500));
    }
    msgs.push(user("next"));
    let summarizer = FakeSummarizer::fixed("summary");
    let m = memory(config("plan", window_for(tokens_of(&msgs) / 2)), Some(summarizer.clone()));
    m.add(&Value::Array(msgs)).unwrap();
    let plan = Plan::from_json(&json!({"goal": "ship the parser fix", "subtasks": [
        {"name": "reproduce", "state": "done"}, {"name": "patch", "state": "in_progress"}
    ], "expectedOutcome": "tests pass"}))
    .unwrap();
    m.set_plan(Some(plan.clone()));
    assert_eq!(m.plan(), Some(plan.clone()));
    block_on(m.compress_if_needed()).unwrap();
    let requests = summarizer.requests.borrow();
    assert!(!requests.is_empty());
    for q in requests.iter() {
        assert!(q.prompt.ends_with(&plan.hint()), "the hint is last: ...{}", &q.prompt[q.prompt.len().saturating_sub(200)..]);
    }
}

#[test]
fn no_summarizer_skips_the_llm_steps_like_having_none() {
    let mut msgs = vec![system("s")];
    for r in 0..4 {
        msgs.extend(tool_round(&format!("r{r}"), 10, 4_000));
    }
    msgs.push(user("now"));
    let cfg = config("nosum", window_for(tokens_of(&msgs) * 3 / 10));
    let with_no = AutoContextMemory::new(cfg.clone(), NoSummarizer, MemoryStore::new()).unwrap();
    let with_none =
        AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), None::<NoSummarizer>, MemoryStore::new())
            .unwrap();
    let mut kinds = Vec::new();
    for m in [&with_no, &with_none] {
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.under_target, "{r:?}");
        assert!(r.events.iter().all(|e| e.event_type != "SUMMARIZE_FAILED"), "no summarizer is not a failure: {:?}", r.events);
        kinds.push(r.events.iter().map(|e| e.event_type.clone()).collect::<Vec<_>>());
        assert_valid(m, "no summarizer");
        check_recoverable(m, "no summarizer");
    }
    assert_eq!(kinds[0], kinds[1]);
}

/// A user message of `tokens` tokens or a few more, of filler text.
fn user_of_tokens(seed: &str, tokens: u64) -> Value {
    let (mut lo, mut hi) = (1usize, tokens as usize * 8);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if message_tokens(&user(&filler(seed, mid))) < tokens {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    user(&filler(seed, lo))
}

#[test]
fn a_user_message_that_fits_the_window_is_sent_whole_in_every_format() {
    // Over the target (75% of the window) but inside the window: the model reads it as it was
    // written, and the pass says it ended over the target. A 30,281-token paste in a 32k window
    // was cut to its head and tail; so would a 160k paste in a 200k window.
    for (window, tokens) in [(32_000u64, 30_281u64), (200_000, 160_000)] {
        let big = user_of_tokens("pasted log", tokens);
        let openai = vec![system("Be brief."), user("hi"), answer("Hello!"), user("what is 2+2?"), answer("4"), big];
        let total = tokens_of(&openai);
        assert!(total > window * 3 / 4 && total < window, "{total} tokens: over the target, inside the window");
        for format in autocontext::Format::ALL {
            let what = format!("{} in {window}", format.name());
            let msgs = convert(format, &openai);
            let cfg = Config { max_token: window, format, session_id: "fits".into(), ..Config::default() };
            let m = AutoContextMemory::new(cfg, FakeSummarizer::fixed("s"), MemoryStore::new()).unwrap();
            m.add(&Value::Array(msgs.clone())).unwrap();
            let r = block_on(m.compress_if_needed()).unwrap();
            assert!(!r.under_target && r.exhausted, "{what}: {r:?}");
            assert!(r.reason.as_deref().is_some_and(|w| w.contains("current user message")), "{what}: {:?}", r.reason);
            assert!(r.tokens_after <= window, "{what}: {r:?}");
            let working = m.messages();
            assert!(same_wire(working.last().unwrap(), msgs.last().unwrap()), "{what}: the user's message is sent whole");
            assert!(m.working().last().unwrap().synthetic.is_none(), "{what}");
            assert_valid(&m, &what);
            // The next passes do not cut it either.
            let again = block_on(m.compress_if_needed()).unwrap();
            assert!(!again.under_target && same_wire(m.messages().last().unwrap(), msgs.last().unwrap()), "{what}: {again:?}");
        }
    }
}

#[test]
fn a_user_message_larger_than_the_window_keeps_its_head_and_tail_in_every_format() {
    // The same in every format: the task or the current user message that alone keeps the
    // request over the window is cut to its head and tail once nothing else is left, and the
    // whole of it reloads; a large user message of an earlier round is previewed as any other.
    let big = filler("pasted log", 60_000);
    for format in autocontext::Format::ALL {
        for (case, msgs) in [
            ("current", vec![system("agent"), user("first task"), answer("done"), user(&big)]),
            ("task", vec![system("agent"), user(&big)]),
            ("earlier", vec![system("agent"), user("first task"), answer("done"), user(&big), answer("done"), user("next")]),
        ] {
            let what = format!("{} {case}", format.name());
            let msgs = convert(format, &msgs);
            let cfg = autocontext::Config { max_token: 8_000, format, session_id: "huge".into(), ..autocontext::Config::default() };
            let m = AutoContextMemory::new(cfg, FakeSummarizer::fixed("s"), MemoryStore::new()).unwrap();
            m.add(&Value::Array(msgs.clone())).unwrap();
            let r = block_on(m.compress_if_needed()).unwrap();
            assert!(r.under_target && r.tokens_after < 8_000 * 3 / 4, "{what}: {r:?}");
            let kinds: Vec<&str> = r.events.iter().map(|e| e.event_type.as_str()).collect();
            let want = if case == "earlier" { "LARGE_MESSAGE_OFFLOAD" } else { "EMERGENCY_OFFLOAD" };
            assert_eq!(kinds, [want], "{what}");
            let text = m.working().iter().map(|w| w.payload_text()).collect::<Vec<_>>().join("\n");
            assert!(text.contains(&big[..100]), "{what}: the head stays");
            if case != "earlier" {
                assert!(text.contains(&big[big.len() - 100..]), "{what}: the tail stays");
            }
            assert_valid(&m, &what);
            check_recoverable(&m, &what);
        }
    }
}
