//! The guarantees over whole sessions: valid for the provider after every pass, nothing lost,
//! untouched means identical, the running token total matches the messages, and a pass
//! converges or says why it cannot.

mod common;

use autocontext::tokens::REQUEST_OVERHEAD;
use autocontext::{AutoContextMemory, Config, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

fn memory(cfg: Config, summarizer: Option<FakeSummarizer>) -> Mem {
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), summarizer, FlakyStore::new()).unwrap()
}

fn window_for(target: u64) -> u64 {
    (target as f64 / 0.75).ceil() as u64
}

/// A varied agent session: user turns (some large, some with a name, unknown fields or
/// content parts with an image), assistant steps with 1–4 parallel calls (some with text),
/// results from tiny to over `toolResultLimit`, final answers (some long).
fn session(seed: u64, rounds: usize) -> Vec<Value> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut msgs = vec![json!({"role": "system", "content": "You are a coding agent.", "x-cache": {"type": "ephemeral"}})];
    let mut call = 0;
    for r in 0..rounds {
        let tag = format!("s{seed}r{r}");
        msgs.push(match rng.below(6) {
            0 => user(&filler(&tag, 7_000)),
            1 => json!({"role": "user", "name": "dana", "content": format!("question {tag}"), "x-client": [r, "web"]}),
            2 => json!({"role": "user", "content": [
                {"type": "text", "text": format!("what is in this screenshot? {tag}")},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
            ]}),
            _ => user(&format!("question {tag}")),
        });
        for _ in 0..rng.below(4) {
            let n = 1 + rng.below(4) as usize;
            let ids: Vec<String> = (0..n)
                .map(|_| {
                    call += 1;
                    format!("call_{seed}_{call}")
                })
                .collect();
            let calls: Vec<Value> = ids.iter().map(|id| common::call(id, "bash")).collect();
            let text = if rng.below(3) == 0 { Value::String(filler(&format!("{tag}-think"), 300)) } else { Value::Null };
            msgs.push(json!({"role": "assistant", "content": text, "tool_calls": calls}));
            for id in &ids {
                let size = rng.pick(&[40, 900, 3_000, 6_500, 9_000, 26_000]);
                let mut m = tool_result(id, size);
                if rng.below(4) == 0 {
                    m["name"] = json!("bash");
                }
                msgs.push(m);
            }
        }
        let long = rng.below(5) == 0;
        msgs.push(answer(&if long { filler(&format!("{tag}-answer"), 6_000) } else { format!("answer {tag}") }));
    }
    msgs
}

/// Feeds `msgs` one by one, running a pass before every assistant message (before each model
/// turn), and checks every guarantee after every pass. Returns the memory and the pass count.
fn replay(m: &Mem, msgs: &[Value], what: &str) -> usize {
    let counter = TokenCounter::new(Tokenizer::O200kBase).unwrap();
    let mut passes = 0;
    for (i, v) in msgs.iter().enumerate() {
        if v["role"] == "assistant" {
            let r = block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("{what}: pass before message {i}: {e:?}"));
            passes += 1;
            let at = format!("{what}, pass before message {i}");
            assert_valid(m, &at);
            check_recoverable(m, &at);
            assert_untouched_are_identical(m, &at);
            // The running total is the sum of the cached per-message counts...
            let cached: u64 = m.working().iter().map(|w| counter.count_message(w).unwrap() as u64).sum();
            assert_eq!(m.token_count(), cached + REQUEST_OVERHEAD + m.config().reserved_tokens, "{at}");
            // ...and what is sent counts the same when read back from the wire.
            let wire: u64 = m.messages().iter().map(message_tokens).sum();
            assert_eq!(cached, wire, "{at}: the counted messages differ from the ones sent");
            assert_eq!(r.tokens_after, m.token_count(), "{at}");
            let under_count = m.messages().len() < m.config().msg_threshold as usize;
            assert_eq!(r.under_target, r.tokens_after < r.target_tokens && under_count, "{at}");
            assert!(r.under_target || (r.exhausted && r.reason.is_some()), "{at}: over the target without a reason: {r:?}");
        }
        m.add(v).unwrap_or_else(|e| panic!("{what}: add of message {i}: {e:?}"));
    }
    assert_eq!(
        block_on(m.original_messages()).expect("the log reads back"),
        msgs,
        "{what}: the original log is everything added, as added"
    );
    passes
}

fn session_config(session: &str) -> Config {
    let mut cfg = config(session, 24_000);
    cfg.msg_threshold = 60;
    cfg.last_keep = 20;
    cfg.reserved_tokens = 500;
    cfg
}

#[test]
fn sessions_without_a_summarizer_keep_every_guarantee() {
    for seed in 1..=4 {
        let msgs = session(seed, 40);
        let m = memory(session_config(&format!("nollm{seed}")), None);
        let passes = replay(&m, &msgs, &format!("seed {seed} without summarizer"));
        assert!(passes > 40);
        assert!(!m.events().is_empty(), "seed {seed}: the session should have needed compression");
    }
}

#[test]
fn sessions_with_a_summarizer_keep_every_guarantee() {
    for seed in 5..=8 {
        let msgs = session(seed, 40);
        let summarizer = FakeSummarizer::digest();
        let m = memory(session_config(&format!("llm{seed}")), Some(summarizer.clone()));
        replay(&m, &msgs, &format!("seed {seed} with summarizer"));
        assert!(summarizer.calls() > 0, "seed {seed}: the LLM steps were never needed");
        let llm_events = m.events().iter().filter(|e| e.summarize_input_tokens.is_some()).count();
        assert!(llm_events > 0, "seed {seed}");
    }
}

#[test]
fn a_pass_compacts_to_the_low_water_mark_so_passes_are_rare() {
    let mut msgs = vec![system("agent")];
    for r in 0..60 {
        msgs.extend(tool_round(&format!("t{r}"), 2, 1_500));
    }
    let base = Config { msg_threshold: 1_000, ..config("x", 24_000) };
    // (tokens before, after, low water, target) of each pass that changed the list.
    let run = |target_ratio: Option<f64>| {
        let cfg = Config { target_ratio, session_id: format!("low-water-{}", target_ratio.is_some()), ..base.clone() };
        let m = memory(cfg, Some(FakeSummarizer::digest()));
        let mut passes = Vec::new();
        for (i, v) in msgs.iter().enumerate() {
            if v["role"] == "assistant" {
                let r = block_on(m.compress_if_needed()).unwrap();
                assert!(r.low_water_tokens <= r.target_tokens, "{r:?}");
                if r.compressed {
                    passes.push((r.tokens_before, r.tokens_after, r.low_water_tokens, r.target_tokens));
                }
                assert_valid(&m, &format!("{target_ratio:?} before message {i}"));
            }
            m.add(v).unwrap();
        }
        check_recoverable(&m, "low water");
        passes
    };
    let deep = run(Some(0.375));
    let shallow = run(Some(base.token_ratio));
    let default = run(None);
    for &(before, after, low, target) in &deep {
        assert_eq!((low, target), (9_000, base.trigger_tokens()), "a pass aims at maxToken × targetRatio");
        assert!(before >= target && after < low, "{deep:?}");
    }
    assert!(shallow.iter().all(|&(_, after, low, target)| low == target && after < target));
    assert!(deep.len() * 3 <= shallow.len(), "deep passes are rarer: {} against {}", deep.len(), shallow.len());
    // By default a pass aims at a quarter of the trigger.
    assert!(!default.is_empty());
    for &(before, after, low, target) in &default {
        assert_eq!((low, target), (4_500, base.trigger_tokens()), "{default:?}");
        assert!(before >= target && after < low, "{default:?}");
    }
    assert!(default.len() <= deep.len(), "{} default passes against {} at 0.375", default.len(), deep.len());
}

#[test]
fn sessions_with_a_failing_or_empty_summarizer_keep_every_guarantee() {
    for (seed, summarizer) in [(9, FakeSummarizer::failing("down")), (10, FakeSummarizer::empty())] {
        let msgs = session(seed, 40);
        let m = memory(session_config(&format!("bad{seed}")), Some(summarizer.clone()));
        replay(&m, &msgs, &format!("seed {seed} with a bad summarizer"));
        assert!(summarizer.calls() > 0);
        assert!(m.events().iter().any(|e| e.event_type == "SUMMARIZE_FAILED"));
    }
}

#[test]
fn untouched_messages_come_back_deep_equal_with_unknown_fields_parts_and_name() {
    let odd_user = json!({
        "role": "user",
        "name": "alice",
        "content": [
            {"type": "text", "text": "compare these"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
        ],
        "x-trace-id": "t-1",
        "metadata": {"nested": [1, 2.5, null, true, {"k": "v"}]}
    });
    let odd_assistant = json!({
        "role": "assistant",
        "content": null,
        "refusal": null,
        "tool_calls": [{"id": "q1", "type": "function", "function": {"name": "look", "arguments": "{\"a\": [1, 2]}"}, "x-call": 1}],
        "audio": null
    });
    let odd_result = json!({"role": "tool", "tool_call_id": "q1", "content": [{"type": "text", "text": "seen"}], "x-tool": {"ms": 12}});
    let mut msgs = vec![json!({"role": "developer", "content": "be exact", "x-sys": 1})];
    for r in 0..4 {
        msgs.extend(tool_round(&format!("old{r}"), 2, 9_000));
    }
    msgs.push(odd_user.clone());
    msgs.push(odd_assistant.clone());
    msgs.push(odd_result.clone());
    let m = memory(config("odd", window_for(tokens_of(&msgs) / 3)), None);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    let out = m.messages();
    assert_eq!(out[0], msgs[0], "developer message with an unknown field");
    let n = out.len();
    assert_eq!(out[n - 3], odd_user);
    assert_eq!(out[n - 2], odd_assistant);
    assert_eq!(out[n - 1], odd_result);
    // Byte-exact, key order included.
    assert_eq!(serde_json::to_string(&out[n - 3]).unwrap(), serde_json::to_string(&odd_user).unwrap());
    assert_valid(&m, "odd");
    check_recoverable(&m, "odd");
    assert_untouched_are_identical(&m, "odd");
}

#[test]
fn a_pass_over_a_big_unprotected_history_ends_under_the_target() {
    let mut msgs = vec![system("agent")];
    for r in 0..12 {
        msgs.extend(tool_round(&format!("h{r}"), 3, 3_000 + 1_000 * r));
    }
    msgs.push(user("last question"));
    let total = tokens_of(&msgs);
    for (name, summarizer) in [("none", None), ("digest", Some(FakeSummarizer::digest()))] {
        let m = memory(config(&format!("converge-{name}"), window_for(total / 10)), summarizer);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed && r.under_target && !r.exhausted && r.reason.is_none(), "{name}: {r:?}");
        assert!(r.tokens_after < r.target_tokens && r.tokens_before >= r.target_tokens);
        assert_eq!(m.messages()[0], msgs[0]);
        assert_eq!(m.messages().last(), msgs.last(), "the current user turn stays");
        assert_valid(&m, name);
        check_recoverable(&m, name);
        // Nothing left to do: the next pass does not run.
        let again = block_on(m.compress_if_needed()).unwrap();
        assert!(!again.compressed && again.events.is_empty());
    }
}

#[test]
fn a_pass_over_protected_content_says_why_and_does_not_churn() {
    let msgs = vec![
        system(&filler("a very long policy", 60_000)),
        user("first request"),
        answer("ok"),
        user(&filler("a huge pasted document", 60_000)),
    ];
    let total = tokens_of(&msgs);
    let summarizer = FakeSummarizer::fixed("s");
    let m = memory(config("protected", window_for(total / 3)), Some(summarizer.clone()));
    m.add(&Value::Array(msgs.clone())).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(!r.under_target && r.exhausted, "{r:?}");
    let reason = r.reason.clone().expect("a reason");
    assert!(reason.contains("protected"), "{reason}");
    assert_eq!(m.messages(), msgs, "system, first and current user messages are never touched");
    // Passes after it make no changes either, and terminate.
    for _ in 0..3 {
        let again = block_on(m.compress_if_needed()).unwrap();
        assert!(again.exhausted && again.events.is_empty(), "{again:?}");
    }
    assert!(m.events().is_empty());
    assert!(m.store().keys().is_empty(), "no offload was written for nothing");
}

#[test]
fn the_running_total_matches_the_messages_across_many_adds_and_passes() {
    let msgs = session(42, 60);
    let mut cfg = session_config("cache");
    cfg.reserved_tokens = 1_234;
    let m = memory(cfg, Some(FakeSummarizer::digest()));
    let counter = TokenCounter::new(Tokenizer::O200kBase).unwrap();
    for (i, v) in msgs.iter().enumerate() {
        m.add(v).unwrap();
        if i % 7 == 0 && m.needs_compression() {
            block_on(m.compress_if_needed()).unwrap();
        }
        let sum: u64 = m.working().iter().map(|w| counter.count_message(w).unwrap() as u64).sum();
        assert_eq!(m.token_count(), sum + REQUEST_OVERHEAD + 1_234, "after message {i}");
    }
    assert!(m.events().len() > 5);
    // A fresh memory fed the working list counts the same request.
    assert_eq!(tokens_of(&m.messages()) + 1_234, m.token_count());
}

#[test]
fn needs_compression_follows_both_triggers() {
    let mut cfg = config("trigger", 4_000);
    cfg.msg_threshold = 10;
    cfg.last_keep = 5;
    let m = memory(cfg, None);
    assert!(!m.needs_compression());
    // Token trigger: 3000 = 4000 × 0.75.
    m.add(&user(&filler("t", 30_000))).unwrap();
    assert_eq!(m.needs_compression(), m.token_count() >= 3_000);
    assert!(m.needs_compression());
    // Count trigger on a fresh memory.
    let mut cfg = config("count", 1_000_000);
    cfg.msg_threshold = 10;
    cfg.last_keep = 5;
    let m = memory(cfg, None);
    for k in 0..9 {
        m.add(&if k % 2 == 0 { user("q") } else { answer("a") }).unwrap();
    }
    assert!(!m.needs_compression());
    m.add(&user("q")).unwrap();
    assert!(m.needs_compression());
    // Without a summarizer, count pressure alone has nothing to do: the pass says why.
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(!r.under_target && r.exhausted && !r.compressed, "{r:?}");
    assert!(r.reason.as_deref().is_some_and(|w| w.contains("msgThreshold (10)") && w.contains("summarize function")), "{r:?}");
}

#[test]
fn a_copy_kept_by_version_follows_the_working_list_with_only_what_changed() {
    let msgs = session(7, 60);
    let m = memory(session_config("versions"), Some(FakeSummarizer::digest()));
    let (mut held, mut list): (Option<u64>, Vec<Value>) = (None, Vec::new());
    let (mut sent, mut whole, mut passes_rewriting) = (0usize, 0usize, 0usize);
    for (i, v) in msgs.iter().enumerate() {
        let before = m.list_version();
        if v["role"] == "assistant" {
            let r = block_on(m.compress_if_needed()).unwrap();
            assert_eq!(r.compressed, m.list_version() != before, "message {i}: the version changes exactly when a pass rewrites");
            passes_rewriting += usize::from(r.compressed);
        }
        m.add(v).unwrap();
        assert_ne!(m.list_version(), before, "message {i}: an add changes the version");
        let (now, from, tail) = m.messages_since(held);
        let text: Value = serde_json::from_str(&m.messages_since_text(held)).unwrap();
        assert_eq!(text, json!({"version": now, "from": from, "messages": tail}), "message {i}: the delta's text is the delta");
        assert!(from <= list.len(), "message {i}: the delta starts inside the copy");
        assert_eq!(list[..from], m.messages()[..from], "message {i}: what the delta keeps is unchanged");
        sent += tail.len();
        whole += m.messages().len();
        list.truncate(from);
        list.extend(tail);
        held = Some(now);
        assert_eq!(list, m.messages(), "message {i}: the copy is the working list");
        let (again, at, none) = m.messages_since(held);
        assert_eq!((again, at, none.len()), (now, list.len(), 0), "message {i}: nothing changed, nothing sent");
    }
    assert!(passes_rewriting > 0, "the session compresses");
    assert!(sent * 2 < whole, "only changes are sent: {sent} messages, against {whole} for the whole list each time");
    // A version this memory never had, or one too old to know what changed since, gets everything.
    let all = m.messages();
    assert_eq!(m.messages_since(Some(u64::MAX)).1, 0);
    assert_eq!(m.messages_since(Some(0)), (m.list_version(), 0, all.clone()));
    assert_eq!(m.messages_since(None).2, all);
}

#[test]
fn a_new_result_over_the_limit_is_truncated_before_it_is_first_sent() {
    // A roomy window: no pressure at all. The default limit (2,000 characters) still cuts a
    // new 30,000-character result at the end of the list, where the edit re-bills no prefix.
    let m = memory(Config { session_id: "fresh".into(), max_token: 1_000_000, ..Config::default() }, None);
    let mut msgs = vec![system("agent"), user("read the log")];
    msgs.push(assistant_calls(&["big"]));
    m.add(&Value::Array(msgs.clone())).unwrap();
    let before = m.messages();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(!r.compressed, "nothing new over the limit: {r:?}");
    m.add(&tool_result("big", 30_000)).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target, "{r:?}");
    assert_eq!(r.events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>(), ["TOOL_RESULT_TRUNCATE"]);
    let out = m.messages();
    assert_eq!(&out[..before.len()], &before[..], "only the new result changed");
    let content = out[before.len()]["content"].as_str().unwrap();
    assert!(content.len() < 5_000 && content.contains("CONTEXT_OFFLOAD"), "{} characters", content.len());
    check_recoverable(&m, "fresh truncation");
    // The model answered it: the truncated copy stays, and no further pass runs.
    m.add(&answer("the log says ok")).unwrap();
    assert!(!block_on(m.compress_if_needed()).unwrap().compressed);
    // Under the limit, a new result is sent whole.
    m.add(&Value::Array(vec![assistant_calls(&["small"]), tool_result("small", 1_800)])).unwrap();
    assert!(!block_on(m.compress_if_needed()).unwrap().compressed);
    assert_valid(&m, "fresh truncation");
}
