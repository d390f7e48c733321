//! Stale tool-result stubs (no LLM): a result the model read several results ago becomes its
//! first line, a notice, the identifier index of what it held, and its offload marker.
//!
//! An agent reads a file, a log, a listing, acts on it, and moves on; from then on the result
//! only pays rent on every call. A stub keeps what the model needs to know it was there (the
//! first line says what it was, the index names the paths, symbols and numbers it held) and
//! one reload gives it back whole. When a pass stubs is priced ([`super::rent`]): under the
//! window's pressure, or with a cold cache, every stale result at once; otherwise the batch
//! whose rent has paid for its rewrite. The newest results, what the model has not read, and
//! what the protections cover ([`crate::structure::Protection::STUB`]) are never stubbed; the
//! exchange keeps its call and result ids, so pairing holds.

use futures_util::future::LocalBoxFuture;

use super::rent::{due, stale, Fact};
use super::{Ctx, Edit, Pressure, Rung, Strategy};
use crate::host::DynSummarizer;
use crate::message::{head_chars, offload_marker, Block, Synthetic};

/// Characters of a result's first line a stub keeps.
const LINE_CHARS: usize = 160;

/// The rung: stale tool results become stubs when that pays.
pub(super) struct ToolResultStub;

impl Rung for ToolResultStub {
    fn strategy(&self) -> Strategy {
        Strategy::ToolResultStub
    }

    fn relieves(&self) -> Pressure {
        Pressure::Rent
    }

    fn plan<'a>(&'a self, ctx: &'a Ctx<'a>, _summarizer: &'a dyn DynSummarizer) -> LocalBoxFuture<'a, (Strategy, Vec<Edit>)> {
        Box::pin(std::future::ready((Strategy::ToolResultStub, plan(ctx))))
    }
}

fn plan(ctx: &Ctx<'_>) -> Vec<Edit> {
    let facts = Fact::all(ctx.working);
    let stale = stale(&facts, Some(ctx.st), None);
    let pressed = ctx.total >= ctx.target;
    let horizon = super::rent::horizon(&facts, ctx.total, ctx.bound);
    let from = match due(&facts, &stale, &ctx.config.prices(), ctx.cold || pressed, horizon) {
        Some(d) => d.from,
        None => return Vec::new(),
    };
    stale.iter().filter(|s| s.index >= from).map(|s| stub(ctx, s.index)).collect()
}

/// Message `i` with each tool result a stub, its original one reload away.
fn stub(ctx: &Ctx<'_>, i: usize) -> Edit {
    let m = &ctx.working[i].msg;
    let uuid = ctx.in_place_offload(i);
    let marker = offload_marker(&uuid);
    let blocks = m
        .blocks
        .iter()
        .map(|b| match b {
            Block::ToolResult { call_id, content, is_error } => {
                Block::ToolResult { call_id: call_id.clone(), content: stub_text(content, &marker), is_error: *is_error }
            }
            other => other.clone(),
        })
        .collect();
    Edit::in_place(i, ctx.format.rebuild(m, blocks, Synthetic::copy_of(Strategy::ToolResultStub.event_type(), &uuid)), uuid)
}

/// A result's stub: its first line that is not blank (cut at [`LINE_CHARS`]), a notice of how
/// long it was, and the marker (the pass puts the identifier index before it).
fn stub_text(content: &str, marker: &str) -> String {
    let line = content.lines().map(str::trim_end).find(|l| !l.trim().is_empty()).unwrap_or("");
    let head = head_chars(line, LINE_CHARS);
    let cut = if head.len() < line.len() { "..." } else { "" };
    let chars = original_chars(content).unwrap_or_else(|| content.chars().count());
    format!("{head}{cut}\n[Earlier tool output of {chars} characters, stubbed: call context_reload with the uuid below to read it whole]\n{marker}")
}

/// The length of the original of a result truncated at arrival, from its notice
/// (`[... 7,000 of 10,000 characters omitted; ...`).
fn original_chars(content: &str) -> Option<usize> {
    let notice = content.find(" characters omitted; call context_reload")?;
    let before = &content[..notice];
    let of = before.rfind(" of ")?;
    before[of + 4..].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stub_keeps_the_first_line_and_the_original_length() {
        let text = stub_text("\n  \nerror[E0425]: cannot find value `x`\nmore\n", "<!-- m -->");
        assert!(text.starts_with("error[E0425]: cannot find value `x`\n"), "{text}");
        assert!(text.contains("of 45 characters"), "{text}");
        assert!(text.ends_with("<!-- m -->"));
        let truncated = "head\n[... 7000 of 10000 characters omitted; call context_reload with the uuid below for the full output ...]\n";
        assert_eq!(original_chars(truncated), Some(10_000));
        let long = "y".repeat(500);
        assert!(stub_text(&long, "m").starts_with(&format!("{}...\n", "y".repeat(LINE_CHARS))));
    }
}
