//! Turn trimming (chatgpt-on-wechat design): the oldest half of the complete turns becomes one
//! summary at the start of the kept context.
//!
//! A turn is a round: a real user message and everything up to the next one. The step runs
//! when the conversation has more than `maxContextTurns` turns, or when it is over the token
//! target and has at least five complete turns (with fewer, [`super::text_only`] keeps each
//! turn's text instead, as the design prescribes). The oldest half of the complete turns, plus
//! the summary an earlier trim left at their start, is offloaded and replaced by one summary
//! (generation one higher), so trims roll forward. Without a summarize function, or when it
//! fails, the summary is a notice listing the user requests of the trimmed turns, so the step
//! still works with no model at all. The current turn is never touched.
//!
//! A preparation records the first turn it kept; the next pass trims to it when that still
//! relieves the pressure, so its request is the prepared one.

use futures_util::future::LocalBoxFuture;

use super::llm::{self, Job, Outcome};
use super::{new_uuid, Ctx, Edit, Pressure, Rung, Strategy, MIN_TURNS_TO_TRIM};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::{head_chars, offload_marker, strip_markers, Role, Synthetic};
use crate::structure::Protection;

const SYSTEM: &str = "You summarize the oldest turns of a conversation between a user and an AI agent; the summary replaces them. \
Keep what the user asked and decided, the answers and facts the rest of the conversation may rely on, and open questions, \
with identifiers, paths and numbers verbatim. If they begin with an earlier summary, fold it in.";

/// The rung: the oldest half of the complete turns becomes one summary.
pub(super) struct TurnTrim;

impl Rung for TurnTrim {
    fn strategy(&self) -> Strategy {
        Strategy::TurnTrim
    }

    fn relieves(&self) -> Pressure {
        Pressure::Turns
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(async move { (Strategy::TurnTrim, plan(ctx, summarizer).await) })
    }
}

pub(super) async fn plan<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
    let strategy = Strategy::TurnTrim;
    let kind = strategy.event_type();
    let st = ctx.st;
    // Complete turns, up to the first that holds what ends a span of history (the last
    // completed turn and the latest answer, by default).
    let complete: Vec<_> =
        st.previous_rounds().take_while(|r| st.first_protected((*r).clone(), Protection::HISTORY_END).is_none()).cloned().collect();
    let turns = ctx.config.counted_turns(st.rounds.len());
    let max = ctx.config.max_context_turns as usize;
    let turn_pressure = turns > max;
    // The split with the text-only step counts every complete turn, trimmable or not.
    let token_pressure = ctx.total >= ctx.target && st.previous_rounds().count() >= MIN_TURNS_TO_TRIM;
    // The task's turn (`keepTask`) goes with the first trimmed turn but is not one: its user
    // message stays, so trimming it alone would leave as many turns as before.
    let skip = usize::from(ctx.config.keep_task && complete.first().is_some_and(|r| Some(r.start) == st.first_user));
    let trimmable = complete.len() - skip.min(complete.len());
    if trimmable == 0 || !(turn_pressure || token_pressure) {
        return Vec::new();
    }
    // The first turn to keep: half of the complete turns are trimmed, or as many as the
    // preparation trimmed when that still relieves the pressure.
    let previous = st.previous_rounds().count() - skip;
    let fresh = (previous / 2).max(turns.saturating_sub(max)).clamp(1, trimmable);
    let over_tokens = ctx.total >= ctx.target;
    // A prepared cut is taken when it gets under the trigger (later steps go deeper).
    let relieves = |k: usize| {
        let freed = ctx.tokens(complete[0].start..complete[skip + k - 1].end);
        (!turn_pressure || turns - k <= max) && (!over_tokens || freed >= ctx.must_excess() + 100)
    };
    let hinted = ctx
        .summaries
        .hint(strategy)
        .and_then(|h| complete.iter().position(|r| std::rc::Rc::ptr_eq(&ctx.working[r.start].msg, &h)))
        .and_then(|p| p.checked_sub(skip))
        .filter(|&k| k >= 1 && k <= fresh && relieves(k));
    let k = hinted.unwrap_or(fresh);
    let end = complete[skip + k - 1].end;
    let (span, generation) = ctx.rolling_span(complete[0].start, end, kind, Protection::HISTORY);
    if span.is_empty() || !st.is_whole(&span) {
        return Vec::new();
    }
    if ctx.summaries.preparing() && end < ctx.working.len() {
        ctx.summaries.set_hint(strategy, ctx.working[end].msg.clone());
    }
    let trimmed = complete[..skip + k].iter().filter(|r| r.start >= span.start).count();
    let replaces: usize = ctx.working[span.clone()].iter().map(|e| e.msg.payload_chars() + 1).sum();
    let uuid = new_uuid();
    let mut mark = Synthetic::new(kind, Some(&uuid));
    mark.generation = Some(generation);
    let mut usage = (None, None);
    let mut ms = None;
    let mut summary = None;
    if summarizer.available() {
        let job = Job {
            strategy: Strategy::TurnTrim,
            system: SYSTEM.into(),
            show: span.clone(),
            instruction: format!("Summarize these {trimmed} turns for the rest of the conversation."),
            replaces_chars: replaces,
            target_chars: Some((replaces / 5).clamp(400, 8000).min(replaces.saturating_sub(1))),
        };
        match llm::run(ctx, summarizer, std::slice::from_ref(&job)).await.pop() {
            Some(Outcome::Done { text, input_tokens, output_tokens, ms: t }) => {
                usage = (input_tokens, output_tokens);
                ms = Some(t);
                summary = Some(text);
            }
            Some(Outcome::Failed { error, ms: t }) => llm::fail(ctx, kind, &span, error, t),
            None => {}
        }
    }
    let text = match summary {
        Some(s) => format!(
            "[Summary of {trimmed} earlier turns, compacted to keep the conversation within its window]\n{s}\n{}",
            offload_marker(&uuid)
        ),
        None => notice(ctx, &span, trimmed, &uuid),
    };
    let msg = ctx.format.synthesize(Role::User, text, mark);
    vec![Edit { span, replacement: vec![msg], offload: Some(uuid), usage, ms }]
}

/// The summary written without a model: how many turns, and the user's requests in them.
fn notice(ctx: &Ctx<'_>, span: &std::ops::Range<usize>, trimmed: usize, uuid: &str) -> String {
    let mut text = format!("[{trimmed} earlier turns were compacted to keep the conversation within its window.");
    let requests: Vec<String> = ctx.working[span.clone()]
        .iter()
        .filter(|e| e.msg.is_real_user())
        .map(|e| {
            let t = e.msg.payload_text();
            strip_markers(head_chars(t.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim(), 120))
        })
        .collect();
    if !requests.is_empty() {
        text.push_str(" The user asked:");
        for (k, r) in requests.iter().take(10).enumerate() {
            text.push_str(&format!(" ({}) {r}", k + 1));
        }
        if requests.len() > 10 {
            text.push_str(&format!(" and {} more", requests.len() - 10));
        }
        text.push('.');
    }
    text.push_str(" Call context_reload with the uuid below to see them.]\n");
    text.push_str(&offload_marker(uuid));
    text
}
