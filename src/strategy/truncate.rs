//! Tool-result truncation: the cheapest step, and safe anywhere in the conversation.
//!
//! A tool result longer than `toolResultLimit` characters keeps its first 60% and last 30% of
//! that limit, with a notice and an offload marker between them; the whole result goes to the
//! store. A result only a little over the limit is left whole: a cut must remove at least
//! [`MIN_CUT_CHARS`] characters net of its notice and marker, or what it saves depends on how
//! the marker's random uuid tokenizes, and a pass that judged the cut useless would be followed
//! by one that judges it useful. The message keeps its role and call id, so even a result the model has not read yet
//! may shrink this way: its structure is untouched and the rest is one reload away. It is the
//! only step that touches unread work; what the host pinned, the results of `pinnedTools` and
//! the answers of the model's `context_reload` calls (pages of `offloadReloadLimit`) it leaves
//! whole.

use futures_util::future::LocalBoxFuture;

use super::{new_uuid, Ctx, Edit, Rung, Strategy};
use crate::host::DynSummarizer;
use crate::message::{chars_over, head_chars, offload_marker, tail_chars, Block, Synthetic};
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
        edits.push(Edit {
            span: i..i + 1,
            replacement: vec![ctx.format.rebuild(m, blocks, synthetic)],
            offload: Some(uuid),
            usage: (None, None),
            ms: None,
        });
    }
    edits
}

/// Characters a cut must remove, net of the notice and marker it adds.
pub(crate) const MIN_CUT_CHARS: usize = 300;

/// Whether a tool result of `content` is cut at `limit`: over the limit, and by enough that the
/// cut removes [`MIN_CUT_CHARS`] net (decided on characters, the same on every pass).
pub(crate) fn worth_cutting(content: &str, limit: usize) -> bool {
    if !chars_over(content, limit) {
        return false;
    }
    // What `shorten` keeps, counted without writing it: the head's and tail's characters (the
    // content is longer than both) and the notice's.
    let total = content.chars().count();
    let (head, tail) = (limit * 6 / 10, limit * 3 / 10);
    let cut = head + tail + notice(total - head - tail, total, "00000000-0000-4000-8000-000000000000").chars().count();
    total >= cut + MIN_CUT_CHARS
}

/// `content` cut to its first and last characters (six and three tenths of `limit`) around a
/// notice of what was omitted and the marker of the offload `uuid`; `content` has more than
/// `limit` characters.
pub(super) fn shorten(content: &str, limit: usize, uuid: &str) -> String {
    cut_at(content, limit, uuid).0
}

/// [`shorten`]'s text, with the length of the head it keeps.
fn cut_at(content: &str, limit: usize, uuid: &str) -> (String, usize) {
    let total = content.chars().count();
    let (head, tail) = (head_chars(content, limit * 6 / 10), tail_chars(content, limit * 3 / 10));
    // Each has as many characters as asked: the content has more than both together.
    let omitted = total.saturating_sub(limit * 6 / 10 + limit * 3 / 10);
    ([head, &notice(omitted, total, uuid), tail].concat(), head.len())
}

/// The lines `shorten` puts between the head and the tail.
fn notice(omitted: usize, total: usize, uuid: &str) -> String {
    format!(
        "\n[... {omitted} of {total} characters omitted; call context_reload with the uuid below for the full output ...]\n{}\n",
        offload_marker(uuid)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_keeps_head_tail_and_marker() {
        let s: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let out = shorten(&s, 200, "u-1");
        assert!(out.starts_with(&s[..120]));
        assert!(out.ends_with(&s[1000 - 60..]));
        assert!(out.contains("820 of 1000 characters omitted"));
        assert!(out.contains("<!-- CONTEXT_OFFLOAD: uuid=u-1 -->"));
    }
}
