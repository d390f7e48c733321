//! Several tool results in one message (Anthropic carries all results of a turn in one user
//! message; OpenAI cannot express it, so the messages here are built in canonical form by hand).
//! The structure analysis must still see one exchange per call message, the pairing check must
//! still find duplicates, orphans and missing results, and the `lastKeep` cut must still widen to
//! the exchange's start; the steps that rewrite a message in place must keep every result of it
//! (`in_place` below, through the AI SDK format, which carries them in one tool message).

mod common;

use autocontext::format::{validate_tool_pairing, Format};
use autocontext::structure::Structure;
use autocontext::{Block, Message, Role};
use serde_json::Value;

fn msg(role: Role, blocks: Vec<Block>) -> Message {
    Message { role, blocks, wire: Value::Null.into(), synthetic: None }
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

// ---------------------------------------------------------------------------------------------
// The in-place steps on a message carrying several results (AI SDK: a tool message of several
// `tool-result` parts), through a memory whose ladder is the one step under test: every result
// keeps its own call id and error flag, only the results over a limit shrink, and the list
// stays valid with the replacement in it.
// ---------------------------------------------------------------------------------------------

mod in_place {
    use autocontext::format::{validate_tool_pairing, Format};
    use autocontext::message::find_markers;
    use autocontext::strategy::Strategy;
    use autocontext::{AutoContextMemory, Block, Config, MemoryStore, Message, NoSummarizer, Role, Summarizer};
    use serde_json::{json, Value};

    use super::common::{block_on, FakeSummarizer};

    fn user(t: &str) -> Value {
        json!({"role": "user", "content": t})
    }

    fn said(t: &str) -> Value {
        json!({"role": "assistant", "content": t})
    }

    fn calls(ids: &[&str]) -> Value {
        let parts: Vec<Value> =
            ids.iter().map(|id| json!({"type": "tool-call", "toolCallId": id, "toolName": "cat", "input": {}})).collect();
        json!({"role": "assistant", "content": parts})
    }

    /// One tool message with a result per `(id, chars, is_error)`.
    fn results(parts: &[(&str, usize, bool)]) -> Value {
        let parts: Vec<Value> = parts
            .iter()
            .map(|&(id, chars, is_error)| {
                let output = json!({"type": if is_error { "error-text" } else { "text" }, "value": format!("{id}:").repeat(chars / 2)});
                json!({"type": "tool-result", "toolCallId": id, "toolName": "cat", "output": output})
            })
            .collect();
        json!({"role": "tool", "content": parts})
    }

    fn read(list: &[Value]) -> Vec<Message> {
        list.iter().enumerate().map(|(i, v)| Format::AiSdk.parse(i, v).unwrap()).collect()
    }

    /// The results of a message: (call id, content, is_error).
    fn result_blocks(m: &Message) -> Vec<(String, String, bool)> {
        m.blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult { call_id, content, is_error } => Some((call_id.clone(), content.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }

    /// Compresses `wire` with the one step `strategy`, under a window a little smaller than the
    /// list; returns the messages before and after, read back, and the offload of each event.
    fn run<S: Summarizer>(wire: &[Value], strategy: Strategy, config: Config, summarizer: S) -> (Vec<Message>, Vec<Message>, Vec<String>) {
        let probe = AutoContextMemory::new(
            Config { format: Format::AiSdk, max_token: 10_000_000, ..config.clone() },
            NoSummarizer,
            MemoryStore::new(),
        )
        .unwrap();
        probe.add(&Value::Array(wire.to_vec())).unwrap();
        let tokens = probe.token_count();
        let config = Config {
            format: Format::AiSdk,
            max_token: (tokens as f64 / config.token_ratio).floor() as u64,
            target_ratio: Some(config.token_ratio),
            strategies: Some(vec![strategy]),
            ..config
        };
        let memory = AutoContextMemory::new(config, summarizer, MemoryStore::new()).unwrap();
        memory.add(&Value::Array(wire.to_vec())).unwrap();
        let result = block_on(memory.compress_if_needed()).unwrap();
        assert!(result.compressed, "{strategy:?}: {result:?}");
        let offloads = result.events.iter().filter_map(|e| e.offload_uuid.clone()).collect();
        (read(wire), read(&memory.messages()), offloads)
    }

    #[test]
    fn truncation_shrinks_only_the_results_over_the_limit_and_keeps_every_id() {
        let wire = vec![user("read"), calls(&["a", "b", "c"]), results(&[("a", 3_000, false), ("b", 100, true), ("c", 2_400, true)])];
        let config = Config { tool_result_limit: 1_000, ..Config::default() };
        let (before, after, offloads) = run(&wire, Strategy::ToolResultTruncate, config, NoSummarizer);
        assert_eq!(offloads.len(), 1, "one change");
        assert_eq!(after.len(), before.len());
        assert_eq!(after[..2], before[..2], "only the results' message changes");
        let old = result_blocks(&before[2]);
        let new = result_blocks(&after[2]);
        assert_eq!(new.len(), 3);
        for (k, ((id0, c0, e0), (id1, c1, e1))) in old.iter().zip(&new).enumerate() {
            assert_eq!((id0, e0), (id1, e1), "result {k} keeps its id and error flag");
            if c0.chars().count() > 1_000 {
                assert!(c1.starts_with(&c0[..600]) && c1.ends_with(&c0[c0.len() - 300..]), "result {k}: head and tail kept");
                assert_eq!(find_markers(c1), offloads, "result {k} names the offload");
            } else {
                assert_eq!(c1, c0, "result {k} is under the limit and stays");
            }
        }
        assert_eq!(after[2].role, Role::Tool);
        assert!(validate_tool_pairing(Format::AiSdk, &after).is_empty());
    }

    #[test]
    fn offload_shrink_keeps_every_result_id_and_error_flag() {
        let wire =
            vec![user("read"), calls(&["a", "b"]), results(&[("a", 8_000, false), ("b", 8_000, true)]), said("read both"), user("next")];
        // The round the question follows is protected by default; this step must reach it.
        let config = Config { protect_last_round: false, ..Config::default() };
        let (before, after, offloads) = run(&wire, Strategy::LargeMessageOffload, config, NoSummarizer);
        assert_eq!(offloads.len(), 1, "one change");
        assert_eq!((&after[..2], &after[3..]), (&before[..2], &before[3..]), "only the results' message changes");
        let new = result_blocks(&after[2]);
        assert_eq!(new.iter().map(|(id, _, e)| (id.as_str(), *e)).collect::<Vec<_>>(), vec![("a", false), ("b", true)]);
        for (id, content, _) in &new {
            assert!(content.starts_with(&format!("{id}:{id}:")), "{id}: a preview of its own content");
            assert!(content.chars().count() < 400);
            assert_eq!(find_markers(content), offloads);
        }
        assert!(validate_tool_pairing(Format::AiSdk, &after).is_empty());
    }

    #[test]
    fn current_round_steps_summarize_an_answered_multi_result_message_in_place() {
        let wire = vec![
            user("audit the repo"),
            calls(&["a", "b"]),
            results(&[("a", 9_000, false), ("b", 9_000, true)]),
            said("both read; now the config"),
            calls(&["c", "d"]),
            results(&[("c", 9_000, false), ("d", 9_000, false)]),
        ];
        for step in [Strategy::CurrentRoundLargeMessage, Strategy::CurrentRoundCompress] {
            let summarizer = FakeSummarizer::fixed("digest");
            let (before, after, offloads) = run(&wire, step, Config::default(), summarizer.clone());
            // Only the answered message (2); message 5 has not been read by the model yet.
            assert_eq!(offloads.len(), 1, "{step:?}");
            assert_eq!((&after[..2], &after[3..]), (&before[..2], &before[3..]), "{step:?}: only message 2 changes");
            let requests = summarizer.requests.borrow();
            assert_eq!(requests.len(), 1, "{step:?}: one summary for the message, not one per result");
            assert!(!requests[0].prompt.contains("id=\"c\"") && !requests[0].prompt.contains("id=\"d\""), "{step:?}");
            let new = result_blocks(&after[2]);
            assert_eq!(new.iter().map(|(id, _, e)| (id.as_str(), *e)).collect::<Vec<_>>(), vec![("a", false), ("b", true)], "{step:?}");
            // The digest goes in once, into the first result; every result names the offload.
            assert!(new[0].1.starts_with("digest"), "{step:?}: {}", new[0].1);
            assert_eq!(new.iter().filter(|(_, c, _)| c.contains("digest")).count(), 1, "{step:?}: {new:?}");
            for (_, content, _) in &new {
                assert_eq!(find_markers(content), offloads);
            }
            assert_eq!(after[2].role, Role::Tool, "{step:?}: never turned into assistant prose");
            assert!(validate_tool_pairing(Format::AiSdk, &after).is_empty(), "{step:?}");
        }
    }
}
