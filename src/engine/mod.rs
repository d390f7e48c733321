//! `AutoContextMemory`: the facade of one conversation's memory.
//!
//! The engine is three parts, each in its own file: the state and its one owner
//! ([`state`]: the working list, the original log, the offload index, the events, and
//! persistence; the log's chunks in the store are [`log`]'s), the compression pass ([`pass`]: a value whose stages run in file order,
//! snapshot, analyse, plan, host calls, validate, commit) and this facade, which holds the
//! options and the host's parts and hands each call to the one that does it. A pass works on a
//! snapshot and commits all its edits at once at the end: if the store or the summarizer fails,
//! the working list is exactly as it was, no event is recorded and the offloads written so far
//! are deleted again. Messages added while a pass awaits the host are kept.
//!
//! Beside them, each in its own file, what the facade answers besides a pass: the offload
//! payloads and their checks ([`offload`]), reloads with or without a memory ([`reload`]),
//! the events a pass records ([`events`]), the calibration of the estimate against the
//! provider's counts ([`calibration`]), what is known of the provider's prompt cache
//! (`cache`), a provider's "context too long" error (`overflow`),
//! the results handed back (`results`), the fitting of a rung's edits to alternating turns
//! (`turns`, a stage of the pass) and the clean-up of what a session abandoned (`sweep`).

mod cache;
pub mod calibration;
mod deferred;
pub mod events;
mod identifier_index;
mod log;
pub mod offload;
mod overflow;
pub mod pages;
mod pass;
mod pass_log;
pub mod reload;
mod results;
mod retired;
mod state;
mod sweep;
mod texts;
mod turns;

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::Value;

use crate::engine::calibration::{Calibration, UsageReport};
use crate::engine::events::CompressionEvent;
use crate::error::{Error, ErrorCode, Result};
use crate::format::Format;
use crate::host::{Clock, OffloadStore, Summarizer, SystemClock};
use crate::message::Message;
use crate::options::Config;
use crate::plan::Plan;
use crate::strategy::Strategy;
use crate::summarize::prepared::Cache;
use crate::tokens::TokenCounter;
pub use offload::OffloadRecord;
use pages::KnownRecords;
use pass::Parts;
pub use results::{CompressResult, OverflowResult, PrepareResult, FAILURE_EVENT};
pub use retired::LIVE_OFFLOADS;
use state::State;
pub use state::{MAX_EVENTS, STATE_VERSION};
pub use sweep::SweepReport;

/// Clears a flag when dropped: a pass or preparation ends, however it ends (also when its
/// future is dropped).
struct Flag<'a>(&'a Cell<bool>);

impl Drop for Flag<'_> {
    fn drop(&mut self) {
        self.0.set(false);
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
    summarizer: Option<S>,
    store: O,
    ladder: Vec<Strategy>,
    clock: Box<dyn Clock>,
    state: RefCell<State>,
    /// A pass is running.
    busy: Cell<bool>,
    /// Summaries prepared for the next pass, and the cuts of the preparation.
    prepared: Rc<RefCell<Cache>>,
    /// A preparation is running.
    preparing: Cell<bool>,
    /// The generation and request tokens of the last preparation.
    last_prepare: Cell<Option<(u64, u64)>>,
    /// The memory lives for one pass (see [`AutoContextMemory::one_shot`]).
    one_shot: Cell<bool>,
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
            clock: Box::new(SystemClock),
            config,
            state: RefCell::new(State::default()),
            busy: Cell::new(false),
            prepared: Rc::default(),
            preparing: Cell::new(false),
            last_prepare: Cell::new(None),
            one_shot: Cell::new(false),
        })
    }

    /// Marks a memory that lives for one pass and is then dropped (the stateless
    /// `compress()`): nobody can read its log back, as nobody gets its state, so a pass writes
    /// none of the log to the store. Its offloads are written as always: they are what the
    /// compressed list names. An explicit [`AutoContextMemory::flush`] still writes the log.
    pub fn one_shot(&self) {
        self.one_shot.set(true);
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

    /// Replaces the clock ([`SystemClock`] by default) that dates events and times summarize
    /// calls.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Box::new(clock);
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

    /// What a pass uses.
    fn parts(&self) -> Parts<'_, S, O> {
        Parts {
            config: &self.config,
            counter: &self.counter,
            summarizer: self.summarizer.as_ref(),
            store: &self.store,
            ladder: &self.ladder,
            clock: self.clock.as_ref(),
            state: &self.state,
            prepared: &self.prepared,
        }
    }

    // ---- the conversation ----------------------------------------------------------------------

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
        self.state.borrow_mut().add(&self.config, &self.counter, Cow::Borrowed(value), pinned)
    }

    /// [`AutoContextMemory::add_with`] of a value the caller gives up: the messages become the
    /// memory's without a copy of each.
    pub fn add_owned(&self, value: Value, pinned: bool) -> Result<()> {
        self.state.borrow_mut().add(&self.config, &self.counter, Cow::Owned(value), pinned)
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
        self.state.borrow().facts.iter().enumerate().filter(|(_, f)| f.pinned).map(|(i, _)| i).collect()
    }

    fn set_pinned(&self, index: usize, pinned: bool) -> Result<()> {
        if self.busy.get() {
            return Err(Error::new(ErrorCode::LimitExceeded, "a compression pass is running on this memory; pin or unpin after it"));
        }
        self.materialize()?;
        self.state.borrow_mut().set_pinned(index, pinned)
    }

    /// Parses the pages a load left unparsed (see [`AutoContextMemory::from_pages`]): the
    /// events', then the working list's; every call that needs their messages does so first. A
    /// load leaves unparsed only pages its state's head vouches for (a digest of each working
    /// page and of its facts, one of all the events' pages), and this checks them as a load
    /// checks a state.
    ///
    /// # Errors
    /// `INVALID_STATE` when a page is not what a save of this engine wrote (a state forged to
    /// match its digests). The calls that cannot fail (`messages`, `working`, `messages_since`)
    /// then see only the parsed messages, and every call that can fails with this error.
    pub fn materialize(&self) -> Result<()> {
        if !self.state.borrow().unparsed() {
            return Ok(());
        }
        let mut state = self.state.borrow_mut();
        state.read_events()?;
        state.materialize(self.config.format)
    }

    /// The working list in wire format, ready to send.
    pub fn messages(&self) -> Vec<Value> {
        let _ = self.materialize();
        self.state.borrow().working.iter().map(|e| (*e.msg.wire).clone()).collect()
    }

    /// The working list as the text of a JSON array, written from the messages in place.
    pub fn messages_text(&self) -> String {
        let mut out = String::new();
        self.state.borrow().write_messages(&mut out, 0);
        out
    }

    /// The working list's version: it changes whenever the list does (an add, a pass that
    /// rewrote something), never otherwise.
    pub fn list_version(&self) -> u64 {
        self.state.borrow().versions.current()
    }

    /// What changed in the working list since `version` (a [`AutoContextMemory::list_version`]
    /// the caller holds the list at; `None` for the whole list): the version now, the first
    /// index that changed, and the wire messages from that index on. A caller that keeps its
    /// copy of the list truncates it to that index and appends them, so unchanged messages are
    /// never copied again. A version this memory does not know, or one more than 64 changes
    /// old, gets the whole list (index 0).
    pub fn messages_since(&self, version: Option<u64>) -> (u64, usize, Vec<Value>) {
        let _ = self.materialize();
        self.state.borrow().messages_since(version)
    }

    /// [`AutoContextMemory::messages_since`] as the JSON text of `{version, from, messages}`.
    pub fn messages_since_text(&self, version: Option<u64>) -> String {
        self.state.borrow().messages_since_text(version)
    }

    /// The working list as canonical messages.
    pub fn working(&self) -> Vec<Rc<Message>> {
        let _ = self.materialize();
        self.state.borrow().working.iter().map(|e| e.msg.clone()).collect()
    }

    /// Everything ever added, in order, exactly as added: the log's chunks read back from the
    /// store, then its tail.
    ///
    /// # Errors
    /// `STORE_FAILED` when the store fails, or a chunk is missing or not the one written.
    pub async fn original_messages(&self) -> Result<Vec<Value>> {
        let (mut key, tail) = self.log_head();
        let mut chunks = Vec::new();
        while let Some(k) = key {
            let (messages, prev) = self.log_chunk(&k).await?;
            chunks.push(messages);
            key = prev;
        }
        Ok(chunks.into_iter().rev().flatten().chain(tail).collect())
    }

    /// One page of [`AutoContextMemory::original_messages`]: the messages of the log chunk
    /// under `key` (a key [`AutoContextMemory::log_head`] or an earlier page named), checked,
    /// and the key of the chunk before it (`None` for the first).
    pub async fn log_chunk(&self, key: &str) -> Result<(Vec<Value>, Option<String>)> {
        log::read_chunk(&self.store, &self.config.session_id, log::Chain::Messages, key).await
    }

    /// The key of the newest log chunk in the store (`None` before the first flush), and the
    /// log's tail: the messages added since, as added.
    pub fn log_head(&self) -> (Option<String>, Vec<Value>) {
        let st = self.state.borrow();
        (st.log.head().map(str::to_string), st.log.tail().cloned().collect())
    }

    /// How many messages were added in all.
    pub fn history_len(&self) -> u64 {
        self.state.borrow().log.len()
    }

    /// Writes the messages added since the last flush to the store as a chunk of the log (all
    /// but the newest while the working list holds it as added, so the last add can be taken
    /// back), so neither the engine's memory nor its state holds them any more. Unless `force`,
    /// only once enough wait (64 messages or 32k tokens); a pass does that after it runs.
    /// Returns how many were written.
    ///
    /// # Errors
    /// `STORE_FAILED` when a put fails: what it did not write stays in the tail, and the next
    /// flush writes it.
    pub async fn flush(&self, force: bool) -> Result<usize> {
        // The texts the last pass wrote of the originals serve this flush only.
        let texts = std::mem::take(&mut self.state.borrow_mut().texts);
        let keep_newest = self.state.borrow().newest_untouched();
        let written = self.flush_chain(force, |st| &mut st.log, &texts, keep_newest).await?;
        // The offload records retired from the index go the same way (the newest stays).
        self.flush_chain(force, |st| &mut st.retired.0, &texts::Texts::default(), true).await?;
        Ok(written)
    }

    /// [`AutoContextMemory::flush`] of one chain; returns how many items it wrote.
    async fn flush_chain(
        &self,
        force: bool,
        chain: impl Fn(&mut State) -> &mut log::Log,
        texts: &texts::Texts,
        keep_newest: bool,
    ) -> Result<usize> {
        let Some(mut flush) = chain(&mut self.state.borrow_mut()).plan_flush(&self.config.session_id, force, texts, keep_newest) else {
            return Ok(0);
        };
        let mut written = 0;
        for k in 0..flush.len() {
            let (key, text) = flush.chunk(k);
            self.store.put(key, text).await.map_err(|e| {
                Error::host(ErrorCode::StoreFailed, "the offload store failed to put a chunk of the log; it stays in memory", e)
            })?;
            match chain(&mut self.state.borrow_mut()).flushed(&mut flush, k) {
                Some(count) => written += count,
                None => break,
            }
        }
        Ok(written)
    }

    /// Takes back the newest message added, when the working list still holds it as added (the
    /// OpenAI Agents SDK's `popItem`); `None` when nothing was added.
    ///
    /// # Errors
    /// `INVALID_STATE` when a pass replaced the newest message; `LIMIT_EXCEEDED` while a pass
    /// runs.
    pub fn pop(&self) -> Result<Option<Value>> {
        if self.busy.get() {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                "a compression pass is running on this memory; take the last item back after it",
            ));
        }
        self.materialize()?;
        self.state.borrow_mut().pop()
    }

    /// Tokens of the request the working list makes (messages, request overhead and
    /// `reservedTokens`).
    pub fn token_count(&self) -> u64 {
        self.state.borrow().request_tokens(&self.config)
    }

    /// The most recent events, at most [`MAX_EVENTS`] (every event also comes back in its
    /// pass's result).
    pub fn events(&self) -> Vec<CompressionEvent> {
        // A load may have left them unparsed; none when their pages fail the checks (a state
        // forged to match its digest: `validate` says so).
        let _ = self.state.borrow_mut().read_events();
        self.state.borrow().events.clone()
    }

    /// The offloads the state holds: every one the working list names, and the most recent
    /// [`LIVE_OFFLOADS`]. Older ones are retired to the store and still reload.
    pub fn offloads(&self) -> Vec<OffloadRecord> {
        self.state.borrow().offloads.clone()
    }

    /// Problems a provider would reject the working list for (empty when valid).
    pub fn validate(&self) -> Vec<crate::format::Problem> {
        if let Err(e) = self.materialize() {
            return vec![crate::format::Problem { index: 0, code: "INVALID_STATE", message: e.message().to_string() }];
        }
        self.config.format.validate(&self.state.borrow().working)
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

    // ---- passes --------------------------------------------------------------------------------

    /// Whether a pass would run now: the trigger, the message count, a new tool result over
    /// `toolResultLimit`, stale results whose rent has paid for their stubs, or a cold cache
    /// worth compacting deep.
    pub fn needs_compression(&self) -> bool {
        let parts = self.parts();
        let cold = parts.cold();
        if parts.trigger_check(None, cold).is_some() {
            return false;
        }
        // Unsure while pages are left unparsed: the pass would read them, and so does this.
        self.materialize().is_err() || parts.trigger_check(None, cold).is_none()
    }

    /// Runs a compression pass if the working list is over `msgThreshold` messages or
    /// `maxToken × tokenRatio` tokens.
    pub async fn compress_if_needed(&self) -> Result<CompressResult> {
        self.exclusive_pass(None).await
    }

    /// Runs a pass now, compressing below `target` estimated tokens (an overflow), whatever the
    /// trigger says.
    async fn compress_to(&self, target: u64) -> Result<CompressResult> {
        self.exclusive_pass(Some(target)).await
    }

    /// A pass, refused while another runs on this memory; offloads a failed pass could not
    /// delete are retried first.
    async fn exclusive_pass(&self, target: Option<u64>) -> Result<CompressResult> {
        if self.busy.replace(true) {
            return Err(Error::new(ErrorCode::LimitExceeded, "a compression pass is already running on this memory; await it first"));
        }
        let _busy = Flag(&self.busy);
        let result = pass::compress(self.parts(), target).await;
        // A model call follows a pass (or the overflow's retry): the provider's cache lives
        // from now.
        self.state.borrow_mut().cache.called(self.clock.now_ms());
        if let Ok(r) = &result {
            self.state.borrow_mut().passed(self.config.msg_threshold as usize, r);
        }
        // The log's tail goes to the store once enough waits; a failure keeps it in memory (and
        // in the state) for the next flush: nothing is lost, and the pass's result stands.
        if !self.one_shot.get() {
            let _ = self.flush(false).await;
        }
        // Kept for this flush only (a one-shot memory flushes none).
        self.state.borrow_mut().texts = texts::Texts::default();
        result
    }

    /// Prepares the summaries the next pass will need, off the request path: once usage passes
    /// `prepareRatio` of the window, runs the pass's dry run on a snapshot (the ladder as the
    /// pass will run it, without writing to the store or changing the working list) and keeps
    /// the host's answers. The next [`AutoContextMemory::compress_if_needed`] uses them for
    /// every request that is the same (the same span, unchanged) and calls the host only for
    /// the others.
    ///
    /// It may run while messages are added and while a pass runs; a second call while one runs
    /// returns at once. Failed summaries are not recorded (the pass tries them again).
    ///
    /// The preparation frees as much as the room left before the trigger, or as the pass will
    /// free (down to its low-water mark, by at least `minFreedTokens`) if that is more, so what
    /// it prepares still suffices once that room has filled.
    pub async fn prepare(&self) -> Result<PrepareResult> {
        let parts = self.parts();
        let (tokens, generation, pressure, calibration) = {
            let st = self.state.borrow();
            let pressure = st.count_pressure(self.config.msg_threshold as usize) || parts.turn_pressure(st.turns);
            (st.request_tokens(&self.config), st.generation, pressure, st.calibration)
        };
        let trigger = calibration.trigger(&self.config);
        let prepare_tokens = calibration.estimate_of(self.config.prepare_tokens()).min(trigger);
        let mut result = PrepareResult { tokens, prepare_tokens, ready: self.prepared.borrow().len(), ..PrepareResult::default() };
        let skip = if self.summarizer.is_none() {
            Some("there is no summarize function to prepare with")
        } else if self.preparing.get() {
            Some("a preparation is already running")
        } else if tokens < prepare_tokens && !pressure {
            Some("usage is below prepareRatio of the window")
        } else {
            None
        };
        if let Some(reason) = skip {
            result.reason = Some(reason.into());
            return Ok(result);
        }
        // The dry run reads every message.
        self.materialize()?;
        self.preparing.set(true);
        let _flag = Flag(&self.preparing);
        self.last_prepare.set(Some((generation, tokens)));
        let target = if tokens >= trigger {
            parts.pass_target(tokens, false, &[])
        } else {
            // The pass at the trigger will aim at its low-water mark; by then `room` more will
            // have come.
            let room = trigger - tokens;
            let frees = trigger - parts.pass_target(trigger, false, &[]).aim;
            results::Target::exactly(tokens.saturating_sub(room.max(frees).max(1)).max(1))
        };
        let (calls, reused) = pass::dry_run(parts, target).await?;
        result.prepared = true;
        result.summarize_calls = calls;
        result.reused = reused;
        result.ready = self.prepared.borrow().len();
        Ok(result)
    }

    /// Whether a preparation should start now: `prepareOnAdd` is set, a summarize function is
    /// there, none is running, usage is past `prepareRatio` but not yet at the trigger, and the
    /// list changed enough since the last one (a commit, or a quarter of the room between the
    /// two ratios added).
    pub fn should_prepare(&self) -> bool {
        if !self.config.prepare_on_add || self.summarizer.is_none() || self.preparing.get() {
            return false;
        }
        let st = self.state.borrow();
        let tokens = st.request_tokens(&self.config);
        let trigger = st.calibration.trigger(&self.config);
        let from = st.calibration.estimate_of(self.config.prepare_tokens()).min(trigger);
        if tokens < from || tokens >= trigger {
            return false;
        }
        match self.last_prepare.get() {
            None => true,
            Some((generation, at)) => generation != st.generation || tokens >= at + ((trigger - from) / 4).max(1),
        }
    }

    /// Handles an error the provider returned for the working list: when it says the context
    /// is too long, calibrates the estimate with the provider's numbers (when stated), compacts
    /// to `AGGRESSIVE` of the target, and says whether to retry. Any other
    /// error is left alone (`overflow: false, retry: false`).
    ///
    /// # Errors
    /// As [`AutoContextMemory::compress_if_needed`] (a failed store write, a pass already
    /// running).
    pub async fn handle_overflow(&self, error: &Value) -> Result<OverflowResult> {
        let before = self.token_count();
        let Some(o) = crate::engine::overflow::classify(error) else {
            return Ok(OverflowResult::not_overflow(before));
        };
        if let Some(requested) = o.requested {
            // The refused request was this working list: the provider counts that much more.
            self.state.borrow_mut().calibration.at_least(requested as f64 / before.max(1) as f64);
        }
        let target = crate::engine::overflow::target(&o, self.config.trigger_tokens(), self.config.token_ratio, &self.calibration());
        let pass = self.compress_to(target).await?;
        Ok(OverflowResult::after_pass(&o, before, target, pass))
    }

    /// Reports the provider's count of the last request, made from the working list as it is
    /// now (call it after the model call, before adding the reply): `prompt_tokens` the
    /// provider counted, `cached_tokens` it served from its cache. Updates the correction
    /// factor applied to the trigger and reports the drift. A count below half the estimate is
    /// refused (the factor is unchanged); one whose ratio to the estimate is below `tokenRatio`
    /// or above 4 is folded in at that bound, so the calibrated trigger never passes the
    /// window; the report's `status` and `warning` say which.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` when `prompt_tokens` is 0 or `cached_tokens` exceeds it.
    pub fn observe_usage(&self, prompt_tokens: u64, cached_tokens: Option<u64>) -> Result<UsageReport> {
        let estimated = self.token_count();
        let (trigger, ratio) = (self.config.trigger_tokens(), self.config.token_ratio);
        let mut st = self.state.borrow_mut();
        let report =
            crate::engine::calibration::observe_usage(&mut st.calibration, estimated, trigger, ratio, prompt_tokens, cached_tokens)?;
        st.cache.observed(self.clock.now_ms(), prompt_tokens, cached_tokens);
        Ok(report)
    }

    /// The correction factor and its observations.
    pub fn calibration(&self) -> Calibration {
        self.state.borrow().calibration
    }

    // ---- reloads -------------------------------------------------------------------------------

    /// The original messages of an offload this session created, in wire format: the payload
    /// must be the one this session wrote (its digest, envelope and message count are checked,
    /// see [`reload`]).
    pub async fn reload(&self, uuid: &str) -> Result<Vec<Value>> {
        pass::reload(self.parts(), uuid).await
    }

    /// Executes a `context_reload` call of the model (in the format's call shape) and returns
    /// the text to send back as the tool's result: the offload's messages as a readable
    /// transcript, at most `offloadReloadLimit` characters; a longer transcript comes in pages,
    /// each ending with a note on how to ask for the next (the tool's optional `page`
    /// argument). An unknown or malformed uuid or page is answered in the text, for the model
    /// to read; a failing store is an error for the host.
    pub async fn handle_reload_call(&self, call: &Value) -> Result<String> {
        let limit = self.config.offload_reload_limit as usize;
        crate::engine::reload::answer_call(self.config.format, call, limit, |uuid| async move { self.reload(&uuid).await }).await
    }

    // ---- persistence ---------------------------------------------------------------------------

    /// The whole memory as versioned JSON (offloaded originals stay in the store).
    pub fn to_json(&self) -> Value {
        self.state.borrow().to_json(&self.config)
    }

    /// [`AutoContextMemory::to_json`] as JSON text, written without building the tree first.
    pub fn to_json_text(&self) -> String {
        self.state.borrow().to_json_text(&self.config)
    }

    /// Restores a memory from [`AutoContextMemory::to_json`] output. `counter` is needed when
    /// the state was made with a host tokenizer.
    pub fn from_json(state: &Value, summarizer: Option<S>, store: O, counter: Option<TokenCounter>) -> Result<Self> {
        State::check_shape(state)?;
        Self::restore(state.clone(), summarizer, store, counter)
    }

    /// [`AutoContextMemory::to_json_text`] cut into the pages a save writes: `[head, counts,
    /// pages...]`, the head being the state's text without its long lists (the working list,
    /// the offload index, the events), the pages those lists in texts of [`pages::PAGE`] items,
    /// each byte for byte the state's text of them, and `counts` how many pages each list has
    /// (`"3,1,2"`).
    ///
    /// The memory keeps the working list's pages it wrote (and those it was restored from, in
    /// [`AutoContextMemory::from_pages`]): the next call copies a page whose entries did not
    /// change instead of writing it again.
    pub fn to_json_pages(&self) -> Vec<String> {
        self.state.borrow_mut().save_pages(&self.config)
    }

    /// Restores a memory from a saved state's parsed head and its pages as
    /// [`AutoContextMemory::to_json_pages`] cut them (`counts` pages of each list, in order).
    /// A page that is not a JSON array is a `STORE_FAILED` error whose index is its place in
    /// `pages`.
    pub fn from_pages(
        head: Value,
        counts: &[u32],
        pages: &[String],
        summarizer: Option<S>,
        store: O,
        counter: Option<TokenCounter>,
    ) -> Result<Self> {
        let mut state = head;
        let listed = pages::lists(pages, counts);
        let format = state.pointer("/config/format").and_then(Value::as_str).and_then(Format::from_name);
        // The pages before the last exchange stay unparsed when the head's facts vouch for them.
        let deferred = format
            .filter(|f| !f.links())
            .filter(|_| {
                state.get("autocontext").and_then(Value::as_u64) == Some(state::STATE_VERSION)
                    && state.get("counts").and_then(Value::as_u64) == Some(crate::tokens::COUNT_VERSION)
                    && counter.as_ref().is_none_or(|c| c.kind() != crate::tokens::Tokenizer::Custom)
            })
            .and_then(|_| {
                let lines: Vec<&str> = state.get("pageFacts")?.as_array()?.iter().map(Value::as_str).collect::<Option<_>>()?;
                deferred::Deferred::read(listed[0], &lines)
            });
        // The events stay unparsed when the head's digest of them vouches for their pages.
        let events = state.get("eventsDigest").and_then(Value::as_str).and_then(|d| deferred::EventPages::read(listed[2], d));
        // The offload index is read from its pages' text when a save laid every record out.
        let offloads = offload::read_pages(listed[1]);
        let unparsed = deferred.as_ref().map_or(0, |(d, _)| d.pages.len());
        let skipped = [unparsed, offloads.as_ref().map_or(0, |_| listed[1].len()), events.as_ref().map_or(0, |e| e.texts.len())];
        let sizes = pages::join(&mut state, counts, pages, skipped)?;
        let [working_sizes, offload_sizes, event_sizes] = pages::lists(&sizes, counts);
        let [working, offload_pages, event_pages] = listed;
        // Pages read from their text hold the records the reader counted; `join` knows none.
        let (offloads, read_sizes) = offloads.unzip();
        let offload_sizes = read_sizes.as_deref().unwrap_or(offload_sizes);
        let (config, counter, mut state, as_read) = State::restore_read(state, counter, deferred, offloads)?;
        let (working, working_sizes) = (working.get(unparsed..).unwrap_or_default(), working_sizes.get(unparsed..).unwrap_or_default());
        state.know_pages(working, working_sizes, &as_read);
        let texts = |pages: &[String]| pages.iter().map(|p| Rc::from(p.as_str())).collect::<Vec<_>>();
        state.known_offloads = KnownRecords::read(&state.offloads, &texts(offload_pages), offload_sizes);
        match events {
            Some(events) => state.unparsed_events = Some(events),
            None => state.known_events = KnownRecords::read(&state.events, &texts(event_pages), event_sizes),
        }
        Self::restored(config, counter, state, summarizer, store)
    }

    /// [`AutoContextMemory::from_json`] of a state the caller gives up: its messages become the
    /// memory's without a copy.
    pub fn restore(state: Value, summarizer: Option<S>, store: O, counter: Option<TokenCounter>) -> Result<Self> {
        let (config, counter, state) = State::restore(state, counter)?;
        Self::restored(config, counter, state, summarizer, store)
    }

    /// The memory of a restored state.
    fn restored(config: Config, counter: TokenCounter, state: State, summarizer: Option<S>, store: O) -> Result<Self> {
        let memory = AutoContextMemory::with_counter(config, counter, summarizer, store)
            .map_err(|e| Error::new(ErrorCode::InvalidState, format!("state.config: {}", e.message())))?;
        *memory.state.borrow_mut() = state;
        Ok(memory)
    }
}
