//! The log of everything added lives in the host's store in chunks: the engine and its state
//! hold only its tail. These tests check that it reads back exactly (through flushes, restores,
//! a version-1 state and a failing store), that the state no longer grows with the history, and
//! that a chunk the store lost or changed is an error, never a silently shorter history.

mod common;

use autocontext::{AutoContextMemory, ErrorCode, OffloadStore, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

fn memory(session: &str, store: &FlakyStore) -> Mem {
    AutoContextMemory::with_counter(
        config(session, 1_000_000),
        TokenCounter::new(Tokenizer::Estimate).unwrap(),
        Some(FakeSummarizer::digest()),
        store.clone(),
    )
    .unwrap()
}

/// A memory with the default policy (its ladder and low-water mark) in a `window`-token window.
fn default_policy(session: &str, window: u64, summarizer: Option<FakeSummarizer>, store: &FlakyStore) -> Mem {
    let mut cfg = config(session, window);
    cfg.target_ratio = None;
    cfg.strategies = None;
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::Estimate).unwrap(), summarizer, store.clone()).unwrap()
}

fn restore(state: &Value, store: &FlakyStore) -> autocontext::Result<Mem> {
    AutoContextMemory::from_json(state, Some(FakeSummarizer::digest()), store.clone(), None)
}

/// `rounds` tool rounds after a system message.
fn conversation(rounds: usize) -> Vec<Value> {
    let mut msgs = vec![system("agent")];
    for r in 0..rounds {
        msgs.extend(tool_round(&format!("r{r}"), 2, 300));
    }
    msgs
}

fn originals(m: &Mem) -> Vec<Value> {
    block_on(m.original_messages()).expect("the log reads back")
}

/// A memory holding `conversation(5)`, and two memories restored from its state that add `ra`
/// and `rb` and flush: two writers of one session.
fn two_writers(session: &str, store: &FlakyStore, ra: &[Value], rb: &[Value]) -> (Mem, Mem, Mem) {
    let m = memory(session, store);
    m.add(&Value::Array(conversation(5))).unwrap();
    let state = m.to_json();
    let (a, b) = (restore(&state, store).unwrap(), restore(&state, store).unwrap());
    a.add(&Value::Array(ra.to_vec())).unwrap();
    b.add(&Value::Array(rb.to_vec())).unwrap();
    block_on(a.flush(true)).unwrap();
    block_on(b.flush(true)).unwrap();
    (m, a, b)
}

fn log_keys(store: &FlakyStore) -> Vec<String> {
    store.keys().into_iter().filter(|k| k.contains("/log-")).collect()
}

#[test]
fn flushed_chunks_read_back_exactly_and_leave_only_a_tail_in_the_state() {
    let store = FlakyStore::new();
    let m = memory("log", &store);
    let msgs = conversation(100);
    let mut added = 0;
    for (i, chunk) in msgs.chunks(7).enumerate() {
        m.add(&Value::Array(chunk.to_vec())).unwrap();
        added += chunk.len();
        if i % 3 == 0 {
            block_on(m.flush(false)).unwrap();
        }
        assert_eq!(m.history_len(), added as u64);
    }
    assert!(log_keys(&store).len() >= 3, "several chunks were written: {:?}", log_keys(&store));
    let before = m.to_json()["log"]["tail"].as_array().unwrap().len();
    let written = block_on(m.flush(true)).unwrap();
    assert_eq!(written, before - 1, "a forced flush writes all but the newest message");
    let state = m.to_json();
    assert_eq!(state["log"]["tail"].as_array().unwrap().len(), 1);
    assert_eq!(state["log"]["messages"], json!(msgs.len()));
    assert!(state.get("original").is_none());
    assert_eq!(originals(&m), msgs, "the log is everything added, as added");

    // Restored from the state alone (the store holds the rest), it reads the same log and
    // carries on appending to it.
    let r = restore(&state, &store).unwrap();
    assert_eq!(originals(&r), msgs);
    let more = tool_round("after", 1, 100);
    r.add(&Value::Array(more.clone())).unwrap();
    block_on(r.flush(true)).unwrap();
    let all: Vec<Value> = msgs.iter().chain(&more).cloned().collect();
    assert_eq!(originals(&r), all);
    // The first memory's chain is untouched by the second's chunks.
    assert_eq!(originals(&m), msgs);
}

#[test]
fn the_state_stays_the_size_of_the_working_list_as_the_history_grows() {
    let store = FlakyStore::new();
    let m = default_policy("long", 4_000, Some(FakeSummarizer::digest()), &store);
    m.add(&system("agent")).unwrap();
    let mut sizes = Vec::new();
    let mut added = vec![system("agent")];
    for r in 0..400 {
        let round = tool_round(&format!("r{r}"), 1, 400);
        m.add(&Value::Array(round.clone())).unwrap();
        added.extend(round);
        block_on(m.compress_if_needed()).unwrap();
        if r % 100 == 99 {
            let tail = m.to_json()["log"]["tail"].as_array().unwrap().len();
            assert!(tail <= 65, "a pass leaves at most 64 messages and the newest in the tail, not {tail}");
            block_on(m.flush(true)).unwrap();
            let state = m.to_json();
            let log = serde_json::to_string(&state["log"]).unwrap().len();
            let working = serde_json::to_string(&state["working"]).unwrap().len();
            sizes.push((log, working));
        }
    }
    for (log, working) in &sizes {
        assert!(log < working, "the log's part of the state ({log} bytes) is smaller than the working list ({working} bytes)");
    }
    assert_eq!(originals(&m), added, "and nothing added is lost");
    assert_valid(&m, "after 400 rounds");
    check_recoverable(&m, "after 400 rounds");
}

#[test]
fn a_version_1_state_migrates_its_originals_to_the_store() {
    let store = FlakyStore::new();
    let m = memory("v1", &store);
    let msgs = conversation(40);
    m.add(&Value::Array(msgs.clone())).unwrap();
    // The state an earlier version wrote: everything in `original`.
    let mut v1 = m.to_json();
    v1["autocontext"] = json!(1);
    v1.as_object_mut().unwrap().remove("log");
    v1["original"] = json!(msgs);
    let r = restore(&v1, &store).unwrap();
    assert_eq!(r.history_len(), msgs.len() as u64);
    assert_eq!(originals(&r), msgs);
    assert_eq!(r.to_json()["autocontext"], json!(2), "it saves as the current version");
    block_on(r.flush(true)).unwrap();
    assert_eq!(r.to_json()["log"]["tail"].as_array().unwrap().len(), 1);
    assert_eq!(originals(&restore(&r.to_json(), &store).unwrap()), msgs);
}

#[test]
fn a_failed_flush_keeps_the_tail_and_the_next_one_writes_it() {
    let store = FlakyStore::new();
    let m = memory("flaky", &store);
    let msgs = conversation(60);
    m.add(&Value::Array(msgs.clone())).unwrap();
    store.fail_puts(true);
    let mut e = block_on(m.flush(true)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreFailed);
    assert!(e.cause_mut().is_some(), "the store's error is the cause");
    assert_eq!(m.to_json()["log"]["tail"].as_array().unwrap().len(), msgs.len(), "nothing left the tail");
    assert_eq!(originals(&m), msgs);
    store.fail_puts(false);
    assert_eq!(block_on(m.flush(true)).unwrap(), msgs.len() - 1);
    assert_eq!(originals(&m), msgs);
}

#[test]
fn a_one_shot_pass_writes_its_offloads_and_none_of_the_log() {
    // The same conversation and pass in a memory and in a one-shot one (the stateless
    // `compress()`): the pass is the same, only the memory's log goes to the store.
    let msgs = conversation(80);
    let run = |one_shot: bool| {
        let store = FlakyStore::new();
        let m = default_policy("once", 8_000, None, &store);
        if one_shot {
            m.one_shot();
        }
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed);
        (store, m, (r.messages_after, r.events.iter().map(|e| (e.event_type.clone(), e.index, e.message_count)).collect::<Vec<_>>()))
    };
    let (kept, _, pass) = run(false);
    assert!(!log_keys(&kept).is_empty(), "a memory's pass flushes its log");
    let (store, m, once) = run(true);
    assert_eq!(once, pass, "the same pass");
    assert!(log_keys(&store).is_empty(), "{:?}", log_keys(&store));
    let offloads: Vec<String> = m.offloads().iter().map(|o| format!("once/{}", o.uuid)).collect();
    assert!(!offloads.is_empty());
    let mut keys = store.keys();
    keys.sort();
    let mut want = offloads.clone();
    want.sort();
    assert_eq!(keys, want);
    // Its history is still whole (from the tail in memory).
    assert_eq!(originals(&m), msgs);
}

#[test]
fn a_lost_or_changed_chunk_is_an_error_not_a_shorter_history() {
    let store = FlakyStore::new();
    let m = memory("lost", &store);
    m.add(&Value::Array(conversation(60))).unwrap();
    block_on(m.flush(true)).unwrap();
    let key = log_keys(&store).pop().unwrap();
    let text = block_on(store.get(&key)).unwrap().unwrap();

    block_on(store.put(&key, &text.replacen("question", "QUESTION", 1))).unwrap();
    let Err(e) = block_on(m.original_messages()) else { panic!("a changed chunk is refused") };
    assert_eq!(e.code(), ErrorCode::StoreFailed);
    assert!(e.message().contains(&key), "{}", e.message());

    block_on(store.delete(&key)).unwrap();
    let Err(e) = block_on(m.original_messages()) else { panic!("a lost chunk is an error") };
    assert_eq!(e.code(), ErrorCode::StoreFailed);

    block_on(store.put(&key, &text)).unwrap();
    assert_eq!(originals(&m).len() as u64, m.history_len());
    // A key of another session is refused before the store is asked.
    let e = block_on(m.log_chunk(&key.replace("lost/", "other/"))).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

#[test]
fn two_writers_of_one_session_never_overwrite_each_others_chunks() {
    let store = FlakyStore::new();
    let (ra, rb) = (tool_round("a", 1, 100), tool_round("b", 1, 100));
    let (m, a, b) = two_writers("two", &store, &ra, &rb);
    let base = conversation(5);
    assert_eq!(originals(&a), base.iter().chain(&ra).cloned().collect::<Vec<_>>());
    assert_eq!(originals(&b), base.iter().chain(&rb).cloned().collect::<Vec<_>>());
    assert_eq!(originals(&m), base, "the state both started from still reads its own log");
}

#[test]
fn the_newest_message_can_be_taken_back_after_a_flush() {
    let store = FlakyStore::new();
    let m = memory("pop", &store);
    let msgs = conversation(40);
    m.add(&Value::Array(msgs.clone())).unwrap();
    block_on(m.flush(true)).unwrap();
    assert_eq!(m.pop().unwrap().as_ref(), msgs.last());
    assert_eq!(m.messages(), msgs[..msgs.len() - 1].to_vec());
    assert_eq!(originals(&m), msgs[..msgs.len() - 1].to_vec());
    // The message before it was flushed: it cannot come out of the log alone.
    block_on(m.flush(true)).unwrap();
    assert!(m.pop().is_ok(), "the newest message always stays in the tail");
}

#[test]
fn a_newest_message_a_pass_replaced_is_flushed_with_the_rest() {
    // A fresh tool result over the limit: the pass truncates it, the last add can no longer be
    // taken back, and a forced flush (a save's) writes it too, so the state holds none of it.
    let store = FlakyStore::new();
    let m = memory("replaced", &store);
    let mut msgs = conversation(3);
    msgs.extend([user("read the log"), assistant_calls(&["log"]), tool_result("log", 30_000)]);
    m.add(&Value::Array(msgs.clone())).unwrap();
    assert!(block_on(m.compress_if_needed()).unwrap().compressed);
    assert!(m.working().last().unwrap().synthetic.is_some(), "the pass replaced the newest message");
    assert_eq!(m.pop().unwrap_err().code(), ErrorCode::InvalidState);
    assert_eq!(block_on(m.flush(true)).unwrap(), msgs.len());
    let state = m.to_json();
    assert_eq!(state["log"]["tail"], json!([]));
    let original = serde_json::to_string(&msgs.last().unwrap()["content"]).unwrap();
    assert!(!state.to_string().contains(&original), "the state does not carry the original");
    assert_eq!(originals(&m), msgs);
    assert_eq!(m.pop().unwrap_err().code(), ErrorCode::InvalidState);

    // Restored, the log reads back whole and carries on; the next add can be taken back.
    let r = restore(&state, &store).unwrap();
    assert_eq!(originals(&r), msgs);
    assert_eq!(r.pop().unwrap_err().code(), ErrorCode::InvalidState);
    r.add(&user("next")).unwrap();
    block_on(r.flush(true)).unwrap();
    assert_eq!(r.pop().unwrap(), Some(user("next")));
    assert_eq!(originals(&r), msgs);
}

#[test]
fn the_state_keeps_only_the_most_recent_events() {
    let store = FlakyStore::new();
    let m = default_policy("events", 2_000, None, &store);
    let mut last = Vec::new();
    let mut total = 0;
    for r in 0..600 {
        m.add(&Value::Array(tool_round(&format!("r{r}"), 1, 3_000))).unwrap();
        let result = block_on(m.compress_if_needed()).unwrap();
        total += result.events.len();
        last.extend(result.events);
    }
    assert!(total > autocontext::MAX_EVENTS, "enough passes to fill the list: {total} events");
    let kept = m.events();
    assert_eq!(kept.len(), autocontext::MAX_EVENTS);
    assert_eq!(kept, last[last.len() - autocontext::MAX_EVENTS..].to_vec(), "the most recent ones, in order");
    let r = restore(&m.to_json(), &store).unwrap();
    assert_eq!(r.events(), kept);
    check_recoverable(&m, "after 600 rounds");
}

#[test]
fn old_offload_records_retire_to_the_store_and_still_reload() {
    let store = FlakyStore::new();
    let m = default_policy("retire", 2_000, None, &store);
    let mut seen = Vec::new();
    for r in 0..700 {
        m.add(&Value::Array(tool_round(&format!("r{r}"), 1, 3_000))).unwrap();
        for e in block_on(m.compress_if_needed()).unwrap().events {
            seen.extend(e.offload_uuid);
        }
    }
    assert!(seen.len() > 2 * autocontext::LIVE_OFFLOADS, "enough offloads to retire some: {}", seen.len());
    let held = m.offloads();
    assert!(held.len() <= autocontext::LIVE_OFFLOADS + m.messages().len(), "the state holds {} records", held.len());
    let first = &seen[0];
    assert!(!held.iter().any(|o| &o.uuid == first), "the first offload was retired");
    assert!(!block_on(m.reload(first)).unwrap().is_empty(), "a retired offload still reloads");
    // Through a restore (the retired chain is named by the state), and after a flush.
    block_on(m.flush(true)).unwrap();
    let r = restore(&m.to_json(), &store).unwrap();
    for u in seen.iter().step_by(37) {
        assert_eq!(block_on(r.reload(u)).unwrap(), block_on(m.reload(u)).unwrap(), "{u} reloads after a restore");
    }
    let e = block_on(r.reload("12345678-1234-4123-8123-123456789abc")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotFound);
    assert!(serde_json::to_string(&r.to_json()["retired"]).unwrap().len() < 1_000, "the retired records are in the store");
    check_recoverable(&r, "after 700 rounds, restored");
}

#[test]
fn two_writers_adding_the_same_messages_still_write_different_chunks() {
    // Two memories restored from one state (two tabs, or a writer and the retry of a refused
    // one) that add the same turn: their chunks name their writer, so no key is shared, and a
    // sweep that deletes one writer's abandoned chunk never deletes the other's live one.
    let store = FlakyStore::new();
    let turn = tool_round("t", 1, 100);
    let (_, a, b) = two_writers("same", &store, &turn, &turn);
    let (ha, hb) = (a.log_head().0.unwrap(), b.log_head().0.unwrap());
    assert_ne!(ha, hb, "the same messages after the same chunk, written by two memories");
    block_on(store.delete(&ha)).unwrap();
    let whole: Vec<Value> = conversation(5).into_iter().chain(turn).collect();
    assert_eq!(originals(&b), whole, "b's log does not depend on a's chunk");
}

#[test]
fn reachable_keys_are_every_key_a_single_writer_keeps_and_never_an_abandoned_one() {
    let store = FlakyStore::new();
    let m = default_policy("reach", 2_000, None, &store);
    for r in 0..700 {
        m.add(&Value::Array(tool_round(&format!("r{r}"), 1, 3_000))).unwrap();
        block_on(m.compress_if_needed()).unwrap();
    }
    block_on(m.flush(true)).unwrap();
    let state = m.to_json();
    assert!(state["retired"]["head"].is_string(), "records were retired to the store's index chain");
    assert!(state["log"]["head"].is_string(), "the log has chunks in the store");
    let reached = block_on(m.reachable_keys(&[])).unwrap();
    let all: std::collections::BTreeSet<String> = store.keys().into_iter().collect();
    assert_eq!(reached, all, "one writer, no failure: every key is reached");
    // Read ahead with the store's listing, whole or in part (a listing may lag), the same keys.
    let listed = store.keys();
    let gets = store.gets.get();
    assert_eq!(block_on(m.reachable_keys(&listed)).unwrap(), reached);
    let half: Vec<String> = listed.iter().step_by(2).cloned().collect();
    assert_eq!(block_on(m.reachable_keys(&half)).unwrap(), reached);
    assert!(store.gets.get() > gets, "the chunks were read");
    assert!(reached.iter().any(|k| k.contains("/index-")) && reached.iter().any(|k| k.contains("/log-")));
    // A pass whose put fails and whose clean-up deletes fail too: what it wrote (a failed put
    // may still have landed) is pending, and not reached.
    store.fail_put_at(1);
    store.fail_deletes(true);
    m.add(&Value::Array(tool_round("big", 3, 9_000))).unwrap();
    m.add(&user("next")).unwrap();
    assert_eq!(block_on(m.compress_if_needed()).unwrap_err().code(), ErrorCode::StoreFailed);
    store.fail_deletes(false);
    let pending = m.pending_deletes();
    assert!(!pending.is_empty(), "the failed pass left pending deletes");
    let reached = block_on(m.reachable_keys(&[])).unwrap();
    for uuid in &pending {
        let key = format!("reach/{uuid}");
        assert!(!reached.contains(&key), "{key} is abandoned, not reached");
    }
    // Every reached key is in the store, and the restored memory reaches the same keys.
    let keys: std::collections::BTreeSet<String> = store.keys().into_iter().collect();
    assert!(reached.is_subset(&keys));
    let r = restore(&m.to_json(), &store).unwrap();
    assert_eq!(block_on(r.reachable_keys(&[])).unwrap(), reached);
    // A lost chunk is an error: nothing is known to be unreached.
    let chunk = state["log"]["head"].as_str().unwrap().to_string();
    block_on(store.delete(&chunk)).unwrap();
    assert_eq!(block_on(m.reachable_keys(&[])).unwrap_err().code(), ErrorCode::StoreFailed);
}
