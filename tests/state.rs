//! Persistence: `to_json` → `from_json` restores the same memory (messages, originals, events,
//! offloads, tokens) and reloads still work; a tampered or future state fails with
//! `INVALID_STATE` instead of misbehaving later.

mod common;

use autocontext::{AutoContextMemory, ErrorCode, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

fn compressed(store: &FlakyStore) -> Mem {
    let mut msgs = vec![system("agent")];
    msgs.extend(tool_round("huge", 1, 30_000));
    for r in 0..4 {
        msgs.extend(tool_round(&format!("r{r}"), 3, 4_000 + 1_500 * r));
    }
    msgs.push(user("and now?"));
    msgs.push(assistant_calls(&["cur"]));
    msgs.push(tool_result("cur", 500));
    let total = tokens_of(&msgs);
    let cfg = config("persist", ((total / 4) as f64 / 0.75) as u64);
    let m = AutoContextMemory::with_counter(
        cfg,
        TokenCounter::new(Tokenizer::O200kBase).unwrap(),
        Some(FakeSummarizer::digest()),
        store.clone(),
    )
    .unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target);
    assert!(m.events().len() >= 2 && m.working().iter().any(|w| w.synthetic.is_some()));
    m
}

fn restore(state: &Value, store: &FlakyStore) -> autocontext::Result<Mem> {
    AutoContextMemory::from_json(state, Some(FakeSummarizer::digest()), store.clone(), None)
}

#[test]
fn round_trip_restores_everything_and_reloads_still_work() {
    let store = FlakyStore::new();
    let m = compressed(&store);
    // Through text, as a host would keep it.
    let text = serde_json::to_string(&m.to_json()).unwrap();
    let state: Value = serde_json::from_str(&text).unwrap();
    let r = restore(&state, &store).unwrap();
    assert_eq!(r.messages(), m.messages());
    assert_eq!(block_on(r.original_messages()).expect("the log reads back"), block_on(m.original_messages()).expect("the log reads back"));
    assert_eq!(r.events(), m.events());
    assert_eq!(r.offloads(), m.offloads());
    assert_eq!(r.token_count(), m.token_count());
    assert_eq!(r.config(), m.config());
    assert_eq!(r.to_json(), m.to_json());
    let marks: Vec<_> = m.working().iter().map(|w| w.synthetic.clone()).collect();
    let restored_marks: Vec<_> = r.working().iter().map(|w| w.synthetic.clone()).collect();
    assert_eq!(restored_marks, marks, "the engine's marks on its own messages survive");
    assert_valid(&r, "restored");
    check_recoverable(&r, "restored");
    for o in r.offloads() {
        assert_eq!(block_on(r.reload(&o.uuid)).unwrap(), block_on(m.reload(&o.uuid)).unwrap());
    }

    // The restored memory carries on: new messages, another pass, all still recoverable.
    r.add(&answer("done with that")).unwrap();
    r.add(&user(&filler("next big paste", 50_000))).unwrap();
    let before = r.offloads().len();
    block_on(r.compress_if_needed()).unwrap();
    assert!(r.offloads().len() > before, "the restored memory compressed again");
    assert_valid(&r, "restored, continued");
    check_recoverable(&r, "restored, continued");
    // A call id the working list holds is still refused after a restore.
    r.add(&Value::Array(tool_round("late", 1, 100))).unwrap();
    let again = restore(&r.to_json(), &store).unwrap();
    let e = again.add(&assistant_calls(&["late-c0"])).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidMessage);
}

fn assert_invalid(state: &Value, store: &FlakyStore, says: &str) {
    let e = restore(state, store).err().unwrap_or_else(|| panic!("a state that {says} was accepted"));
    assert_eq!(e.code(), ErrorCode::InvalidState, "{says}: {e:?}");
    assert!(e.message().to_lowercase().contains(says), "{:?} should mention {says:?}", e.message());
}

#[test]
fn a_future_or_unversioned_state_is_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    let mut future = state.clone();
    future["autocontext"] = json!(state["autocontext"].as_u64().unwrap() + 1);
    assert_invalid(&future, &store, "newer");
    let mut none = state.clone();
    none.as_object_mut().unwrap().remove("autocontext");
    assert_invalid(&none, &store, "version");
    assert_invalid(&json!([1, 2]), &store, "object");
    assert_invalid(&json!("state"), &store, "object");
}

#[test]
fn a_working_message_naming_an_offload_outside_the_index_is_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    let at = state["working"].as_array().unwrap().iter().position(|w| w["synthetic"]["offload"].is_string()).unwrap();
    let uuid = state["working"][at]["synthetic"]["offload"].as_str().unwrap().to_string();

    // Its offload dropped from the index.
    let mut dropped = state.clone();
    dropped["offloads"].as_array_mut().unwrap().retain(|o| o["uuid"] != uuid.as_str());
    assert_invalid(&dropped, &store, &uuid);

    // Pointed at another (well-formed) uuid.
    let mut other = state.clone();
    other["working"][at]["synthetic"]["offload"] = json!("12345678-1234-4123-8123-123456789abc");
    assert_invalid(&other, &store, "12345678-1234-4123-8123-123456789abc");

    // A malformed or duplicated uuid in the index.
    let mut bad = state.clone();
    bad["offloads"].as_array_mut().unwrap().push(json!({"uuid": "../../etc/passwd", "messageCount": 1}));
    assert_invalid(&bad, &store, "etc/passwd");
    let mut dup = state.clone();
    let first = dup["offloads"][0].clone();
    dup["offloads"].as_array_mut().unwrap().push(first);
    assert_invalid(&dup, &store, "unique");
}

#[test]
fn a_working_list_with_broken_pairing_is_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    let working = state["working"].as_array().unwrap();
    // Drop the assistant message whose calls the last result answers: an orphan result.
    let calls_at = working.iter().rposition(|w| w["message"]["tool_calls"].is_array()).unwrap();
    let mut orphan = state.clone();
    orphan["working"].as_array_mut().unwrap().remove(calls_at);
    assert_invalid(&orphan, &store, "not a valid conversation");

    // A result moved after a later user message: a call without its result.
    let mut moved = state.clone();
    let w = moved["working"].as_array_mut().unwrap();
    let result = w.remove(calls_at + 1);
    w.push(json!({"message": user("interrupting")}));
    w.push(result);
    assert_invalid(&moved, &store, "not a valid conversation");
}

#[test]
fn malformed_parts_of_a_state_are_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    type Breaks = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Breaks)> = vec![
        ("config", Box::new(|s: &mut Value| s["config"]["maxToken"] = json!(0))),
        ("log.tail", Box::new(|s: &mut Value| s["log"]["tail"] = json!({"not": "an array"}))),
        ("log.tail", Box::new(|s: &mut Value| s["log"]["tail"][1] = json!({"role": "robot"}))),
        ("log.messages", Box::new(|s: &mut Value| s["log"]["messages"] = json!(-1))),
        ("log.messages", Box::new(|s: &mut Value| s["log"]["messages"] = json!(1))),
        ("log.head", Box::new(|s: &mut Value| s["log"]["head"] = json!("other-session/log-0-0123456789abcdef"))),
        ("log.head", Box::new(|s: &mut Value| s["log"]["head"] = json!("persist/../x"))),
        ("working", Box::new(|s: &mut Value| s["working"] = json!(7))),
        ("working", Box::new(|s: &mut Value| s["working"][0] = json!({"msg": {}}))),
        ("working", Box::new(|s: &mut Value| s["working"][1]["message"] = json!({"role": "user", "content": 3}))),
        ("events", Box::new(|s: &mut Value| s["events"] = json!([{"type": 5}]))),
        ("offloads", Box::new(|s: &mut Value| s["offloads"] = json!("none"))),
    ];
    for (says, tamper) in cases {
        let mut s = state.clone();
        tamper(&mut s);
        assert_invalid(&s, &store, says);
    }
}
