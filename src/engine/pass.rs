//! The compression pass, as a value whose stages run in the order of this file:
//!
//! 1. **snapshot**: the trigger check, from the state's running totals
//!    ([`Parts::trigger_check`]): without pressure the pass ends here, having copied nothing.
//!    Otherwise the working list and its generation are copied and the target is set
//!    ([`Parts::pass_target`]).
//! 2. **analyse** and 3. **plan**: the ladder runs on the copy, cheapest rung first, each rung
//!    seeing the list as the rungs before it left it: the list is analysed ([`Structure`]), the
//!    rung proposes edits (a summarizing rung asks the host's summarizer for its text, which it
//!    needs to measure what its edit frees), edits that free nothing are dropped, the rest are
//!    applied to the copy and recorded in the [`PassLog`]. This is where a cost model chooses
//!    rungs and spans; today the plan takes rungs greedily until the list is under the target.
//! 4. **host calls**: the offloads of what the plan replaced are written to the store.
//! 5. **validate**: the format's validator checks the result: a pass never adds a problem the
//!    snapshot did not have.
//! 6. **commit**: the state takes the result all at once ([`State::commit`]); messages added
//!    while the pass awaited the host stay after it.
//!
//! A failure in any stage leaves the state as it was: no event is recorded and the offloads
//! written so far are deleted again. The dry run ([`Mode::DryRun`], what
//! [`super::AutoContextMemory::prepare`] runs) is the same pass stopped after the plan: it
//! writes nothing, changes nothing, and keeps the summarizer's answers for the real pass.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use futures_util::future::join_all;
use futures_util::FutureExt;
use serde_json::Value;

use super::pass_log::PassLog;
use super::results::{CompressResult, Target, FAILURE_EVENT};
use super::state::{count_turns, request_tokens, sum_tokens, Commit, State};
use crate::engine::events::CompressionEvent;
use crate::engine::offload::Expansion;
use crate::entry::Entry;
use crate::error::{Error, ErrorCode, Result};
use crate::format::Format;
use crate::host::{Clock, DynSummarizer, NoSummarizer, OffloadStore, Summarizer};
use crate::message::{Block, Role};
use crate::options::Config;
use crate::strategy::llm::Failure;
use crate::strategy::{rent, Ctx, Edit, Pressure, Strategy};
use crate::structure::{Rules, Structure};
use crate::summarize::prepared::{Cache, Summaries};
use crate::tokens::TokenCounter;

/// Sweeps of the ladder a pass may make before it gives up (the loop guard).
const MAX_SWEEPS: usize = 4;

/// What a pass uses of the memory: the options, the host's parts, the state and the prepared
/// summaries.
pub(crate) struct Parts<'a, S, O> {
    pub config: &'a Config,
    pub counter: &'a TokenCounter,
    pub summarizer: Option<&'a S>,
    pub store: &'a O,
    pub ladder: &'a [Strategy],
    pub clock: &'a dyn Clock,
    pub state: &'a RefCell<State>,
    pub prepared: &'a Rc<RefCell<Cache>>,
}

impl<S, O> Clone for Parts<'_, S, O> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S, O> Copy for Parts<'_, S, O> {}

impl<S, O> Parts<'_, S, O> {
    /// The store key of an offload.
    pub fn key(&self, uuid: &str) -> String {
        format!("{}/{}", self.config.session_id, uuid)
    }

    /// The trigger check, from the state's running totals: the result of a pass that has
    /// nothing to do, or `None` when a pass must run (over the target, `msgThreshold` or
    /// `maxContextTurns`, a new tool result to truncate, stale results whose rent has paid for
    /// their stubs, or a cold cache worth compacting deep). `cold`: nothing of the next request
    /// is in the provider's cache ([`Parts::cold`]).
    ///
    /// While pages of the working list are left unparsed (`deferred.rs`), it reads their facts;
    /// when those say a batch of stale results may be due, which only the analysis of the list
    /// settles, it says a pass must run, and the pass parses them and checks again.
    pub fn trigger_check(&self, forced: Option<u64>, cold: bool) -> Option<CompressResult> {
        let state = self.state.borrow();
        let facts = &state.facts;
        let tokens = state.request_tokens(self.config);
        let target = forced.map_or_else(|| self.pass_target(tokens, cold, facts), Target::exactly);
        let count = state.len();
        let turns = self.turn_pressure(state.turns);
        let threshold = self.config.msg_threshold as usize;
        let parsed = state.deferred.is_none().then_some(&state.working[..]);
        let pressure = tokens >= target.aim
            || state.count_pressure(threshold)
            || turns
            || self.fresh_oversized(&state.working)
            || forced.is_none() && self.rent_due(facts, parsed, cold);
        (!pressure).then(|| {
            let mut idle = CompressResult::unchanged(tokens, count, target);
            if count >= threshold {
                // A pass stopped at this count in this turn already: say so again.
                idle.under_target = false;
                idle.exhausted = true;
                idle.reason = state.count_stuck.as_ref().map(|(_, why)| why.clone());
            }
            idle
        })
    }

    /// Whether nothing of the next request is in the provider's cache now (see
    /// [`super::cache`]): every edit is then free of a rewrite.
    pub fn cold(&self) -> bool {
        self.state.borrow().cache.cold(self.clock.now_ms(), self.config.prices().cache_ttl_ms)
    }

    /// Whether the ladder stubs stale tool results and a batch of them has paid for its rewrite
    /// in rent ([`rent`]): `facts` are those of the working list, `work` its entries when they
    /// are all parsed (without them, a batch that may be due counts as due).
    pub fn rent_due(&self, facts: &[rent::Fact], work: Option<&[Entry]>, cold: bool) -> bool {
        if !self.ladder.contains(&Strategy::ToolResultStub) {
            return false;
        }
        let (trigger, tokens) = {
            let state = self.state.borrow();
            (state.calibration.trigger(self.config), state.request_tokens(self.config))
        };
        let horizon = rent::horizon(facts, tokens, trigger);
        let prices = self.config.prices();
        // The entries alone first: the analysis only when a batch of their superset is due.
        let kept = self.config.protect_last_round.then(|| rent::last_round(facts, self.config.format == Format::OpenAiResponses)).flatten();
        if rent::due(facts, &rent::stale(facts, None, kept), &prices, cold, horizon).is_none() {
            return false;
        }
        let Some(work) = work else { return true };
        let structure = Structure::analyze_with(work, &Rules::of(self.config), &|i| work[i].pinned);
        rent::due(facts, &rent::stale(facts, Some(&structure), None), &prices, cold, horizon).is_some()
    }

    /// Whether, with a cold cache, compacting `tokens` down to the low-water mark `low` pays
    /// before the trigger: the provider writes the whole request anyway, so each token a
    /// summary removes saves its write price now and its read price on every later call (as
    /// many as the model calls so far, the session's own prediction), against the summarizer
    /// reading it and writing about a tenth of it. Only with a summarizer, and only for at
    /// least `minCompressionTokenThreshold` tokens.
    fn deep_pays(&self, tokens: u64, low: u64, work: &[rent::Fact]) -> bool {
        let freed = tokens.saturating_sub(low);
        if self.summarizer.is_none() || freed < self.config.min_compression_token_threshold as u64 {
            return false;
        }
        let p = self.config.prices();
        let calls = rent::calls(work) as f64;
        let freed = freed as f64;
        (p.cache_write + p.cache_read * calls) * freed >= p.summarize_input * freed + p.summarize_output * freed / 10.0
    }

    /// Whether a tool result over `toolResultLimit` came in since the model last answered and the
    /// ladder truncates: it is truncated before it is first sent, at the end of the request, where
    /// the edit re-bills no cached prefix (later, every pass's first edit would be before it).
    /// Results truncation leaves whole (of `pinnedTools`, of `context_reload`) call for no pass.
    pub fn fresh_oversized(&self, work: &[Entry]) -> bool {
        let limit = self.config.tool_result_limit as usize;
        if !self.ladder.contains(&Strategy::ToolResultTruncate) {
            return false;
        }
        let fresh = work.iter().rev().take_while(|e| e.msg.role != Role::Assistant).count();
        let spared = |id: &str| {
            work[..work.len() - fresh].iter().rev().take_while(|e| e.msg.role == Role::Assistant).any(|e| {
                e.msg.blocks.iter().any(|b| {
                    matches!(b, Block::ToolCall { id: call, name, .. }
                        if call == id && (name == crate::format::RELOAD_TOOL_NAME || self.config.pinned_tools.contains(name)))
                })
            })
        };
        work[work.len() - fresh..].iter().any(|e| {
            e.msg.synthetic.is_none()
                && e.msg.blocks.iter().any(
                    |b| matches!(b, Block::ToolResult { call_id, content, .. } if crate::strategy::worth_cutting(content, limit) && !spared(call_id)),
                )
        })
    }

    /// Whether the ladder trims turns and a list of `turns` real user turns has more than
    /// `maxContextTurns` of them.
    pub fn turn_pressure(&self, turns: usize) -> bool {
        self.ladder.contains(&Strategy::TurnTrim) && self.config.counted_turns(turns) > self.config.max_context_turns as usize
    }

    /// The window (`maxToken`) in the estimate's units (calibrated).
    pub fn window(&self) -> u64 {
        self.state.borrow().calibration.estimate_of(self.config.max_token)
    }

    /// The target of a pass that starts at `tokens`, in the estimate's units (calibrated). A pass
    /// that tokens trigger aims at the low-water mark `maxToken × targetRatio`, lowered so it
    /// frees at least `minFreedTokens`, and must end below the trigger `maxToken × tokenRatio`;
    /// so does one below the trigger when the cache is cold (`cold`) and compacting `work`
    /// deep pays ([`Parts::deep_pays`]). Below the trigger otherwise (a pass of message-count,
    /// turn or rent pressure) both are the trigger.
    pub fn pass_target(&self, tokens: u64, cold: bool, work: &[rent::Fact]) -> Target {
        let calibration = self.state.borrow().calibration;
        let trigger = calibration.trigger(self.config);
        let low = calibration.estimate_of(self.config.target_tokens()).clamp(1, trigger);
        if tokens < trigger {
            if cold && self.ladder.iter().any(|s| s.uses_llm()) && self.deep_pays(tokens, low, work) {
                return Target { aim: low, bound: trigger };
            }
            return Target::exactly(trigger);
        }
        let min_freed = self.config.min_freed_tokens;
        let aim = if min_freed > 0 { low.min(tokens.saturating_sub(min_freed)).max(1) } else { low };
        Target { aim, bound: trigger }
    }
}

/// Whether a pass writes and commits, or only plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A pass: plan, write the offloads, validate, commit.
    Commit,
    /// A preparation: plan only; the summarizer's answers are kept for the next pass.
    DryRun,
}

/// An offload a pass writes: its text, where each of its messages lies there, and which of
/// the snapshot's messages it holds.
struct Payload {
    uuid: String,
    body: String,
    spans: Vec<std::ops::Range<usize>>,
    range: std::ops::Range<usize>,
}

/// One pass over a snapshot of the working list.
pub(crate) struct Pass<'a, S, O> {
    parts: Parts<'a, S, O>,
    mode: Mode,
    /// Nothing of the request is in the provider's cache: no edit costs a rewrite.
    cold: bool,
    /// Stale tool results are due for stubs (until the stub step has run).
    rent: bool,
    /// The working list when the pass started, and its generation.
    snapshot: Vec<Entry>,
    generation: u64,
    tokens_before: u64,
    target: Target,
    /// The plan's copy of the working list, edited step by step.
    work: Vec<Entry>,
    /// What each replacement of `work` stands for.
    log: PassLog,
    /// Summarize calls that failed.
    failures: RefCell<Vec<Failure>>,
    /// Prepared summaries and the pass's count of host calls.
    summaries: Summaries,
}

/// The offloads a pass has written, or started to write, as `(uuid, digest)`, until it commits
/// them or deletes them again. A pass dropped in between hands them to [`State::abandoned`].
struct Pending<'a> {
    state: &'a RefCell<State>,
    written: Vec<(String, String)>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.written.is_empty() {
            return;
        }
        if let Ok(mut state) = self.state.try_borrow_mut() {
            state.abandoned.extend(self.written.drain(..).map(|(u, _)| u));
        }
    }
}

/// Runs a pass towards `forced`, or towards [`Parts::pass_target`] when the trigger says so.
pub(crate) async fn compress<S: Summarizer, O: OffloadStore>(parts: Parts<'_, S, O>, forced: Option<u64>) -> Result<CompressResult> {
    delete_abandoned(parts).await;
    let cold = forced.is_none() && parts.cold();
    if let Some(idle) = parts.trigger_check(forced, cold) {
        return Ok(idle);
    }
    if parts.state.borrow().deferred.is_some() {
        // The pass needs every message: the pages a load left unparsed are read now, and the
        // check runs again on them.
        parts.state.borrow_mut().materialize(parts.config.format)?;
        if let Some(idle) = parts.trigger_check(forced, cold) {
            return Ok(idle);
        }
    }
    let rent = forced.is_none() && {
        let state = parts.state.borrow();
        parts.rent_due(&state.facts, Some(&state.working), cold)
    };
    let mut pass = Pass::snapshot(parts, Mode::Commit, cold, rent, |tokens, work| {
        forced.map_or_else(|| parts.pass_target(tokens, cold, &rent::Fact::all(work)), Target::exactly)
    });
    let mut result = pass.result();
    if !pass.under_pressure() {
        return Ok(result);
    }
    let planned = pass.plan().await;
    result.summarize_calls = pass.summaries.calls();
    result.prepared_used = pass.summaries.reused();
    planned?;
    pass.finish(result).await
}

/// Runs the dry run of a pass towards `target`: the plan only, keeping the summarizer's answers
/// and the cuts it chose for the next pass. Returns the calls made and the answers reused.
pub(crate) async fn dry_run<S: Summarizer, O: OffloadStore>(parts: Parts<'_, S, O>, target: Target) -> Result<(usize, usize)> {
    let mut pass = Pass::snapshot(parts, Mode::DryRun, false, false, |_, _| target);
    pass.plan().await?;
    parts.prepared.borrow_mut().set_hints(pass.summaries.take_hints());
    Ok((pass.summaries.calls(), pass.summaries.reused()))
}

impl<'a, S: Summarizer, O: OffloadStore> Pass<'a, S, O> {
    // ---- 1. snapshot -------------------------------------------------------------------------

    /// Copies the working list; `target` gives the pass's target from the request tokens and
    /// the list now. `cold`: nothing is in the provider's cache; `rent`: stale results are due
    /// for stubs.
    fn snapshot(parts: Parts<'a, S, O>, mode: Mode, cold: bool, rent: bool, target: impl FnOnce(u64, &[Entry]) -> Target) -> Self {
        let (snapshot, generation) = {
            let state = parts.state.borrow();
            (state.working.clone(), state.generation)
        };
        let tokens_before = request_tokens(sum_tokens(&snapshot), parts.config);
        let target = target(tokens_before, &snapshot);
        let summaries = match mode {
            Mode::Commit => Summaries::for_pass(parts.prepared.clone()),
            Mode::DryRun => Summaries::for_prepare(parts.prepared.clone()),
        };
        Pass {
            parts,
            mode,
            cold,
            rent,
            work: snapshot.clone(),
            log: PassLog::new(snapshot.len()),
            snapshot,
            generation,
            tokens_before,
            target,
            failures: RefCell::new(Vec::new()),
            summaries,
        }
    }

    /// The result of a pass that changed nothing.
    fn result(&self) -> CompressResult {
        CompressResult::unchanged(self.tokens_before, self.snapshot.len(), self.target)
    }

    /// Whether the snapshot is over the target, `msgThreshold` or `maxContextTurns`, has a new
    /// result to truncate, or stale results due for stubs.
    fn under_pressure(&self) -> bool {
        self.tokens_before >= self.target.aim
            || self.rent
            || self.snapshot.len() >= self.parts.config.msg_threshold as usize
            || self.parts.turn_pressure(count_turns(&self.snapshot))
            || self.parts.fresh_oversized(&self.snapshot)
    }

    // ---- 2. analyse, 3. plan -----------------------------------------------------------------

    /// The working list as a step sees it: units, rounds, what is unread, what protects each
    /// message.
    fn analyse(&self, rules: &Rules<'_>) -> Structure {
        let work = &self.work;
        Structure::analyze_with(work, rules, &|i| work[i].pinned)
    }

    /// Runs the ladder on the pass's copy until it is under the target (and the count and turn
    /// limits), recording in the log what each replacement stands for. Nothing is written here.
    ///
    /// The most recent completed round and the latest answer (`protectLastRound`,
    /// `protectLatestAnswer`) are kept by every step, and by the emergency step as long as it
    /// can reach the target without them. When it cannot, they yield one after the other, the
    /// round first: the ladder runs again without that protection, so the gentler steps
    /// (previews, summaries) take the round before the emergency step would offload it whole.
    async fn plan(&mut self) -> Result<()> {
        let config = self.parts.config;
        let plan = self.parts.state.borrow().plan.clone();
        let mut rules = Rules::of(config);
        loop {
            let mut relax = false;
            for _ in 0..MAX_SWEEPS {
                let mut changed = false;
                // What a provider's own compaction condensed goes first, whatever the ladder.
                let implicit = (!self.parts.ladder.contains(&Strategy::ProviderCompaction)).then_some(Strategy::ProviderCompaction);
                for strategy in implicit.into_iter().chain(self.parts.ladder.iter().copied()) {
                    let rung = crate::strategy::rung(strategy);
                    let total = request_tokens(sum_tokens(&self.work), config);
                    let count_pressure = self.work.len() >= config.msg_threshold as usize;
                    let token_pressure = total >= self.target.aim;
                    let turn_pressure = self.parts.turn_pressure(count_turns(&self.work));
                    let fresh = self.parts.fresh_oversized(&self.work);
                    if !token_pressure && !count_pressure && !turn_pressure && !fresh && !self.rent {
                        return Ok(());
                    }
                    let relevant = match rung.relieves() {
                        Pressure::Count => count_pressure,
                        Pressure::Turns => turn_pressure || token_pressure,
                        Pressure::Tokens => token_pressure,
                        Pressure::Rent => token_pressure || self.rent,
                    } || (fresh && strategy == Strategy::ToolResultTruncate);
                    // Below the trigger a pass makes only the edits that pay: the emergency
                    // step, which offloads whole rounds to reach a mark, is for the trigger.
                    let optional = self.tokens_before < self.target.bound && strategy == Strategy::Emergency;
                    if !relevant || optional || (rung.uses_llm() && self.parts.summarizer.is_none()) {
                        continue;
                    }
                    if strategy == Strategy::ToolResultStub {
                        self.rent = false;
                    }
                    let structure = self.analyse(&rules);
                    let origins = self.log.ranges();
                    let ctx = Ctx {
                        config,
                        format: config.format,
                        working: &self.work,
                        st: &structure,
                        total,
                        target: self.target.aim,
                        bound: self.target.bound,
                        window: self.parts.window(),
                        plan: plan.as_ref(),
                        failures: &self.failures,
                        summaries: &self.summaries,
                        clock: self.parts.clock,
                        snapshot: &self.snapshot,
                        origins: &origins,
                        counter: self.parts.counter,
                        cold: self.cold,
                    };
                    let summarizer: &dyn DynSummarizer = match self.parts.summarizer {
                        Some(s) => s,
                        None => &NoSummarizer,
                    };
                    let (made_by, edits) = rung.plan(&ctx, summarizer).await;
                    // The engine's own messages must keep the format's turns valid (Anthropic).
                    let edits = crate::engine::turns::fit(config.format, &self.work, &structure, edits);
                    // What each replacement offloads, named exactly, where the model sees it.
                    let edits = super::identifier_index::annotate(
                        config.format,
                        self.parts.counter,
                        &self.work,
                        edits,
                        index_budget(config, self.target.aim),
                    );
                    let edits = self.keep_useful(edits)?;
                    let yieldable = structure.last_round.is_some() && rules.protect_last_round
                        || structure.latest_answer.is_some() && rules.protect_latest_answer;
                    if made_by == Strategy::Emergency && yieldable && total.saturating_sub(freed(&self.work, &edits)) >= self.target.bound {
                        // Not enough while the last round (then the latest answer) is kept: it
                        // yields first, to every step.
                        relax = true;
                        continue;
                    }
                    if edits.is_empty() {
                        continue;
                    }
                    apply(&mut self.work, &mut self.log, edits, made_by);
                    changed = true;
                }
                if !changed {
                    break;
                }
            }
            if !relax {
                return Ok(());
            }
            if rules.protect_last_round {
                rules.protect_last_round = false;
            } else {
                rules.protect_latest_answer = false;
            }
        }
    }

    /// Counts the replacements and drops edits that would not save a token.
    fn keep_useful(&self, edits: Vec<Edit>) -> Result<Vec<(Edit, Vec<u32>)>> {
        let mut out = Vec::new();
        for e in edits {
            let before = sum_tokens(&self.work[e.span.clone()]);
            let counts = e.replacement.iter().map(|m| self.parts.counter.count_message(m)).collect::<Result<Vec<u32>>>()?;
            let after: u64 = counts.iter().map(|&c| c as u64).sum();
            if after < before || (after == before && e.replacement.len() < e.span.len()) {
                out.push((e, counts));
            }
        }
        Ok(out)
    }

    /// Stages 4 to 6 of a pass whose plan is made: `result` is completed and returned.
    async fn finish(self, mut result: CompressResult) -> Result<CompressResult> {
        debug_assert_eq!(self.mode, Mode::Commit);
        // A commit adds to the events (one per replacement kept, one per failed summary): those
        // a load left unparsed are read first, before anything is written. A pass that tried
        // and found nothing to do commits nothing, and never reads them.
        if self.log.alive().next().is_some() || !self.failures.borrow().is_empty() {
            self.parts.state.borrow_mut().read_events()?;
        }
        let mut pending = Pending { state: self.parts.state, written: Vec::new() };
        let counts = match self.write_offloads(&mut pending.written).await {
            Ok(counts) => counts,
            Err(e) => {
                pending.written = delete_quietly(self.parts, &pending.written).await;
                return Err(e);
            }
        };
        if let Err(e) = self.validate() {
            pending.written = delete_quietly(self.parts, &pending.written).await;
            return Err(e);
        }
        fill_outcome(&mut result, &self);
        self.commit(&mut result, pending, counts).await?;
        Ok(result)
    }

    // ---- 4. host calls -----------------------------------------------------------------------

    /// Writes the offloads of the replacements alive at the end of the plan, and of those taken
    /// in whose markers the planned list still names ([`PassLog::to_write`]), returning how many
    /// messages each holds. An offload holds the snapshot messages its replacement stands for;
    /// a message among them that an earlier pass wrote (a summary, a notice, a truncated copy)
    /// is kept as the model saw it and expanded on reload into the originals of the offload it
    /// names ([`crate::engine::offload::Expansion`]): one reload of any marker gives originals. A
    /// replacement that points at an earlier pass's offload writes nothing. Every key is
    /// recorded in `written` before its put starts: a put that fails or never answers may
    /// still have landed, so a pass that does not commit deletes every key it tried.
    async fn write_offloads(&self, written: &mut Vec<(String, String)>) -> Result<Vec<(String, usize)>> {
        let (config, store, snapshot) = (self.parts.config, self.parts.store, &self.snapshot);
        // Each offload holds originals, never a message this pass wrote. The markers a taken-in
        // replacement of this pass may still be named by are in this pass's replacements (an
        // earlier pass's message cannot name them): read only when some replacement was taken.
        let referenced: HashSet<String> = if self.log.any_taken() {
            (0..self.work.len())
                .filter(|&i| self.log.is_replacement(i) && self.work[i].msg.synthetic.is_some())
                .flat_map(|i| crate::message::find_markers(&self.work[i].msg.wire.to_string()))
                .collect()
        } else {
            HashSet::new()
        };
        let payloads: Vec<Payload> = {
            let state = self.parts.state.borrow();
            let mut seen = HashSet::new();
            let fresh: Vec<(&str, std::ops::Range<usize>)> = self
                .log
                .to_write(&referenced)
                .filter_map(|r| Some((r.offload.as_deref()?, r.snapshot.clone())))
                .filter(|(u, _)| !state.offload_ids.contains(*u) && seen.insert(*u))
                .collect();
            // The earlier offload a message of the snapshot stands for, with its record.
            let expansion = |at: usize, e: &Entry| {
                let uuid = e.msg.synthetic.as_ref()?.offload.as_deref()?;
                let record = state.offload(uuid).or_else(|| state.retired.in_tail(uuid))?;
                Some(Expansion { at, uuid: record.uuid, message_count: record.message_count, digest: record.digest })
            };
            fresh
                .iter()
                .map(|(uuid, range)| {
                    let entries = &snapshot[range.clone()];
                    let messages: Vec<&Value> = entries.iter().map(|e| &*e.msg.wire).collect();
                    let expand: Vec<Expansion> = entries.iter().enumerate().filter_map(|(k, e)| expansion(k, e)).collect();
                    // The texts, and room for each message's fields and escapes.
                    let size = entries.iter().map(|e| e.msg.payload_len() * 9 / 8 + 128).sum();
                    let (body, spans) = crate::engine::offload::payload(&config.session_id, uuid, config.format, &messages, &expand, size);
                    Payload { uuid: uuid.to_string(), body, spans, range: range.clone() }
                })
                .collect()
        };
        written.extend(payloads.iter().map(|p| (p.uuid.clone(), crate::engine::offload::digest(&p.body))));
        let keys: Vec<String> = payloads.iter().map(|p| self.parts.key(&p.uuid)).collect();
        // Boxed store calls: join_all is compiled once per result type, not once per call site.
        let results = join_all(keys.iter().zip(&payloads).map(|(k, p)| store.put(k, &p.body).boxed_local())).await;
        if let Some(e) = results.into_iter().find_map(|r| r.err()) {
            return Err(Error::host(ErrorCode::StoreFailed, "the offload store failed to put an offload; nothing was changed", e));
        }
        // The payloads hold the originals' texts: the log's flush after the pass copies them.
        let texts = &mut self.parts.state.borrow_mut().texts;
        let counts = payloads
            .into_iter()
            .map(|p| {
                let count = p.range.len();
                texts.keep(p.body, snapshot[p.range].iter().map(|e| e.msg.wire.shared()), p.spans);
                (p.uuid, count)
            })
            .collect();
        Ok(counts)
    }

    // ---- 5. validate -------------------------------------------------------------------------

    /// The format's validator on the planned list: refused when it has a problem of a kind the
    /// snapshot had fewer of (what the host added may already break the format's softer rules,
    /// and a pass keeps that, but never adds to it).
    fn validate(&self) -> Result<()> {
        let format = self.parts.config.format;
        let after = format.validate(&self.work);
        if after.is_empty() {
            return Ok(());
        }
        let before = format.validate(&self.snapshot);
        let count = |problems: &[crate::format::Problem], code: &str| problems.iter().filter(|p| p.code == code).count();
        match after.iter().find(|p| count(&after, p.code) > count(&before, p.code)) {
            None => Ok(()),
            Some(p) => Err(Error::new(
                ErrorCode::InvalidState,
                format!(
                    "the pass would leave a list the provider rejects ({} at working message {}: {}); nothing was applied",
                    p.code, p.index, p.message
                ),
            )),
        }
    }

    // ---- 6. commit ---------------------------------------------------------------------------

    /// Gives the planned list, the offloads and the events to the state, at once.
    async fn commit(self, result: &mut CompressResult, mut pending: Pending<'a>, counts: Vec<(String, usize)>) -> Result<()> {
        let events = std::mem::take(&mut result.events);
        if events.is_empty() {
            return Ok(());
        }
        if self.parts.state.borrow().moved(self.generation, self.snapshot.len()) {
            pending.written = delete_quietly(self.parts, &pending.written).await;
            return Err(Error::new(
                ErrorCode::InvalidState,
                "the memory changed under the pass (restored or compressed elsewhere); nothing was applied",
            ));
        }
        let mut events = events;
        let now = self.parts.clock.now_ms();
        for e in &mut events {
            e.timestamp = now;
        }
        result.compressed = !self.work.is_empty() && events.iter().any(|e| e.event_type != FAILURE_EVENT);
        let offloads = std::mem::take(&mut pending.written)
            .into_iter()
            .map(|(uuid, digest)| {
                let count = counts.iter().find(|(u, _)| *u == uuid).map_or(0, |(_, c)| *c);
                (uuid, digest, count)
            })
            .collect();
        let mut state = self.parts.state.borrow_mut();
        result.messages_after = state.commit(self.snapshot.len(), Commit { work: self.work, offloads, events: events.clone() });
        result.events = events;
        Ok(())
    }
}

/// Fills `result` with what the plan reached: its events (failed summaries first), the
/// failures for the host, tokens after, and why the target was not reached, if it was not.
fn fill_outcome<S: Summarizer, O: OffloadStore>(result: &mut CompressResult, pass: &Pass<'_, S, O>) {
    let config = pass.parts.config;
    let mut events = pass.log.events(&pass.snapshot, &pass.work);
    // Failed summaries are events too, placed before the changes of the pass; what the host
    // threw goes back to it as the cause of the matching error.
    let failures = std::mem::take(&mut *pass.failures.borrow_mut());
    let failed: Vec<CompressionEvent> = failures.iter().map(failure_event).collect();
    if !failed.is_empty() {
        events.splice(0..0, failed);
    }
    let rollup_failed = failures.iter().any(|f| f.event_type == Strategy::HistoryRollup.event_type());
    result.failures = failures.into_iter().enumerate().map(|(k, f)| failure_error(k, f)).collect();

    let tokens_after = request_tokens(sum_tokens(&pass.work), config);
    result.tokens_after = tokens_after;
    let over_count = pass.work.len() >= config.msg_threshold as usize;
    result.under_target = tokens_after < pass.target.bound && !over_count;
    if !result.under_target {
        result.exhausted = true;
        let mut why = Vec::new();
        if tokens_after >= pass.target.bound {
            why.push(if pass.parts.summarizer.is_none() {
                "over the target after every step that needs no summarize function: what remains is protected \
                 (system messages, the first and the current user message, results the model has not answered yet, \
                 what is pinned), or needs a summarize function"
                    .to_string()
            } else {
                "over the target after every step: what remains is protected (system messages, the first and the \
                 current user message, results the model has not answered yet, what is pinned)"
                    .to_string()
            });
        }
        if over_count {
            why.push(count_reason(pass.parts, pass.work.len(), rollup_failed));
        }
        result.reason = Some(why.join("; "));
    }
    result.events = events;
}

/// Why a pass ended with `n` messages, at or over `msgThreshold`.
fn count_reason<S, O>(parts: Parts<'_, S, O>, n: usize, rollup_failed: bool) -> String {
    let config = parts.config;
    let at = format!("{n} messages remain, at or over msgThreshold ({})", config.msg_threshold);
    if !parts.ladder.contains(&Strategy::HistoryRollup) {
        format!("{at}: the ladder has no step that reduces the message count (history-rollup)")
    } else if rollup_failed {
        format!("{at}: the summary that rolls older rounds up failed (see the SUMMARIZE_FAILED event)")
    } else if parts.summarizer.is_none() {
        format!("{at}: rolling older rounds into a summary (history-rollup) needs a summarize function")
    } else {
        format!(
            "{at}: the current round, the work the model has not read, the last completed round and the {} most recent \
             rounds (historyRollupKeepRecentRounds) stay whole, and what is before them is already rolled up or protected",
            config.history_rollup_keep_recent_rounds
        )
    }
}

/// Offloads of a pass a native host dropped midway: never referenced, so deleted now.
async fn delete_abandoned<S, O: OffloadStore>(parts: Parts<'_, S, O>) {
    let leftover = std::mem::take(&mut parts.state.borrow_mut().abandoned);
    if !leftover.is_empty() {
        let mut cleanup = Pending { state: parts.state, written: leftover.into_iter().map(|u| (u, String::new())).collect() };
        let failed = delete_quietly(parts, &cleanup.written).await;
        cleanup.written = failed;
    }
}

/// Deletes the offloads of a pass that does not commit; returns those whose delete failed
/// (they stay pending and go to [`State::abandoned`], so the next pass tries again).
async fn delete_quietly<S, O: OffloadStore>(parts: Parts<'_, S, O>, written: &[(String, String)]) -> Vec<(String, String)> {
    let keys: Vec<String> = written.iter().map(|(u, _)| parts.key(u)).collect();
    // Boxed store calls: join_all is compiled once per result type, not once per call site.
    let results = join_all(keys.iter().map(|k| parts.store.delete(k).boxed_local())).await;
    written.iter().zip(results).filter(|(_, r)| r.is_err()).map(|(w, _)| w.clone()).collect()
}

/// The original messages of an offload this session created, in wire format: the payload must
/// be the one this session wrote (its digest, envelope and message count are checked, see
/// [`crate::reload`]).
pub(crate) async fn reload<S, O: OffloadStore>(parts: Parts<'_, S, O>, uuid: &str) -> Result<Vec<Value>> {
    crate::engine::reload::check_uuid(uuid)?;
    let config = parts.config;
    // The index the state holds, then the records retired from it to the store.
    let (held, head) = {
        let state = parts.state.borrow();
        (state.offload(uuid).or_else(|| state.retired.in_tail(uuid)), state.retired.0.head().map(str::to_string))
    };
    let record = match held {
        Some(r) => Some(r),
        None => super::retired::find(head, parts.store, &config.session_id, uuid).await?,
    };
    let Some(record) = record else {
        return Err(Error::new(ErrorCode::NotFound, format!("no offload {uuid} in session {:?}", config.session_id)));
    };
    let (session, format) = (&config.session_id, Some(config.format));
    crate::engine::reload::fetch(parts.store, session, uuid, format, record.message_count, record.digest.as_deref()).await
}

/// Applies one step's edits to `work`, back to front, recording each in `log`.
fn apply(work: &mut Vec<Entry>, log: &mut PassLog, edits: Vec<(Edit, Vec<u32>)>, strategy: Strategy) {
    log.next_step();
    let mut edits = edits;
    crate::sort::by_key(&mut edits, |(e, _)| !(e.span.start as u128));
    for (e, counts) in edits {
        log.replace(e.span.clone(), e.replacement.len(), strategy, e.offload, e.usage, e.ms);
        let entries = e.replacement.into_iter().zip(counts).map(|(m, tokens)| Entry::new(Rc::new(m), tokens));
        work.splice(e.span, entries);
    }
}

fn failure_event(f: &Failure) -> CompressionEvent {
    CompressionEvent {
        event_type: FAILURE_EVENT.into(),
        timestamp: 0.0,
        index: f.index,
        message_count: f.message_count,
        replacement_count: 0,
        tokens_before: 0,
        tokens_after: 0,
        offload_uuid: None,
        summarize_input_tokens: None,
        summarize_output_tokens: None,
        duration_ms: Some(f.ms),
        error: Some(format!("{}: {}", f.event_type, f.error)),
    }
}

/// The error for the host of the `k`-th failure (and `SUMMARIZE_FAILED` event) of a pass.
fn failure_error(k: usize, f: Failure) -> Error {
    let end = f.index + f.message_count;
    let what = format!(
        "{} could not summarize working messages {}..{end} (event {k} of this pass); the span fell back to an offload or stayed",
        f.event_type, f.index
    );
    match f.cause {
        Some(cause) => Error::host(ErrorCode::SummarizeFailed, &what, cause),
        None => Error::new(ErrorCode::SummarizeFailed, format!("{what}: {}", f.error)),
    }
}

/// Characters of one replacement's identifier index: `identifierIndexChars`, and no more than a
/// twentieth of the low-water mark (about four characters a token), so in a small window the
/// indexes do not push a pass over the mark it compacts to.
fn index_budget(config: &Config, aim: u64) -> usize {
    (config.identifier_index_chars as usize).min((aim as usize).saturating_mul(4) / 20)
}

/// Tokens `edits` (with their replacements' counts) free in `work`.
fn freed(work: &[Entry], edits: &[(Edit, Vec<u32>)]) -> u64 {
    edits.iter().map(|(e, counts)| sum_tokens(&work[e.span.clone()]).saturating_sub(counts.iter().map(|&c| c as u64).sum())).sum()
}
