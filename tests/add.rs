//! `add` is all or nothing: a message the provider would reject (bad shape, a result without a
//! call, a reused call id, a new turn while calls are unanswered) is refused with an error naming
//! its index in the conversation and the field at fault, and the memory stays exactly as it was.

mod common;

use autocontext::{AutoContextMemory, ErrorCode, MemoryStore, NoSummarizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<NoSummarizer, MemoryStore>;

/// A memory holding a complete exchange and an open user turn (3 messages... 5 in all).
fn started() -> Mem {
    let m = AutoContextMemory::new(config("add", 100_000), NoSummarizer, MemoryStore::new()).unwrap();
    m.add(&json!([system("s"), user("list the files"), assistant_calls(&["a1", "a2"]), tool_result("a1", 10), tool_result("a2", 10),]))
        .unwrap();
    m
}

/// Adds `bad`, expects a rejection at `index` / `field` whose message mentions `says`, and checks
/// that nothing changed and the memory still takes a valid continuation.
fn rejects(bad: Value, index: usize, field: Option<&str>, says: &str) {
    let m = started();
    let before = snapshot(&m);
    let e = m.add(&bad).expect_err(&format!("should reject {bad}"));
    assert_eq!(e.code(), ErrorCode::InvalidMessage, "{bad}: {e:?}");
    assert_eq!(e.index(), Some(index), "{bad}: {e:?}");
    assert_eq!(e.field(), field, "{bad}: {e:?}");
    assert!(e.message().contains(&format!("message {index}")), "{}", e.message());
    assert!(e.message().contains(says), "{bad}: {:?} should mention {says:?}", e.message());
    assert_eq!(snapshot(&m), before, "{bad}: the memory changed");
    m.add(&answer("two files")).expect("a valid continuation is still accepted");
    assert!(m.validate().is_empty());
}

#[test]
fn a_tool_result_without_its_call() {
    rejects(json!({"role": "tool", "tool_call_id": "zz", "content": "x"}), 5, Some("tool_call_id"), "\"zz\"");
    // After the exchange is closed by an answer, even a known id is no longer open.
    let m = started();
    m.add(&answer("done")).unwrap();
    let e = m.add(&json!({"role": "tool", "tool_call_id": "a1", "content": "late"})).unwrap_err();
    assert_eq!((e.index(), e.field()), (Some(6), Some("tool_call_id")));
}

#[test]
fn a_second_result_for_the_same_call() {
    rejects(json!({"role": "tool", "tool_call_id": "a2", "content": "again"}), 5, Some("tool_call_id"), "second time");
}

#[test]
fn a_reused_call_id() {
    rejects(json!([answer("ok"), user("more"), assistant_calls(&["a1"])]), 7, Some("tool_calls"), "\"a1\"");
    // Twice in one message.
    rejects(json!([answer("ok"), user("more"), assistant_calls(&["n1", "n1"])]), 7, Some("tool_calls"), "\"n1\"");
    // Twice in one batch.
    rejects(
        json!([answer("ok"), assistant_calls(&["n2"]), tool_result("n2", 5), assistant_calls(&["n2"])]),
        8,
        Some("tool_calls"),
        "\"n2\"",
    );
}

#[test]
fn a_new_turn_while_calls_are_unanswered() {
    let m = started();
    m.add(&json!([answer("ok"), user("again"), assistant_calls(&["b1", "b2"]), tool_result("b2", 5)])).unwrap();
    let before = snapshot(&m);
    for next in [user("hello?"), answer("done"), assistant_calls(&["b3"])] {
        let e = m.add(&next).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidMessage);
        assert_eq!(e.index(), Some(9));
        assert!(e.message().contains("b1") && !e.message().contains("\"b2\""), "{}", e.message());
        assert_eq!(snapshot(&m), before);
    }
    m.add(&tool_result("b1", 5)).unwrap();
    m.add(&answer("now it is complete")).unwrap();
    assert!(m.validate().is_empty());
}

#[test]
fn bad_shapes_name_their_field() {
    rejects(json!({"role": "robot", "content": "beep"}), 5, Some("role"), "robot");
    rejects(json!({"content": "no role"}), 5, Some("role"), "missing");
    rejects(json!({"role": 7, "content": "x"}), 5, Some("role"), "string");
    rejects(json!("just a string"), 5, None, "expected an object");
    rejects(json!(42), 5, None, "expected an object");
    rejects(json!(null), 5, None, "expected an object");
    rejects(json!({"role": "user", "content": 5}), 5, Some("content"), "string");
    rejects(json!({"role": "user", "content": [5]}), 5, Some("content[0]"), "object");
    rejects(json!({"role": "user", "content": [{"type": "text"}]}), 5, Some("content[0].text"), "string");
    rejects(json!({"role": "tool", "content": "x"}), 5, Some("tool_call_id"), "missing");
    rejects(json!({"role": "tool", "tool_call_id": "", "content": "x"}), 5, Some("tool_call_id"), "empty");
    rejects(json!({"role": "user", "content": "x", "tool_calls": []}), 5, Some("tool_calls"), "only assistant");
    rejects(
        json!([answer("ok"), {"role": "assistant", "tool_calls": [{"id": "f", "function": {"name": "f", "arguments": {"a": 1}}}]}]),
        6,
        Some("tool_calls[0].function.arguments"),
        "JSON string",
    );
    rejects(
        json!([answer("ok"), {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]),
        6,
        Some("tool_calls[0].id"),
        "non-empty",
    );
    rejects(json!([answer("ok"), {"role": "assistant", "tool_calls": {"id": "x"}}]), 6, Some("tool_calls"), "array");
}

#[test]
fn a_bad_message_late_in_a_batch_adds_none_of_it() {
    let m = started();
    let before = snapshot(&m);
    let e = m.add(&json!([answer("fine"), user("fine too"), {"role": "user", "content": {"oops": 1}}])).unwrap_err();
    assert_eq!(e.index(), Some(7), "indexed in the conversation, not the batch");
    assert_eq!(e.field(), Some("content"));
    assert_eq!(snapshot(&m), before);
    assert_eq!(block_on(m.original_messages()).expect("the log reads back").len(), 5);
}

#[test]
fn an_in_flight_call_at_the_end_is_valid() {
    let m = started();
    m.add(&json!([answer("ok"), user("next"), assistant_calls(&["c9"])])).unwrap();
    assert!(m.validate().is_empty(), "the host is about to run the tool");
    assert_eq!(m.messages().len(), 8);
}

/// What `add` says of `messages` in `format`: the whole message of its error.
fn refusal(format: autocontext::Format, messages: Value) -> String {
    let cfg = autocontext::Config { format, ..config("words", 100_000) };
    let m = AutoContextMemory::new(cfg, NoSummarizer, MemoryStore::new()).unwrap();
    let e = m.add(&messages).expect_err(&format!("should reject {messages}"));
    assert_eq!(e.code(), ErrorCode::InvalidMessage, "{e:?}");
    e.message().to_string()
}

#[test]
fn a_gemini_pairing_error_speaks_gemini_and_shows_no_engine_made_id() {
    use autocontext::Format::Gemini;
    let hi = json!({"role": "user", "parts": [{"text": "hi"}]});
    let call = |name: &str| json!({"role": "model", "parts": [{"functionCall": {"name": name, "args": {}}}]});
    let response = |name: &str| json!({"functionResponse": {"name": name, "response": {"output": "x"}}});
    let cases = [
        // A response without its call ("answers tool call "read_log#1", but no assistant message ...").
        (
            json!([hi, {"role": "user", "parts": [response("read_log")]}]),
            r#"message 1, field `parts[0].functionResponse`: answers functionCall "read_log", but no model turn before it made that call"#,
        ),
        // Two responses to one call.
        (
            json!([hi, call("read_log"), {"role": "user", "parts": [response("read_log"), response("read_log")]}]),
            r#"message 2, field `parts[1].functionResponse`: answers functionCall "read_log", which the open model turn did not make"#,
        ),
        // A response by id to a call the turn did not make: the wire's id is shown, with the name.
        (
            json!([hi, {"role": "model", "parts": [{"functionCall": {"id": "fc-1", "name": "read_log", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"id": "fc-9", "name": "grep", "response": {}}}]}]),
            r#"answers functionCall "grep" (id "fc-9"), which the open model turn did not make"#,
        ),
        // The conversation moving on past an unanswered call.
        (
            json!([hi, call("read_log"), {"role": "user", "parts": [{"text": "wait"}]}]),
            r#"message 2: the conversation moves on while functionCall(s) ["read_log"] still wait for their functionResponse parts; add the functionResponse parts first"#,
        ),
    ];
    for (messages, says) in cases {
        let message = refusal(Gemini, messages);
        assert!(message.contains(says), "{message}");
        assert!(!message.contains('#') && !message.contains("tool call") && !message.contains("assistant"), "{message}");
    }
    // The other formats keep their own words: Anthropic's tool_use, the Responses API's function_call.
    let anthropic = refusal(
        autocontext::Format::Anthropic,
        json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}]),
    );
    assert!(anthropic.contains(r#"answers tool_use "t1", but no assistant message before it made that call"#), "{anthropic}");
    let responses =
        refusal(autocontext::Format::OpenAiResponses, json!([{"type": "function_call_output", "call_id": "c1", "output": "x"}]));
    assert!(responses.contains(r#"answers function_call "c1", but no model response before it made that call"#), "{responses}");
}
