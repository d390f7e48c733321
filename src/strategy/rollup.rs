//! Recent-focus-window rollup (LLM; message-count pressure only).
//!
//! The focus window is the current round plus the most recent complete rounds, widened until it
//! holds at least `historyRollupKeepRecentRounds` rounds and `historyRollupKeepRecentTokens`
//! tokens. The complete rounds before it roll into one rolling summary; a rollup already there
//! is absorbed and the new one's generation is one higher. The step runs when the list reaches
//! `msgThreshold` messages, and its purpose is to end below it: the recent-token allowance
//! yields (a round it would keep stays only if the list still ends below `msgThreshold`), while
//! the current round, unread work, the last completed round and the `historyRollupKeepRecentRounds`
//! rounds always stay. Unlike the reference's PR, the older rollup's offload is kept: the new
//! rollup's offload holds the older rollup message, whose marker still reloads its own
//! originals.

use futures_util::future::LocalBoxFuture;

use super::llm::{self, Job, Outcome};
use super::{new_uuid, Ctx, Edit, Pressure, Rung, Strategy};
use crate::host::{DynSummarizer, Summarizer};
use crate::message::{offload_marker, Role, Synthetic};
use crate::structure::Protection;

/// The rung: complete rounds outside the recent focus window roll into one rolling summary.
pub(super) struct HistoryRollup;

impl Rung for HistoryRollup {
    fn strategy(&self) -> Strategy {
        Strategy::HistoryRollup
    }

    fn uses_llm(&self) -> bool {
        true
    }

    fn relieves(&self) -> Pressure {
        Pressure::Count
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(async move { (Strategy::HistoryRollup, plan(ctx, summarizer).await) })
    }
}

pub(super) async fn plan<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S) -> Vec<Edit> {
    let kind = Strategy::HistoryRollup.event_type();
    let st = ctx.st;
    let rounds: Vec<_> = st.previous_rounds().cloned().collect();
    let threshold = ctx.config.msg_threshold as usize;
    let mut window_start = st.current_start;
    let mut tokens = ctx.tokens(st.current_start..st.len);
    for (kept, r) in rounds.iter().rev().enumerate() {
        let rounds_due = (kept as u64) < ctx.config.history_rollup_keep_recent_rounds as u64;
        if !rounds_due && tokens >= ctx.config.history_rollup_keep_recent_tokens {
            break;
        }
        if !rounds_due {
            // Kept only for the token allowance: not when the list would still reach
            // msgThreshold with this round outside the rollup.
            let first = rounds.first().map_or(r.start, |f| f.start);
            let (span, _) = ctx.rolling_span(first, r.start, kind, Protection::HISTORY);
            if st.len - span.len() + 1 >= threshold {
                break;
            }
        }
        tokens += ctx.tokens(r.clone());
        window_start = r.start;
    }
    // What the history steps respect (the last completed round, the latest answer) stays in the
    // window; a system or pinned message inside the span moves its start after it.
    if let Some(p) = st.first_protected(0..window_start, Protection::HISTORY_END) {
        window_start = rounds.iter().find(|r| r.contains(&p)).map_or(st.unit(p).span.start, |r| r.start);
    }
    let Some(first) = rounds.iter().find(|r| r.end <= window_start) else {
        return Vec::new();
    };
    let (span, generation) = ctx.rolling_span(first.start, first.start.max(window_start), kind, Protection::HISTORY);
    if span.len() < 4 || !st.is_whole(&span) || !st.span_free(&span, Protection::HISTORY) {
        return Vec::new();
    }
    let job = Job {
        strategy: Strategy::HistoryRollup,
        system: ctx.config.custom_prompt.history_rollup(),
        show: span.clone(),
        instruction: "Write the updated long-term summary of this part of the conversation.".into(),
        replaces_chars: ctx.working[span.clone()].iter().map(|e| e.msg.payload_chars() + 1).sum(),
        target_chars: None,
    };
    let outcome = llm::run(ctx, summarizer, std::slice::from_ref(&job)).await.pop();
    match outcome {
        Some(Outcome::Done { text, input_tokens, output_tokens, ms }) => {
            let uuid = new_uuid();
            let mut mark = Synthetic::new(kind, Some(&uuid));
            mark.generation = Some(generation);
            let msg = ctx.format.synthesize(
                Role::User,
                format!("[Summary of the earlier conversation]\n{text}\n{}", offload_marker(&uuid)),
                mark,
            );
            vec![Edit { span, replacement: vec![msg], offload: Some(uuid), usage: (input_tokens, output_tokens), ms: Some(ms) }]
        }
        Some(Outcome::Failed { error, ms }) => {
            llm::fail(ctx, kind, &span, error, ms);
            Vec::new()
        }
        None => Vec::new(),
    }
}
