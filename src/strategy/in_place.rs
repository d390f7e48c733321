//! What the two current-round rungs share: answered messages of the current round summarized
//! in place.
//!
//! Both walk the current round oldest first, pick what they may shrink until the excess is
//! covered (each pick frees about `1 - currentRoundCompressionRatio` of its tokens), ask the
//! host for all the summaries at once, and write each summary into its message in place: ids,
//! calls and role kept, the original one reload away. A summary that fails falls back to an
//! offload with a preview. They differ in what they pick and what they ask for.

use super::llm::{self, Job, Outcome};
use super::preview::shrink;
use super::{Ctx, Edit};
use crate::host::Summarizer;
use crate::message::{offload_marker, Block, Message, Synthetic};
use crate::structure::Protection;

/// Summarizes in place the messages of the current round that `picks` accepts, oldest first and
/// only as many as the budget needs, each with the request `job` makes for it; `kind` is the
/// rung's event type. A message already rewritten, or one a protection keeps (unread work, what
/// the host pinned), is never picked.
pub(super) async fn summarize<S: Summarizer + ?Sized>(
    ctx: &Ctx<'_>,
    summarizer: &S,
    kind: &'static str,
    picks: impl Fn(&Message) -> bool,
    job: impl Fn(usize) -> Job,
) -> Vec<Edit> {
    let ratio = ctx.config.current_round_compression_ratio;
    let mut need = ctx.excess();
    let mut picked = Vec::new();
    for i in ctx.st.current_start..ctx.working.len() {
        if need == 0 {
            break;
        }
        let m = &ctx.working[i].msg;
        if m.synthetic.is_some() || !ctx.st.free(i, Protection::CURRENT) || !picks(m) {
            continue;
        }
        need = need.saturating_sub((ctx.working[i].tokens as f64 * (1.0 - ratio)) as u64);
        picked.push(i);
    }
    let jobs: Vec<Job> = picked.iter().map(|&i| job(i)).collect();
    let outcomes = llm::run(ctx, summarizer, &jobs).await;
    let mut edits = Vec::new();
    for (i, outcome) in picked.into_iter().zip(outcomes) {
        match outcome {
            Outcome::Done { text, input_tokens, output_tokens, ms } => {
                let uuid = ctx.in_place_offload(i);
                let msg = rewrite(ctx, i, &text, &uuid, kind);
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
fn rewrite(ctx: &Ctx<'_>, i: usize, summary: &str, uuid: &str, kind: &'static str) -> Message {
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
