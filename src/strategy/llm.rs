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

use super::{new_uuid, Ctx, Edit, Strategy};
use crate::error::HostError;
use crate::host::{SummarizeRequest, Summarizer};
use crate::message::{head_chars, offload_marker, strip_markers, transcript, Block, Message, Role, Synthetic};

/// One summary a strategy needs.
pub(crate) struct Job {
    /// The strategy asking; its requests' `kind` ([`Strategy::summarize_kind`]) tells the host.
    pub strategy: Strategy,
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

impl Job {
    /// Whether the summarizer reads the messages whole: a step that shrinks one message of the
    /// current turn in place must see all of it; a summary of history reads long tool results
    /// as head and tail.
    fn reads_whole(&self) -> bool {
        matches!(self.strategy, Strategy::CurrentRoundLargeMessage | Strategy::CurrentRoundCompress)
    }
}

/// The notice that stands for what a capped result leaves out.
const CAP_NOTICE: &str = "characters of this result left out here; its whole text is one reload away";

/// Words that mark a line of a long result worth keeping when its middle is left out.
const NOTABLE: [&str; 9] = ["error", "exception", "fail", "panic", "traceback", "fatal", "warning", "denied", "not found"];

/// `content` cut to about `limit` characters for a summarizer: its first half and last
/// quarter, and between them up to a quarter of the lines of the middle that report an error,
/// a failure or a warning (what an agent needs most from a log it is no longer reading).
fn cap_result(content: &str, limit: usize) -> String {
    let head = head_chars(content, limit / 2);
    let tail = crate::message::tail_chars(content, limit / 4);
    let middle = &content[head.len()..content.len() - tail.len()];
    let mut kept = String::new();
    for line in middle.lines() {
        let lower = line.to_ascii_lowercase();
        if !NOTABLE.iter().any(|w| lower.contains(w)) {
            continue;
        }
        let line = head_chars(line.trim(), 200);
        if kept.len() + line.len() + 1 > limit / 4 {
            break;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    let left = middle.chars().count() - kept.chars().count();
    format!("{head}\n[... {left} {CAP_NOTICE} ...]\n{kept}{tail}")
}

/// `m` as a summary of history reads it: each tool result over `summaryResultLimit` characters
/// is cut to about that many ([`cap_result`]). The summarizer needs what a result showed, not
/// all of it, and the identifier index names what the middle held; a span of long results cost
/// the summarizer several times what the summary it writes from them is worth.
pub(crate) fn capped<'m>(ctx: &Ctx<'_>, m: &'m Message) -> std::borrow::Cow<'m, Message> {
    let limit = ctx.config.summary_result_limit as usize;
    let long = |c: &str| limit > 0 && crate::message::chars_over(c, limit + CAP_NOTICE.len() + 40);
    if !m.blocks.iter().any(|b| matches!(b, Block::ToolResult { content, .. } if long(content))) {
        return std::borrow::Cow::Borrowed(m);
    }
    let blocks = m
        .blocks
        .iter()
        .map(|b| match b {
            Block::ToolResult { call_id, content, is_error } if long(content) => {
                Block::ToolResult { call_id: call_id.clone(), content: cap_result(content, limit), is_error: *is_error }
            }
            other => other.clone(),
        })
        .collect();
    let mark = m.synthetic.clone().unwrap_or_else(|| Synthetic::new("SUMMARIZE_REQUEST", None));
    std::borrow::Cow::Owned(ctx.format.rebuild(m, blocks, mark))
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
/// ([`crate::summarize::body`]). A summary of history reads each long tool result as its head and
/// tail ([`capped`]).
pub(crate) fn request(ctx: &Ctx<'_>, job: &Job) -> SummarizeRequest {
    let shown: Vec<std::borrow::Cow<'_, Message>> = ctx.working[job.show.clone()]
        .iter()
        .map(|e| if job.reads_whole() { std::borrow::Cow::Borrowed(e.msg.as_ref()) } else { capped(ctx, &e.msg) })
        .collect();
    let msgs: Vec<&Message> = shown.iter().map(|m| m.as_ref()).collect();
    let ask = ask(ctx, job);
    let prompt = format!("<conversation>\n{}</conversation>\n\n{ask}", transcript(&msgs));
    let mut req = SummarizeRequest {
        kind: job.strategy.summarize_kind().unwrap_or_default().into(),
        system: job.system.clone(),
        prompt,
        messages: crate::summarize::body::request_body(ctx.format, &msgs),
        target_chars: job.target_chars,
        timeout_ms: Some(ctx.config.summarize_timeout_ms),
        schema: None,
        from_cache: false,
    };
    share(ctx, &mut req, job.show.clone(), &ask);
    req
}

/// What a job asks after the span: its instruction, the length asked for, the plan hint.
pub(crate) fn ask(ctx: &Ctx<'_>, job: &Job) -> String {
    let mut ask = job.instruction.clone();
    if let Some(t) = job.target_chars {
        ask.push_str(&format!("\nWrite at most about {t} characters."));
    }
    if let Some(plan) = ctx.plan {
        ask.push_str("\n\n");
        ask.push_str(&plan.hint());
    }
    ask
}

/// With `summarizeFromCache`, makes `req`'s messages the agent's own request, byte for byte
/// (the working list as the pass found it: what the agent last sent, and what came since),
/// followed by one user message that asks for the summary of the messages `span` of the
/// working list stands for, naming them by position and opening words, with the summarizer's
/// instructions and `ask`. A host that sends it to the agent's model with the agent's system
/// prompt and tools has the provider read all but the newest messages from its prompt cache,
/// at a tenth of the price, instead of reading the span afresh. In a format whose turns
/// alternate, the instruction joins a last message of the user's side. When the list as it is
/// cannot end a request (calls still waiting for their results), the request stays as it was.
pub(crate) fn share(ctx: &Ctx<'_>, req: &mut SummarizeRequest, span: Range<usize>, ask: &str) {
    if !ctx.config.summarize_from_cache || span.is_empty() || ctx.snapshot.is_empty() {
        return;
    }
    let (Some(first), Some(last)) = (ctx.origins.get(span.start), ctx.origins.get(span.end - 1)) else { return };
    let (from, to) = (first.start, last.end);
    if from >= to || to > ctx.snapshot.len() {
        return;
    }
    let opening = |i: usize| {
        let m = &ctx.snapshot[i].msg;
        let text = m.payload_text();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let text =
            if text.is_empty() { crate::message::transcript(&[m.as_ref()]).split_whitespace().collect::<Vec<_>>().join(" ") } else { text };
        strip_markers(head_chars(&text, 60))
    };
    let which = if to - from == 1 {
        format!("message {} of the conversation above (counting its messages from 1), which begins: \"{}\"", from + 1, opening(from))
    } else {
        format!(
            "messages {} to {} of the conversation above (counting its messages from 1): from the one that begins \"{}\" to the one that begins \"{}\"",
            from + 1,
            to,
            opening(from),
            opening(to - 1)
        )
    };
    let text = format!(
        "Stop the task for a moment: this turn asks for a summary, not the next step, and calls no tool.\n\n{}\n\nThe part to summarize: {which}. The summary replaces exactly that part; what comes before and after it stays as it is.\n{ask}",
        req.system
    );
    let note = ctx.format.synthesize(Role::User, text, Synthetic::new("SUMMARIZE_REQUEST", None));
    let mut body: Vec<Message> = ctx.snapshot.iter().map(|e| (*e.msg).clone()).collect();
    let joins = ctx.format.needs_alternation() && body.last().is_some_and(|m| ctx.format.turn(m.role) == crate::format::Turn::User);
    if joins {
        let last = body.pop().expect("a last message");
        body.push(ctx.format.merge(&last, &note, false));
    } else {
        body.push(note);
    }
    if !ctx.format.validate_request(&body).is_empty() {
        return;
    }
    req.messages = body.into_iter().map(|m| m.wire.into_value()).collect();
    req.from_cache = true;
}

/// Runs the jobs, at most `maxConcurrentSummaries` at once, answers in job order.
pub(crate) async fn run<S: Summarizer + ?Sized>(ctx: &Ctx<'_>, summarizer: &S, jobs: &[Job]) -> Vec<Outcome> {
    let requests: Vec<(SummarizeRequest, usize)> = jobs.iter().map(|j| (request(ctx, j), j.replaces_chars)).collect();
    run_requests(ctx, summarizer, requests).await
}

/// Runs prepared requests (each with the characters its summary replaces), at most
/// `maxConcurrentSummaries` at once, answers in order. A request a preparation already answered
/// is answered from there without calling the host ([`crate::summarize::prepared`]); during a preparation
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_result_keeps_head_tail_and_the_errors_between() {
        let mut log = String::new();
        for k in 0..400 {
            log.push_str(&format!("line {k} nothing happened here\n"));
            if k == 200 {
                log.push_str("ERROR: health check failed for svc-api on port 8080\n");
            }
        }
        let cut = cap_result(&log, 2000);
        assert!(cut.len() < 2_300, "{} characters", cut.len());
        assert!(cut.starts_with("line 0 nothing") && cut.ends_with("line 399 nothing happened here\n"));
        assert!(cut.contains("ERROR: health check failed for svc-api on port 8080\n"), "{cut}");
        assert!(cut.contains("characters of this result left out here"));
    }
}
