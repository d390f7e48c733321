//! Rent against rewrite: when stubbing stale tool results pays.
//!
//! Every token in the context pays rent on every model call: the provider's cache serves it at
//! `cacheRead` (a tenth of the input price). An edit stops the rent of what it removes, but
//! the provider then re-reads everything after the edit at `cacheWrite` once (the rewrite).
//! Whether an edit pays depends on how many calls are still to come, which nobody knows. This
//! is the ski-rental problem, and its answer is to pay rent until the rent paid equals the
//! price of buying, then buy: whatever comes next, that never costs more than twice the best
//! choice made in hindsight, where stubbing at once or never can cost many times more.
//!
//! Here the rent is that of the **stale** tool results: results the model has read (an
//! assistant message follows them) and that [`KEEP_RESULTS`] newer results have since
//! followed, as much as a stub would remove of each, at `cacheRead` per call since each became
//! stale. The rewrite is `cacheWrite − cacheRead` on every token from the first stubbed result
//! to the end of what the previous request sent (what came since is written anyway). Of every
//! batch "each stale result from index `p` on", the one whose rent exceeds its rewrite by the
//! most is stubbed, in one rewrite; none while no batch's rent has reached its rewrite. A batch
//! late in the list has a short rewrite, so it comes due soon; one far back waits until enough
//! rent has been paid to re-send everything after it. Before the window's own pass the stale
//! results are replaced anyway, so a batch is due only when the calls left before that pass, at
//! the recent pace, would pay its rewrite back with a margin ([`HORIZON_MARGIN`]).
//!
//! Everything here is a function of the working list: the calls since a result became stale
//! are the model turns after the result that made it stale. Nothing is kept between passes, so
//! a memory restored from its state, or rebuilt by a stateless `compress()`, decides the same.

use crate::entry::Entry;
use crate::message::{Block, Role};
use crate::options::prices::Prices;
use crate::structure::{Protection, Structure};

/// The newest tool results that are never stubbed (Anthropic's context editing keeps 3): the
/// model is likely still working from them.
pub(crate) const KEEP_RESULTS: usize = 4;

/// What a stub of a result costs in tokens, about: its first line, the notice, the marker and
/// a short identifier index.
pub(crate) const STUB_TOKENS: u64 = 120;

/// A stub must save at least this many tokens, or it is not worth the result's detail.
const MIN_SAVED: u64 = 150;

/// What a stub respects ([`Protection::STUB`]).
pub(crate) const MASK: Protection = Protection::STUB;

/// A tool result a stub may replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stale {
    /// Its index in the working list.
    pub index: usize,
    /// The tokens a stub removes, about.
    pub saves: u64,
    /// The model calls it has been stale for.
    pub calls: u64,
}

/// The batch that pays now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Due {
    /// The first index of the batch: every stale result from here on is stubbed.
    pub from: usize,
    /// The rent its results have paid since they became stale, in input-price tokens.
    pub rent: f64,
    /// What re-sending the suffix after the first stub costs, in input-price tokens.
    pub rewrite: f64,
}

/// What the rent and the trigger check read of a working entry: a few facts of its message
/// beside its count and pin. A load that leaves a page of the working list unparsed reads them
/// from the state's head (`engine/deferred.rs`), so a turn without a pass decides from them
/// alone; a parsed entry gives them ([`Fact::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fact {
    pub role: Role,
    pub tokens: u32,
    pub pinned: bool,
    /// Its tool-result blocks.
    pub results: u32,
    /// A stub of this rung replaced it already.
    pub stub: bool,
    /// It makes tool calls.
    pub calls: bool,
    /// A real user turn ([`crate::message::Message::is_real_user`]).
    pub real_user: bool,
}

impl Fact {
    /// The facts of `e`.
    pub fn of(e: &Entry) -> Fact {
        let m = &e.msg;
        Fact {
            role: m.role,
            tokens: e.tokens,
            pinned: e.pinned,
            results: m.blocks.iter().filter(|b| matches!(b, Block::ToolResult { .. })).count() as u32,
            stub: m.synthetic.as_ref().is_some_and(|s| s.kind == super::Strategy::ToolResultStub.event_type()),
            calls: m.has_calls(),
            real_user: m.is_real_user(),
        }
    }

    /// The facts of every entry of `work`.
    pub fn all(work: &[Entry]) -> Vec<Fact> {
        work.iter().map(Fact::of).collect()
    }
}

/// Whether message `i` of `work` starts a model turn (an assistant message after anything
/// else): each is one model call.
fn starts_call(work: &[Fact], i: usize) -> bool {
    work[i].role == Role::Assistant && (i == 0 || work[i - 1].role != Role::Assistant)
}

/// Model calls until the request reaches `trigger` tokens from `tokens`, at the pace of the last
/// [`PACE_CALLS`] calls of `work` (the tokens they added each); unbounded when nothing grows.
pub(crate) fn horizon(work: &[Fact], tokens: u64, trigger: u64) -> f64 {
    let starts: Vec<usize> = (0..work.len()).rev().filter(|&i| starts_call(work, i)).take(PACE_CALLS + 1).collect();
    let (Some(&last), Some(&first)) = (starts.first(), starts.last()) else { return f64::INFINITY };
    let calls = starts.len() - 1;
    let added: u64 = work[first..last].iter().map(|e| e.tokens as u64).sum();
    if calls == 0 || added == 0 {
        return f64::INFINITY;
    }
    trigger.saturating_sub(tokens) as f64 / (added as f64 / calls as f64)
}

/// The recent calls whose growth predicts the next ones.
const PACE_CALLS: usize = 8;

/// How many times over the rent to be paid before the window's pass must pay the rewrite. The
/// calls left are a guess from the last few calls' pace, and results come in bursts that bring
/// the pass sooner: measured on the benchmark's traces at a 32k window, where the pass is never
/// far, a margin of three cost 1.5% less than none; at 128k and above it changed nothing.
const HORIZON_MARGIN: f64 = 3.0;

/// The last completed round of `work`, as the analysis finds it from the same facts
/// ([`Structure`]'s rounds: a real user turn starts one unless tool work before it is still
/// unread), so that the quick check of [`stale`] leaves out what protects it. `responses`: the
/// list is the Responses API's, whose model items one after another are one response.
pub(crate) fn last_round(work: &[Fact], responses: bool) -> Option<std::ops::Range<usize>> {
    let mut starts = Vec::new();
    let mut unread = false;
    for (i, f) in work.iter().enumerate() {
        if f.role == Role::Assistant {
            let same_response = responses && i > 0 && work[i - 1].role == Role::Assistant;
            unread = f.calls || (same_response && unread);
        } else if f.results > 0 || f.role == Role::Tool {
            unread = true;
        } else if f.real_user && !unread {
            starts.push(i);
        }
    }
    let current = match starts.last() {
        Some(&s) => s,
        None => work.iter().position(|f| f.role != Role::System).unwrap_or(work.len()),
    };
    let k = starts.iter().rposition(|&s| s < current)?;
    Some(starts[k]..current)
}

/// The model calls `work` records: its model turns.
pub(crate) fn calls(work: &[Fact]) -> usize {
    (0..work.len()).filter(|&i| starts_call(work, i)).count()
}

/// The tool results of `work` that have gone stale, oldest first. Without the analysis of `work`
/// (`st`), a superset of them, from what each entry says alone (read: a model turn follows it;
/// not pinned; not in `kept`, the last completed round when it is protected: see
/// [`last_round`]), found without allocating an analysis: when no batch of the superset is due
/// ([`due`] asks less of a larger set), none of the stale results' is, so the trigger check
/// analyses the list only when a batch may be due.
pub(crate) fn stale(work: &[Fact], st: Option<&Structure>, kept: Option<std::ops::Range<usize>>) -> Vec<Stale> {
    let n = work.len();
    let last_turn = (0..n).rev().find(|&i| starts_call(work, i)).unwrap_or(0);
    let free = |i: usize| match st {
        Some(st) => st.free(i, MASK),
        None => i < last_turn && !work[i].pinned && !kept.as_ref().is_some_and(|k| k.contains(&i)),
    };
    // Model calls after each index, and the positions of result blocks after it, newest last.
    let mut calls_after = vec![0u64; n + 1];
    for i in (0..n).rev() {
        calls_after[i] = calls_after[i + 1] + u64::from(i + 1 < n && starts_call(work, i + 1));
    }
    let mut later: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for i in (0..n).rev() {
        let results = work[i].results as usize;
        if results == 0 {
            continue;
        }
        // The result that made this one stale: the KEEP_RESULTS-th after it.
        if later.len() >= KEEP_RESULTS && !work[i].stub {
            let made_stale = later[later.len() - KEEP_RESULTS];
            let tokens = work[i].tokens as u64;
            if tokens >= STUB_TOKENS + MIN_SAVED && free(i) {
                out.push(Stale { index: i, saves: tokens - STUB_TOKENS, calls: calls_after[made_stale] });
            }
        }
        later.extend(std::iter::repeat_n(i, results));
    }
    out.reverse();
    out
}

/// The batch of `stale` (from [`stale`]) to stub now, if one pays: the one whose rent exceeds
/// its rewrite by the most. With a cold cache (`cold`) nothing is cached to rewrite, so every
/// stale result is due.
pub(crate) fn due(work: &[Fact], stale: &[Stale], prices: &Prices, cold: bool, horizon: f64) -> Option<Due> {
    let first = stale.first()?;
    if prices.cache_read <= 0.0 {
        return None; // nothing is saved by removing what costs nothing to keep
    }
    if cold {
        return Some(Due { from: first.index, rent: 0.0, rewrite: 0.0 });
    }
    // What the previous request sent ends before the latest model turn; `before[i]` is the
    // tokens of the messages before `i`.
    let sent_end = (0..work.len()).rev().find(|&i| starts_call(work, i)).unwrap_or(work.len());
    let mut before = Vec::with_capacity(work.len() + 1);
    before.push(0u64);
    for e in work {
        before.push(before.last().copied().unwrap_or(0) + e.tokens as u64);
    }
    // Rent and savings of each batch "from stale[k] on", summed from the newest.
    let (mut rent, mut saves) = (0.0, 0u64);
    let mut best: Option<Due> = None;
    for s in stale.iter().rev() {
        rent += prices.cache_read * (s.saves * s.calls) as f64;
        saves += s.saves;
        let suffix = before[sent_end].saturating_sub(before[s.index.min(sent_end)]);
        let rewrite = prices.rewrite() * suffix.saturating_sub(saves) as f64;
        // The rent paid so far predicts what is to come, but not past the window's pass, which
        // replaces the stale results anyway.
        let ahead = prices.cache_read * saves as f64 * horizon;
        if rent >= rewrite && ahead >= HORIZON_MARGIN * rewrite && best.is_none_or(|b| rent - rewrite > b.rent - b.rewrite) {
            best = Some(Due { from: s.index, rent, rewrite });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::options::Config;
    use crate::structure::Rules;
    use serde_json::json;
    use std::rc::Rc;

    /// A task, then `n` exchanges each answered by one result of `chars` characters (about
    /// `chars / 4` tokens), each followed by the model's next call.
    fn session(n: usize, chars: usize) -> Vec<Entry> {
        let mut wire = vec![json!({"role": "user", "content": "fix the build"})];
        for k in 0..n {
            wire.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{k}"), "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            wire.push(json!({"role": "tool", "tool_call_id": format!("c{k}"), "content": "x".repeat(chars)}));
        }
        wire.push(json!({"role": "assistant", "content": "done"}));
        wire.iter()
            .map(|v| {
                let m = Format::OpenAi.parse(0, v).unwrap();
                let tokens = (m.payload_chars() / 4 + 4) as u32;
                Entry::new(Rc::new(m), tokens)
            })
            .collect()
    }

    fn analyse(work: &[Entry]) -> Structure {
        let config = Config { protect_last_round: false, protect_latest_answer: false, ..Config::default() };
        Structure::analyze_with(work, &Rules::of(&config), &|_| false)
    }

    #[test]
    fn results_go_stale_after_the_newest_few_and_age_by_calls() {
        let entries = session(10, 4_000);
        let st = analyse(&entries);
        let work = Fact::all(&entries);
        let stale = stale(&work, Some(&st), None);
        assert_eq!(stale.len(), 10 - KEEP_RESULTS, "the newest {KEEP_RESULTS} results stay fresh");
        // The first result went stale when the fifth came; six model calls followed that.
        assert_eq!((stale[0].index, stale[0].calls), (2, 6));
        assert!(stale.windows(2).all(|w| w[0].calls == w[1].calls + 1), "each later one has been stale one call less");
        assert!(stale.iter().all(|s| s.saves == 1_004 - STUB_TOKENS));
        // What the entries alone say is a superset, whatever the protections: the trigger's
        // first, cheap check never misses a batch.
        let quick = super::stale(&work, None, None);
        assert!(stale.iter().all(|s| quick.contains(s)));
        let config = Config::default();
        let protected = Structure::analyze_with(&entries, &Rules::of(&config), &|i| i == 4);
        let fewer = super::stale(&work, Some(&protected), None);
        assert!(fewer.len() < stale.len() && fewer.iter().all(|s| quick.contains(s)), "{fewer:?}");
    }

    #[test]
    fn the_quick_check_leaves_out_the_protected_last_round_and_stays_a_superset() {
        // Two rounds of tool work: the first completed, the second the current one.
        let mut entries = session(10, 4_000);
        let mut wire = vec![json!({"role": "user", "content": "and now the tests"})];
        for k in 0..6 {
            wire.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("d{k}"), "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            wire.push(json!({"role": "tool", "tool_call_id": format!("d{k}"), "content": "y".repeat(4_000)}));
        }
        entries.extend(wire.iter().map(|v| Entry::new(Rc::new(Format::OpenAi.parse(0, v).unwrap()), 1_004)));
        let work = Fact::all(&entries);
        let config = Config::default();
        let st = Structure::analyze_with(&entries, &Rules::of(&config), &|_| false);
        let kept = last_round(&work, false);
        assert_eq!(kept, st.last_round, "the facts find the analysis's last round");
        let real = stale(&work, Some(&st), None);
        let quick = stale(&work, None, kept.clone());
        assert!(real.iter().all(|s| quick.contains(s)), "a superset still");
        assert!(quick.iter().all(|s| !kept.as_ref().unwrap().contains(&s.index)), "{quick:?}");
        assert!(stale(&work, None, None).len() > quick.len(), "the last round's results are left out");
        // The Responses API's items of one response carry its unread calls.
        assert_eq!(last_round(&work, true), st.last_round);
    }

    #[test]
    fn a_batch_is_due_once_its_rent_reaches_its_rewrite() {
        let anthropic = Prices::of(Format::Anthropic);
        // Few calls since the results went stale: the rent is below the rewrite.
        let entries = session(8, 4_000);
        let (st, work) = (analyse(&entries), Fact::all(&entries));
        assert_eq!(due(&work, &stale(&work, Some(&st), None), &anthropic, false, f64::INFINITY), None);
        // A cold cache rewrites nothing: due at once, from the oldest.
        assert_eq!(due(&work, &stale(&work, Some(&st), None), &anthropic, true, f64::INFINITY).map(|d| d.from), Some(2));
        // Many calls later the rent has paid for it.
        let entries = session(40, 4_000);
        let (st, work) = (analyse(&entries), Fact::all(&entries));
        let d = due(&work, &stale(&work, Some(&st), None), &anthropic, false, f64::INFINITY).expect("due");
        assert!(d.rent >= d.rewrite && d.rewrite > 0.0, "{d:?}");
        // A cheaper write makes it due sooner; a free read never pays rent.
        let free_read = Prices { cache_read: 0.0, ..anthropic };
        assert_eq!(due(&work, &stale(&work, Some(&st), None), &free_read, false, f64::INFINITY), None);
    }
}
