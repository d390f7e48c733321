//! The span a prefix strategy replaces, and its one note placed: what the prefix summary and
//! fact retrieval share.
//!
//! Both replace everything before a reserved recent tail (after the system messages) with one
//! note. The cut between that prefix and the tail is settled by a fixpoint: it moves back until
//! no tool result in the tail lacks its call (moving it can orphan another pair, so the check
//! repeats until nothing moves). Results the model has not answered yet, and the last unit,
//! always stay in the tail. When the reserve leaves nothing to summarize, the cut is taken
//! again with no reserve. When the current user message falls inside the span it is kept
//! verbatim right after the note (joined to it in formats whose turns must alternate).

use std::collections::HashMap;
use std::ops::Range;

use super::llm::{self, Job};
use super::{Ctx, Strategy};
use crate::host::SummarizeRequest;
use crate::message::{offload_marker, Block, Message, Role};
use crate::structure::Protection;

/// A span shorter than this many characters is not worth a summary.
const MIN_SPAN_CHARS: usize = 1000;

/// Summaries that may stand side by side before the next pass folds them into one.
const MAX_SUMMARIES: usize = 4;

/// The part of the working list a prefix strategy replaces.
pub(super) struct PrefixSpan {
    /// The messages replaced.
    pub span: Range<usize>,
    /// The messages shown to the summarizer (the end of `span` when all of it is too long).
    pub show: Range<usize>,
    /// A user message inside `span` that stays (the current one, or a turn an earlier note of
    /// this strategy joined), and whether the note goes before it.
    pub keep: Option<(usize, bool)>,
    /// The summary this one rolls forward, when it lies before `show` (it is shown first).
    pub previous: Option<usize>,
    /// The generation of the new summary (one more than the one it absorbs).
    pub generation: u32,
}

/// The first index a prefix strategy may not replace: the last unit, exchanges still waiting
/// for results, and everything from the first message that ends a prefix span on (unread work,
/// the latest answer, the last completed round) stay.
fn hard_end(ctx: &Ctx<'_>) -> usize {
    let st = ctx.st;
    let n = ctx.working.len();
    let mut end = st.units.last().map_or(n, |u| u.span.start);
    for u in &st.units {
        if u.span.start >= end {
            break;
        }
        if (u.exchange && !u.complete) || !st.span_free(&u.span, Protection::PREFIX_END) {
            end = u.span.start;
            break;
        }
    }
    end
}

/// Moves `cut` back to a unit boundary, then until every tool result at or after it has its
/// call at or after it, repeating until nothing moves.
pub(super) fn settle(ctx: &Ctx<'_>, mut cut: usize) -> usize {
    let n = ctx.working.len();
    let mut call_at: HashMap<&str, usize> = HashMap::new();
    for (i, e) in ctx.working.iter().enumerate() {
        for id in e.msg.call_ids() {
            call_at.entry(id).or_insert(i);
        }
    }
    loop {
        let from = if cut < n { ctx.st.unit(cut).span.start } else { n };
        let mut next = from;
        for i in from..n {
            for id in ctx.working[i].msg.result_ids() {
                if let Some(&c) = call_at.get(id) {
                    if c < next {
                        next = ctx.st.unit(c).span.start;
                    }
                }
            }
        }
        if next == cut {
            return cut;
        }
        cut = next;
    }
}

/// The cut that keeps `reserve` tokens of recent messages (at least), settled.
fn reserve_cut(ctx: &Ctx<'_>, reserve: u64, end: usize) -> usize {
    let mut cut = ctx.working.len();
    let mut acc = 0u64;
    while cut > 0 && acc < reserve {
        cut -= 1;
        acc += ctx.working[cut].tokens as u64;
    }
    alternating_cut(ctx, settle(ctx, cut.min(end)))
}

/// Where turns alternate, the note (a user message) may not be followed by a user message it
/// cannot join: one that stays verbatim (the round the question follows, a pinned message).
/// The cut then moves back to the start of the last unit an assistant message opens, settled.
fn alternating_cut(ctx: &Ctx<'_>, mut cut: usize) -> usize {
    let n = ctx.working.len();
    while ctx.format.needs_alternation() && cut > 0 && cut < n {
        let next = &ctx.working[cut].msg;
        if next.role != Role::User || (ctx.st.free(cut, Protection::NO_JOIN) && ctx.st.free(cut, Protection::LAST_ROUND)) {
            return cut;
        }
        let Some(j) = (0..cut).rev().find(|&j| ctx.st.unit(j).span.start == j && ctx.working[j].msg.role == Role::Assistant) else {
            return 0;
        };
        let settled = settle(ctx, j);
        if settled >= cut {
            return cut;
        }
        cut = settled;
    }
    cut
}

/// The start of the span for a cut: after the last system or pinned message (or pinned tool's
/// exchange) before it, and after the first user message, the task, when `keep_first_user`
/// (unless, in a format whose turns alternate, the current user message is in the span too:
/// only one user turn can stay around the note).
fn span_start(ctx: &Ctx<'_>, cut: usize, keep_first_user: bool) -> usize {
    // The task is kept by the rule below, which knows when alternating turns forbid it.
    let islands = Protection::ISLANDS - Protection::TASK;
    let mut start = (0..cut).rev().find(|&i| !ctx.st.free(i, islands)).map_or(0, |s| ctx.st.unit(s).span.end);
    if keep_first_user {
        if let Some(u) = (0..cut).find(|&i| ctx.working[i].msg.is_real_user()) {
            let cur = ctx.st.current_start;
            let current_inside = ctx.format.needs_alternation() && cur > u && cur < cut && ctx.working[cur].msg.is_real_user();
            if !current_inside {
                start = start.max(u + 1);
            }
        }
    }
    start
}

/// Where a span starts when its summary goes after the summaries earlier passes left at its
/// start, instead of re-summarizing them: right after the last of them, when that frees what
/// the pass must free, and they are fewer than [`MAX_SUMMARIES`] and take at most half of the
/// low-water mark. `None` keeps the whole span: there is no earlier summary, or they have grown
/// enough to be folded into one.
/// Appending keeps the earlier summaries byte for byte, so the provider's cached prefix runs on
/// through them, and what they say is not summarized a second time.
fn after_summaries(ctx: &Ctx<'_>, span: &Range<usize>, summary_tokens: u64) -> Option<usize> {
    let last = span.clone().rev().find(|&i| ctx.is_summary(i))?;
    let (count, earlier) =
        (span.start..=last).filter(|&i| ctx.is_summary(i)).fold((0, 0u64), |(n, t), i| (n + 1, t + ctx.working[i].tokens as u64));
    let rest = last + 1..span.end;
    let frees = ctx.tokens(rest.clone()).saturating_sub(summary_tokens);
    let fits = count < MAX_SUMMARIES && earlier <= ctx.target / 2 && frees >= ctx.must_excess();
    (fits && !rest.is_empty() && ctx.st.is_whole(&rest) && chars(ctx, rest.clone()) >= MIN_SPAN_CHARS).then_some(rest.start)
}

pub(super) fn chars(ctx: &Ctx<'_>, span: Range<usize>) -> usize {
    ctx.working[span].iter().map(|e| e.msg.payload_chars() + 1).sum()
}

/// Chooses the span of a prefix strategy (`kind` is its own event type, for rolling and
/// hints), or `None` when there is nothing worth replacing.
pub(super) fn select(ctx: &Ctx<'_>, strategy: Strategy, keep_first_user: bool, summary_tokens: u64) -> Option<PrefixSpan> {
    let end = hard_end(ctx);
    let reserve = (ctx.config.max_token as f64 * ctx.config.reserve_ratio).floor() as u64;
    let usable = |cut: usize| -> Option<Range<usize>> {
        let start = span_start(ctx, cut, keep_first_user);
        let span = start..cut;
        (start < cut && ctx.st.is_whole(&span) && chars(ctx, span.clone()) >= MIN_SPAN_CHARS).then_some(span)
    };
    // The cut a preparation chose, when it still frees enough.
    let hinted = ctx.summaries.hint(strategy).and_then(|h| ctx.working.iter().position(|e| std::rc::Rc::ptr_eq(&e.msg, &h)));
    let hinted = hinted
        .filter(|&j| j <= end && settle(ctx, j) == j && alternating_cut(ctx, j) == j)
        .and_then(usable)
        .filter(|span| ctx.tokens(span.clone()).saturating_sub(summary_tokens) >= ctx.must_excess());
    let span = match hinted {
        Some(s) => s,
        None => match usable(reserve_cut(ctx, reserve, end)) {
            Some(s) => s,
            // The reserve leaves nothing: cut again with none (the last unit still stays).
            None => usable(reserve_cut(ctx, 0, end))?,
        },
    };
    if ctx.summaries.preparing() && span.end < ctx.working.len() {
        ctx.summaries.set_hint(strategy, ctx.working[span.end].msg.clone());
    }
    let kind = strategy.event_type();
    let mut span = span;
    let appended = match after_summaries(ctx, &span, summary_tokens) {
        Some(start) => {
            span.start = start;
            true
        }
        None => false,
    };
    let cur = ctx.st.current_start;
    let mut keep = (span.contains(&cur) && ctx.working[cur].msg.is_real_user()).then_some((cur, true));
    // In a format whose turns alternate an earlier note of this strategy may have joined the
    // user turn next to its span; that turn is taken in and rewritten with the new note only,
    // so notes never pile up in it (unless the new note goes after the earlier ones).
    let joined = |i: usize| ctx.working[i].msg.synthetic.as_ref().is_some_and(|s| s.kind == kind && s.in_place);
    if ctx.format.needs_alternation() && keep.is_none() && !appended {
        if span.start > 0 && joined(span.start - 1) {
            span.start -= 1;
            keep = Some((span.start, false));
        } else if span.end < ctx.working.len() && joined(span.end) {
            keep = Some((span.end, true));
            span.end += 1;
        }
    }
    let earlier: Vec<(usize, u32)> = span
        .clone()
        .filter_map(|i| ctx.working[i].msg.synthetic.as_ref().filter(|s| s.kind == kind).map(|s| (i, s.generation.unwrap_or(1))))
        .collect();
    let generation = earlier.iter().map(|(_, g)| g + 1).max().unwrap_or(1);
    // Show at most a trigger's worth of the span (the summarizer's window is no larger than the
    // agent's); the oldest messages left out stay offloaded with the rest.
    let budget = ctx.config.trigger_tokens();
    let mut show_start = span.start;
    let mut shown = ctx.tokens(span.clone());
    while shown > budget && show_start < span.end {
        let next = ctx.st.unit(show_start).span.end;
        if next >= span.end {
            break;
        }
        shown -= ctx.tokens(show_start..next);
        show_start = next;
    }
    let previous = earlier.last().map(|(i, _)| *i).filter(|&i| i < show_start);
    Some(PrefixSpan { show: show_start..span.end, span, keep, previous, generation })
}

/// The summarize request for a span: the transcript of what is shown, a note on what was left
/// out, the strategy's instruction.
pub(super) fn request(
    ctx: &Ctx<'_>,
    sel: &PrefixSpan,
    strategy: Strategy,
    system: &str,
    instruction: String,
    target: usize,
) -> SummarizeRequest {
    let left_out = sel.show.start - sel.span.start;
    let instruction = if left_out > 0 {
        format!("({left_out} older messages of this part were too long to show; they are kept elsewhere.)\n{instruction}")
    } else {
        instruction
    };
    let job = Job {
        strategy,
        system: system.to_string(),
        show: sel.show.clone(),
        instruction,
        replaces_chars: chars(ctx, sel.span.clone()),
        target_chars: Some(target),
    };
    let mut req = llm::request(ctx, &job);
    // The summary being rolled forward is always shown, even when older messages are not.
    if let Some(p) = sel.previous {
        let prev = crate::message::transcript(&[&ctx.working[p].msg]);
        if let Some(body) = req.prompt.strip_prefix("<conversation>\n") {
            req.prompt = format!("<conversation>\n{prev}{body}");
        }
        let mut shown: Vec<std::borrow::Cow<'_, Message>> = vec![std::borrow::Cow::Borrowed(ctx.working[p].msg.as_ref())];
        shown.extend(ctx.working[sel.show.clone()].iter().map(|e| llm::capped(ctx, &e.msg)));
        let refs: Vec<&Message> = shown.iter().map(|m| m.as_ref()).collect();
        req.messages = crate::summarize::body::request_body(ctx.format, &refs);
        req.from_cache = false;
        llm::share(ctx, &mut req, p..sel.show.end, &llm::ask(ctx, &job));
    }
    req
}

/// The messages that replace the span: the note, and the user message that stays, on its side
/// of the note (joined to it in formats whose turns must alternate).
pub(super) fn place(ctx: &Ctx<'_>, sel: &PrefixSpan, note: Message) -> Vec<Message> {
    let Some((u, note_first)) = sel.keep else {
        return vec![note];
    };
    let kind = note.synthetic.as_ref().map_or("", |s| s.kind.as_str());
    let kept = without_note(ctx, u, kind);
    if ctx.format.needs_alternation() {
        vec![ctx.format.merge(&kept, &note, note_first)]
    } else if note_first {
        vec![note, kept]
    } else {
        vec![kept, note]
    }
}

/// Message `i` without the text an earlier note of `kind` joined to it (it is in the span, so
/// that note goes to the offload with it).
fn without_note(ctx: &Ctx<'_>, i: usize, kind: &str) -> Message {
    let m = &ctx.working[i].msg;
    match &m.synthetic {
        Some(s) if s.kind == kind && s.in_place => {
            let marker = s.offload.as_deref().map(offload_marker);
            let blocks = m
                .blocks
                .iter()
                .filter(|b| !matches!(b, Block::Text(t) if marker.as_ref().is_some_and(|mk| t.contains(mk.as_str()))))
                .cloned()
                .collect();
            ctx.format.rebuild(m, blocks, s.clone())
        }
        _ => (**m).clone(),
    }
}

/// The length asked of a summary that replaces `replaces` characters.
pub(super) fn target_chars(ctx: &Ctx<'_>, replaces: usize, share: usize) -> usize {
    (replaces / share).min(12_000).min(ctx.config.trigger_tokens() as usize).max(400).min(replaces.saturating_sub(1))
}
