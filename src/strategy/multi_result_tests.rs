//! The in-place strategies on messages that carry several tool results (as an Anthropic user
//! turn does). No wire format the engine reads yet can express them, so the working list is
//! built in canonical form and the strategies are called directly: every result must keep its
//! own call id and error flag, only the results over a limit may shrink, and the list must stay
//! valid with the replacement in it.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::Value;

use super::{current_compress, current_large, offload, truncate, Ctx, Edit, Entry};
use crate::error::HostError;
use crate::format::{validate_tool_pairing, Format};
use crate::host::{SummarizeRequest, Summarizer, Summary};
use crate::message::{find_markers, Block, Message, Role};
use crate::options::Config;
use crate::structure::Structure;

fn entry(role: Role, blocks: Vec<Block>) -> Entry {
    let m = Message { role, blocks, wire: Value::Null, synthetic: None };
    let tokens = (m.payload_chars() / 4 + 4) as u32;
    Entry::new(Rc::new(m), tokens)
}

fn text(role: Role, t: &str) -> Entry {
    entry(role, vec![Block::Text(t.into())])
}

fn calls(ids: &[&str]) -> Entry {
    let blocks = ids.iter().map(|id| Block::ToolCall { id: id.to_string(), name: "cat".into(), arguments: "{}".into() }).collect();
    entry(Role::Assistant, blocks)
}

/// One message with a result per `(id, chars, is_error)`.
fn results(parts: &[(&str, usize, bool)]) -> Entry {
    let blocks = parts
        .iter()
        .map(|&(id, chars, is_error)| Block::ToolResult { call_id: id.into(), content: format!("{id}:").repeat(chars / 2), is_error })
        .collect();
    entry(Role::Tool, blocks)
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

/// Runs `f` with a context over `working`, `excess` tokens over the target.
fn with_ctx<R>(working: &[Entry], config: &Config, excess: u64, f: impl FnOnce(&Ctx<'_>) -> R) -> R {
    let st = Structure::analyze(Format::OpenAi, working, config.last_keep as usize);
    let failures = RefCell::new(Vec::new());
    let summaries = crate::summarize::prepared::Summaries::none();
    let total: u64 = working.iter().map(|e| e.tokens as u64).sum();
    let origins: Vec<std::ops::Range<usize>> = (0..working.len()).map(|i| i..i + 1).collect();
    let ctx = Ctx {
        config,
        format: Format::OpenAi,
        working,
        st: &st,
        total,
        target: (total + 1).saturating_sub(excess),
        bound: (total + 1).saturating_sub(excess),
        plan: None,
        failures: &failures,
        summaries: &summaries,
        clock: &crate::host::SystemClock,
        snapshot: working,
        origins: &origins,
    };
    f(&ctx)
}

/// The list with the edits applied, for the pairing check.
fn applied(working: &[Entry], edits: Vec<Edit>) -> Vec<Message> {
    let mut out: Vec<Message> = working.iter().map(|e| (*e.msg).clone()).collect();
    let mut edits = edits;
    edits.sort_by_key(|e| std::cmp::Reverse(e.span.start));
    for e in edits {
        out.splice(e.span, e.replacement);
    }
    out
}

#[derive(Default)]
struct Fixed {
    requests: RefCell<Vec<SummarizeRequest>>,
}

impl Summarizer for Fixed {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        self.requests.borrow_mut().push(request.clone());
        Ok(Summary { text: "digest".into(), input_tokens: None, output_tokens: None })
    }
}

#[test]
fn truncation_shrinks_only_the_results_over_the_limit_and_keeps_every_id() {
    let working =
        vec![text(Role::User, "read"), calls(&["a", "b", "c"]), results(&[("a", 3_000, false), ("b", 100, true), ("c", 2_400, true)])];
    let config = Config { tool_result_limit: 1_000, ..Config::default() };
    let edits = with_ctx(&working, &config, 1, truncate::plan);
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].span, 2..3);
    let before = result_blocks(&working[2].msg);
    let after = result_blocks(&edits[0].replacement[0]);
    assert_eq!(after.len(), 3);
    for (k, ((id0, c0, e0), (id1, c1, e1))) in before.iter().zip(&after).enumerate() {
        assert_eq!((id0, e0), (id1, e1), "result {k} keeps its id and error flag");
        if c0.chars().count() > 1_000 {
            assert!(c1.starts_with(&c0[..600]) && c1.ends_with(&c0[c0.len() - 300..]), "result {k}: head and tail kept");
            assert_eq!(find_markers(c1), vec![edits[0].offload.clone().unwrap()], "result {k} names the offload");
        } else {
            assert_eq!(c1, c0, "result {k} is under the limit and stays");
        }
    }
    assert_eq!(edits[0].replacement[0].role, Role::Tool);
    assert!(validate_tool_pairing(Format::OpenAi, &applied(&working, edits)).is_empty());
}

#[test]
fn offload_shrink_keeps_every_result_id_and_error_flag() {
    let working = vec![
        text(Role::User, "read"),
        calls(&["a", "b"]),
        results(&[("a", 8_000, false), ("b", 8_000, true)]),
        text(Role::Assistant, "read both"),
        text(Role::User, "next"),
    ];
    let config = Config::default();
    let edit = with_ctx(&working, &config, 1, |ctx| offload::shrink(ctx, 2, "LARGE_MESSAGE_OFFLOAD"));
    let after = result_blocks(&edit.replacement[0]);
    assert_eq!(after.iter().map(|(id, _, e)| (id.as_str(), *e)).collect::<Vec<_>>(), vec![("a", false), ("b", true)]);
    let uuid = edit.offload.clone().unwrap();
    for (id, content, _) in &after {
        assert!(content.starts_with(&format!("{id}:{id}:")), "{id}: a preview of its own content");
        assert!(content.chars().count() < 400);
        assert_eq!(find_markers(content), vec![uuid.clone()]);
    }
    assert!(validate_tool_pairing(Format::OpenAi, &applied(&working, vec![edit])).is_empty());
}

#[test]
fn current_round_steps_summarize_an_answered_multi_result_message_in_place() {
    let working = vec![
        text(Role::User, "audit the repo"),
        calls(&["a", "b"]),
        results(&[("a", 9_000, false), ("b", 9_000, true)]),
        text(Role::Assistant, "both read; now the config"),
        calls(&["c", "d"]),
        results(&[("c", 9_000, false), ("d", 9_000, false)]),
    ];
    let config = Config::default();
    for step in ["large", "compress"] {
        let summarizer = Fixed::default();
        let edits = with_ctx(&working, &config, 1_000, |ctx| {
            futures_executor::block_on(async {
                match step {
                    "large" => current_large::plan(ctx, &summarizer).await,
                    _ => current_compress::plan(ctx, &summarizer).await,
                }
            })
        });
        // Only the answered message (2); message 5 has not been read by the model yet.
        assert_eq!(edits.iter().map(|e| e.span.clone()).collect::<Vec<_>>(), vec![2..3], "{step}");
        let requests = summarizer.requests.borrow();
        assert_eq!(requests.len(), 1, "{step}: one summary for the message, not one per result");
        assert!(!requests[0].prompt.contains("id=\"c\"") && !requests[0].prompt.contains("id=\"d\""), "{step}");
        let after = result_blocks(&edits[0].replacement[0]);
        assert_eq!(after.iter().map(|(id, _, e)| (id.as_str(), *e)).collect::<Vec<_>>(), vec![("a", false), ("b", true)], "{step}");
        // The digest goes in once, into the first result; every result names the offload.
        assert!(after[0].1.starts_with("digest"), "{step}: {}", after[0].1);
        assert_eq!(after.iter().filter(|(_, c, _)| c.contains("digest")).count(), 1, "{step}: {after:?}");
        for (_, content, _) in &after {
            assert_eq!(find_markers(content), vec![edits[0].offload.clone().unwrap()]);
        }
        assert_eq!(edits[0].replacement[0].role, Role::Tool, "{step}: never turned into assistant prose");
        assert!(validate_tool_pairing(Format::OpenAi, &applied(&working, edits)).is_empty(), "{step}");
    }
}
