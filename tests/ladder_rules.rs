//! The rules that decide which history step runs and what it takes: the tool-run cursor and its
//! two thresholds, the `lastKeep` cut through a parallel exchange, the recent focus window
//! (rounds and tokens, both), rollup on message-count pressure only, rolling rollups that keep
//! every older offload reachable, and count pressure never reaching into the current round.
//!
//! The reference got several of these wrong (a skipped run reported as done, a rollup that
//! deleted its predecessor's originals, count pressure compressing the turn in progress); each
//! test here pins one rule with the smallest conversation that can break it.

mod common;

use autocontext::strategy::Strategy;
use autocontext::{AutoContextMemory, Config, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};
use std::ops::Range;

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

fn memory(cfg: Config, summarizer: &FakeSummarizer) -> Mem {
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), Some(summarizer.clone()), FlakyStore::new())
        .unwrap()
}

/// `max_token` whose trigger (`× 0.75`) is `target` or just above it.
fn window_for(target: u64) -> u64 {
    (target as f64 / 0.75).ceil() as u64
}

/// `n` single-call exchanges (assistant call + result of `chars`), ids `<tag><k>`.
fn exchanges(tag: &str, n: usize, chars: usize) -> Vec<Value> {
    (0..n)
        .flat_map(|k| {
            let id = format!("{tag}{k}");
            vec![assistant_calls(&[&id]), tool_result(&id, chars)]
        })
        .collect()
}

fn tokens_sum(msgs: &[Value]) -> u64 {
    msgs.iter().map(message_tokens).sum()
}

fn kinds(s: &FakeSummarizer) -> Vec<String> {
    s.requests.borrow().iter().map(|q| q.kind.clone()).collect()
}

// ---------------------------------------------------------------------------------------------
// Historical tool runs
// ---------------------------------------------------------------------------------------------

/// The reference's cursor test conversation: a task, a run of four small exchanges, an answer, a
/// run of `large` large exchanges, an answer and a new question; with the two runs' ranges.
fn cursor_conversation(large: usize) -> (Vec<Value>, Range<usize>, Range<usize>) {
    let mut msgs = vec![system("agent"), user("investigate the crash")];
    let a_start = msgs.len();
    msgs.extend(exchanges("small", 4, 150));
    let a = a_start..msgs.len();
    msgs.push(answer("The small files are fine; now the large ones."));
    let b_start = msgs.len();
    msgs.extend(exchanges("large", large, 3_000));
    let b = b_start..msgs.len();
    msgs.push(answer("found it"));
    msgs.push(user("what next?"));
    (msgs, a, b)
}

#[test]
fn a_run_below_the_token_threshold_is_skipped_and_the_next_qualifying_run_is_compressed() {
    let (msgs, Range { start: a_start, end: a_end }, Range { start: b_start, end: b_end }) = cursor_conversation(4);

    let (a_tokens, b_tokens) = (tokens_sum(&msgs[a_start..a_end]), tokens_sum(&msgs[b_start..b_end]));
    assert!(a_tokens * 4 < b_tokens);
    let mut cfg = config("cursor", window_for(tokens_of(&msgs) - b_tokens / 2));
    cfg.last_keep = 1;
    // The runs lie in the most recent completed round, which is protected by default.
    cfg.protect_last_round = false;
    // Both runs are long enough (8 > 6 messages); only the second is worth a summary.
    cfg.min_compression_token_threshold = (b_tokens / 2) as u32;
    // The summarizer reads the results whole, so the request is the run itself.
    cfg.summary_result_limit = 0;
    let summarizer = FakeSummarizer::fixed("read four large files; the crash is in parse()");
    let m = memory(cfg, &summarizer);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();

    assert!(r.compressed && r.under_target, "the skip did not stop the ladder: {r:?}");
    assert_eq!(summarizer.calls(), 1, "exactly one summary: {:?}", kinds(&summarizer));
    let q = &summarizer.requests.borrow()[0];
    assert_eq!(q.kind, "tool_calls");
    assert_eq!(q.messages, msgs[b_start..b_end].to_vec(), "the request holds exactly the second run");
    assert_eq!(r.events.len(), 1, "{:?}", r.events);
    let e = &r.events[0];
    assert_eq!((e.event_type.as_str(), e.index, e.message_count), ("TOOL_INVOCATION_COMPRESS", b_start, b_end - b_start));
    let out = m.messages();
    assert_eq!(&out[..b_start], &msgs[..b_start], "the skipped run and all before it are untouched");
    assert_eq!(&out[b_start + 1..], &msgs[b_end..], "all after the run is untouched");
    assert_eq!(block_on(m.reload(e.offload_uuid.as_ref().unwrap())).unwrap(), msgs[b_start..b_end].to_vec());
    assert_valid(&m, "cursor");
    check_recoverable(&m, "cursor");
}

#[test]
fn a_run_must_be_strictly_longer_than_min_consecutive_tool_messages() {
    // Six messages (three single-call exchanges) against seven (two, then one with two calls).
    let six = exchanges("six", 3, 3_000);
    let mut seven = exchanges("seven", 2, 3_000);
    seven.push(assistant_calls(&["pa", "pb"]));
    seven.push(tool_result("pa", 3_000));
    seven.push(tool_result("pb", 3_000));
    for (run, compressed) in [(six, false), (seven, true)] {
        let mut msgs = vec![system("agent"), user("look around")];
        msgs.extend(run.iter().cloned());
        msgs.push(answer("done"));
        msgs.push(user("and now?"));
        let mut cfg = config("run-length", window_for(tokens_of(&msgs) / 2));
        cfg.last_keep = 1;
        cfg.protect_last_round = false;
        cfg.min_consecutive_tool_messages = 6;
        cfg.min_compression_token_threshold = 100;
        let summarizer = FakeSummarizer::fixed("ran the tools");
        let m = memory(cfg, &summarizer).with_ladder(&[Strategy::ToolRunCompress]);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        if compressed {
            assert_eq!(summarizer.calls(), 1);
            assert_eq!(r.events.len(), 1);
            assert_eq!((r.events[0].index, r.events[0].message_count), (2, 7));
            assert_valid(&m, "seven");
            check_recoverable(&m, "seven");
        } else {
            assert_eq!(summarizer.calls(), 0, "a run of exactly minConsecutiveToolMessages is left alone");
            assert!(r.events.is_empty() && r.exhausted, "{r:?}");
            assert_eq!(m.messages(), msgs);
        }
    }
}

#[test]
fn a_parallel_exchange_cut_by_last_keep_ends_the_run_before_it() {
    let mut msgs = vec![system("agent"), user("compare the modules")];
    msgs.extend(exchanges("single", 4, 3_000));
    let parallel = msgs.len();
    msgs.push(assistant_calls(&["p1", "p2", "p3"]));
    for id in ["p1", "p2", "p3"] {
        msgs.push(tool_result(id, 3_000));
    }
    msgs.push(answer("compared"));
    msgs.push(user("and now?"));
    let n = msgs.len();
    // The cut lands on the second of the three results.
    for (last_keep, run_len) in [(n - (parallel + 2), parallel - 2), (1, parallel + 4 - 2)] {
        let mut cfg = config("cut", window_for(tokens_of(&msgs) / 4));
        cfg.last_keep = last_keep as u32;
        cfg.protect_last_round = false;
        cfg.min_compression_token_threshold = 100;
        let summarizer = FakeSummarizer::fixed("read the modules");
        let m = memory(cfg, &summarizer).with_ladder(&[Strategy::ToolRunCompress]);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert_eq!(summarizer.calls(), 1, "lastKeep {last_keep}");
        assert_eq!((r.events[0].index, r.events[0].message_count), (2, run_len), "lastKeep {last_keep}");
        let q = &summarizer.requests.borrow()[0];
        let cut = q.messages.iter().any(|v| v["tool_call_id"] == "p1") != q.messages.iter().any(|v| v["tool_call_id"] == "p3");
        assert!(!cut, "lastKeep {last_keep}: the parallel exchange went in partly");
        if run_len == parallel - 2 {
            assert_eq!(&m.messages()[3..], &msgs[parallel..], "the straddling exchange and the tail stay whole");
        }
        assert_valid(&m, "cut");
        check_recoverable(&m, "cut");
    }
}

// ---------------------------------------------------------------------------------------------
// Recent focus window rollup
// ---------------------------------------------------------------------------------------------

/// `n` complete chat rounds (user + answer) of about `chars` characters each side.
fn chat_rounds(tag: &str, n: usize, user_chars: usize, answer_chars: usize) -> Vec<Value> {
    (0..n)
        .flat_map(|r| {
            vec![
                user(&format!("{tag} question {r}: {}", filler(&format!("{tag}q{r}"), user_chars))),
                answer(&format!("{tag} answer {r}: {}", filler(&format!("{tag}a{r}"), answer_chars))),
            ]
        })
        .collect()
}

/// Where the focus window starts by its definition: the current round plus the fewest recent
/// complete rounds that are at least `rounds` rounds and `tokens` tokens together.
fn window_start(msgs: &[Value], current: usize, rounds: usize, tokens: u64) -> usize {
    let mut start = current;
    let mut kept = 0;
    let mut sum = tokens_sum(&msgs[current..]);
    while !(kept >= rounds && sum >= tokens) {
        start -= 2;
        kept += 1;
        sum += tokens_sum(&msgs[start..start + 2]);
    }
    start
}

#[test]
fn the_focus_window_keeps_three_rounds_and_eight_thousand_tokens_both() {
    // Small rounds: three are far below 8000 tokens, so the tokens decide. Large rounds: two
    // are above 8000 tokens, so the round count decides.
    for (tag, n, user_chars, answer_chars, by_tokens) in [("small", 30, 600, 1_200, true), ("large", 8, 100, 24_000, false)] {
        let mut msgs = vec![system("agent")];
        msgs.extend(chat_rounds(tag, n, user_chars, answer_chars));
        let current = msgs.len();
        msgs.push(user("the current question"));
        let expected = window_start(&msgs, current, 3, 8_000);
        let kept_rounds = (current - expected) / 2;
        if by_tokens {
            assert!(kept_rounds > 3, "{tag}: {kept_rounds} rounds");
        } else {
            assert_eq!(kept_rounds, 3, "{tag}");
            assert!(tokens_sum(&msgs[current - 4..]) >= 8_000, "{tag}: two rounds alone exceed 8000 tokens");
        }

        let mut cfg = config(&format!("window-{tag}"), 100_000_000);
        // Just above what the rollup leaves (system, task, summary, window): the count allows
        // the whole window, so the window's own rule decides.
        cfg.msg_threshold = (msgs.len() - expected + 4) as u32;
        cfg.last_keep = 2;
        assert_eq!((cfg.history_rollup_keep_recent_rounds, cfg.history_rollup_keep_recent_tokens), (3, 8_000), "the defaults");
        let summarizer = FakeSummarizer::digest();
        let m = memory(cfg, &summarizer);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert_eq!(kinds(&summarizer), vec!["rollup"], "{tag}");
        assert_eq!(r.events.len(), 1, "{tag}: {:?}", r.events);
        let e = &r.events[0];
        assert_eq!(e.event_type, "RECENT_FOCUS_WINDOW_COMPACT");
        assert_eq!((e.index, e.index + e.message_count), (2, expected), "{tag}: rolled span, after the task");
        let out = m.messages();
        assert_eq!(&out[..2], &msgs[..2], "{tag}: the system message and the task stay");
        assert_eq!(&out[3..], &msgs[expected..], "{tag}: the focus window stays verbatim");
        assert!(r.under_target, "{tag}: {r:?}");
        assert_valid(&m, tag);
        check_recoverable(&m, tag);

        // When the window's tokens would keep the list at msgThreshold, the token allowance
        // yields: three rounds and the current one stay, and the list ends below it.
        if by_tokens {
            let mut cfg = config("window-yields", 100_000_000);
            cfg.msg_threshold = 11;
            cfg.last_keep = 2;
            let m = memory(cfg, &FakeSummarizer::digest());
            m.add(&Value::Array(msgs.clone())).unwrap();
            let r = block_on(m.compress_if_needed()).unwrap();
            assert!(r.under_target && m.messages().len() < 11, "{r:?}");
            assert_eq!(m.messages()[1], msgs[1], "the task stays");
            assert_eq!(&m.messages()[3..], &msgs[current - 6..], "three rounds and the current question stay");
        }
    }
}

#[test]
fn token_pressure_alone_never_rolls_up_and_count_pressure_does() {
    let mut msgs = vec![system("agent")];
    msgs.extend(chat_rounds("r", 14, 600, 1_200));
    msgs.push(user("the current question"));
    let total = tokens_of(&msgs);

    // Tokens over the target, messages under msgThreshold; a focus window that leaves most
    // rounds outside it, so a rollup would have plenty to take.
    let mut cfg = config("tokens-only", window_for(total / 2));
    cfg.msg_threshold = 1_000;
    cfg.history_rollup_keep_recent_tokens = 10;
    let summarizer = FakeSummarizer::digest();
    let m = memory(cfg, &summarizer);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    assert!(!kinds(&summarizer).contains(&"rollup".to_string()), "{:?}", kinds(&summarizer));
    assert!(r.events.iter().all(|e| e.event_type != "RECENT_FOCUS_WINDOW_COMPACT"), "{:?}", r.events);
    assert_valid(&m, "tokens only");
    check_recoverable(&m, "tokens only");

    // The same conversation with messages over msgThreshold and tokens far under the target.
    let mut cfg = config("count-only", 100_000_000);
    cfg.msg_threshold = 20;
    cfg.last_keep = 2;
    cfg.history_rollup_keep_recent_tokens = 10;
    let summarizer = FakeSummarizer::digest();
    let m = memory(cfg, &summarizer);
    m.add(&Value::Array(msgs)).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert_eq!(kinds(&summarizer), vec!["rollup"]);
    assert_eq!(r.events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>(), vec!["RECENT_FOCUS_WINDOW_COMPACT"]);
    assert_valid(&m, "count only");
}

#[test]
fn a_new_rollup_absorbs_the_previous_one_and_one_reload_gives_both_spans() {
    let mut cfg = config("absorb", 100_000_000);
    cfg.msg_threshold = 16;
    cfg.last_keep = 2;
    cfg.history_rollup_keep_recent_rounds = 3;
    cfg.history_rollup_keep_recent_tokens = 10;
    let summarizer = FakeSummarizer::digest();
    let m = memory(cfg, &summarizer);
    let mut first = vec![system("agent")];
    first.extend(chat_rounds("one", 8, 200, 300));
    first.push(user("current one"));
    m.add(&Value::Array(first.clone())).unwrap();
    let r1 = block_on(m.compress_if_needed()).unwrap();
    assert_eq!(r1.events.len(), 1);
    let e1 = r1.events[0].clone();
    let u1 = e1.offload_uuid.clone().unwrap();
    // The task stays; the rest of rounds 0..5 rolled; rounds 5..8 and the current one stay.
    assert_eq!((e1.index, e1.message_count), (2, 9));
    assert_eq!(m.messages()[1], first[1], "the task stays verbatim");
    let rollup1 = m.messages()[2].clone();
    assert_eq!(m.working()[2].synthetic.as_ref().unwrap().generation, Some(1));

    // More rounds push the count over again; the next rollup starts at the old one.
    let mut more = vec![answer("answer to current one")];
    more.extend(chat_rounds("two", 4, 200, 300));
    more.push(user("current two"));
    m.add(&Value::Array(more)).unwrap();
    let r2 = block_on(m.compress_if_needed()).unwrap();
    assert_eq!(r2.events.len(), 1, "{:?}", r2.events);
    let e2 = &r2.events[0];
    assert_eq!(e2.index, 2, "the new rollup takes the old one's place");
    let working = m.working();
    let marks: Vec<_> = working.iter().filter_map(|w| w.synthetic.as_ref()).collect();
    assert_eq!(marks.len(), 1, "one rolling summary");
    assert_eq!(marks[0].generation, Some(2));
    assert!(summarizer.requests.borrow()[1].messages[0] == rollup1, "the old rollup was summarized into the new one");

    // One reload of the new offload gives originals: the old rollup's rounds in its place, then
    // the newly rolled rounds.
    let back = block_on(m.reload(e2.offload_uuid.as_ref().unwrap())).unwrap();
    assert_eq!(&back[..e1.message_count], &first[2..11]);
    assert_eq!(back.len(), e1.message_count + e2.message_count - 1);
    assert!(back.iter().all(|v| markers_in(v).is_empty()), "no summary among them");
    // ... and the old offload was not deleted: it still reloads the first rounds byte-exact.
    assert_eq!(block_on(m.reload(&u1)).unwrap(), first[2..11].to_vec());
    assert!(m.store().keys().contains(&format!("absorb/{u1}")));
    check_recoverable(&m, "absorb");
    assert_valid(&m, "absorb");
}

// ---------------------------------------------------------------------------------------------
// Count pressure and the current round
// ---------------------------------------------------------------------------------------------

#[test]
fn count_pressure_alone_never_touches_the_current_round() {
    // A long current turn of answered tool work (more than msgThreshold messages on its own),
    // with results large enough for every current-round step, after a few earlier rounds.
    let mut msgs = vec![system("agent")];
    msgs.extend(chat_rounds("early", 6, 200, 300));
    let current = msgs.len();
    msgs.push(user("refactor the whole crate"));
    for k in 0..30 {
        let id = format!("step{k}");
        msgs.push(json!({"role": "assistant", "content": format!("Step {k}: {}", filler(&id, 6_000)), "tool_calls": [call(&id, "bash")]}));
        msgs.push(tool_result(&id, 7_000));
    }
    msgs.push(answer("refactored"));
    assert!(msgs.len() - current > 60);
    let total = tokens_of(&msgs);

    for (name, earlier) in [("with earlier rounds", true), ("current round only", false)] {
        let msgs: Vec<Value> = if earlier { msgs.clone() } else { [&msgs[..1], &msgs[current..]].concat() };
        let cur = if earlier { current } else { 1 };
        let mut cfg = config("count", window_for(total * 2));
        cfg.msg_threshold = 60;
        cfg.last_keep = 2;
        cfg.history_rollup_keep_recent_rounds = 1;
        cfg.history_rollup_keep_recent_tokens = 10;
        let summarizer = FakeSummarizer::fixed("short");
        let m = memory(cfg, &summarizer);
        m.add(&Value::Array(msgs.clone())).unwrap();
        assert!(m.needs_compression() && m.token_count() < m.config().trigger_tokens());
        let r = block_on(m.compress_if_needed()).unwrap();
        // The current round alone holds more than msgThreshold messages: the pass says so.
        assert!(!r.under_target && r.exhausted, "{name}: {r:?}");
        assert!(r.reason.as_deref().is_some_and(|w| w.contains("msgThreshold (60)")), "{name}: {r:?}");
        let out = m.messages();
        assert_eq!(&out[out.len() - (msgs.len() - cur)..], &msgs[cur..], "{name}: the current round is untouched");
        let k = kinds(&summarizer);
        assert!(k.iter().all(|k| k == "rollup"), "{name}: no current-round summary: {k:?}");
        if earlier {
            assert_eq!(k.len(), 1, "{name}");
            assert!(r.compressed);
        } else {
            assert!(k.is_empty() && !r.compressed && r.events.is_empty(), "{name}: nothing to roll up: {r:?}");
            assert_eq!(out, msgs);
        }
        assert_valid(&m, name);
    }
}

#[test]
fn the_default_ladder_reaches_tool_run_compression_before_the_prefix_summary() {
    // The reference's cursor test with its base options (lastKeep 5, runs of more than three
    // tool messages), the default protections and the whole default ladder: the large run is
    // summarized by its own step and the small one stays, instead of one prefix summary taking
    // both.
    let (msgs, Range { start: a_start, end: a_end }, Range { start: b_start, end: b_end }) = cursor_conversation(6);
    let (a_tokens, b_tokens) = (tokens_sum(&msgs[a_start..a_end]), tokens_sum(&msgs[b_start..b_end]));
    // A pass to the trigger, and the default deep one (to a quarter of it).
    for target_ratio in [Some(0.75), None] {
        let mut cfg = config("cursor-default", window_for(tokens_of(&msgs) / 2));
        cfg.strategies = None;
        cfg.target_ratio = target_ratio;
        cfg.last_keep = 5;
        cfg.min_consecutive_tool_messages = 3;
        cfg.min_compression_token_threshold = (a_tokens * 2) as u32;
        assert!(b_tokens / 2 > a_tokens * 2);
        let summarizer = FakeSummarizer::fixed("read six large files; the crash is in parse()");
        let m = memory(cfg.clone(), &summarizer);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed && r.under_target, "{r:?}");
        let tool = r.events.iter().find(|e| e.event_type == "TOOL_INVOCATION_COMPRESS").expect("the large run has its own summary");
        assert_eq!(tool.index, b_start, "{:?}", r.events);
        let out = m.messages();
        assert_eq!(&out[..a_end + 1], &msgs[..a_end + 1], "the small run, the task and all before them stay verbatim");
        assert_valid(&m, "cursor-default");
        check_recoverable(&m, "cursor-default");
    }
}
