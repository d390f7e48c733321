//! The package's promises on conversation shapes beyond a plain agent loop, each in every wire
//! format: a user message that arrives while tool results are unread, the latest answer and
//! the most recent round the user's question follows, pinned messages and pinned tools, count
//! pressure, summarize requests a provider accepts, and reloads that take one hop.
//!
//! The conversations are built in the OpenAI shape and converted (`common::convert`): in the
//! Anthropic shape a user message after tool results joins their user turn
//! (`[tool_result…, text]`), in the AI SDK shape it follows the `tool` message.

mod common;

use autocontext::strategy::Strategy;
use autocontext::{AutoContextMemory, Config, Format, MemoryStore, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, MemoryStore>;

fn memory(format: Format, cfg: Config, summarizer: Option<FakeSummarizer>) -> Mem {
    let mut cfg = cfg;
    cfg.format = format;
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), summarizer, MemoryStore::new()).unwrap()
}

/// Whether wire message `v` (of any format) carries the result of call `id`.
fn holds_result(v: &Value, id: &str) -> bool {
    v["tool_call_id"] == id
        || (v["type"] == "function_call_output" && v["call_id"] == id)
        || v["content"].as_array().is_some_and(|parts| {
            parts
                .iter()
                .any(|p| (p["type"] == "tool_result" && p["tool_use_id"] == id) || (p["type"] == "tool-result" && p["toolCallId"] == id))
        })
        || v["parts"].as_array().is_some_and(|parts| {
            parts.iter().any(|p| {
                p["functionResponse"]["id"] == id || (p.get("functionResponse").is_some() && p["partMetadata"]["traceCallId"] == id)
            })
        })
}

/// The message holding the result of `id` in `list`.
fn result_message<'a>(list: &'a [Value], id: &str) -> &'a Value {
    list.iter().find(|v| holds_result(v, id)).unwrap_or_else(|| panic!("no result of {id}"))
}

/// Every text a summarize request shows (its prompt and its wire messages).
fn shown(q: &autocontext::SummarizeRequest) -> String {
    format!("{}{}", q.prompt, Value::Array(q.messages.clone()))
}

fn event_types(m: &Mem) -> Vec<String> {
    m.events().into_iter().map(|e| e.event_type).collect()
}

fn check(m: &Mem, what: &str) {
    assert_valid(m, what);
    check_recoverable(m, what);
    assert_untouched_are_identical(m, what);
}

// ---------------------------------------------------------------------------------------------
// Unread results stay unread whatever user messages follow them
// ---------------------------------------------------------------------------------------------

/// Three rounds, then a call whose 15,000-character result the model has not answered, then the
/// user typing while it ran.
fn interjection() -> Vec<Value> {
    let mut msgs = vec![system("You are a coding agent.")];
    for r in 0..3 {
        msgs.extend(tool_round(&format!("r{r}"), 2, 3_000));
    }
    msgs.push(user("now look at the parser"));
    msgs.push(assistant_calls(&["cz"]));
    msgs.push(tool_result("cz", 15_000));
    msgs.push(user("also check the tests"));
    msgs
}

#[test]
fn an_unread_result_followed_by_a_user_message_is_never_replaced_or_summarized() {
    let cz = filler("cz", 15_000);
    for format in Format::ALL {
        let msgs = convert(format, &interjection());
        for ladder in [
            None,
            Some(vec![Strategy::PreviousRoundSummary]),
            Some(vec![Strategy::CurrentRoundLargeMessage, Strategy::CurrentRoundCompress]),
        ] {
            let what = format!("{} {ladder:?}", format.name());
            let summarizer = FakeSummarizer::digest();
            let mut m = memory(format, config("unread", 8_000), Some(summarizer.clone()));
            if let Some(l) = &ladder {
                m = m.with_ladder(l);
            }
            m.add(&Value::Array(msgs.clone())).unwrap();
            assert!(m.needs_compression(), "{what}");
            block_on(m.compress_if_needed()).unwrap();
            let working = m.messages();
            assert!(
                same_wire(result_message(&working, "cz"), result_message(&msgs, "cz")),
                "{what}: the unread result was rewritten: {:?}",
                m.events()
            );
            let typed = working.iter().any(|v| v.to_string().contains("also check the tests"));
            assert!(typed, "{what}: the user's interjection is still there");
            for q in summarizer.requests.borrow().iter() {
                assert!(!shown(q).contains(&cz[..400]), "{what}: a {} request shows the unread result", q.kind);
            }
            check(&m, &what);
        }
    }
}

#[test]
fn once_the_model_answers_the_interjected_round_is_history_like_any_other() {
    for format in Format::ALL {
        let mut openai = interjection();
        openai.push(answer("The parser and the tests agree now."));
        openai.extend(tool_round("r4", 1, 200));
        openai.push(user("thanks; what next?"));
        let msgs = convert(format, &openai);
        let mut cfg = config("after", 8_000);
        cfg.protect_last_round = false;
        let m = memory(format, cfg, None);
        m.add(&Value::Array(msgs.clone())).unwrap();
        block_on(m.compress_if_needed()).unwrap();
        assert!(
            !same_wire(result_message(&m.messages(), "cz"), result_message(&msgs, "cz")),
            "{}: the answered result may be offloaded now: {:?}",
            format.name(),
            event_types(&m)
        );
        check(&m, format.name());
    }
}

// ---------------------------------------------------------------------------------------------
// The latest answer and the most recent completed round
// ---------------------------------------------------------------------------------------------

/// Rounds with long answers; the last one is what the user's new question is about.
fn long_answers() -> Vec<Value> {
    let mut msgs = vec![system("You are a research assistant.")];
    for r in 0..4 {
        msgs.extend(tool_round(&format!("q{r}"), 2, 2_500));
        msgs.push(user(&format!("go on about q{r}")));
        msgs.push(answer(&format!("ANSWER-q{r}. Point one. Point two. {}", filler(&format!("long{r}"), 7_000))));
    }
    msgs.push(user("explain your second point"));
    msgs
}

#[test]
fn the_latest_answer_and_the_last_round_stay_verbatim_unless_turned_off() {
    for format in Format::ALL {
        let msgs = convert(format, &long_answers());
        let latest = msgs.iter().rposition(|v| v.to_string().contains("ANSWER-q3")).unwrap();
        // The last completed round: from its user message to the latest answer.
        let round_start = msgs.iter().rposition(|v| v.to_string().contains("go on about q3")).unwrap();
        for protect in [true, false] {
            let what = format!("{} protect={protect}", format.name());
            let mut cfg = config("latest", 14_000);
            // Compacting only to the trigger, the gentler steps suffice: no emergency step.
            cfg.target_ratio = Some(cfg.token_ratio);
            cfg.protect_latest_answer = protect;
            cfg.protect_last_round = protect;
            let summarizer = FakeSummarizer::digest();
            let m = memory(format, cfg, Some(summarizer.clone()));
            m.add(&Value::Array(msgs.clone())).unwrap();
            let r = block_on(m.compress_if_needed()).unwrap();
            assert!(r.under_target, "{what}: {r:?}");
            let working = m.messages();
            let kept = |v: &Value| working.iter().any(|w| same_wire(w, v));
            if protect {
                assert!(kept(&msgs[latest]), "{what}: the latest answer was replaced: {:?}", event_types(&m));
                for (i, v) in msgs[round_start..latest].iter().enumerate() {
                    assert!(kept(v), "{what}: message {} of the last round was replaced", round_start + i);
                }
                for q in summarizer.requests.borrow().iter() {
                    assert!(!shown(q).contains("ANSWER-q3"), "{what}: a {} request covers the latest answer", q.kind);
                }
                assert!(!event_types(&m).iter().any(|t| t == "EMERGENCY_OFFLOAD"), "{what}");
            } else {
                assert!(!kept(&msgs[latest]), "{what}: unprotected, the large latest answer goes like any other");
            }
            check(&m, &what);
        }
    }
}

#[test]
fn the_last_round_yields_to_gentle_steps_before_the_emergency_step_would_take_it() {
    for format in Format::ALL {
        // One earlier round of tool work too large for the window; the user asks about it.
        let mut openai = vec![system("agent"), user("audit the repository")];
        openai.extend(tool_round("big", 6, 6_000).into_iter().skip(1));
        openai.push(user("what did you find?"));
        let msgs = convert(format, &openai);
        let what = format.name();
        let m = memory(format, config("yield", 8_000), Some(FakeSummarizer::digest()));
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.under_target, "{what}: {r:?}");
        assert!(!event_types(&m).iter().any(|t| t == "EMERGENCY_OFFLOAD"), "{what}: {:?}", event_types(&m));
        let working = m.messages();
        assert!(working.iter().any(|w| same_wire(w, &msgs[msgs.len() - 2])), "{what}: the answer stays");
        check(&m, what);
    }
}

// ---------------------------------------------------------------------------------------------
// Pinned messages and pinned tools
// ---------------------------------------------------------------------------------------------

#[test]
fn pinned_tools_keep_their_whole_exchange_through_every_step() {
    for format in Format::ALL {
        let mut openai = vec![system("agent"), user("plan, then do it")];
        openai.push(json!({"role": "assistant", "content": null, "tool_calls": [call("plan1", "write_plan"), call("ls1", "list_files")]}));
        openai.push(json!({"role": "tool", "tool_call_id": "plan1", "content": filler("plan", 30_000)}));
        openai.push(tool_result("ls1", 30_000));
        openai.push(answer("planned"));
        for r in 0..6 {
            openai.extend(tool_round(&format!("w{r}"), 3, 4_000));
        }
        openai.push(user("status?"));
        let msgs = convert(format, &openai);
        let mut cfg = config("pin-tool", 24_000);
        cfg.pinned_tools = vec!["write_plan".into()];
        let m = memory(format, cfg, Some(FakeSummarizer::digest()));
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        let what = format!("{}: {:?}", format.name(), event_types(&m));
        assert!(r.under_target, "{what}: {r:?}");
        let working = m.messages();
        // The call message and the plan's result are byte-identical; in the formats that keep
        // parallel results in one message the sibling result stays whole with it.
        let call_msg = msgs.iter().find(|v| v.to_string().contains("write_plan")).unwrap();
        assert!(working.iter().any(|w| same_wire(w, call_msg)), "{what}: the pinned exchange's call was replaced");
        // In the formats that carry parallel results in one message, the sibling result may be
        // truncated around the pinned one, which stays whole.
        let block = |v: &Value| match v["content"].as_array().or(v["parts"].as_array()) {
            Some(parts) => parts
                .iter()
                .find(|p| p["tool_use_id"] == "plan1" || p["toolCallId"] == "plan1" || p["partMetadata"]["traceCallId"] == "plan1")
                .cloned()
                .unwrap(),
            None => v.clone(),
        };
        let (now, then) = (block(result_message(&working, "plan1")), block(result_message(&msgs, "plan1")));
        assert!(same_wire(&now, &then), "{what}: the pinned result changed");
        check(&m, &what);
    }
}

#[test]
fn pinned_messages_survive_every_step_and_the_state() {
    for format in Format::ALL {
        let mut openai = vec![user("start")];
        openai.push(answer("understood"));
        for r in 0..8 {
            openai.extend(tool_round(&format!("p{r}"), 3, 3_000));
            if r == 2 {
                openai.push(user("write down the plan"));
                openai.push(answer(&format!("THE PLAN: {}", filler("plan", 9_000))));
            }
        }
        openai.push(user("keep going"));
        let msgs = convert(format, &openai);
        let plan = msgs.iter().position(|v| v.to_string().contains("THE PLAN")).unwrap();
        for (ladder, pinned) in [(None, true), (None, false), (Some(vec![Strategy::Emergency]), true)] {
            let what = format!("{} {ladder:?} pinned={pinned}", format.name());
            let mut m = memory(format, config("pin", 10_000), None);
            if let Some(l) = &ladder {
                m = m.with_ladder(l);
            }
            m.add(&Value::Array(msgs[..plan].to_vec())).unwrap();
            m.add_with(&msgs[plan], pinned).unwrap();
            m.add(&Value::Array(msgs[plan + 1..].to_vec())).unwrap();
            let r = block_on(m.compress_if_needed()).unwrap();
            let what = format!("{what}: {:?}", event_types(&m));
            assert!(r.under_target, "{what}: {r:?}");
            let kept = m.messages().iter().any(|w| same_wire(w, &msgs[plan]));
            assert_eq!(kept, pinned, "{what}: the large plan goes unless pinned");
            if ladder.is_some() {
                assert!(event_types(&m).iter().all(|t| t == "EMERGENCY_OFFLOAD") && r.compressed, "{what}");
            }
            check(&m, &what);
            if !pinned {
                continue;
            }
            // The pin lives in the state, never in the message.
            let at = m.pinned();
            assert_eq!(at.len(), 1, "{what}");
            let state = m.to_json();
            assert_eq!(state["working"][at[0]]["pinned"], json!(true));
            assert!(same_wire(&state["working"][at[0]]["message"], &msgs[plan]));
            let restored = Mem::from_json(&state, None, MemoryStore::new(), None).unwrap();
            assert_eq!(restored.pinned(), at);
            m.unpin(at[0]).unwrap();
            assert!(m.pinned().is_empty());
            m.pin(at[0]).unwrap();
            assert_eq!(m.pinned(), at);
            assert_eq!(m.pin(10_000).unwrap_err().code(), autocontext::ErrorCode::InvalidArgument);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Summarize requests a provider accepts
// ---------------------------------------------------------------------------------------------

/// Earlier rounds with runs of parallel exchanges, then a current round whose first exchange
/// (two parallel calls) and second are answered, and whose last is not.
fn every_kind() -> Vec<Value> {
    let mut msgs = vec![system("You are a coding agent.")];
    for r in 0..4 {
        let tag = format!("h{r}");
        msgs.push(user(&format!("question {tag}")));
        for step in 0..2 {
            let ids: Vec<String> = (0..3).map(|k| format!("{tag}s{step}c{k}")).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            msgs.push(assistant_calls(&refs));
            msgs.extend(ids.iter().map(|id| tool_result(id, 2_500)));
        }
        msgs.push(answer(&format!("answer to {tag}")));
    }
    msgs.push(user("now the parser"));
    msgs.push(assistant_calls(&["p1", "p2"]));
    msgs.push(tool_result("p1", 8_000));
    msgs.push(tool_result("p2", 8_000));
    msgs.push(json!({"role": "assistant", "content": "Reading more.", "tool_calls": [call("p3", "read_file")]}));
    msgs.push(tool_result("p3", 8_000));
    msgs.push(assistant_calls(&["p4"]));
    msgs.push(tool_result("p4", 1_000));
    msgs
}

#[test]
fn every_summarize_request_is_a_valid_body_in_every_format() {
    let cases: Vec<(&str, Value)> = vec![
        (
            "tool_calls",
            json!({"strategies": ["tool-run-compress"], "lastKeep": 2, "protectLastRound": false, "minCompressionTokenThreshold": 500, "minConsecutiveToolMessages": 2}),
        ),
        ("round", json!({"strategies": ["previous-round-summary"], "minCompressionTokenThreshold": 500})),
        ("large_message", json!({"strategies": ["current-round-large-message"]})),
        ("current_round", json!({"strategies": ["current-round-compress"]})),
        ("rollup", json!({"strategies": ["history-rollup"], "msgThreshold": 20, "lastKeep": 2, "historyRollupKeepRecentRounds": 1})),
        ("prefix", json!({"preset": "prefix-summary", "protectLastRound": false, "protectLatestAnswer": false})),
        (
            "facts",
            json!({"preset": "facts", "protectLastRound": false, "protectLatestAnswer": false,
            "concepts": [{"keyword": "file", "description": "files read", "factType": "multiple"}]}),
        ),
        ("turns", json!({"preset": "turns", "maxContextTurns": 2})),
    ];
    for format in Format::ALL {
        let msgs = convert(format, &every_kind());
        for (kind, options) in &cases {
            let what = format!("{} {kind}", format.name());
            let mut opts = options.clone();
            opts["maxToken"] = json!(8_000);
            opts["format"] = json!(format.name());
            opts["sessionId"] = json!("bodies");
            let cfg = Config::from_json(&opts).unwrap_or_else(|e| panic!("{what}: {e:?}"));
            let summarizer = FakeSummarizer::digest();
            let m = memory(format, cfg, Some(summarizer.clone()));
            m.add(&Value::Array(msgs.clone())).unwrap();
            block_on(m.compress_if_needed()).unwrap_or_else(|e| panic!("{what}: {e:?}"));
            let kinds = assert_requests_valid(format, &summarizer, &what);
            assert!(kinds.iter().any(|k| k == kind), "{what}: no {kind} request was made: {kinds:?} {:?}", event_types(&m));
            assert_valid(&m, &what);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Count pressure
// ---------------------------------------------------------------------------------------------

#[test]
fn count_pressure_ends_below_msg_threshold_or_says_why() {
    let mut openai = vec![system("You are a helpful assistant.")];
    for r in 0..60 {
        openai.extend(tool_round(&format!("c{r}"), 1, 60));
    }
    for format in Format::ALL {
        let msgs = convert(format, &openai);
        assert!(msgs.len() >= 240, "{}", msgs.len());
        for summarize in [true, false] {
            let what = format!("{} summarize={summarize}", format.name());
            let mut cfg = config("count", 131_072);
            cfg.msg_threshold = 40;
            cfg.last_keep = 20;
            let m = memory(format, cfg, summarize.then(FakeSummarizer::digest));
            m.add(&Value::Array(msgs.clone())).unwrap();
            assert!(m.token_count() < 20_000 && m.needs_compression(), "{what}: far under the tokens, over the count");
            let r = block_on(m.compress_if_needed()).unwrap();
            if summarize {
                assert!(r.compressed && r.under_target && r.reason.is_none(), "{what}: {r:?}");
                assert!(m.messages().len() < 40, "{what}: {} messages", m.messages().len());
                assert!(event_types(&m).iter().all(|t| t == "RECENT_FOCUS_WINDOW_COMPACT"), "{what}: {:?}", event_types(&m));
                // The last four rounds (three kept and the current one) are whole at the end.
                let tail = &msgs[msgs.len() - 16..];
                assert_eq!(&m.messages()[m.messages().len() - 16..], tail, "{what}");
            } else {
                assert!(!r.under_target && r.exhausted, "{what}: {r:?}");
                let reason = r.reason.unwrap_or_default();
                assert!(reason.contains("msgThreshold (40)") && reason.contains("summarize function"), "{what}: {reason}");
            }
            check(&m, &what);
        }
    }
}

/// One question and the 30 tool calls of the round it starts, none answered with a final word.
fn one_long_round() -> Vec<Value> {
    let mut msgs = vec![system("agent"), user("fix every module")];
    for k in 0..30 {
        msgs.push(assistant_calls(&[&format!("m{k}")]));
        msgs.push(tool_result(&format!("m{k}"), 100));
    }
    msgs
}

#[test]
fn count_pressure_never_reaches_into_the_current_round_and_says_so() {
    let openai = one_long_round();
    for format in Format::ALL {
        let msgs = convert(format, &openai);
        let mut cfg = config("count-current", 131_072);
        cfg.msg_threshold = 20;
        cfg.last_keep = 5;
        let m = memory(format, cfg, Some(FakeSummarizer::digest()));
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(!r.compressed && !r.under_target && r.exhausted, "{}: {r:?}", format.name());
        assert!(r.reason.as_deref().is_some_and(|w| w.contains("msgThreshold (20)") && w.contains("current round")), "{r:?}");
        assert_eq!(m.messages(), msgs);
    }
}

#[test]
fn a_round_stuck_over_msg_threshold_runs_no_pass_per_add_until_a_turn_comes() {
    let msgs = one_long_round();
    let mut cfg = config("count-stuck", 131_072);
    cfg.msg_threshold = 20;
    cfg.last_keep = 5;
    let store = MemoryStore::new();
    let summarizer = FakeSummarizer::digest();
    let m: Mem =
        AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), Some(summarizer.clone()), store).unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    let first = block_on(m.compress_if_needed()).unwrap();
    assert!(first.exhausted && first.reason.is_some(), "{first:?}");
    // The round goes on: the count alone does not call for a pass, and one asked for says why.
    for k in 30..40 {
        m.add(&Value::Array(vec![assistant_calls(&[&format!("m{k}")]), tool_result(&format!("m{k}"), 100)])).unwrap();
        assert!(!m.needs_compression(), "add {k}: the count alone runs no pass in a stuck round");
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(!r.compressed && !r.under_target && r.exhausted && r.events.is_empty(), "{r:?}");
        assert_eq!(r.reason, first.reason, "the reason is the pass's");
    }
    assert_eq!(summarizer.calls(), 0, "no summarize call either");
    // The round ends and a new one starts: the count runs a pass again (here it too keeps the
    // last completed round whole, and says so with the new count).
    m.add(&answer("all fixed")).unwrap();
    m.add(&user("now the docs")).unwrap();
    assert!(m.needs_compression());
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.exhausted && r.reason.as_deref().is_some_and(|w| w.starts_with(&format!("{} messages remain", m.messages().len()))), "{r:?}");
    assert!(!m.needs_compression(), "and stops there for this turn");
}

// ---------------------------------------------------------------------------------------------
// One reload gives the originals
// ---------------------------------------------------------------------------------------------

/// A round whose tool result is over toolResultLimit, then rounds that push it out of the window.
fn oversized(rounds: usize) -> Vec<Value> {
    let mut msgs = vec![system("agent"), user("read the dump")];
    msgs.push(assistant_calls(&["dump"]));
    msgs.push(tool_result("dump", 40_000));
    msgs.push(answer("read it"));
    for r in 0..rounds {
        msgs.extend(tool_round(&format!("o{r}"), 2, 3_000));
    }
    msgs.push(user("next?"));
    msgs
}

#[test]
fn a_result_truncated_then_offloaded_in_one_pass_is_one_event_and_one_reload() {
    for format in Format::ALL {
        let msgs = convert(format, &oversized(3));
        // Compacting only to the trigger: the previews suffice, the emergency step does not run.
        let m = memory(format, Config { target_ratio: Some(0.75), ..config("one-hop", 9_000) }, None);
        m.add(&Value::Array(msgs.clone())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        let what = format!("{}: {:?}", format.name(), r.events);
        assert!(r.under_target, "{what}");
        // One event for the dump's message, naming the offload of its original.
        let original = result_message(&msgs, "dump");
        let e: Vec<_> = r
            .events
            .iter()
            .filter(|e| m.messages()[e.index..e.index + e.replacement_count].iter().any(|v| holds_result(v, "dump")))
            .collect();
        assert_eq!(e.len(), 1, "{what}");
        assert!(e[0].event_type.starts_with("LARGE_MESSAGE_OFFLOAD") && e[0].message_count == 1, "{what}");
        let back = block_on(m.reload(e[0].offload_uuid.as_ref().unwrap())).unwrap();
        assert!(back.len() == 1 && same_wire(&back[0], original), "{what}: one reload gives the original");
        assert_eq!(
            m.offloads().len(),
            r.events.iter().filter(|e| e.offload_uuid.is_some()).count(),
            "{what}: no offload of an intermediate"
        );
        assert_one_hop(&m, &what);
        check(&m, &what);
    }
}

#[test]
fn a_copy_replaced_in_a_later_pass_points_at_the_original() {
    for format in Format::ALL {
        let msgs = convert(format, &oversized(6));
        let start = msgs.iter().position(|v| v.to_string().contains("question o0")).unwrap();
        // Pass 1 only truncates (a roomy window); later passes offload the copy, then summarize
        // or offload whole rounds around it.
        let m = memory(format, config("later", 12_000), Some(FakeSummarizer::digest()));
        m.add(&Value::Array(msgs[..start].to_vec())).unwrap();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert_eq!(r.events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>(), ["TOOL_RESULT_TRUNCATE"], "{}", format.name());
        let first = r.events[0].offload_uuid.clone().unwrap();
        let state = m.to_json();
        for window in [9_000, 5_000] {
            let mut state = state.clone();
            state["config"]["maxToken"] = json!(window);
            let m2 = Mem::from_json(&state, Some(FakeSummarizer::digest()), m.store().clone(), None).unwrap();
            m2.add(&Value::Array(msgs[start..].to_vec())).unwrap();
            let r = block_on(m2.compress_if_needed()).unwrap();
            let what = format!("{} window {window}: {:?}", format.name(), r.events.iter().map(|e| &e.event_type).collect::<Vec<_>>());
            assert!(r.under_target, "{what}: {r:?}");
            assert_one_hop(&m2, &what);
            check(&m2, &what);
            // Wherever the dump went, the offload that names it holds its original.
            let holder = m2.working().into_iter().find(|w| holds_result(&w.wire, "dump"));
            if let Some(w) = holder {
                let u = w.synthetic.as_ref().and_then(|s| s.offload.clone()).unwrap();
                assert_eq!(u, first, "{what}: the copy of a copy points at the first offload");
            }
        }
    }
}

#[test]
fn emergency_notices_never_pile_up_in_the_users_turn_where_turns_alternate() {
    let mut openai = vec![system("agent"), user("fix the parser")];
    for k in 0..40 {
        openai.push(json!({"role": "assistant", "content": format!("Step {k}."), "tool_calls": [call(&format!("s{k}"), "bash")]}));
        openai.push(tool_result(&format!("s{k}"), 2_500));
    }
    for format in Format::ALL {
        let msgs = convert(format, &openai);
        let m = memory(format, config("pile", 6_000), None);
        for (i, v) in msgs.iter().enumerate() {
            if starts_response(format, &msgs, i) {
                block_on(m.compress_if_needed()).unwrap();
                let notes = m.messages().iter().map(|w| w.to_string().matches("[Context note:").count()).max().unwrap_or(0);
                assert!(notes <= 1, "{}: before message {i}, a message holds {notes} notices", format.name());
            }
            m.add(v).unwrap();
        }
        assert!(event_types(&m).iter().filter(|t| *t == "EMERGENCY_OFFLOAD").count() > 5, "{}: {:?}", format.name(), event_types(&m));
        check(&m, format.name());
    }
}
