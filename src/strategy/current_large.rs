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

use super::in_place;
use super::llm::Job;
use super::{Ctx, Edit, Rung, Strategy};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::{Message, Role};

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
    let threshold = ctx.config.large_payload_threshold as usize;
    let ratio = ctx.config.current_round_compression_ratio;
    let picks = |m: &Message| (matches!(m.role, Role::Assistant | Role::Tool) || m.has_results()) && m.payload_chars() > threshold;
    let job = |i: usize| {
        let chars = ctx.working[i].msg.payload_chars();
        Job {
            strategy: Strategy::CurrentRoundLargeMessage,
            system: ctx.config.custom_prompt.current_round_large_message(),
            show: i..i + 1,
            instruction: "Shorten this message; the agent is still working with it.".into(),
            replaces_chars: chars,
            target_chars: Some(((chars as f64 * ratio) as usize).max(200).min(threshold)),
        }
    };
    in_place::summarize(ctx, summarizer, Strategy::CurrentRoundLargeMessage.event_type(), picks, job).await
}
