//! Emergency offload (no LLM): the step that guarantees the budget.
//!
//! When everything else has run and the request is still over the target, whole spans are
//! offloaded behind one short notice, oldest first and only as far as needed: first the
//! complete earlier rounds, then, inside the current round, the oldest work the model has
//! already answered. System messages, the first user message, the current round's user message,
//! everything the model has not read yet and what the host pinned (messages, exchanges of
//! `pinnedTools`) stay; so do the latest answer and the last completed round, until the pass
//! yields them because the target cannot be reached otherwise (see the engine's sweep). A notice already there is absorbed into
//! the next one, so its marker stays reachable. Only spans of whole units move, so pairing
//! holds; the notice lists the user requests and tools it stands for, so the model knows what to
//! reload.

use std::ops::Range;

use futures_util::future::LocalBoxFuture;

use super::{new_uuid, Ctx, Edit, Rung, Strategy};
use crate::host::DynSummarizer;
use crate::message::{find_markers, head_chars, offload_marker, strip_markers, Block, Message, Role, Synthetic};
use crate::structure::Protection;

/// Tokens a notice is assumed to cost when planning how far to go.
const NOTICE_TOKENS: u64 = 120;

/// The rung: the last resort: oldest rounds, then the oldest answered work of the current round, offloaded whole.
pub(super) struct Emergency;

impl Rung for Emergency {
    fn strategy(&self) -> Strategy {
        Strategy::Emergency
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, _summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(std::future::ready((Strategy::Emergency, plan(ctx))))
    }
}

pub(super) fn plan(ctx: &Ctx<'_>) -> Vec<Edit> {
    // The summaries the LLM steps made (this pass's too) stay where the low-water mark can be
    // reached without them: offloading a summary behind a notice loses what it paid for. Only
    // the trigger may take them.
    let sparing = spans(ctx, true);
    if freed(ctx, &sparing) >= ctx.must_excess() {
        return sparing;
    }
    let mut edits = spans(ctx, false);
    let freed_whole = freed(ctx, &edits);
    // A user message is cut only when what must be sent whole is over the window itself: one
    // that only keeps the request over the target reaches the model whole, and the pass says it
    // ended over the target (a 160k paste in a 200k window is read as it was written).
    if freed_whole < ctx.must_excess() && ctx.total.saturating_sub(freed_whole) > ctx.window {
        // Only when that makes the request fit: a user message cut for a request that is over
        // the window anyway (a system prompt larger than it) would be lost for nothing.
        let cut = oversized_users(ctx, &edits);
        let gain: u64 = cut.iter().map(|e| ctx.tokens(e.span.clone()).saturating_sub(cut_tokens(e))).sum();
        if freed_whole + gain >= ctx.must_excess() {
            edits.extend(cut);
        }
    }
    edits
}

/// About how many tokens a user message cut to its head and tail keeps (four characters each).
fn cut_tokens(e: &Edit) -> u64 {
    e.replacement.iter().map(|m| m.payload_chars() as u64 / 4 + 8).sum()
}

/// The last resort for a user message that alone keeps the request over the window (a pasted
/// log, a document): once nothing else is left to offload and no protection is left to yield
/// (the pass yields the last round and the latest answer first), and the request is still over
/// the window, the task and the current user message over `largePayloadThreshold` keep their
/// head and tail, the whole of them one reload away, as a truncated tool result does, when that
/// makes the request fit. Every
/// format does the same, so a request never stays over the window for a message the model can
/// page through instead.
fn oversized_users(ctx: &Ctx<'_>, taken: &[Edit]) -> Vec<Edit> {
    let st = ctx.st;
    let yieldable = (0..ctx.working.len()).any(|i| st.protection(i).any(Protection::LATEST_ANSWER | Protection::LAST_ROUND));
    if yieldable {
        return Vec::new();
    }
    let limit = ctx.config.large_payload_threshold as usize;
    let candidates = [st.first_user, Some(st.current_start)];
    let mut out: Vec<Edit> = Vec::new();
    for i in candidates.into_iter().flatten() {
        if i >= ctx.working.len() || out.iter().any(|e| e.span.start == i) || taken.iter().any(|e| e.span.contains(&i)) {
            continue;
        }
        let m = &ctx.working[i].msg;
        if !m.is_real_user() || m.synthetic.is_some() || !st.free(i, Protection::PINNED) {
            continue;
        }
        let over = m.blocks.iter().any(|b| matches!(b, Block::Text(t) if super::worth_cutting(t, limit)));
        if !over {
            continue;
        }
        let uuid = ctx.in_place_offload(i);
        let blocks = m
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) if super::worth_cutting(t, limit) => Block::Text(super::cut::shorten(t, limit, &uuid)),
                other => other.clone(),
            })
            .collect();
        out.push(Edit::in_place(i, ctx.format.rebuild(m, blocks, Synthetic::copy_of(Strategy::Emergency.event_type(), &uuid)), uuid));
    }
    out
}

/// Tokens the edits free, notices counted.
fn freed(ctx: &Ctx<'_>, edits: &[Edit]) -> u64 {
    edits.iter().map(|e| ctx.tokens(e.span.clone()).saturating_sub(NOTICE_TOKENS)).sum()
}

fn spans(ctx: &Ctx<'_>, spare_summaries: bool) -> Vec<Edit> {
    let st = ctx.st;
    let n = ctx.working.len();
    let kept = |i: usize| !st.free(i, Protection::EMERGENCY) || (spare_summaries && ctx.is_summary(i));
    let mut need = ctx.excess();
    let mut edits = Vec::new();

    // Phase 1: earlier rounds, after the first user message. A system or pinned message (or a
    // pinned tool's exchange) is never offloaded: the span before it gets its own notice and the
    // next one starts after it.
    let first_user = st.first_user.filter(|&u| u < st.current_start);
    if let Some(fu) = first_user {
        let need0 = need;
        let mut spans = Vec::new();
        let mut start = fu + 1;
        let mut end = start;
        let mut freed = 0u64;
        for r in st.previous_rounds() {
            if need == 0 {
                break;
            }
            if r.end <= end {
                continue;
            }
            for i in end.max(r.start)..r.end {
                if i >= start && kept(i) {
                    let island = st.unit(i).span.clone();
                    if start < island.start {
                        freed += gain(ctx, start..island.start);
                        spans.push(start..island.start);
                    }
                    start = island.end;
                }
            }
            end = r.end;
            let open = if start < end { gain(ctx, start..end) } else { 0 };
            need = need0.saturating_sub(freed + open);
        }
        if start < end {
            spans.push(start..end);
        }
        for span in spans {
            if let Some(e) = notice_edit(ctx, span, "earlier rounds of this conversation", false) {
                edits.push(e);
            }
        }
    }

    // Phase 2: the current round's oldest answered work.
    if need > 0 {
        let cur = st.current_start;
        let start = if cur < n && ctx.working[cur].msg.is_real_user() { cur + 1 } else { cur };
        let mut end = start;
        let mut gained = 0u64;
        for u in &st.units {
            if u.span.start < start {
                continue;
            }
            // Stop at what the model has not answered yet, and keep the newest message.
            if u.span.end >= n || u.span.clone().any(kept) || (u.exchange && !u.complete) {
                break;
            }
            end = u.span.end;
            gained = gain(ctx, start..end);
            if gained >= need {
                break;
            }
        }
        let _ = gained;
        // Where turns alternate, the notice joins the user's message of the turn; a notice an
        // earlier pass joined there is taken in (it goes to the new offload with the message as
        // it was), so notices never pile up in the user's turn.
        let kind = Strategy::Emergency.event_type();
        let joined = ctx.format.needs_alternation()
            && start == cur + 1
            && ctx.working[cur].msg.synthetic.as_ref().is_some_and(|s| s.kind == kind && s.in_place)
            && st.free(cur, Protection::NO_JOIN);
        if let Some(mut e) = notice_edit(ctx, start..end, "the beginning of the current turn", joined) {
            if joined {
                let note = e.replacement.pop().expect("one notice");
                e.replacement = vec![ctx.format.merge(&without_notices(ctx, cur), &note, false)];
                e.span = cur..e.span.end;
            }
            edits.push(e);
        }
    }
    edits
}

/// Message `i` without the notices earlier passes joined to it.
fn without_notices(ctx: &Ctx<'_>, i: usize) -> Message {
    let m = &ctx.working[i].msg;
    let blocks = m
        .blocks
        .iter()
        .filter(|b| !matches!(b, Block::Text(t) if t.starts_with(NOTICE_OPENING) && !find_markers(t).is_empty()))
        .cloned()
        .collect();
    let mark = m.synthetic.clone().unwrap_or_else(|| Synthetic::new(Strategy::Emergency.event_type(), None));
    ctx.format.rebuild(m, blocks, mark)
}

/// Tokens that offloading `span` behind one notice is counted on to free: its tokens less the
/// new notice's, and not counting earlier notices in it. An earlier notice is absorbed, and the
/// new one, listing the requests it stands for, costs about as much again; counting it as freed
/// made a sweep stop at a lone earlier notice, which is never re-offloaded, with the rest of the
/// history still there.
fn gain(ctx: &Ctx<'_>, span: Range<usize>) -> u64 {
    let kind = Strategy::Emergency.event_type();
    let notices: u64 = ctx.working[span.clone()]
        .iter()
        .filter(|e| e.msg.synthetic.as_ref().is_some_and(|s| s.kind == kind))
        .map(|e| e.tokens as u64)
        .sum();
    ctx.tokens(span).saturating_sub(NOTICE_TOKENS + notices)
}

/// How every notice opens.
const NOTICE_OPENING: &str = "[Context note: ";

/// The notice that replaces `span`; `absorbs` says that it also takes in an earlier notice
/// outside the span (joined to the user's turn).
fn notice_edit(ctx: &Ctx<'_>, span: Range<usize>, what: &str, absorbs: bool) -> Option<Edit> {
    let kind = Strategy::Emergency.event_type();
    if span.is_empty() || !ctx.st.is_whole(&span) {
        return None;
    }
    // A lone earlier notice is already as small as it gets.
    if span.len() == 1 && ctx.working[span.start].msg.synthetic.as_ref().is_some_and(|s| s.kind == kind) {
        return None;
    }
    let uuid = new_uuid();
    let mut requests = Vec::new();
    let mut tools: Vec<&str> = Vec::new();
    let mut earlier = 0;
    for e in &ctx.working[span.clone()] {
        let m = &e.msg;
        if m.synthetic.as_ref().is_some_and(|s| s.kind == kind) {
            earlier += 1;
        }
        if m.is_real_user() {
            let t = m.payload_text();
            let line = t.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            requests.push(strip_markers(head_chars(line, 120)));
        }
        for b in &m.blocks {
            if let Block::ToolCall { name, .. } = b {
                tools.push(name.as_str());
            }
        }
    }
    let mut text = format!(
        "{NOTICE_OPENING}{} message{} from {what} were offloaded to keep the conversation within the context window.",
        span.len(),
        if span.len() == 1 { "" } else { "s" }
    );
    if earlier > 0 || absorbs {
        text.push_str(" They include an earlier note of the same kind.");
    }
    if !requests.is_empty() {
        text.push_str(" User requests in that part:");
        for (k, r) in requests.iter().take(10).enumerate() {
            text.push_str(&format!(" ({}) {r}", k + 1));
        }
        if requests.len() > 10 {
            text.push_str(&format!(" and {} more", requests.len() - 10));
        }
        text.push('.');
    }
    if !tools.is_empty() {
        let list = super::tool_list(tools);
        text.push_str(&format!(" Tools called: {}.", list.join(", ")));
    }
    text.push_str(" Call context_reload with the uuid below to see it.]\n");
    text.push_str(&offload_marker(&uuid));
    let msg = ctx.format.synthesize(Role::User, text, Synthetic::new(kind, Some(&uuid)));
    Some(Edit { span, replacement: vec![msg], offload: Some(uuid), usage: (None, None), ms: None })
}
