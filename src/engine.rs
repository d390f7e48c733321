//! `AutoContextMemory`: the working list, the append-only original log, the offload index and
//! the events, and the compression pass that ties them together.
//!
//! A pass works on a snapshot of the working list. It runs the ladder cheapest first,
//! re-measuring after each strategy, until the request fits under `maxToken × tokenRatio` or
//! nothing more applies. Originals are written to the store before anything changes, and the
//! pass commits all its edits at once at the end: if the store or the summarizer fails, the
//! working list is exactly as it was, no event is recorded and the offloads written so far are
//! deleted again. Messages added while a pass awaits the host are kept: the commit replaces
//! only the prefix the pass looked at.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use futures_util::future::join_all;
use serde::Serialize;
use serde_json::Value;

use crate::config::Config;
use crate::error::{Error, ErrorCode, Result};
use crate::events::CompressionEvent;
use crate::format::Format;
use crate::host::{OffloadStore, Summarizer};
use crate::message::Message;
use crate::message::Role;
pub use crate::offload::OffloadRecord;
use crate::pass_log::PassLog;
use crate::plan::Plan;
use crate::prepare::{Cache, Summaries};
use crate::strategy::llm::Failure;
use crate::strategy::{Ctx, Edit, Entry, Strategy};
use crate::structure::{Rules, Structure};
use crate::tokens::{TokenCounter, REQUEST_OVERHEAD};

/// Sweeps of the ladder a pass may make before it gives up (the loop guard).
const MAX_SWEEPS: usize = 4;

/// What `compress_if_needed` did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressResult {
    /// Whether the working list changed.
    pub compressed: bool,
    /// Request tokens before the pass.
    pub tokens_before: u64,
    /// Request tokens after the pass.
    pub tokens_after: u64,
    /// Working messages before the pass.
    pub messages_before: usize,
    /// Working messages after the pass.
    pub messages_after: usize,
    /// The target the pass compressed towards: `maxToken × tokenRatio` in the estimate's units
    /// (corrected by [`AutoContextMemory::observe_usage`]), lowered so a token-triggered pass
    /// frees at least `minFreedTokens`; for [`AutoContextMemory::handle_overflow`], its own.
    pub target_tokens: u64,
    /// Whether the request now fits under the target, in fewer than `msgThreshold` messages.
    pub under_target: bool,
    /// Whether the pass stopped over the target because nothing more could be compressed.
    pub exhausted: bool,
    /// Why a triggered pass could not reach the target, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The changes made, in order.
    pub events: Vec<CompressionEvent>,
    /// The summarize calls of this pass that failed, one per `SUMMARIZE_FAILED` event and in
    /// the same order: each an [`ErrorCode::SummarizeFailed`] naming the strategy, the span and
    /// the event, whose cause is the host's own error when the host threw (a rejected empty or
    /// too long summary has none). The pass went on without them; they are here so the host
    /// sees what its summarize function threw. Not serialized.
    #[serde(skip)]
    pub failures: Vec<Error>,
    /// Summarize calls this pass made to the host.
    pub summarize_calls: usize,
    /// Summaries this pass took from a preparation ([`AutoContextMemory::prepare`]) instead of
    /// calling the host.
    pub prepared_used: usize,
}

#[derive(Default)]
pub(crate) struct State {
    pub working: Vec<Entry>,
    pub working_tokens: u64,
    pub original: Vec<Rc<Value>>,
    pub offloads: Vec<OffloadRecord>,
    pub offload_ids: HashSet<String>,
    pub events: Vec<CompressionEvent>,
    pub call_ids: HashSet<String>,
    /// Bumped by every commit that rewrites the working list.
    pub generation: u64,
    /// The host's current plan.
    pub plan: Option<Plan>,
    /// Offloads written by a pass that was dropped (cancelled by a native host) before it
    /// committed or deleted them; the next pass deletes them first.
    pub abandoned: Vec<String>,
    /// How the token estimate compares with the provider's counts ([`AutoContextMemory::observe_usage`]).
    pub calibration: crate::calibration::Calibration,
}

/// Clears the busy flag when a pass ends, however it ends (also when its future is dropped).
struct Busy<'a>(&'a Cell<bool>);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
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
        if let Ok(mut st) = self.state.try_borrow_mut() {
            st.abandoned.extend(self.written.drain(..).map(|(u, _)| u));
        }
    }
}

/// The context memory of one conversation.
///
/// ```
/// use autocontext::{AutoContextMemory, Config, MemoryStore, NoSummarizer};
/// use serde_json::json;
///
/// let mut config = Config::default();
/// config.max_token = 2_000;
/// config.tool_result_limit = 1_000;
/// let memory = AutoContextMemory::new(config, NoSummarizer, MemoryStore::new()).unwrap();
/// memory.add(&json!([
///     {"role": "user", "content": "read the log"},
///     {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
///     {"role": "tool", "tool_call_id": "c1", "content": "line\n".repeat(2_000)},
/// ])).unwrap();
/// let result = futures_executor::block_on(memory.compress_if_needed()).unwrap();
/// assert!(result.compressed && result.under_target);
/// assert_eq!(memory.messages()[2]["tool_call_id"], "c1");
/// ```
pub struct AutoContextMemory<S, O> {
    config: Config,
    counter: TokenCounter,
    pub(crate) summarizer: Option<S>,
    store: O,
    ladder: Vec<Strategy>,
    pub(crate) state: RefCell<State>,
    busy: Cell<bool>,
    /// Summaries prepared for the next pass, and the cuts of the preparation.
    pub(crate) prepared: Rc<RefCell<Cache>>,
    /// A preparation is running.
    pub(crate) preparing: Cell<bool>,
    /// The generation and request tokens of the last preparation.
    pub(crate) last_prepare: Cell<Option<(u64, u64)>>,
}

impl<S: Summarizer, O: OffloadStore> AutoContextMemory<S, O> {
    /// A memory with the tokenizer named in `config`.
    pub fn new(config: Config, summarizer: S, store: O) -> Result<Self> {
        let counter = TokenCounter::new(config.tokenizer)?;
        Self::with_counter(config, counter, Some(summarizer), store)
    }

    /// A memory with an explicit token counter and an optional summarizer (without one, the
    /// LLM strategies are skipped).
    pub fn with_counter(config: Config, counter: TokenCounter, summarizer: Option<S>, store: O) -> Result<Self> {
        config.validate()?;
        Ok(AutoContextMemory {
            counter,
            summarizer: summarizer.filter(|s| s.available()),
            store,
            ladder: config.ladder(),
            config,
            state: RefCell::new(State::default()),
            busy: Cell::new(false),
            prepared: Rc::default(),
            preparing: Cell::new(false),
            last_prepare: Cell::new(None),
        })
    }

    /// Replaces the ladder: the strategies a pass runs, in order.
    ///
    /// ```
    /// use autocontext::{AutoContextMemory, Config, MemoryStore, NoSummarizer};
    /// use autocontext::strategy::Strategy;
    /// let memory = AutoContextMemory::new(Config::default(), NoSummarizer, MemoryStore::new())
    ///     .unwrap()
    ///     .with_ladder(&[Strategy::ToolResultTruncate, Strategy::Emergency]);
    /// assert_eq!(memory.ladder(), &[Strategy::ToolResultTruncate, Strategy::Emergency]);
    /// ```
    pub fn with_ladder(mut self, ladder: &[Strategy]) -> Self {
        self.ladder = ladder.to_vec();
        self
    }

    /// The strategies a pass runs, in order.
    pub fn ladder(&self) -> &[Strategy] {
        &self.ladder
    }

    /// The options in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The wire format.
    pub fn format(&self) -> Format {
        self.config.format
    }

    /// The store.
    pub fn store(&self) -> &O {
        &self.store
    }

    /// Adds one wire message, or an array of them. All or nothing: if any message is invalid
    /// (bad shape, a tool result that answers no open call, a reused call id, a new turn while
    /// calls still wait for results), nothing is added and the error names the message by its
    /// index in the conversation.
    pub fn add(&self, value: &Value) -> Result<()> {
        self.add_with(value, false)
    }

    /// [`AutoContextMemory::add`], pinning every message added when `pinned`: no step replaces
    /// a pinned message (see [`AutoContextMemory::pin`]).
    pub fn add_with(&self, value: &Value, pinned: bool) -> Result<()> {
        let items: Vec<&Value> = match value {
            Value::Array(a) => a.iter().collect(),
            other => vec![other],
        };
        let base = self.state.borrow().original.len();
        let mut parsed = Vec::with_capacity(items.len());
        for (k, v) in items.iter().enumerate() {
            let m = self.config.format.parse(k, v).map_err(|e| e.offset_index(base))?;
            parsed.push(m);
        }
        let mut entries = Vec::with_capacity(parsed.len());
        {
            let st = self.state.borrow();
            let format = self.config.format;
            let mut open = open_exchange(format, &st.working);
            let mut new_calls: HashSet<&str> = HashSet::new();
            for (k, m) in parsed.iter().enumerate() {
                let index = base + k;
                let prev = if k == 0 { st.working.last().map(|e| &*e.msg) } else { Some(&parsed[k - 1]) };
                let continues = prev.is_some_and(|p| format.continues_turn(p, m));
                check_pairing(format, index, m, continues, &mut open, &st.call_ids, &mut new_calls)?;
            }
        }
        for m in parsed {
            let tokens = self.counter.count_message(&m)?;
            entries.push(Entry { msg: Rc::new(m), tokens, pinned });
        }
        let mut st = self.state.borrow_mut();
        for (e, v) in entries.into_iter().zip(items) {
            for id in e.msg.call_ids() {
                st.call_ids.insert(id.to_string());
            }
            st.working_tokens += e.tokens as u64;
            st.original.push(Rc::new(v.clone()));
            st.working.push(e);
        }
        Ok(())
    }

    /// Pins working message `index` (an index of [`AutoContextMemory::messages`]): no step
    /// replaces it, not even the emergency one. Untouched, it stays byte-identical to what was
    /// added; the pin is kept in the state, never in the message. Refused while a pass runs.
    pub fn pin(&self, index: usize) -> Result<()> {
        self.set_pinned(index, true)
    }

    /// Unpins working message `index`.
    pub fn unpin(&self, index: usize) -> Result<()> {
        self.set_pinned(index, false)
    }

    /// The indices of the pinned working messages.
    pub fn pinned(&self) -> Vec<usize> {
        self.state.borrow().working.iter().enumerate().filter(|(_, e)| e.pinned).map(|(i, _)| i).collect()
    }

    fn set_pinned(&self, index: usize, pinned: bool) -> Result<()> {
        if self.busy.get() {
            return Err(Error::new(ErrorCode::LimitExceeded, "a compression pass is running on this memory; pin or unpin after it"));
        }
        let mut st = self.state.borrow_mut();
        let n = st.working.len();
        let Some(e) = st.working.get_mut(index) else {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("index {index} is not a working message (the working list has {n})"),
            )
            .at_field("index"));
        };
        e.pinned = pinned;
        Ok(())
    }

    /// The working list in wire format, ready to send.
    pub fn messages(&self) -> Vec<Value> {
        self.state.borrow().working.iter().map(|e| e.msg.wire.clone()).collect()
    }

    /// The working list as canonical messages.
    pub fn working(&self) -> Vec<Rc<Message>> {
        self.state.borrow().working.iter().map(|e| e.msg.clone()).collect()
    }

    /// Everything ever added, in order, exactly as added.
    pub fn original_messages(&self) -> Vec<Value> {
        self.state.borrow().original.iter().map(|v| (**v).clone()).collect()
    }

    /// Tokens of the request the working list makes (messages, request overhead and
    /// `reservedTokens`).
    pub fn token_count(&self) -> u64 {
        request_tokens(self.state.borrow().working_tokens, &self.config)
    }

    /// All events so far.
    pub fn events(&self) -> Vec<CompressionEvent> {
        self.state.borrow().events.clone()
    }

    /// The offloads this session created.
    pub fn offloads(&self) -> Vec<OffloadRecord> {
        self.state.borrow().offloads.clone()
    }

    /// Whether a pass would run now.
    pub fn needs_compression(&self) -> bool {
        let st = self.state.borrow();
        st.working.len() >= self.config.msg_threshold as usize
            || request_tokens(st.working_tokens, &self.config) >= st.calibration.estimate_of(self.config.trigger_tokens())
            || self.turn_pressure(&st.working)
    }

    /// Whether the ladder trims turns and there are more than `maxContextTurns` of them.
    pub(crate) fn turn_pressure(&self, work: &[Entry]) -> bool {
        self.ladder.contains(&Strategy::TurnTrim)
            && work.iter().filter(|e| e.msg.is_real_user()).count() > self.config.max_context_turns as usize
    }

    /// Problems a provider would reject the working list for (empty when valid).
    pub fn validate(&self) -> Vec<crate::format::Problem> {
        self.config.format.validate(&self.state.borrow().working)
    }

    /// Runs a compression pass if the working list is over `msgThreshold` messages or
    /// `maxToken × tokenRatio` tokens.
    pub async fn compress_if_needed(&self) -> Result<CompressResult> {
        self.exclusive_pass(None).await
    }

    /// Runs a pass now, compressing below `target` estimated tokens (an overflow), whatever the
    /// trigger says.
    pub(crate) async fn compress_to(&self, target: u64) -> Result<CompressResult> {
        self.exclusive_pass(Some(target)).await
    }

    /// A pass, refused while another runs on this memory; offloads a failed pass could not
    /// delete are retried first.
    async fn exclusive_pass(&self, target: Option<u64>) -> Result<CompressResult> {
        if self.busy.replace(true) {
            return Err(Error::new(ErrorCode::LimitExceeded, "a compression pass is already running on this memory; await it first"));
        }
        let _busy = Busy(&self.busy);
        self.delete_abandoned().await;
        self.run_pass(target).await
    }

    /// Offloads of a pass a native host dropped midway: never referenced, so deleted now.
    async fn delete_abandoned(&self) {
        let leftover = std::mem::take(&mut self.state.borrow_mut().abandoned);
        if !leftover.is_empty() {
            let mut cleanup = Pending { state: &self.state, written: leftover.into_iter().map(|u| (u, String::new())).collect() };
            let failed = self.delete_quietly(&cleanup.written).await;
            cleanup.written = failed;
        }
    }

    /// The target of a pass that starts at `tokens`: `maxToken × tokenRatio` in the
    /// estimate's units (calibrated), lowered so the pass frees at least `minFreedTokens`.
    pub(crate) fn pass_target(&self, tokens: u64) -> u64 {
        let trigger = self.state.borrow().calibration.estimate_of(self.config.trigger_tokens());
        let min_freed = self.config.min_freed_tokens;
        if min_freed > 0 && tokens >= trigger {
            trigger.min(tokens.saturating_sub(min_freed)).max(1)
        } else {
            trigger
        }
    }

    async fn run_pass(&self, forced: Option<u64>) -> Result<CompressResult> {
        let (mut work, generation) = {
            let st = self.state.borrow();
            (st.working.clone(), st.generation)
        };
        let snapshot_len = work.len();
        let tokens_before = request_tokens(sum_tokens(&work), &self.config);
        let target = forced.unwrap_or_else(|| self.pass_target(tokens_before));
        let mut result = CompressResult {
            compressed: false,
            tokens_before,
            tokens_after: tokens_before,
            messages_before: snapshot_len,
            messages_after: snapshot_len,
            target_tokens: target,
            under_target: tokens_before < target,
            exhausted: false,
            reason: None,
            events: Vec::new(),
            failures: Vec::new(),
            summarize_calls: 0,
            prepared_used: 0,
        };
        let count_pressure = snapshot_len >= self.config.msg_threshold as usize;
        if tokens_before < target && !count_pressure && !self.turn_pressure(&work) {
            return Ok(result);
        }

        let mut pending = Pending { state: &self.state, written: Vec::new() };
        let failures = RefCell::new(Vec::new());
        let summaries = Summaries::for_pass(self.prepared.clone());
        let snapshot = work.clone();
        let mut log = PassLog::new(snapshot_len);
        let outcome = self.sweep(&mut work, &mut log, &failures, target, &summaries).await;
        result.summarize_calls = summaries.calls();
        result.prepared_used = summaries.reused();
        outcome?;
        // The offloads of what the pass replaced, written before anything changes: each holds
        // originals, never a message this pass wrote.
        let referenced: HashSet<String> =
            work.iter().filter(|e| e.msg.synthetic.is_some()).flat_map(|e| crate::message::find_markers(&e.msg.wire.to_string())).collect();
        let counts = match self.write_offloads(&snapshot, &log, &referenced, &mut pending.written).await {
            Ok(counts) => counts,
            Err(e) => {
                pending.written = self.delete_quietly(&pending.written).await;
                return Err(e);
            }
        };
        let mut events = log.events(&snapshot, &work);
        // Failed summaries are events too, placed before the changes of the pass; what the host
        // threw goes back to it as the cause of the matching error.
        let failures = failures.into_inner();
        let failed: Vec<CompressionEvent> = failures.iter().map(failure_event).collect();
        if !failed.is_empty() {
            events.splice(0..0, failed);
        }
        let rollup_failed = failures.iter().any(|f| f.event_type == Strategy::HistoryRollup.event_type());
        let failures: Vec<Error> = failures.into_iter().enumerate().map(|(k, f)| failure_error(k, f)).collect();

        let tokens_after = request_tokens(sum_tokens(&work), &self.config);
        result.tokens_after = tokens_after;
        let over_count = work.len() >= self.config.msg_threshold as usize;
        result.under_target = tokens_after < target && !over_count;
        if !result.under_target {
            result.exhausted = true;
            let mut why = Vec::new();
            if tokens_after >= target {
                why.push(if self.summarizer.is_none() {
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
                why.push(self.count_reason(work.len(), rollup_failed));
            }
            result.reason = Some(why.join("; "));
        }
        if events.is_empty() {
            return Ok(result);
        }

        let now = crate::now_ms();
        for e in &mut events {
            e.timestamp = now;
        }
        let moved = {
            let st = self.state.borrow();
            st.generation != generation || st.working.len() < snapshot_len
        };
        if moved {
            pending.written = self.delete_quietly(&pending.written).await;
            return Err(Error::new(
                ErrorCode::InvalidState,
                "the memory changed under the pass (restored or compressed elsewhere); nothing was applied",
            ));
        }
        let mut st = self.state.borrow_mut();
        let appended: Vec<Entry> = st.working[snapshot_len..].to_vec();
        result.compressed = !work.is_empty() && events.iter().any(|e| e.event_type != FAILURE_EVENT);
        result.messages_after = work.len() + appended.len();
        work.extend(appended);
        st.working_tokens = sum_tokens(&work);
        st.working = work;
        for (uuid, digest) in std::mem::take(&mut pending.written) {
            let count = counts.iter().find(|(u, _)| *u == uuid).map_or(0, |(_, c)| *c);
            st.offload_ids.insert(uuid.clone());
            st.offloads.push(OffloadRecord { uuid, message_count: count, digest: Some(digest) });
        }
        st.events.extend(events.iter().cloned());
        st.generation += 1;
        result.events = events;
        result.failures = failures;
        Ok(result)
    }

    /// Why a pass ended with `n` messages, at or over `msgThreshold`.
    fn count_reason(&self, n: usize, rollup_failed: bool) -> String {
        let at = format!("{n} messages remain, at or over msgThreshold ({})", self.config.msg_threshold);
        if !self.ladder.contains(&Strategy::HistoryRollup) {
            format!("{at}: the ladder has no step that reduces the message count (history-rollup)")
        } else if rollup_failed {
            format!("{at}: the summary that rolls older rounds up failed (see the SUMMARIZE_FAILED event)")
        } else if self.summarizer.is_none() {
            format!("{at}: rolling older rounds into a summary (history-rollup) needs a summarize function")
        } else {
            format!(
                "{at}: the current round, the work the model has not read, the last completed round and the {} most recent \
                 rounds (historyRollupKeepRecentRounds) stay whole, and what is before them is already rolled up or protected",
                self.config.history_rollup_keep_recent_rounds
            )
        }
    }

    /// Runs the ladder on `work` until it is under `target` (and the count and turn limits),
    /// recording in `log` what each replacement stands for. Nothing is written: a pass writes the
    /// offloads once the ladder is done, a preparation never (its edits only measure what the
    /// pass will need).
    ///
    /// The most recent completed round and the latest answer (`protectLastRound`,
    /// `protectLatestAnswer`) are kept by every step, and by the emergency step as long as it
    /// can reach the target without them. When it cannot, they yield one after the other, the
    /// round first: the ladder runs again without that protection, so the gentler steps
    /// (previews, summaries) take the round before the emergency step would offload it whole.
    pub(crate) async fn sweep(
        &self,
        work: &mut Vec<Entry>,
        log: &mut PassLog,
        failures: &RefCell<Vec<Failure>>,
        target: u64,
        summaries: &Summaries,
    ) -> Result<()> {
        let plan = self.state.borrow().plan.clone();
        let mut rules = Rules::of(&self.config);
        loop {
            let mut relax = false;
            for _ in 0..MAX_SWEEPS {
                let mut changed = false;
                for &strategy in &self.ladder {
                    let total = request_tokens(sum_tokens(work), &self.config);
                    let count_pressure = work.len() >= self.config.msg_threshold as usize;
                    let token_pressure = total >= target;
                    let turn_pressure = self.turn_pressure(work);
                    if !token_pressure && !count_pressure && !turn_pressure {
                        return Ok(());
                    }
                    let relevant = if strategy.relieves_count() {
                        count_pressure
                    } else if strategy.relieves_turns() {
                        turn_pressure || token_pressure
                    } else {
                        token_pressure
                    };
                    if !relevant || (strategy.uses_llm() && self.summarizer.is_none()) {
                        continue;
                    }
                    let st = Structure::analyze_with(work, &rules, &|i| work[i].pinned);
                    let ctx = Ctx {
                        config: &self.config,
                        format: self.config.format,
                        working: work,
                        st: &st,
                        total,
                        target,
                        plan: plan.as_ref(),
                        failures,
                        summaries,
                    };
                    let (made_by, edits) = match &self.summarizer {
                        Some(s) => strategy.plan(&ctx, s).await?,
                        None => strategy.plan(&ctx, &crate::host::NoSummarizer).await?,
                    };
                    // The engine's own messages must keep the format's turns valid (Anthropic).
                    let edits = crate::strategy::turns::fit(self.config.format, work, &st, edits);
                    let edits = self.keep_useful(work, edits)?;
                    let yieldable =
                        st.last_round.is_some() && rules.protect_last_round || st.latest_answer.is_some() && rules.protect_latest_answer;
                    if made_by == Strategy::Emergency && yieldable && total.saturating_sub(freed(work, &edits)) >= target {
                        // Not enough while the last round (then the latest answer) is kept: it
                        // yields first, to every step.
                        relax = true;
                        continue;
                    }
                    if edits.is_empty() {
                        continue;
                    }
                    apply(work, log, edits, made_by);
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

    /// Sets or clears the agent's plan; while set, every summarize request ends with a hint
    /// about it.
    pub fn set_plan(&self, plan: Option<Plan>) {
        self.state.borrow_mut().plan = plan;
    }

    /// The plan set with [`AutoContextMemory::set_plan`].
    pub fn plan(&self) -> Option<Plan> {
        self.state.borrow().plan.clone()
    }

    /// Counts the replacements and drops edits that would not save a token.
    fn keep_useful(&self, work: &[Entry], edits: Vec<Edit>) -> Result<Vec<(Edit, Vec<u32>)>> {
        let mut out = Vec::new();
        for e in edits {
            let before: u64 = work[e.span.clone()].iter().map(|x| x.tokens as u64).sum();
            let counts = e.replacement.iter().map(|m| self.counter.count_message(m)).collect::<Result<Vec<u32>>>()?;
            let after: u64 = counts.iter().map(|&c| c as u64).sum();
            if after < before || (after == before && e.replacement.len() < e.span.len()) {
                out.push((e, counts));
            }
        }
        Ok(out)
    }

    /// Writes the offloads of the replacements alive at the end of a pass, and of those taken in
    /// whose markers the committed list still names (`referenced`, see [`PassLog::to_write`]),
    /// returning how many messages each holds. An offload holds the snapshot messages its replacement stands for,
    /// except that a message which is itself a copy of one original (truncated, previewed,
    /// summarized in place by an earlier pass) is replaced by that original, read from the
    /// offload that holds it: one reload of any marker gives originals (or the summaries the
    /// model saw). If that offload cannot be read, the copy goes in; its marker still points
    /// there. A replacement that points at an earlier pass's offload writes nothing. Every key
    /// is recorded in `written` before its put starts: a put that fails or never answers may
    /// still have landed, so a pass that does not commit deletes every key it tried.
    async fn write_offloads(
        &self,
        snapshot: &[Entry],
        log: &PassLog,
        referenced: &HashSet<String>,
        written: &mut Vec<(String, String)>,
    ) -> Result<Vec<(String, usize)>> {
        let fresh: Vec<(&str, std::ops::Range<usize>)> = {
            let st = self.state.borrow();
            let mut seen = HashSet::new();
            log.to_write(referenced)
                .filter_map(|r| Some((r.offload.as_deref()?, r.snapshot.clone())))
                .filter(|(u, _)| !st.offload_ids.contains(*u) && seen.insert(*u))
                .collect()
        };
        let mut copies: Vec<&str> = Vec::new();
        for (_, range) in &fresh {
            for e in &snapshot[range.clone()] {
                if let Some(u) = e.msg.synthetic.as_ref().and_then(|s| s.copy_offload()) {
                    if !copies.contains(&u) {
                        copies.push(u);
                    }
                }
            }
        }
        let originals: Vec<Option<Value>> = join_all(copies.iter().map(|u| async move {
            match self.reload(u).await {
                Ok(mut v) if v.len() == 1 => v.pop(),
                _ => None,
            }
        }))
        .await;
        let original_of = |e: &Entry| -> Option<&Value> {
            let u = e.msg.synthetic.as_ref()?.copy_offload()?;
            originals[copies.iter().position(|c| *c == u)?].as_ref()
        };
        let payloads: Vec<(String, String, usize)> = fresh
            .iter()
            .map(|(uuid, range)| {
                let messages: Vec<&Value> = snapshot[range.clone()].iter().map(|e| original_of(e).unwrap_or(&e.msg.wire)).collect();
                let body = crate::offload::payload(&self.config.session_id, uuid, self.config.format, &messages);
                (uuid.to_string(), body, messages.len())
            })
            .collect();
        written.extend(payloads.iter().map(|(u, body, _)| (u.clone(), crate::offload::digest(body))));
        let keys: Vec<String> = payloads.iter().map(|(u, _, _)| self.key(u)).collect();
        let results = join_all(keys.iter().zip(&payloads).map(|(k, (_, body, _))| self.store.put(k, body))).await;
        if let Some(e) = results.into_iter().find_map(|r| r.err()) {
            return Err(Error::host(ErrorCode::StoreFailed, "the offload store failed to put an offload; nothing was changed", e));
        }
        Ok(payloads.into_iter().map(|(u, _, n)| (u, n)).collect())
    }

    /// Deletes the offloads of a pass that does not commit; returns those whose delete failed
    /// (they stay pending and go to [`State::abandoned`], so the next pass tries again).
    async fn delete_quietly(&self, written: &[(String, String)]) -> Vec<(String, String)> {
        let keys: Vec<String> = written.iter().map(|(u, _)| self.key(u)).collect();
        let results = join_all(keys.iter().map(|k| self.store.delete(k))).await;
        written.iter().zip(results).filter(|(_, r)| r.is_err()).map(|(w, _)| w.clone()).collect()
    }

    fn key(&self, uuid: &str) -> String {
        format!("{}/{}", self.config.session_id, uuid)
    }

    /// The original messages of an offload this session created, in wire format: the payload
    /// must be the one this session wrote (its digest, envelope and message count are checked,
    /// see [`crate::reload`]).
    pub async fn reload(&self, uuid: &str) -> Result<Vec<Value>> {
        crate::reload::check_uuid(uuid)?;
        let record = self.state.borrow().offloads.iter().find(|o| o.uuid == uuid).cloned();
        let Some(record) = record else {
            return Err(Error::new(ErrorCode::NotFound, format!("no offload {uuid} in session {:?}", self.config.session_id)));
        };
        let (session, format) = (&self.config.session_id, Some(self.config.format));
        crate::reload::fetch(&self.store, session, uuid, format, record.message_count, record.digest.as_deref()).await
    }

    /// Executes a `context_reload` call of the model (in the format's call shape) and returns
    /// the text to send back as the tool's result: the offload's messages as a readable
    /// transcript, at most `offloadReloadLimit` characters; a longer transcript comes in pages,
    /// each ending with a note on how to ask for the next (the tool's optional `page`
    /// argument). An unknown or malformed uuid or page is answered in the text, for the model
    /// to read; a failing store is an error for the host.
    pub async fn handle_reload_call(&self, call: &Value) -> Result<String> {
        let limit = self.config.offload_reload_limit as usize;
        crate::reload::answer_call(self.config.format, call, limit, |uuid| async move { self.reload(&uuid).await }).await
    }
}

/// Applies one step's edits to `work`, back to front, recording each in `log`.
fn apply(work: &mut Vec<Entry>, log: &mut PassLog, edits: Vec<(Edit, Vec<u32>)>, strategy: Strategy) {
    log.next_step();
    let mut edits = edits;
    edits.sort_by_key(|(e, _)| std::cmp::Reverse(e.span.start));
    for (e, counts) in edits {
        log.replace(e.span.clone(), e.replacement.len(), strategy, e.offload, e.usage, e.ms);
        let entries = e.replacement.into_iter().zip(counts).map(|(m, tokens)| Entry::new(Rc::new(m), tokens));
        work.splice(e.span, entries);
    }
}

/// Event type of a summarize call that failed (its span fell back to a non-LLM step or stayed).
pub const FAILURE_EVENT: &str = "SUMMARIZE_FAILED";

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

/// Tokens `edits` (with their replacements' counts) free in `work`.
fn freed(work: &[Entry], edits: &[(Edit, Vec<u32>)]) -> u64 {
    edits.iter().map(|(e, counts)| sum_tokens(&work[e.span.clone()]).saturating_sub(counts.iter().map(|&c| c as u64).sum())).sum()
}

pub(crate) fn sum_tokens(work: &[Entry]) -> u64 {
    work.iter().map(|e| e.tokens as u64).sum()
}

pub(crate) fn request_tokens(messages: u64, config: &Config) -> u64 {
    messages + REQUEST_OVERHEAD + config.reserved_tokens
}

/// The calls of the exchange still open at the end of `working`, and which are answered. The
/// exchange opens with the last message before the trailing results, together with the messages
/// of the same response before it (the items of one Responses API response).
fn open_exchange(format: Format, working: &[Entry]) -> Option<(Vec<String>, Vec<bool>)> {
    let mut answered: Vec<String> = Vec::new();
    let mut end = working.len();
    while end > 0 {
        let m = &working[end - 1].msg;
        if !m.has_results() && m.role != Role::Tool {
            break;
        }
        answered.extend(m.result_ids().map(str::to_string));
        end -= 1;
    }
    let mut start = end.checked_sub(1)?;
    while start > 0 && format.continues_turn(&working[start - 1].msg, &working[start].msg) {
        start -= 1;
    }
    let ids: Vec<String> = working[start..end].iter().flat_map(|e| e.msg.call_ids()).map(str::to_string).collect();
    if ids.is_empty() {
        return None;
    }
    let done = ids.iter().map(|id| answered.contains(id)).collect();
    Some((ids, done))
}

/// Checks that message `m` (at `index`) keeps tool pairing after the exchange `open`, and
/// updates it. `continues` says `m` is part of the response before it (its calls join that
/// exchange).
fn check_pairing<'a>(
    format: Format,
    index: usize,
    m: &'a Message,
    continues: bool,
    open: &mut Option<(Vec<String>, Vec<bool>)>,
    seen: &HashSet<String>,
    new_calls: &mut HashSet<&'a str>,
) -> Result<()> {
    // A tool message without results (an AI SDK approval response) neither answers nor
    // closes anything.
    if m.has_results() || m.role == Role::Tool {
        for id in m.result_ids() {
            let Some((ids, done)) = open.as_mut() else {
                return Err(Error::message_at(
                    index,
                    &format.id_field(m, id, true),
                    format!("answers tool call {id:?}, but no assistant message before it made that call"),
                ));
            };
            match ids.iter().position(|c| c == id) {
                Some(k) if done[k] => {
                    return Err(Error::message_at(index, &format.id_field(m, id, true), format!("answers tool call {id:?} a second time")))
                }
                Some(k) => done[k] = true,
                None => {
                    return Err(Error::message_at(
                        index,
                        &format.id_field(m, id, true),
                        format!("answers tool call {id:?}, which the open assistant message did not make"),
                    ))
                }
            }
        }
        return Ok(());
    }
    if !continues {
        if let Some((ids, done)) = open.as_ref() {
            let missing: Vec<&str> = ids.iter().zip(done).filter(|(_, d)| !**d).map(|(i, _)| i.as_str()).collect();
            if !missing.is_empty() {
                return Err(Error::message_at(
                    index,
                    "",
                    format!("the conversation moves on while tool call(s) {missing:?} still wait for their results; add the results first"),
                ));
            }
        }
        *open = None;
    }
    for id in m.call_ids() {
        if seen.contains(id) || !new_calls.insert(id) {
            return Err(Error::message_at(index, &format.id_field(m, id, false), format!("reuses tool call id {id:?}")));
        }
        let (ids, done) = open.get_or_insert_with(Default::default);
        ids.push(id.to_string());
        done.push(false);
    }
    Ok(())
}
