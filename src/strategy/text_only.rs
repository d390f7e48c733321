//! Text-only turns (no LLM), the chatgpt-on-wechat design for short conversations.
//!
//! With fewer than five complete turns there is too little history to trim by halves, yet a
//! few turns of tool work can fill the window. Each complete turn then keeps its user message
//! and its final answer; the tool calls, results and intermediate text between them are
//! offloaded, replaced by one assistant message holding the final answer's text, a note of what
//! was offloaded and the marker. The current turn is never touched, so nothing in flight is,
//! nor a turn holding what the history steps respect (the last completed turn by default).

use futures_util::future::LocalBoxFuture;

use super::{new_uuid, Ctx, Edit, Rung, Strategy, MIN_TURNS_TO_TRIM};
use crate::host::DynSummarizer;
use crate::message::{offload_marker, strip_markers, Block, Role, Synthetic};
use crate::structure::Protection;

/// The rung: each of a few turns over budget keeps only its user message and final answer.
pub(super) struct TurnTextOnly;

impl Rung for TurnTextOnly {
    fn strategy(&self) -> Strategy {
        Strategy::TurnTextOnly
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, _summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(std::future::ready((Strategy::TurnTextOnly, plan(ctx))))
    }
}

pub(super) fn plan(ctx: &Ctx<'_>) -> Vec<Edit> {
    let kind = Strategy::TurnTextOnly.event_type();
    let st = ctx.st;
    let complete: Vec<_> = st.previous_rounds().cloned().collect();
    if complete.len() >= MIN_TURNS_TO_TRIM {
        return Vec::new();
    }
    let mut edits = Vec::new();
    for r in complete {
        let span = r.start + 1..r.end;
        if span.is_empty() || !st.span_free(&span, Protection::HISTORY) || !st.is_whole(&span) {
            continue;
        }
        let msgs = &ctx.working[span.clone()];
        let tool_work = msgs.iter().any(|e| e.msg.has_calls() || e.msg.has_results());
        let already = msgs.len() == 1 && msgs[0].msg.synthetic.as_ref().is_some_and(|s| s.kind == kind);
        if !tool_work || already {
            continue;
        }
        let answer = msgs.iter().rev().find(|e| e.msg.is_final_assistant()).map(|e| {
            e.msg.blocks.iter().filter_map(|b| if let Block::Text(t) = b { Some(t.as_str()) } else { None }).collect::<Vec<_>>().join("\n")
        });
        let mut tools: Vec<&str> = Vec::new();
        for e in msgs {
            for b in &e.msg.blocks {
                if let Block::ToolCall { name, .. } = b {
                    tools.push(name.as_str());
                }
            }
        }
        let list = super::tool_list(tools);
        let uuid = new_uuid();
        let note = format!(
            "[The tool work of this turn ({} messages; tools: {}) was offloaded to keep the conversation within its window; call context_reload with the uuid below to see it.]\n{}",
            span.len(),
            if list.is_empty() { "none".to_string() } else { list.join(", ") },
            offload_marker(&uuid)
        );
        let text = match answer.filter(|a| !a.trim().is_empty()) {
            Some(a) => format!("{}\n{note}", strip_markers(&a)),
            None => note,
        };
        let msg = ctx.format.synthesize(Role::Assistant, text, Synthetic::new(kind, Some(&uuid)));
        edits.push(Edit { span, replacement: vec![msg], offload: Some(uuid), usage: (None, None), ms: None });
    }
    edits
}
