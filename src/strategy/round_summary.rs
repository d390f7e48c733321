//! Previous-round summary (LLM): each complete earlier round's work becomes one summary.
//!
//! The user's message of the round stays verbatim; the assistant's work that answered it (tool
//! exchanges, intermediate text, the final answer) is replaced by one assistant message holding
//! the summary and the marker of the offloaded originals. Rounds are summarized concurrently;
//! rounds below `minCompressionTokenThreshold` and rounds already reduced to one summary are
//! left alone. The current round is never touched.

use futures_util::future::join_all;

use super::{new_uuid, Ctx, Edit, Strategy};
use crate::error::{Error, ErrorCode, Result};
use crate::host::{SummarizeRequest, Summarizer};
use crate::message::{offload_marker, transcript, Role, Synthetic};

pub(super) async fn plan<S: Summarizer>(ctx: &Ctx<'_>, summarizer: &S) -> Result<Vec<Edit>> {
    let st = ctx.st;
    let kind = Strategy::PreviousRoundSummary.event_type();
    let mut spans = Vec::new();
    for r in st.previous_rounds() {
        let span = r.start + 1..r.end;
        if span.is_empty() || (span.start..span.end).any(|i| st.is_system(i)) {
            continue;
        }
        let only_summary = span.len() == 1 && ctx.working[span.start].msg.synthetic.as_ref().is_some_and(|s| s.kind == kind);
        if only_summary {
            continue;
        }
        let tokens: u64 = ctx.working[span.clone()].iter().map(|e| e.tokens as u64).sum();
        if tokens < ctx.config.min_compression_token_threshold as u64 {
            continue;
        }
        spans.push((r.start, span));
    }
    let requests: Vec<SummarizeRequest> = spans
        .iter()
        .map(|(user, span)| {
            let msgs: Vec<_> = ctx.working[*user..span.end].iter().map(|e| e.msg.as_ref()).collect();
            SummarizeRequest {
                kind: "round".into(),
                system: ctx.config.custom_prompt.previous_round_summary().to_string(),
                prompt: format!(
                    "<conversation_round>\n{}</conversation_round>\n\nSummarize what the assistant did and found in this round.",
                    transcript(&msgs)
                ),
                messages: msgs.iter().map(|m| m.wire.clone()).collect(),
                target_chars: None,
            }
        })
        .collect();
    let results = join_all(requests.iter().map(|r| summarizer.summarize(r))).await;
    let mut edits = Vec::new();
    for ((_, span), res) in spans.into_iter().zip(results) {
        let summary = res.map_err(|e| Error::host(ErrorCode::SummarizeFailed, "the summarize function failed", e))?;
        let text = crate::message::strip_markers(summary.text.trim());
        if text.is_empty() {
            return Err(Error::new(ErrorCode::SummarizeFailed, "the summarize function returned an empty summary"));
        }
        let uuid = new_uuid();
        let synthetic = Synthetic::new(kind, Some(&uuid));
        let msg = ctx.format.synthesize(Role::Assistant, format!("{text}\n{}", offload_marker(&uuid)), synthetic);
        edits.push(Edit {
            span,
            replacement: vec![msg],
            offload: Some(uuid),
            usage: (summary.input_tokens, summary.output_tokens),
        });
    }
    Ok(edits)
}
