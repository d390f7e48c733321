//! Current-round large-message summary (LLM): shrink one large message of the current round in
//! place.
//!
//! Only messages the model has already answered qualify (results followed by an assistant
//! message, or the assistant's own earlier text); what it has not read yet is in flight and
//! never summarized — the reference summarized exactly those and its agents repeated their tool
//! calls forever. A tool result keeps its role and call id, an assistant message keeps its
//! calls: only the text shrinks, with the original one reload away. Oldest first, and only as
//! many as the budget needs.

use futures_util::future::LocalBoxFuture;

use super::llm::{self, Job, Outcome};
use super::offload::shrink;
use super::{Ctx, Edit, Rung, Strategy};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::{offload_marker, Block, Role, Synthetic};
use crate::structure::Protection;

/// The rung: a large, already answered message of the current round is summarized in place.
pub(super) struct CurrentRoundLargeMessage;

impl Rung for CurrentRoundLargeMessage {
    fn strategy(&self) -> Strategy {
        Strategy::CurrentRoundLargeMessage
    }

    fn uses_llm(&self) -> bool {
        true
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(async move { (Strategy::CurrentRoundLargeMessage, plan(ctx, summarizer).await) })
    }
}

pub(super) async fn plan<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
    let kind = Strategy::CurrentRoundLargeMessage.event_type();
    let threshold = ctx.config.large_payload_threshold as usize;
    let ratio = ctx.config.current_round_compression_ratio;
    let mut need = ctx.excess();
    let mut picked = Vec::new();
    for i in ctx.st.current_start..ctx.working.len() {
        if need == 0 {
            break;
        }
        let m = &ctx.working[i].msg;
        let eligible = matches!(m.role, Role::Assistant | Role::Tool) || m.has_results();
        if !eligible || m.synthetic.is_some() || !ctx.st.free(i, Protection::CURRENT) || m.payload_chars() <= threshold {
            continue;
        }
        need = need.saturating_sub((ctx.working[i].tokens as f64 * (1.0 - ratio)) as u64);
        picked.push(i);
    }
    let jobs: Vec<Job> = picked
        .iter()
        .map(|&i| {
            let chars = ctx.working[i].msg.payload_chars();
            Job {
                kind: "large_message",
                system: ctx.config.custom_prompt.current_round_large_message(),
                show: i..i + 1,
                instruction: "Shorten this message; the agent is still working with it.".into(),
                replaces_chars: chars,
                target_chars: Some(((chars as f64 * ratio) as usize).max(200).min(threshold)),
            }
        })
        .collect();
    let outcomes = llm::run(ctx, summarizer, &jobs).await;
    let mut edits = Vec::new();
    for (i, outcome) in picked.into_iter().zip(outcomes) {
        match outcome {
            Outcome::Done { text, input_tokens, output_tokens, ms } => {
                let uuid = ctx.in_place_offload(i);
                let msg = in_place(ctx, i, &text, &uuid, kind);
                edits.push(Edit {
                    span: i..i + 1,
                    replacement: vec![msg],
                    offload: Some(uuid),
                    usage: (input_tokens, output_tokens),
                    ms: Some(ms),
                });
            }
            Outcome::Failed { error, ms } => {
                llm::fail(ctx, kind, &(i..i + 1), error, ms);
                edits.push(shrink(ctx, i, kind));
            }
        }
    }
    edits
}

/// Message `i` with its text (or its tool results' content) replaced by `summary` and the
/// marker; ids, calls and role kept. A message carrying several results (Anthropic, the AI
/// SDK) gets the summary once, in its first result; the others point to it.
pub(super) fn in_place(ctx: &Ctx<'_>, i: usize, summary: &str, uuid: &str, kind: &str) -> crate::message::Message {
    let m = &ctx.working[i].msg;
    let marker = offload_marker(uuid);
    let body = format!("{summary}\n{marker}");
    let blocks: Vec<Block> = if m.has_results() {
        let first = m.result_ids().next().unwrap_or_default().to_string();
        m.blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult { call_id, is_error, .. } => {
                    let content = if *call_id == first {
                        body.clone()
                    } else {
                        format!("[Summarized together with the result of {first}.]\n{marker}")
                    };
                    Some(Block::ToolResult { call_id: call_id.clone(), content, is_error: *is_error })
                }
                _ => None,
            })
            .collect()
    } else {
        let mut v = vec![Block::Text(body)];
        v.extend(m.blocks.iter().filter(|b| matches!(b, Block::ToolCall { .. })).cloned());
        v
    };
    ctx.format.rebuild(m, blocks, Synthetic::copy_of(kind, uuid))
}
