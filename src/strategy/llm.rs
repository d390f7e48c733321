//! Calling the host's summarizer: requests, bounded concurrency, checks and fallbacks.
//!
//! Every LLM strategy describes its work as [`Job`]s; this module turns them into
//! [`SummarizeRequest`]s (the span as a tagged transcript whose delimiters content cannot
//! forge, the instruction, then the plan hint last), runs at most `maxConcurrentSummaries` at a
//! time, and checks each answer: empty text, or text no shorter than what it replaces, counts
//! as a failure. A failure never aborts the pass: the strategy falls back to a non-LLM offload
//! of the same span and the engine records a `SUMMARIZE_FAILED` event. What the host threw is
//! kept ([`Failed::cause`]) so the engine can hand it back to the host with the pass's result.

use std::ops::Range;

use futures_util::stream::{self, StreamExt};

use super::{new_uuid, Ctx, Edit};
use crate::error::HostError;
use crate::host::{SummarizeRequest, Summarizer};
use crate::message::{head_chars, offload_marker, strip_markers, transcript, Message, Role, Synthetic};

/// One summary a strategy needs.
pub(crate) struct Job {
    /// The request kind the host sees (`tool_calls`, `round`, ...).
    pub kind: &'static str,
    /// Instructions for the summarizer.
    pub system: String,
    /// Messages shown to the summarizer (indices of the working list).
    pub show: Range<usize>,
    /// What the summarizer is asked to do with them.
    pub instruction: String,
    /// Characters the summary replaces; the summary must be shorter.
    pub replaces_chars: usize,
    /// The length asked for, if any.
    pub target_chars: Option<usize>,
}

/// The answer to a [`Job`].
pub(crate) enum Outcome {
    Done { text: String, input_tokens: Option<u64>, output_tokens: Option<u64>, ms: f64 },
    Failed { error: Failed, ms: f64 },
}

/// Why a summarize call failed: a message for the event, and the host's own error when the
/// host threw or rejected (an empty or too long summary has none).
#[derive(Debug)]
pub(crate) struct Failed {
    pub message: String,
    pub cause: Option<HostError>,
}

impl Failed {
    fn unusable(message: String) -> Failed {
        Failed { message, cause: None }
    }
}

/// A summarize call that failed, recorded as an event when the pass ends.
#[derive(Debug)]
pub(crate) struct Failure {
    pub event_type: &'static str,
    pub index: usize,
    pub message_count: usize,
    pub error: String,
    /// What the host threw, handed back to it with the pass's result.
    pub cause: Option<HostError>,
    pub ms: f64,
}

/// The request for a job: the span as a tagged transcript, the instruction, the length asked
/// for and the plan hint in the prompt; the span as a valid request body in `messages`
/// ([`crate::format::body`]).
pub(crate) fn request(ctx: &Ctx<'_>, job: &Job) -> SummarizeRequest {
    let msgs: Vec<&Message> = ctx.working[job.show.clone()].iter().map(|e| e.msg.as_ref()).collect();
    let mut prompt = format!("<conversation>\n{}</conversation>\n\n{}", transcript(&msgs), job.instruction);
    if let Some(t) = job.target_chars {
        prompt.push_str(&format!("\nWrite at most about {t} characters."));
    }
    if let Some(plan) = ctx.plan {
        prompt.push_str("\n\n");
        prompt.push_str(&plan.hint());
    }
    SummarizeRequest {
        kind: job.kind.into(),
        system: job.system.clone(),
        prompt,
        messages: crate::format::body::request_body(ctx.format, &msgs),
        target_chars: job.target_chars,
        timeout_ms: Some(ctx.config.summarize_timeout_ms),
        schema: None,
    }
}

/// Runs the jobs, at most `maxConcurrentSummaries` at once, answers in job order.
pub(crate) async fn run<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S, jobs: &[Job]) -> Vec<Outcome> {
    let requests: Vec<(SummarizeRequest, usize)> = jobs.iter().map(|j| (request(ctx, j), j.replaces_chars)).collect();
    run_requests(ctx, summarizer, requests).await
}

/// Runs prepared requests (each with the characters its summary replaces), at most
/// `maxConcurrentSummaries` at once, answers in order. A request a preparation already answered
/// is answered from there without calling the host ([`crate::prepared`]); during a preparation
/// the answers are kept for the pass.
pub(crate) async fn run_requests<S: Summarizer + ?Sized>(
    ctx: &Ctx<'_>,
    summarizer: &S,
    requests: Vec<(SummarizeRequest, usize)>,
) -> Vec<Outcome> {
    let limit = ctx.config.max_concurrent_summaries.max(1) as usize;
    let summaries = ctx.summaries;
    stream::iter(requests.iter())
        .map(|(req, replaces)| async move {
            if let Some(c) = summaries.lookup(req) {
                return check(c.text, *replaces, c.input_tokens, c.output_tokens, 0.0);
            }
            summaries.count_call();
            let start = ctx.clock.now_ms();
            let res = summarizer.summarize(req).await;
            let ms = ctx.clock.now_ms() - start;
            match res {
                Err(e) => Outcome::Failed { error: Failed { message: e.message().to_string(), cause: Some(e) }, ms },
                Ok(s) => {
                    let out = check(s.text, *replaces, s.input_tokens, s.output_tokens, ms);
                    if let Outcome::Done { text, input_tokens, output_tokens, .. } = &out {
                        summaries.record(req, text, *input_tokens, *output_tokens);
                    }
                    out
                }
            }
        })
        .buffered(limit)
        .collect()
        .await
}

/// Checks an answer: not empty, and shorter than what it replaces.
fn check(text: String, replaces: usize, input_tokens: Option<u64>, output_tokens: Option<u64>, ms: f64) -> Outcome {
    let text = strip_markers(text.trim());
    let n = text.chars().count();
    if n == 0 {
        Outcome::Failed { error: Failed::unusable("the summarize function returned an empty summary".into()), ms }
    } else if n >= replaces {
        Outcome::Failed {
            error: Failed::unusable(format!("the summary ({n} characters) is not shorter than what it replaces ({replaces} characters)")),
            ms,
        }
    } else {
        Outcome::Done { text, input_tokens, output_tokens, ms }
    }
}

/// The non-LLM fallback for a span of several messages: one notice with a preview of the first
/// text and the offload marker.
pub(crate) fn collapse(ctx: &Ctx<'_>, span: Range<usize>, kind: &str, role: Role, what: &str) -> Edit {
    let uuid = new_uuid();
    let first = ctx.working[span.clone()].iter().map(|e| e.msg.payload_text()).find(|t| !t.trim().is_empty()).unwrap_or_default();
    let preview = head_chars(first.trim(), ctx.config.offload_single_preview as usize);
    let text = format!(
        "[{what}: {} message{} offloaded. It began: \"{}{}\"]\n{}",
        span.len(),
        if span.len() == 1 { "" } else { "s" },
        strip_markers(preview),
        if preview.len() < first.trim().len() { "..." } else { "" },
        offload_marker(&uuid)
    );
    let msg = ctx.format.synthesize(role, text, Synthetic::new(kind, Some(&uuid)));
    Edit { span, replacement: vec![msg], offload: Some(uuid), usage: (None, None), ms: None }
}

/// Records a failure for the engine to report.
pub(crate) fn fail(ctx: &Ctx<'_>, event_type: &'static str, span: &Range<usize>, error: Failed, ms: f64) {
    ctx.failures.borrow_mut().push(Failure {
        event_type,
        index: span.start,
        message_count: span.len(),
        error: error.message,
        cause: error.cause,
        ms,
    });
}
