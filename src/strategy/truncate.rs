//! Tool-result truncation: the cheapest step, and safe anywhere in the conversation.
//!
//! A tool result longer than `toolResultLimit` characters keeps its first 60% and last 30% of
//! that limit, with a notice and an offload marker between them; the whole result goes to the
//! store. A result only a little over the limit is left whole: a cut must remove at least
//! [`MIN_CUT_CHARS`](super::cut::MIN_CUT_CHARS) characters net of its notice and marker, or what it saves depends on how
//! the marker's random uuid tokenizes, and a pass that judged the cut useless would be followed
//! by one that judges it useful. The message keeps its role and call id, so even a result the model has not read yet
//! may shrink this way: its structure is untouched and the rest is one reload away. It is the
//! only step that touches unread work; what the host pinned, the results of `pinnedTools` and
//! the answers of the model's `context_reload` calls (pages of `offloadReloadLimit`) it leaves
//! whole.

use futures_util::future::LocalBoxFuture;

use super::cut::{cut_at, worth_cutting};
use super::{new_uuid, Ctx, Edit, Rung, Strategy};
use crate::host::DynSummarizer;
use crate::message::{Block, Synthetic};
use crate::structure::Protection;

/// The rung: tool results over `toolResultLimit` keep their head and tail; the whole is offloaded.
pub(super) struct ToolResultTruncate;

impl Rung for ToolResultTruncate {
    fn strategy(&self) -> Strategy {
        Strategy::ToolResultTruncate
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, _summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(std::future::ready((Strategy::ToolResultTruncate, plan(ctx))))
    }
}

pub(super) fn plan(ctx: &Ctx<'_>) -> Vec<Edit> {
    let limit = ctx.config.tool_result_limit as usize;
    let st = ctx.st;
    let mut edits = Vec::new();
    for (i, e) in ctx.working.iter().enumerate() {
        let m = &e.msg;
        // A message the engine already shrank has its original one reload away; with a small
        // limit its head, tail, notice and marker exceed the limit again, and truncating it
        // once more would only nest offloads, pass after pass.
        if m.synthetic.is_some() || !st.free(i, Protection::TRUNCATE) {
            continue;
        }
        let cut = |call_id: &str, content: &str| worth_cutting(content, limit) && !st.pinned_call(call_id) && !st.reload_call(call_id);
        let over = m.blocks.iter().any(|b| matches!(b, Block::ToolResult { call_id, content, .. } if cut(call_id, content)));
        if !over {
            continue;
        }
        let uuid = new_uuid();
        let blocks = m
            .blocks
            .iter()
            .map(|b| match b {
                Block::ToolResult { call_id, content, is_error } if cut(call_id, content) => {
                    let (text, head) = cut_at(content, limit, &uuid);
                    ctx.counter.prepare_cut(content, &text, head);
                    Block::ToolResult { call_id: call_id.clone(), content: text, is_error: *is_error }
                }
                other => other.clone(),
            })
            .collect();
        let synthetic = Synthetic::copy_of(Strategy::ToolResultTruncate.event_type(), &uuid);
        edits.push(Edit::in_place(i, ctx.format.rebuild(m, blocks, synthetic), uuid));
    }
    edits
}
