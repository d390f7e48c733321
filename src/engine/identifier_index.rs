//! The identifier index a replacement carries: the exact identifiers of what it replaced.
//!
//! A summary keeps what the summarizer chose to keep, a preview the first characters, a notice
//! a line per request; the agent's next step often needs one exact string from the rest: the
//! path it edited, the test that failed, the error code, the commit, the issue number. Trusting
//! the summarizer with them loses most (a neighbouring project measured needle recall rise from
//! 23% to 60% once identifiers were extracted mechanically). So every replacement that offloads
//! something ends with a short list of the identifiers its span held, extracted here, never by
//! the host's model, and chosen by how likely the agent needs them again:
//!
//! - what the replacement itself shows, or a message the step leaves in place, is in view
//!   already and is left out;
//! - what the user wrote, what a tool call named (its arguments), and what several messages of
//!   the span repeat rank first, then what came late in the span;
//! - paths, file names and URLs weigh more than symbols, symbols more than bare numbers.
//!
//! The list is bounded by `identifierIndexChars` and by half of what the replacement frees,
//! so a small cut is not eaten by its own index.
//!
//! The identifiers themselves are found by [`crate::identifiers`].

use std::collections::HashMap;

use crate::entry::Entry;
use crate::format::Format;
use crate::hashed::Keyed;
use crate::identifiers::{holds, identifiers_of, unlisted, Kind, Occurrence, Visible, MIN_LEN, OPENING};
use crate::message::{offload_marker, Block, Message, Role};
use crate::strategy::Edit;
use crate::tokens::TokenCounter;

/// An index shorter than this is not worth writing.
const MIN_BUDGET: usize = 48;

/// The share of what a replacement frees that its index may take back: half. Measured on the
/// benchmark's traces at a 200k window: an eighth kept 94.5% of the old later-used identifiers
/// in view, a quarter 97.6%, a half 99.4%, each step for about 1% more tokens (the cheapest
/// retention there is: a name costs a few tokens, a reload a model call).
const SHARE_OF_FREED: usize = 2;

/// What the ranking knows of one identifier of a span.
struct Seen {
    kind: Kind,
    first: usize,
    last: usize,
    messages: usize,
    by_user: bool,
    in_call: bool,
}

/// The identifiers of `span` (messages in order) ranked, best first, leaving out what `visible`
/// and `shown` hold.
fn ranked<'m>(span: &'m [Entry], visible: &Visible, shown: &Visible) -> Vec<&'m str> {
    // Keyed by each identifier's hash, in order of first sight.
    let mut order: Vec<(&'m str, Seen)> = Vec::new();
    let mut at: HashMap<u64, usize, Keyed> = HashMap::default();
    for (k, e) in span.iter().enumerate() {
        let m = &*e.msg;
        let by_user = m.role == Role::User && m.is_real_user();
        for o in e.ids.of(m) {
            // Seen before in the span (so not in view), or new to it.
            if let Some(&i) = at.get(&o.key) {
                let s = &mut order[i].1;
                s.messages += 1;
                s.last = k;
                s.by_user |= by_user;
                s.in_call |= o.in_call;
            } else if !visible.contains(&o.key) && !shown.contains(&o.key) {
                at.insert(o.key, order.len());
                order.push((o.text(m), Seen { kind: o.kind, first: k, last: k, messages: 1, by_user, in_call: o.in_call }));
            }
        }
    }
    let n = span.len().max(1) as f64;
    let score = |s: &Seen| {
        s.kind.weight()
            + (s.messages.min(4) as f64 - 1.0) * 0.75
            + if s.by_user { 2.5 } else { 0.0 }
            + if s.in_call { 1.5 } else { 0.0 }
            + (s.last as f64 + 1.0) / n
    };
    let mut scored: Vec<(f64, usize, &'m str)> = order.iter().map(|(w, s)| (score(s), s.first, *w)).collect();
    crate::sort::by_key(&mut scored, |&(score, first, _)| crate::sort::pair(!crate::sort::float_key(score), first as u64));
    scored.into_iter().map(|(_, _, w)| w).collect()
}

/// The index line for `span`, at most `budget` characters, or `None` when nothing is worth it;
/// what `visible` or `shown` hold is in view and left out.
fn line(span: &[Entry], visible: &Visible, shown: &Visible, budget: usize) -> Option<String> {
    if budget < MIN_BUDGET {
        return None;
    }
    let room = budget - OPENING.len() - 2;
    let mut chosen: Vec<&str> = Vec::new();
    let mut used = 0;
    for w in ranked(span, visible, shown) {
        let cost = w.len() + if chosen.is_empty() { 0 } else { 2 };
        if used + cost > room {
            if room - used < MIN_LEN + 2 {
                break;
            }
            continue;
        }
        // After the fit: most of a long ranking no longer fits, and these are the costly tests.
        // An item without a letter or digit names nothing (the scan gives none: a guard).
        if !w.chars().any(char::is_alphanumeric) || unlisted(w) || chosen.iter().any(|c| holds(c.as_bytes(), w.as_bytes())) {
            continue;
        }
        used += cost;
        chosen.push(w);
    }
    (!chosen.is_empty()).then(|| format!("{OPENING}{}]", chosen.join(", ")))
}

/// Adds its index to each edit that offloads: before its marker, in the block that holds it.
/// `work` is the list the edits apply to; what stays of it outside every edit, and what the
/// replacement shows, is in view and left out of the index.
pub(crate) fn annotate(format: Format, counter: &TokenCounter, work: &[Entry], edits: Vec<Edit>, limit: usize) -> Vec<Edit> {
    if limit == 0 || edits.iter().all(|e| e.offload.is_none()) {
        return edits;
    }
    // In bytes: a bound on the characters, without counting them.
    let budget = |e: &Edit| {
        let before: usize = work[e.span.clone()].iter().map(|x| x.msg.payload_len()).sum();
        let after: usize = e.replacement.iter().map(|m| m.payload_len()).sum();
        limit.min(before.saturating_sub(after) / SHARE_OF_FREED)
    };
    if edits.iter().all(|e| e.offload.is_none() || budget(e) < MIN_BUDGET) {
        return edits;
    }
    let mut outside = vec![true; work.len()];
    for e in &edits {
        for i in e.span.clone() {
            outside[i] = false;
        }
    }
    let kept = || work.iter().zip(&outside).filter(|(_, o)| **o).map(|(e, _)| e.ids.of(&e.msg));
    let mut visible = Visible::with_capacity_and_hasher(kept().map(<[Occurrence]>::len).sum(), Default::default());
    for ids in kept() {
        visible.extend(ids.iter().map(|o| o.key));
    }
    edits
        .into_iter()
        .map(|mut e| {
            let Some(uuid) = e.offload.clone() else { return e };
            let budget = budget(&e);
            if budget < MIN_BUDGET {
                return e;
            }
            let mut shown = Visible::default();
            for m in &e.replacement {
                identifiers_of(m, &mut shown);
            }
            let Some(index) = line(&work[e.span.clone()], &visible, &shown, budget) else { return e };
            let marker = offload_marker(&uuid);
            for m in &mut e.replacement {
                if let Some(rebuilt) = with_index(format, counter, m, &marker, &index) {
                    *m = rebuilt;
                    break;
                }
            }
            e
        })
        .collect()
}

/// `m` with `index` on its own line before `marker`, in the block that holds the marker.
/// A cut text keeps its cut (the counter is told: see [`TokenCounter::recut`]).
fn with_index(format: Format, counter: &TokenCounter, m: &Message, marker: &str, index: &str) -> Option<Message> {
    let synthetic = m.synthetic.clone()?;
    let mut found = false;
    let blocks = m
        .blocks
        .iter()
        .map(|b| {
            let insert = |t: &str| -> Option<String> {
                let at = t.find(marker)?;
                let sep = if at == 0 || t[..at].ends_with('\n') { "" } else { "\n" };
                let text = format!("{}{sep}{index}\n{}", &t[..at], &t[at..]);
                counter.recut(t, &text);
                Some(text)
            };
            match b {
                Block::Text(t) if !found => match insert(t) {
                    Some(t) => {
                        found = true;
                        Block::Text(t)
                    }
                    None => b.clone(),
                },
                Block::ToolResult { call_id, content, is_error } if !found => match insert(content) {
                    Some(c) => {
                        found = true;
                        Block::ToolResult { call_id: call_id.clone(), content: c, is_error: *is_error }
                    }
                    None => b.clone(),
                },
                other => other.clone(),
            }
        })
        .collect();
    found.then(|| format.rebuild(m, blocks, synthetic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identifiers::{key, scan};

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        scan(text, false, |w, _| out.push(w.to_string()));
        out
    }

    fn entry(m: serde_json::Value) -> Entry {
        Entry::new(std::rc::Rc::new(Format::OpenAi.parse(0, &m).unwrap()), 1)
    }

    #[test]
    fn lines_split_at_single_colons_and_drop_uuids_and_markers() {
        assert_eq!(words("tests/test_x.py:120: AssertionError"), ["tests/test_x.py", "AssertionError"]);
        assert_eq!(words("std::collections::HashMap"), ["std::collections::HashMap"]);
        assert_eq!(words(r"C:\temp\build.log"), [r"C:\temp\build.log"]);
        // Found by the scan (they can be in view), never listed.
        let uuid = "0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a";
        let own = format!("{} and id {uuid} and s/{uuid}; call context_reload with working_context_offload_uuid", offload_marker(uuid));
        assert!(!words(&own).is_empty() && words(&own).iter().all(|w| unlisted(w)), "{:?}", words(&own));
        let span = [entry(serde_json::json!({"role": "user", "content": format!("{own}; fix parse_args")}))];
        assert_eq!(line(&span, &Visible::default(), &Visible::default(), 1000).unwrap(), format!("{OPENING}parse_args]"));
        // Non-ASCII text around an identifier.
        assert_eq!(words("voir «parse_args» — fichier café/main.rs"), ["parse_args", "café/main.rs"]);
    }

    #[test]
    fn the_line_ranks_what_the_user_and_tool_calls_named_and_leaves_out_what_is_visible() {
        let span = vec![
            entry(serde_json::json!({"role": "user", "content": "Fix the bug in handle_request in server/app.py"})),
            entry(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": "read_file", "arguments": "{\"path\": \"server/routes.py\"}"}}]})),
            entry(
                serde_json::json!({"role": "tool", "tool_call_id": "c", "content": "def list_users(): ... 40412 rows; see helper_one, helper_two"}),
            ),
        ];
        let visible: Visible = ["helper_two"].iter().map(|w| key(w)).collect();
        let none = Visible::default();
        let full = line(&span, &visible, &none, 1000).unwrap();
        assert!(full.starts_with(OPENING) && full.ends_with(']'));
        let order: Vec<&str> = full[OPENING.len()..full.len() - 1].split(", ").collect();
        assert_eq!(&order[..3], ["server/app.py", "handle_request", "server/routes.py"], "{full}");
        assert!(!order.contains(&"helper_two") && order.contains(&"helper_one"), "visible elsewhere: {full}");
        assert!(!order.contains(&"read_file"), "a tool's name is no identifier: {full}");
        assert_eq!(order.last(), Some(&"40412"), "bare numbers last: {full}");
        // Bounded: the best ones that fit, and nothing under the minimum budget.
        let short = line(&span, &visible, &none, 70).unwrap();
        assert!(short.len() <= 70 && short.contains("server/app.py"), "{short}");
        assert!(line(&span, &visible, &none, MIN_BUDGET - 1).is_none());
        // Deterministic.
        assert_eq!(line(&span, &visible, &none, 1000).unwrap(), full);
    }
}
