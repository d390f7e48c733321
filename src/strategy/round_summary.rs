//! Previous-round summary (LLM): each complete earlier round's work becomes one summary.
//!
//! The user's message of the round stays verbatim; the assistant's work that answered it (tool
//! exchanges, intermediate text, the final answer) is replaced by one assistant message holding
//! the summary and the marker of the offloaded originals. Rounds are summarized concurrently;
//! rounds below `minCompressionTokenThreshold` and rounds already reduced to one summary are
//! left alone, and so is any round holding a message the history steps respect: the most
//! recent completed round (the one the user's current question follows) and the latest answer
//! by default, a pinned message or tool. The current round is never touched. Unlike the
//! reference, a round whose tool runs were compressed earlier can still be summarized:
//! synthetic messages are not answers.

use futures_util::future::LocalBoxFuture;

use super::llm::{self, Job, Outcome};
use super::{new_uuid, Ctx, Edit, Rung, Strategy};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::{offload_marker, Role, Synthetic};
use crate::structure::Protection;

/// The rung: each complete earlier round's work becomes one summary; the user's message stays.
pub(super) struct PreviousRoundSummary;

impl Rung for PreviousRoundSummary {
    fn strategy(&self) -> Strategy {
        Strategy::PreviousRoundSummary
    }

    fn uses_llm(&self) -> bool {
        true
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(async move { (Strategy::PreviousRoundSummary, plan(ctx, summarizer).await) })
    }
}

pub(super) async fn plan<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
    let st = ctx.st;
    let kind = Strategy::PreviousRoundSummary.event_type();
    let mut jobs = Vec::new();
    let mut spans = Vec::new();
    for r in st.previous_rounds() {
        let span = r.start + 1..r.end;
        if span.is_empty() || !st.span_free(&span, Protection::HISTORY) {
            continue;
        }
        let only_summary = span.len() == 1 && ctx.working[span.start].msg.synthetic.as_ref().is_some_and(|s| s.kind == kind);
        if only_summary || ctx.tokens(span.clone()) < ctx.config.min_compression_token_threshold as u64 {
            continue;
        }
        let replaces_chars = ctx.working[span.clone()].iter().map(|e| e.msg.payload_chars() + 1).sum();
        jobs.push(Job {
            strategy: Strategy::PreviousRoundSummary,
            system: ctx.config.custom_prompt.previous_round_summary(),
            show: r.start..span.end,
            instruction: "Summarize what the assistant did and found to answer the user's request in this round.".into(),
            replaces_chars,
            target_chars: None,
        });
        spans.push(span);
    }
    let outcomes = llm::run(ctx, summarizer, &jobs).await;
    let mut edits = Vec::new();
    for (span, outcome) in spans.into_iter().zip(outcomes) {
        match outcome {
            Outcome::Done { text, input_tokens, output_tokens, ms } => {
                let uuid = new_uuid();
                let msg =
                    ctx.format.synthesize(Role::Assistant, format!("{text}\n{}", offload_marker(&uuid)), Synthetic::new(kind, Some(&uuid)));
                edits.push(Edit { span, replacement: vec![msg], offload: Some(uuid), usage: (input_tokens, output_tokens), ms: Some(ms) });
            }
            Outcome::Failed { error, ms } => {
                llm::fail(ctx, kind, &span, error, ms);
                edits.push(llm::collapse(ctx, span, kind, Role::Assistant, "Summary unavailable; this round's work"));
            }
        }
    }
    edits
}
