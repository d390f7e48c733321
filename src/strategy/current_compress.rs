//! Current-round compression (LLM): answered tool results of the current round shrink in
//! place.
//!
//! The reference flattened the whole current round into one assistant message, results the
//! model had not read yet included, and its agents lost their tool state. Here the structure
//! stays: every call keeps its call and every result its id; only the body of a result the
//! model has already answered becomes a digest of about `currentRoundCompressionRatio` of its
//! length, followed by the reload marker. Oldest first, only as many as the budget needs, and
//! never a result that is still in flight.

use futures_util::future::LocalBoxFuture;

use super::in_place;
use super::llm::Job;
use super::{Ctx, Edit, Rung, Strategy};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::Message;

/// Results shorter than this are not worth a summarize call.
const MIN_RESULT_CHARS: usize = 600;

/// The rung: results of already answered exchanges of the current round shrink in place.
pub(super) struct CurrentRoundCompress;

impl Rung for CurrentRoundCompress {
    fn strategy(&self) -> Strategy {
        Strategy::CurrentRoundCompress
    }

    fn uses_llm(&self) -> bool {
        true
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(async move { (Strategy::CurrentRoundCompress, plan(ctx, summarizer).await) })
    }
}

pub(super) async fn plan<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
    let ratio = ctx.config.current_round_compression_ratio;
    let picks = |m: &Message| m.has_results() && m.payload_chars() >= MIN_RESULT_CHARS;
    let job = |i: usize| {
        let unit = ctx.st.unit(i).span.clone();
        let chars = ctx.working[i].msg.payload_chars();
        let ids: Vec<&str> = ctx.working[i].msg.result_ids().collect();
        Job {
            strategy: Strategy::CurrentRoundCompress,
            system: ctx.config.custom_prompt.current_round_compress(),
            // The exchange's call is shown so the digest can name the tool and arguments.
            show: unit.start..i + 1,
            instruction: format!("Write the digest of the result of tool call {}.", ids.join(", ")),
            replaces_chars: chars,
            target_chars: Some(((chars as f64 * ratio) as usize).max(100)),
        }
    };
    in_place::summarize(ctx, summarizer, Strategy::CurrentRoundCompress.event_type(), picks, job).await
}
