//! What a provider's own compaction already condensed (no LLM), offloaded before anything else.
//!
//! Anthropic's server-side compaction answers with a `compaction` block, and the API drops what
//! comes before it; the Responses API's compaction gives an encrypted `compaction` item that
//! carries everything before it (OpenAI's guide: drop the items before the latest one). Either
//! marks the start of what the model reads: the messages before the latest one are already in
//! it. Summarizing them again would pay for a second copy of what the provider holds, so no
//! other step touches them (`Protection::CONDENSED`), and this step, which the pass runs first
//! whatever the ladder, moves them whole behind one short notice, originals in the store, when a
//! pass needs room. The compaction itself is never replaced, shortened or split
//! (`Protection::PROVIDER`); it is counted like any message (its JSON text, or its summary's).
//! System messages and what the host pinned stay where they are.

use futures_util::future::LocalBoxFuture;

use super::{new_uuid, Ctx, Edit, Rung, Strategy};
use crate::host::DynSummarizer;
use crate::message::{offload_marker, Role, Synthetic};
use crate::structure::Protection;

/// The rung.
pub(super) struct ProviderCompaction;

impl Rung for ProviderCompaction {
    fn strategy(&self) -> Strategy {
        Strategy::ProviderCompaction
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, _summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(std::future::ready((Strategy::ProviderCompaction, plan(ctx))))
    }
}

fn plan(ctx: &Ctx<'_>) -> Vec<Edit> {
    let Some(end) = ctx.st.compaction else { return Vec::new() };
    // What stays in place: system messages and what the host pinned. Earlier compactions of
    // the provider go too: the latest one carries them.
    let stays = Protection::SYSTEM | Protection::PINNED | Protection::PINNED_TOOL;
    let kind = Strategy::ProviderCompaction.event_type();
    // A notice of an earlier pass stays too: it is all that is left there.
    let notice_of_ours = |i: usize| ctx.working[i].msg.synthetic.as_ref().is_some_and(|s| s.kind == kind);
    let mut edits = Vec::new();
    let mut run: Option<std::ops::Range<usize>> = None;
    for u in ctx.st.units.iter().take_while(|u| u.span.start < end) {
        let free = u.span.end <= end && ctx.st.span_free(&u.span, stays) && !u.span.clone().any(notice_of_ours);
        run = match (free, run) {
            (true, None) => Some(u.span.clone()),
            (true, Some(r)) => Some(r.start..u.span.end),
            (false, Some(r)) => {
                edits.push(notice(ctx, r));
                None
            }
            (false, None) => None,
        };
    }
    if let Some(r) = run {
        edits.push(notice(ctx, r));
    }
    edits
}

fn notice(ctx: &Ctx<'_>, span: std::ops::Range<usize>) -> Edit {
    let uuid = new_uuid();
    let kind = Strategy::ProviderCompaction.event_type();
    let n = span.len();
    let text = format!(
        "[Context note: {n} earlier message{}, which the provider's compaction after {} already condensed, were moved out of the \
         conversation. Call context_reload with the uuid below to see them.]\n{}",
        if n == 1 { "" } else { "s" },
        if n == 1 { "it" } else { "them" },
        offload_marker(&uuid)
    );
    let msg = ctx.format.synthesize(Role::User, text, Synthetic::new(kind, Some(&uuid)));
    Edit { span, replacement: vec![msg], offload: Some(uuid), usage: (None, None), ms: None }
}
