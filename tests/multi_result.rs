//! Several tool results in one message (Anthropic carries all results of a turn in one user
//! message; OpenAI cannot express it, so the messages here are built in canonical form by hand).
//! The structure analysis must still see one exchange per call message, the pairing check must
//! still find duplicates, orphans and missing results, and the `lastKeep` cut must still widen to
//! the exchange's start.

use autocontext::format::{validate_tool_pairing, Format};
use autocontext::structure::Structure;
use autocontext::{Block, Message, Role};
use serde_json::Value;

fn msg(role: Role, blocks: Vec<Block>) -> Message {
    Message { role, blocks, wire: Value::Null, synthetic: None }
}

fn text(role: Role, t: &str) -> Message {
    msg(role, vec![Block::Text(t.into())])
}

fn calls(ids: &[&str]) -> Message {
    let blocks = ids.iter().map(|id| Block::ToolCall { id: id.to_string(), name: "read_file".into(), arguments: "{}".into() }).collect();
    msg(Role::Assistant, blocks)
}

/// One message carrying a result for each id, the way an Anthropic user turn does.
fn results(ids: &[&str]) -> Message {
    let blocks =
        ids.iter().map(|id| Block::ToolResult { call_id: id.to_string(), content: format!("output of {id}"), is_error: false }).collect();
    msg(Role::Tool, blocks)
}

fn codes(messages: &[Message]) -> Vec<(usize, &'static str)> {
    validate_tool_pairing(Format::Anthropic, messages).into_iter().map(|p| (p.index, p.code)).collect()
}

#[test]
fn results_split_over_messages_of_several_each_form_one_exchange() {
    let m = vec![
        text(Role::System, "agent"),
        text(Role::User, "read three files"),
        calls(&["a", "b", "c"]),
        results(&["b", "a"]),
        results(&["c"]),
        text(Role::Assistant, "read them"),
        text(Role::User, "next"),
    ];
    let s = Structure::analyze(Format::Anthropic, &m, 0);
    assert_eq!(s.unit(2).span, 2..5, "the call message and both result messages");
    assert!(s.unit(2).exchange && s.unit(2).complete);
    assert_eq!(s.unit(3), s.unit(4));
    assert_eq!(s.rounds, vec![1..6, 6..7], "a result message is not a user turn");
    assert_eq!(s.current_start, 6);
    assert!(!s.in_flight);
    assert!(codes(&m).is_empty(), "{:?}", validate_tool_pairing(Format::Anthropic, &m));

    // All three results in one message.
    let m = vec![text(Role::User, "go"), calls(&["a", "b", "c"]), results(&["c", "a", "b"]), text(Role::Assistant, "ok")];
    let s = Structure::analyze(Format::Anthropic, &m, 0);
    assert_eq!(s.unit(1).span, 1..3);
    assert!(s.unit(1).complete);
    assert!(codes(&m).is_empty());
}

#[test]
fn a_partial_result_message_leaves_the_exchange_incomplete_and_in_flight() {
    let m = vec![text(Role::User, "go"), calls(&["a", "b", "c"]), results(&["a", "c"])];
    let s = Structure::analyze(Format::Anthropic, &m, 0);
    assert_eq!(s.unit(1).span, 1..3);
    assert!(s.unit(1).exchange && !s.unit(1).complete);
    assert!(s.in_flight, "b is still running");
    assert!(codes(&m).is_empty(), "the last exchange may still wait for results");

    // The conversation moving on without b's result is a missing result at the call message.
    let mut m = m;
    m.push(text(Role::User, "never mind"));
    assert_eq!(codes(&m), vec![(1, "MISSING_RESULT")]);
}

#[test]
fn a_message_mixing_an_answer_with_a_foreign_result_ends_the_exchange() {
    // `x` was never called: the message cannot belong to the exchange of a and b.
    let m = vec![text(Role::User, "go"), calls(&["a", "b"]), results(&["a", "x"]), results(&["b"])];
    let s = Structure::analyze(Format::Anthropic, &m, 0);
    assert_eq!(s.unit(1).span, 1..2, "the exchange stops before the mixed message");
    assert!(!s.unit(1).complete);
    assert_eq!(codes(&m), vec![(2, "ORPHAN_RESULT")]);
}

#[test]
fn duplicate_results_inside_one_message_or_across_messages_are_found() {
    let m = vec![text(Role::User, "go"), calls(&["a", "b"]), results(&["a", "a", "b"])];
    assert_eq!(codes(&m), vec![(2, "DUPLICATE_RESULT")]);
    let m = vec![text(Role::User, "go"), calls(&["a", "b"]), results(&["a", "b"]), results(&["b"])];
    assert_eq!(codes(&m), vec![(3, "DUPLICATE_RESULT")]);
    // A result for a call of an earlier, closed exchange is an orphan.
    let m = vec![text(Role::User, "go"), calls(&["a"]), results(&["a"]), calls(&["b"]), results(&["b", "a"])];
    assert_eq!(codes(&m), vec![(4, "ORPHAN_RESULT")]);
}

#[test]
fn the_last_keep_cut_widens_to_the_start_of_a_multi_result_exchange() {
    let m = vec![
        text(Role::User, "go"),
        calls(&["a", "b", "c", "d"]),
        results(&["a", "b"]),
        results(&["c"]),
        results(&["d"]),
        text(Role::Assistant, "done"),
    ];
    // A tail of 1 is the final answer; a tail of 2 to 5 starts inside the exchange and widens
    // to its call message.
    for last_keep in 1..=5 {
        let s = Structure::analyze(Format::Anthropic, &m, last_keep);
        let expected = if last_keep == 1 { 5 } else { 1 };
        assert_eq!(s.keep_start, expected, "lastKeep {last_keep}");
    }
}
