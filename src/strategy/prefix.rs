//! Prefix summary with a reserved tail (LLM), the AgentScope Python design.
//!
//! The most recent `reserveRatio` of the window stays verbatim; everything before it (after the
//! system messages) becomes one structured summary of five fields, rendered by
//! `summaryTemplate`. The summary of the previous pass is part of the span, so each summary
//! rolls the last one forward. Compared with the ladder's per-round summaries this keeps one
//! compact state document instead of many, at the price of one large request per pass.
//!
//! The span and the cut before the tail are those of `prefix_span.rs`, which fact
//! retrieval shares.
//!
//! A preparation ([`crate::summarize::prepared`]) records its cut; the next pass reuses it when it frees
//! enough, so its request is the prepared one and no host call is made.

use futures_util::future::LocalBoxFuture;

use super::llm::{self, Outcome};
use super::prefix_span::{chars, place, request, select, target_chars};
use super::structured::{self, Parsed};
use super::{new_uuid, Ctx, Edit, Rung, Strategy};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::{offload_marker, Role, Synthetic};
use crate::options::template;

const SYSTEM: &str = "You compress the earlier part of an agent's conversation into a structured state document. \
The document replaces those messages: the agent will continue the task from it and the recent messages alone. \
Keep the user's instructions word for word, the files and symbols touched and what changed, every error and its fix, \
the decisions made and what is still open, and every identifier, path, command and number the remaining work may need; \
drop chatter and repetition. Never invent anything that is not in the conversation.";

/// The rung: everything before the reserved recent tail becomes one structured summary, rolled forward.
pub(super) struct PrefixSummary;

impl Rung for PrefixSummary {
    fn strategy(&self) -> Strategy {
        Strategy::PrefixSummary
    }

    fn uses_llm(&self) -> bool {
        true
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(async move { (Strategy::PrefixSummary, plan(ctx, summarizer).await) })
    }
}

pub(super) async fn plan<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
    let strategy = Strategy::PrefixSummary;
    let kind = strategy.event_type();
    // The target is known once the span is; the hint check needs an estimate first.
    let guess = target_chars(ctx, chars(ctx, 0..ctx.working.len()), 4) as u64 / 4;
    let Some(sel) = select(ctx, strategy, ctx.config.keep_task, guess) else {
        return Vec::new();
    };
    let replaces = chars(ctx, sel.span.clone());
    let mut req = request(ctx, &sel, Strategy::PrefixSummary, SYSTEM, structured::instruction(), target_chars(ctx, replaces, 4));
    req.schema = Some(structured::schema());
    let outcome = llm::run_requests(ctx, summarizer, vec![(req, replaces)]).await.pop();
    match outcome {
        Some(Outcome::Done { text, input_tokens, output_tokens, ms }) => {
            let body = match structured::parse(&text) {
                Parsed::Fields(f) => {
                    template::render(ctx.config.summary_template.as_deref().unwrap_or(template::DEFAULT_TEMPLATE), &f)
                }
                Parsed::Text(t) => format!("<system-info>Summary of the earlier conversation (its messages were offloaded; reload them with the marker below when details are needed).\n{t}\n</system-info>"),
            };
            let uuid = new_uuid();
            let mut mark = Synthetic::new(kind, Some(&uuid));
            mark.generation = Some(sel.generation);
            let note = ctx.format.synthesize(Role::User, format!("{body}\n{}", offload_marker(&uuid)), mark);
            let replacement = place(ctx, &sel, note);
            vec![Edit { span: sel.span, replacement, offload: Some(uuid), usage: (input_tokens, output_tokens), ms: Some(ms) }]
        }
        Some(Outcome::Failed { error, ms }) => {
            // The ladder goes on (the emergency step still guarantees the budget); the previous
            // summary, if any, stays.
            llm::fail(ctx, kind, &sel.span, error, ms);
            Vec::new()
        }
        None => Vec::new(),
    }
}
