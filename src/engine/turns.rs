//! Alternating turns: the engine's own messages never leave two user or two assistant messages
//! in a row in a format that wants turns to alternate (Anthropic).
//!
//! A strategy writes a summary or a notice with the role that reads best (a rolled-up history
//! as the user's, a summary of tool work as the assistant's). In an alternating list the span
//! it replaces sits between a message before it and one after it, whose sides decide whether
//! that role fits. This step runs on each strategy's edits before anything is written:
//!
//! 1. the role fits (it differs from both neighbours): nothing to do;
//! 2. the other role fits: the message is written with it (a note between two user turns
//!    becomes the assistant's);
//! 3. neither fits (the neighbours are on different sides): the note joins the neighbour of
//!    its side, after that neighbour's content when it comes before the span, before it when
//!    it comes after (behind the blocks Anthropic wants first: signed thinking, tool results).
//!    The edit grows by that neighbour, so its original goes to the same offload and stays
//!    recoverable byte-exact; the joined message keeps the neighbour's part in the
//!    conversation (a user turn still opens its round).
//!
//! The start of the list counts as an assistant turn (the first message is the user's) and its
//! end too (a final assistant message would be read as the start of the model's answer).
//! An in-place rewrite of one message keeps its role and place and never needs this (where
//! the host's own list does not alternate around it, it stays as the host sent it); one that a
//! strategy moved (a kept user turn joined to the note that replaces the turns before it) and
//! that lands next to a message of its side is joined with that message ([`Format::join`]), the
//! edit growing by it as above. An edit that could only be fitted by joining a neighbour
//! another edit of the same step already takes, or a neighbour the engine never rewrites (unread
//! work, the latest answer, what the host pinned: [`Protection::NO_JOIN`]), is dropped: the
//! ladder goes on, and a list that alternated keeps alternating.

use crate::entry::Entry;
use crate::format::{Format, Turn};
use crate::message::{Message, Role};
use crate::strategy::Edit;
use crate::structure::{Protection, Structure};

fn other(t: Turn) -> Turn {
    match t {
        Turn::User => Turn::Assistant,
        Turn::Assistant => Turn::User,
    }
}

fn role_of(t: Turn) -> Role {
    match t {
        Turn::User => Role::User,
        Turn::Assistant => Role::Assistant,
    }
}

/// What is on one side of an edit's span.
#[derive(Clone, Copy)]
enum Side {
    /// The start or the end of the list (counted as an assistant turn).
    Edge,
    /// A message no edit touches, which a note may join.
    Free(usize, Turn),
    /// A message of another edit, or one the engine never rewrites.
    Taken(Turn),
}

impl Side {
    fn turn(self) -> Turn {
        match self {
            Side::Edge => Turn::Assistant,
            Side::Free(_, t) | Side::Taken(t) => t,
        }
    }
}

/// Fits the edits of one strategy step to the format's turns (see the module docs); `st` is the
/// analysis of `work`.
pub(crate) fn fit(format: Format, work: &[Entry], st: &Structure, mut edits: Vec<Edit>) -> Vec<Edit> {
    if !format.needs_alternation() || edits.is_empty() {
        return edits;
    }
    crate::sort::by_key(&mut edits, |e| e.span.start as u128);
    let n = work.len();
    let mut taken = vec![false; n];
    for e in &edits {
        for i in e.span.clone() {
            taken[i] = true;
        }
    }
    let turn = |m: &Message| format.turn(m.role);
    let side = |i: usize, taken: &[bool], fallback: Option<Turn>| -> Side {
        if taken[i] {
            Side::Taken(fallback.unwrap_or_else(|| turn(&work[i].msg)))
        } else if !st.free(i, Protection::NO_JOIN) {
            Side::Taken(turn(&work[i].msg))
        } else {
            Side::Free(i, turn(&work[i].msg))
        }
    };
    let mut out: Vec<Edit> = Vec::with_capacity(edits.len());
    let firsts: Vec<Option<Turn>> = edits.iter().map(|e| e.replacement.first().map(turn)).collect();
    for (k, mut e) in edits.into_iter().enumerate() {
        if e.replacement.len() != 1 || e.replacement[0].synthetic.is_none() {
            out.push(e);
            continue;
        }
        let written = e.replacement[0].synthetic.as_ref().is_some_and(|s| !s.in_place);
        if !written && e.span.len() == 1 {
            // Rewritten in place where it was: same role, same neighbours, so the turns
            // alternate around it exactly as they did around its original (a host's list that
            // did not alternate there is left as the host sent it, not joined).
            out.push(e);
            continue;
        }
        let prev = if e.span.start == 0 {
            Side::Edge
        } else {
            let last = out.last().filter(|p| p.span.end == e.span.start).and_then(|p| p.replacement.last()).map(turn);
            side(e.span.start - 1, &taken, last)
        };
        let next = if e.span.end >= n {
            Side::Edge
        } else {
            let first = firsts.get(k + 1).copied().flatten();
            side(e.span.end, &taken, first)
        };
        let note = &e.replacement[0];
        let mine = turn(note);
        let (p, q) = (prev.turn(), next.turn());
        if mine != p && mine != q {
            out.push(e);
            continue;
        }
        if !written {
            // A rewritten original in a new place: it cannot change sides, so it takes in the
            // free neighbours of its side (an edge or another edit's message stays as it is).
            let mut joined = e.replacement.pop().expect("one message");
            let mut mark = joined.synthetic.clone().expect("checked above");
            // Joined with a neighbour, the edit's offload holds more than one message.
            mark.copy = false;
            if let Side::Free(i, t) = prev {
                if t == mine {
                    joined = format.join(&work[i].msg, &joined, mark.clone());
                    taken[i] = true;
                    e.span = i..e.span.end;
                }
            }
            if let Side::Free(j, t) = next {
                if t == mine {
                    joined = format.join(&joined, &work[j].msg, mark);
                    taken[j] = true;
                    e.span = e.span.start..j + 1;
                }
            }
            e.replacement = vec![joined];
            out.push(e);
            continue;
        }
        let mark = note.synthetic.clone().expect("checked above");
        if other(mine) != p && other(mine) != q {
            let text = note.payload_text();
            e.replacement = vec![format.synthesize(role_of(other(mine)), text, mark)];
            out.push(e);
            continue;
        }
        // The neighbours are on different sides: join the free one of the note's side, or, when
        // that side is an edge or taken, take the other role and join the other neighbour.
        let target = [(prev, false), (next, true)]
            .into_iter()
            .filter_map(|(s, after)| match s {
                Side::Free(i, t) => Some((i, t, after)),
                _ => None,
            })
            .min_by_key(|&(_, t, _)| t != mine);
        let Some((i, _, neighbour_after)) = target else {
            continue;
        };
        let joined = format.merge(&work[i].msg, note, neighbour_after);
        taken[i] = true;
        if neighbour_after {
            e.span = e.span.start..e.span.end + 1;
        } else {
            e.span = e.span.start - 1..e.span.end;
        }
        e.replacement = vec![joined];
        out.push(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Block, Synthetic};
    use serde_json::{json, Value};
    use std::rc::Rc;

    fn entries(v: Value) -> Vec<Entry> {
        v.as_array().unwrap().iter().enumerate().map(|(i, m)| Entry::new(Rc::new(Format::Anthropic.parse(i, m).unwrap()), 10)).collect()
    }

    fn note(role: Role, span: std::ops::Range<usize>) -> Edit {
        let msg = Format::Anthropic.synthesize(role, "[note]".into(), Synthetic::new("TEST", Some("u")));
        Edit { span, replacement: vec![msg], offload: Some("u".into()), usage: (None, None), ms: None }
    }

    fn roles(work: &[Entry], edits: &[Edit]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        let mut edits = edits.iter().peekable();
        while i < work.len() {
            if let Some(e) = edits.next_if(|e| e.span.start == i) {
                out.extend(e.replacement.iter().map(|m| m.wire["role"].as_str().unwrap().to_string()));
                i = e.span.end;
            } else {
                out.push(work[i].msg.wire["role"].as_str().unwrap().to_string());
                i += 1;
            }
        }
        out
    }

    fn alternates(r: &[String]) -> bool {
        r.windows(2).all(|w| w[0] != w[1])
    }

    #[test]
    fn a_note_takes_the_role_that_fits_or_joins_its_neighbour() {
        let work = entries(json!([
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "ok"}
        ]));
        let st = Structure::analyze(Format::Anthropic, &work, 0);
        // Between two user turns, a user note becomes the assistant's.
        let out = fit(Format::Anthropic, &work, &st, vec![note(Role::User, 1..4)]);
        assert_eq!(out[0].span, 1..4);
        assert_eq!(out[0].replacement[0].role, Role::Assistant);
        assert!(alternates(&roles(&work, &out)));
        // Tool work (assistant ... user) between q1 and "done": the assistant summary joins "done".
        let out = fit(Format::Anthropic, &work, &st, vec![note(Role::Assistant, 1..3)]);
        assert_eq!(out[0].span, 1..4);
        assert_eq!(out[0].replacement[0].wire["content"], json!([{"type": "text", "text": "[note]"}, {"type": "text", "text": "done"}]));
        assert!(out[0].replacement[0].synthetic.as_ref().unwrap().in_place);
        assert!(alternates(&roles(&work, &out)));
        // A user note after q1 and before tool work joins q1, after its text.
        let out = fit(Format::Anthropic, &work, &st, vec![note(Role::User, 1..3)]);
        assert_eq!(out[0].span, 0..3);
        assert_eq!(out[0].replacement[0].wire["content"], json!([{"type": "text", "text": "q1"}, {"type": "text", "text": "[note]"}]));
        assert!(out[0].replacement[0].is_real_user(), "q1 still opens its round");
        assert!(alternates(&roles(&work, &out)));
        // At the start, a rolled-up history joins the first kept user turn.
        let out = fit(Format::Anthropic, &work, &st, vec![note(Role::User, 0..4)]);
        assert_eq!(out[0].span, 0..5);
        assert_eq!(out[0].replacement[0].wire["role"], "user");
        assert!(alternates(&roles(&work, &out)));
        // A kept user turn joined to the note that replaces the turns before it, landing after
        // q1: q1 joins it, so the user side stays one turn.
        let moved = Format::Anthropic.merge(&work[4].msg, &note(Role::User, 1..4).replacement[0], true);
        let edit = Edit { span: 1..5, replacement: vec![moved], offload: Some("u".into()), usage: (None, None), ms: None };
        let out = fit(Format::Anthropic, &work, &st, vec![edit]);
        assert_eq!(out[0].span, 0..5);
        assert_eq!(
            out[0].replacement[0].wire["content"],
            json!([{"type": "text", "text": "q1"}, {"type": "text", "text": "[note]"}, {"type": "text", "text": "q2"}])
        );
        assert!(alternates(&roles(&work, &out)));
        // A note never joins what the engine does not rewrite: here the latest answer ("done"),
        // so the assistant summary of the tool work joins q1 instead.
        let short = entries(json!([
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
            {"role": "assistant", "content": "done"}
        ]));
        let short_st = Structure::analyze(Format::Anthropic, &short, 0);
        let out = fit(Format::Anthropic, &short, &short_st, vec![note(Role::Assistant, 1..3)]);
        assert_eq!(out[0].span, 0..3);
        assert!(alternates(&roles(&short, &out)));
        // Other formats are left alone.
        assert_eq!(fit(Format::OpenAi, &work, &st, vec![note(Role::User, 1..3)])[0].span, 1..3);
    }

    #[test]
    fn a_message_shrunk_in_place_stays_where_it_was_even_between_user_turns() {
        // The host sent two user messages in a row; shrinking the first in place changes
        // neither its role nor its neighbours, so it is not joined to the second (a joined
        // message would stand for two originals behind an offload that holds one).
        let work = entries(json!([
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "a long note"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2"}
        ]));
        let st = Structure::analyze(Format::Anthropic, &work, 0);
        let shrunk = Format::Anthropic.rebuild(&work[2].msg, vec![Block::Text("a lo...".into())], Synthetic::copy_of("TEST", "u"));
        let edit = Edit { span: 2..3, replacement: vec![shrunk], offload: Some("u".into()), usage: (None, None), ms: None };
        let out = fit(Format::Anthropic, &work, &st, vec![edit]);
        assert_eq!(out[0].span, 2..3);
        assert_eq!(out[0].replacement[0].wire["content"], json!("a lo..."));
        assert!(out[0].replacement[0].synthetic.as_ref().unwrap().copy);
    }
}
