//! A message replaced in place by a preview of its first characters and the marker of its
//! offloaded original: what large-message offload does to each message it picks, and the
//! fallback of the current round's in-place summaries when one fails.

use super::{Ctx, Edit};
use crate::message::{head_chars, offload_marker, Block, Synthetic};

/// Replaces message `i` in place by a preview of `offloadSinglePreview` characters and the
/// marker of its offloaded original. Tool results keep their ids and tool calls their calls.
/// Also the fallback of the in-place LLM strategies.
pub(super) fn shrink(ctx: &Ctx<'_>, i: usize, kind: &str) -> Edit {
    let m = &ctx.working[i].msg;
    let preview_len = ctx.config.offload_single_preview as usize;
    let uuid = ctx.in_place_offload(i);
    let marker = offload_marker(&uuid);
    let mut blocks: Vec<Block> = Vec::new();
    if m.has_results() {
        // Each result keeps its id; its content becomes a preview.
        for b in &m.blocks {
            if let Block::ToolResult { call_id, content, is_error } = b {
                blocks.push(Block::ToolResult {
                    call_id: call_id.clone(),
                    content: format!("{}\n{marker}", preview(content, preview_len)),
                    is_error: *is_error,
                });
            }
        }
    } else {
        blocks.push(Block::Text(format!("{}\n{marker}", preview(&m.payload_text(), preview_len))));
        // Calls stay, so their results still answer something.
        blocks.extend(m.blocks.iter().filter(|b| matches!(b, Block::ToolCall { .. })).cloned());
    }
    Edit::in_place(i, ctx.format.rebuild(m, blocks, Synthetic::copy_of(kind, &uuid)), uuid)
}

fn preview(text: &str, n: usize) -> String {
    let head = head_chars(text, n);
    if head.len() < text.len() {
        format!("{head}...")
    } else {
        head.to_string()
    }
}
