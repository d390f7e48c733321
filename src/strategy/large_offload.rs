//! Large-message offload, with and without the `lastKeep` protection (no LLM).
//!
//! A message whose text or tool-result content is larger than `largePayloadThreshold`
//! characters is replaced by a preview of `offloadSinglePreview` characters and an offload
//! marker. Tool results keep their call id and tool calls keep their calls, so pairing
//! survives. What the history steps respect is never touched (system messages, the current
//! round, unread work, the latest answer, the last completed round, pinned messages and tools),
//! nor, in the protected variant, the `lastKeep` tail. The reference refused to run on lists
//! shorter than `lastKeep` (its issue 1260); here the protected tail simply covers the whole
//! list then, and the unprotected variant still runs.

use futures_util::future::LocalBoxFuture;

use super::preview::shrink;
use super::{Ctx, Edit, Rung, Strategy};
use crate::host::DynSummarizer;
use crate::structure::Protection;

/// The rung, in its two variants: with the `lastKeep` tail protected, or without.
pub(super) struct LargeMessageOffload {
    pub protect_tail: bool,
}

impl Rung for LargeMessageOffload {
    fn strategy(&self) -> Strategy {
        if self.protect_tail {
            Strategy::LargeMessageOffloadWithProtection
        } else {
            Strategy::LargeMessageOffload
        }
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, _summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(std::future::ready((self.strategy(), plan(ctx, self.protect_tail))))
    }
}

pub(super) fn plan(ctx: &Ctx<'_>, protect: bool) -> Vec<Edit> {
    let st = ctx.st;
    let mask = if protect { Protection::HISTORY_AND_TAIL } else { Protection::HISTORY };
    let threshold = ctx.config.large_payload_threshold as usize;
    let kind = if protect { Strategy::LargeMessageOffloadWithProtection } else { Strategy::LargeMessageOffload };
    // A summary the prefix summary will roll forward is not previewed behind a marker first.
    let rolled = ctx.config.ladder().contains(&Strategy::PrefixSummary);
    let mut edits = Vec::new();
    for i in 0..ctx.working.len() {
        if !st.free(i, mask) || (rolled && ctx.is_summary(i)) {
            continue;
        }
        let m = &ctx.working[i].msg;
        if !m.payload_chars_over(threshold) {
            continue;
        }
        edits.push(shrink(ctx, i, kind.event_type()));
    }
    edits
}
