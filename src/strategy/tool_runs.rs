//! Historical tool-run compression (LLM): long runs of tool exchanges become one summary each.
//!
//! A run is a sequence of whole, complete tool exchanges that no history protection covers
//! (nor the `lastKeep` tail) with more than `minConsecutiveToolMessages` messages. Runs worth less than `minCompressionTokenThreshold` tokens are skipped and the
//! search goes on past them (the reference once reported a skip as success and starved the
//! ladder). Because runs are built from whole exchanges, no cut can orphan a call or a result.

use std::ops::Range;

use futures_util::future::LocalBoxFuture;

use super::llm::{self, Job, Outcome};
use super::{new_uuid, Ctx, Edit, Rung, Strategy};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::{offload_marker, Role, Synthetic};
use crate::structure::Protection;

/// The rung: long runs of historical tool exchanges become one summary each.
pub(super) struct ToolRunCompress;

impl Rung for ToolRunCompress {
    fn strategy(&self) -> Strategy {
        Strategy::ToolRunCompress
    }

    fn uses_llm(&self) -> bool {
        true
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(async move { (Strategy::ToolRunCompress, plan(ctx, summarizer).await) })
    }
}

pub(super) async fn plan<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
    let kind = Strategy::ToolRunCompress.event_type();
    let runs = find_runs(ctx);
    let jobs: Vec<Job> = runs
        .iter()
        .map(|span| Job {
            strategy: Strategy::ToolRunCompress,
            system: ctx.config.custom_prompt.previous_round_tool_compress(),
            show: span.clone(),
            instruction: "Compress these tool calls and their results.".into(),
            replaces_chars: ctx.working[span.clone()].iter().map(|e| e.msg.payload_chars() + 1).sum(),
            target_chars: None,
        })
        .collect();
    let outcomes = llm::run(ctx, summarizer, &jobs).await;
    let mut edits = Vec::new();
    for (span, outcome) in runs.into_iter().zip(outcomes) {
        match outcome {
            Outcome::Done { text, input_tokens, output_tokens, ms } => {
                let uuid = new_uuid();
                let msg = ctx.format.synthesize(
                    Role::Assistant,
                    format!("[Earlier tool calls, summarized]\n{text}\n{}", offload_marker(&uuid)),
                    Synthetic::new(kind, Some(&uuid)),
                );
                edits.push(Edit { span, replacement: vec![msg], offload: Some(uuid), usage: (input_tokens, output_tokens), ms: Some(ms) });
            }
            Outcome::Failed { error, ms } => {
                llm::fail(ctx, kind, &span, error, ms);
                edits.push(llm::collapse(ctx, span, kind, Role::Assistant, "Earlier tool calls"));
            }
        }
    }
    edits
}

/// Runs of whole complete exchanges no protection covers, worth compressing.
pub(super) fn find_runs(ctx: &Ctx<'_>) -> Vec<Range<usize>> {
    let st = ctx.st;
    let min_len = ctx.config.min_consecutive_tool_messages as usize;
    let mut runs = Vec::new();
    let mut run: Option<Range<usize>> = None;
    let mut flush = |run: &mut Option<Range<usize>>| {
        if let Some(r) = run.take() {
            if r.len() > min_len && ctx.tokens(r.clone()) >= ctx.config.min_compression_token_threshold as u64 {
                runs.push(r);
            }
        }
    };
    for u in &st.units {
        if u.exchange && u.complete && st.span_free(&u.span, Protection::HISTORY_AND_TAIL) {
            run = Some(match run.take() {
                Some(r) => r.start..u.span.end,
                None => u.span.clone(),
            });
        } else {
            flush(&mut run);
        }
    }
    flush(&mut run);
    runs
}
