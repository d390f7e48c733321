//! Persistence in the middle of a session: a host that keeps its memory as JSON between model
//! turns (a serverless handler, a page reload) restores it after every pass and goes on. The
//! restored memory must be the same memory: the next passes keep every guarantee, the plan and
//! the event log carry over, the rolling summaries keep rolling, and every offload written
//! before any restore still reloads byte-exact at the end.

mod common;

use std::collections::BTreeMap;

use autocontext::{AutoContextMemory, Config, Plan, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

/// A session of `rounds` rounds: each a question, one to three steps of one or two parallel
/// calls with results from small to over `toolResultLimit`, and an answer.
fn session(rounds: usize) -> Vec<Value> {
    const SIZES: [usize; 7] = [200, 1_500, 3_000, 6_000, 800, 9_000, 24_000];
    let mut msgs = vec![system("You are a coding agent.")];
    let mut k = 0;
    for r in 0..rounds {
        msgs.push(user(&format!("task {r}: {}", filler(&format!("t{r}"), 150 + 40 * (r % 5)))));
        for s in 0..1 + r % 3 {
            let ids: Vec<String> = (0..1 + (r + s) % 2).map(|c| format!("r{r}s{s}c{c}")).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            msgs.push(assistant_calls(&refs));
            for id in &ids {
                msgs.push(tool_result(id, SIZES[k % SIZES.len()]));
                k += 1;
            }
        }
        msgs.push(answer(&format!("done with task {r}")));
    }
    msgs
}

fn cfg() -> Config {
    let mut c = config("resume", 9_000);
    // Shallow passes, many of them: every step of the ladder gets its turn across restores.
    c.target_ratio = Some(c.token_ratio);
    c.msg_threshold = 40;
    c.last_keep = 6;
    c.tool_result_limit = 8_000;
    c.large_payload_threshold = 4_000;
    c.min_compression_token_threshold = 1_000;
    c.history_rollup_keep_recent_tokens = 2_000;
    // The first task goes into the rollup like any round: in a window this small the rollup
    // would otherwise sit right after it, where the emergency step absorbs it.
    c.keep_task = false;
    c
}

fn restore(m: &Mem, summarizer: &FakeSummarizer, store: &FlakyStore) -> Mem {
    // Through text, as a host would keep it.
    let text = serde_json::to_string(&m.to_json()).unwrap();
    let state: Value = serde_json::from_str(&text).unwrap();
    let r = AutoContextMemory::from_json(&state, Some(summarizer.clone()), store.clone(), None).unwrap();
    assert_eq!(r.messages(), m.messages());
    assert_eq!(block_on(r.original_messages()).expect("the log reads back"), block_on(m.original_messages()).expect("the log reads back"));
    assert_eq!(r.events(), m.events());
    assert_eq!(r.offloads(), m.offloads());
    assert_eq!(r.token_count(), m.token_count());
    assert_eq!(r.plan(), m.plan());
    let marks = |x: &Mem| x.working().iter().map(|w| w.synthetic.clone()).collect::<Vec<_>>();
    assert_eq!(marks(&r), marks(m), "the engine's marks on its own messages survive");
    r
}

#[test]
fn a_memory_restored_after_every_pass_keeps_every_guarantee() {
    let msgs = session(24);
    let store = FlakyStore::new();
    let summarizer = FakeSummarizer::digest();
    let plan = Plan::from_json(&json!({"goal": "finish every task", "subtasks": [{"name": "tasks", "state": "in_progress"}]})).unwrap();
    let mut m: Mem =
        AutoContextMemory::with_counter(cfg(), TokenCounter::new(Tokenizer::O200kBase).unwrap(), Some(summarizer.clone()), store.clone())
            .unwrap();
    m.set_plan(Some(plan.clone()));

    // Every offload's originals as first reloaded, to check again at the end.
    let mut first_seen: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let (mut passes, mut restores) = (0, 0);
    for (i, v) in msgs.iter().enumerate() {
        if v["role"] == "assistant" {
            let events_before = m.events();
            let calls_before = summarizer.calls();
            let r = block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("pass before message {i}: {e:?}"));
            passes += 1;
            let what = format!("pass before message {i} (after {restores} restores)");
            assert!(r.under_target || (r.exhausted && r.reason.is_some()), "{what}: {r:?}");
            assert_eq!(m.events()[..events_before.len()], events_before[..], "{what}: the event log only grows");
            assert_valid(&m, &what);
            assert_untouched_are_identical(&m, &what);
            for q in summarizer.requests.borrow()[calls_before..].iter() {
                assert!(q.prompt.ends_with(&plan.hint()), "{what}: the restored plan is hinted");
            }
            if passes % 8 == 0 {
                check_recoverable(&m, &what);
            }
            for o in m.offloads() {
                if let std::collections::btree_map::Entry::Vacant(slot) = first_seen.entry(o.uuid.clone()) {
                    slot.insert(block_on(m.reload(&o.uuid)).unwrap());
                }
            }
            m = restore(&m, &summarizer, &store);
            restores += 1;
        }
        m.add(v).unwrap_or_else(|e| panic!("add of message {i} after {restores} restores: {e:?}"));
    }

    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.under_target || r.exhausted);
    assert_valid(&m, "end");
    assert_eq!(block_on(m.original_messages()).expect("the log reads back"), msgs, "the original log is the whole session");
    let rec = check_recoverable(&m, "end");
    assert_eq!(rec.in_working + rec.via_reload, msgs.len());
    for (uuid, back) in &first_seen {
        assert_eq!(&block_on(m.reload(uuid)).unwrap(), back, "offload {uuid} changed or vanished across restores");
    }

    // The restored memories did the whole ladder's work, not just the cheap steps.
    let mut types: BTreeMap<String, usize> = BTreeMap::new();
    for e in m.events() {
        *types.entry(e.event_type).or_default() += 1;
    }
    assert!(restores > 20 && summarizer.calls() > 0, "{restores} restores, {} calls", summarizer.calls());
    for t in ["TOOL_RESULT_TRUNCATE", "LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION", "RECENT_FOCUS_WINDOW_COMPACT"] {
        assert!(types.contains_key(t), "{t} never ran: {types:?}");
    }
    assert!(
        types.contains_key("TOOL_INVOCATION_COMPRESS") || types.contains_key("PREVIOUS_ROUND_CONVERSATION_SUMMARY"),
        "no summary under token pressure: {types:?}"
    );
    assert!(!types.contains_key("SUMMARIZE_FAILED"), "{types:?}");
    // The rolling summary kept rolling across restores: one at a time, its generation growing.
    let gens: Vec<u32> = m
        .working()
        .iter()
        .filter_map(|w| w.synthetic.as_ref().filter(|s| s.kind == "RECENT_FOCUS_WINDOW_COMPACT"))
        .map(|s| s.generation.unwrap_or(1))
        .collect();
    assert_eq!(gens.len(), 1, "{gens:?}");
    assert_eq!(gens[0] as usize, types["RECENT_FOCUS_WINDOW_COMPACT"], "each rollup absorbed the one before: {types:?}");
}
