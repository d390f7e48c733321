//! `WasmMemory`: the engine as a JavaScript class, plus the stateless free functions.
//!
//! The class holds the engine in an `Rc`. Synchronous methods borrow it briefly; asynchronous
//! ones clone the `Rc` into the future they return as a `Promise`, so no borrow of the class is
//! held across an `await` and calls may overlap (the engine itself refuses a second concurrent
//! pass with `LIMIT_EXCEEDED`; the TypeScript wrapper shares one pass instead).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::future_to_promise;
use js_sys::Promise;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert;
use super::error::{js_field_error, to_js};
use super::host::{HostParts, JsClock, JsCounter, JsHost, JsStore, JsSummarizer};
use crate::engine::AutoContextMemory;
use crate::error::ErrorCode;
use crate::options::Config;
use crate::plan::Plan;
use crate::tokens::{TokenCounter, Tokenizer};

type Engine = AutoContextMemory<JsSummarizer, JsStore>;

/// The context memory of one conversation (the engine behind the `AutoContextMemory` class of
/// the JavaScript API). Everything crosses as JSON text.
#[wasm_bindgen]
pub struct WasmMemory {
    inner: Rc<Engine>,
    /// The pages JavaScript holds as text, in order: those `fromPages` restored the memory
    /// from, then those of the last cut `toJsonPages` handed out (see there).
    held: RefCell<Vec<String>>,
}

fn custom_counter(counter: Option<JsCounter>, field: &str) -> Result<TokenCounter, JsValue> {
    counter.map(|c| TokenCounter::custom(Box::new(c))).ok_or_else(|| {
        js_field_error(
            ErrorCode::InvalidConfig,
            field,
            format!("option `{field}` is \"custom\", which needs a counting function: pass `tokenizer: (text) => number`"),
        )
    })
}

#[wasm_bindgen]
impl WasmMemory {
    /// A memory from options (JSON text of the engine's options) and the host's objects.
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str, host: &JsHost) -> Result<WasmMemory, JsValue> {
        super::random::ensure_seed()?;
        let options = convert::parse(options_json, ErrorCode::InvalidConfig, "options")?;
        let config = Config::from_json(&options).map_err(to_js)?;
        let parts = HostParts::read(host)?;
        let counter = match config.tokenizer {
            Tokenizer::Custom => custom_counter(parts.counter, "tokenizer")?,
            kind => TokenCounter::new(kind).map_err(to_js)?,
        };
        let inner = AutoContextMemory::with_counter(config, counter, parts.summarizer, parts.store).map_err(to_js)?.with_clock(JsClock);
        Ok(WasmMemory { inner: Rc::new(inner), held: RefCell::default() })
    }

    /// Restores a memory from the JSON text `toJson` wrote.
    #[wasm_bindgen(js_name = fromJson)]
    pub fn from_json(state_json: &str, host: &JsHost) -> Result<WasmMemory, JsValue> {
        super::random::ensure_seed()?;
        let state = convert::parse(state_json, ErrorCode::InvalidState, "state")?;
        Self::restore(state, host)
    }

    /// Restores a memory from a saved state's head and pages (what `toJsonPages` cut, the head
    /// naming its pages): `counts` pages of each paged field, in order, in `pages`. A page that
    /// is not a JSON array is a `STORE_FAILED` error whose `index` is its place in `pages`.
    #[wasm_bindgen(js_name = fromPages)]
    pub fn from_pages(head_json: &str, counts: Vec<u32>, pages: Vec<String>, host: &JsHost) -> Result<WasmMemory, JsValue> {
        super::random::ensure_seed()?;
        let head = convert::parse(head_json, ErrorCode::InvalidState, "state")?;
        let parts = HostParts::read(host)?;
        let counter = Self::counter_of(&head, parts.counter)?;
        let inner = AutoContextMemory::from_pages(head, &counts, &pages, parts.summarizer, parts.store, counter)
            .map_err(to_js)?
            .with_clock(JsClock);
        Ok(WasmMemory { inner: Rc::new(inner), held: RefCell::new(pages) })
    }

    /// The host's counter when the state (or its head) was made with one.
    fn counter_of(state: &Value, counter: Option<JsCounter>) -> Result<Option<TokenCounter>, JsValue> {
        let custom = state.pointer("/config/tokenizer").and_then(Value::as_str) == Some(Tokenizer::Custom.name());
        if custom {
            custom_counter(counter, "tokenizer").map(Some)
        } else {
            Ok(None)
        }
    }

    fn restore(state: Value, host: &JsHost) -> Result<WasmMemory, JsValue> {
        let parts = HostParts::read(host)?;
        let counter = Self::counter_of(&state, parts.counter)?;
        let inner = AutoContextMemory::restore(state, parts.summarizer, parts.store, counter).map_err(to_js)?.with_clock(JsClock);
        Ok(WasmMemory { inner: Rc::new(inner), held: RefCell::default() })
    }

    /// Adds one wire message or an array of them (JSON text); all or nothing. With `pinned`,
    /// every message added is pinned.
    pub fn add(&self, messages_json: &str, pinned: bool) -> Result<(), JsValue> {
        let value = convert::parse(messages_json, ErrorCode::InvalidMessage, "messages")?;
        self.inner.add_owned(value, pinned).map_err(to_js)
    }

    /// Pins working message `index`: no step replaces it.
    pub fn pin(&self, index: u32) -> Result<(), JsValue> {
        self.inner.pin(index as usize).map_err(to_js)
    }

    /// Unpins working message `index`.
    pub fn unpin(&self, index: u32) -> Result<(), JsValue> {
        self.inner.unpin(index as usize).map_err(to_js)
    }

    /// The indices of the pinned working messages (JSON text of an array).
    pub fn pinned(&self) -> String {
        convert::to_text(&self.inner.pinned())
    }

    /// The working list (JSON text of an array), ready to send.
    pub fn messages(&self) -> String {
        self.inner.messages_text()
    }

    /// The working list's version: it changes whenever the list does, never otherwise.
    #[wasm_bindgen(js_name = listVersion)]
    pub fn list_version(&self) -> f64 {
        self.inner.list_version() as f64
    }

    /// What changed in the working list since `version` (a `listVersion` the caller holds the
    /// list at; negative for the whole list): JSON text of `{ version, from, messages }`, the
    /// messages from index `from` on. Unchanged messages before `from` are not sent again. The
    /// text is ASCII (see `convert::ascii_json`), as are those of `logHead`, `logChunk` and
    /// `reload`, which JavaScript parses too.
    #[wasm_bindgen(js_name = messagesSince)]
    pub fn messages_since(&self, version: f64) -> String {
        let known = (version >= 0.0 && version.is_finite()).then_some(version as u64);
        convert::ascii_json(self.inner.messages_since_text(known))
    }

    /// The log of everything added: JSON text of `{ head, tail }`, the key of the newest chunk
    /// in the store (`null` before the first flush) and the messages added since, as added.
    #[wasm_bindgen(js_name = logHead)]
    pub fn log_head(&self) -> String {
        let (head, tail) = self.inner.log_head();
        convert::ascii_json(serde_json::json!({"head": head, "tail": tail}).to_string())
    }

    /// One chunk of the log, read back and checked; resolves to JSON text of
    /// `{ messages, prev }` (`prev`: the key of the chunk before it, or `null`).
    #[wasm_bindgen(js_name = logChunk, unchecked_return_type = "Promise<string>")]
    pub fn log_chunk(&self, key: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let (messages, prev) = inner.log_chunk(&key).await.map_err(to_js)?;
            Ok(JsValue::from_str(&convert::ascii_json(serde_json::json!({"messages": messages, "prev": prev}).to_string())))
        })
    }

    /// Messages added in all.
    #[wasm_bindgen(js_name = historyLength)]
    pub fn history_length(&self) -> f64 {
        self.inner.history_len() as f64
    }

    /// Writes the log's tail to the store (unless `force`, only once enough waits); resolves to
    /// how many messages were written.
    #[wasm_bindgen(unchecked_return_type = "Promise<number>")]
    pub fn flush(&self, force: bool) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move { Ok(JsValue::from_f64(inner.flush(force).await.map_err(to_js)? as f64)) })
    }

    /// Takes back the newest message added (JSON text of it, or `null`).
    pub fn pop(&self) -> Result<String, JsValue> {
        Ok(self.inner.pop().map_err(to_js)?.map_or_else(|| "null".to_string(), |v| v.to_string()))
    }

    /// Tokens of the request the working list makes.
    #[wasm_bindgen(js_name = tokenCount)]
    pub fn token_count(&self) -> f64 {
        self.inner.token_count() as f64
    }

    /// All compression events so far (JSON text of an array).
    pub fn events(&self) -> String {
        convert::to_text(&self.inner.events())
    }

    /// The offloads this session created (JSON text of `[{uuid, messageCount}]`).
    pub fn offloads(&self) -> String {
        convert::to_text(&self.inner.offloads())
    }

    /// The session id that prefixes this memory's store keys.
    #[wasm_bindgen(js_name = sessionId)]
    pub fn session_id(&self) -> String {
        self.inner.config().session_id.clone()
    }

    /// Milliseconds a store call may take before it fails (`storeTimeoutMs`); the TypeScript
    /// wrapper enforces it around the host's store.
    #[wasm_bindgen(js_name = storeTimeoutMs)]
    pub fn store_timeout_ms(&self) -> f64 {
        self.inner.config().store_timeout_ms as f64
    }

    /// Whether `compressIfNeeded` would run a pass now.
    #[wasm_bindgen(js_name = needsCompression)]
    pub fn needs_compression(&self) -> bool {
        self.inner.needs_compression()
    }

    /// Problems a provider would reject the working list for (JSON text of an array).
    pub fn validate(&self) -> String {
        convert::to_text(&self.inner.validate())
    }

    /// The `context_reload` tool definition in the memory's format (JSON text).
    #[wasm_bindgen(js_name = reloadTool)]
    pub fn reload_tool(&self) -> String {
        self.inner.format().reload_tool().to_string()
    }

    /// The whole memory as versioned JSON text.
    #[wasm_bindgen(js_name = toJson)]
    pub fn to_json(&self) -> String {
        self.inner.to_json_text()
    }

    /// The state cut for a save: `[head, counts, pages...]`, the head being the state's text
    /// without its long lists (the working list, the offload index, the events) and the pages
    /// those lists in texts of 32 items, `counts` how many pages each list has (`"3,1,2"`).
    ///
    /// A page JavaScript holds already comes as a number instead: its place among the pages
    /// held, those of the cut before (or those `fromPages` restored from, before the first
    /// cut). A save after a turn changes a page or two, so the others do not cross the boundary
    /// again, nor are decoded into new strings. The pages held are this cut's from now on.
    #[wasm_bindgen(js_name = toJsonPages, unchecked_return_type = "(string | number)[]")]
    pub fn to_json_pages(&self) -> Vec<JsValue> {
        let mut cut = self.inner.to_json_pages();
        let mut held = self.held.borrow_mut();
        // The pages held by length, the places of each: a page is compared only with those of
        // its length, and first with the one at its own place.
        let mut by_length: HashMap<usize, Vec<usize>> = HashMap::with_capacity(held.len());
        for (at, text) in held.iter().enumerate() {
            by_length.entry(text.len()).or_default().push(at);
        }
        let out = cut
            .iter()
            .enumerate()
            .map(|(i, text)| {
                // The head and the counts (the first two) always cross.
                let found = i.checked_sub(2).and_then(|page| {
                    if held.get(page).is_some_and(|h| h == text) {
                        return Some(page);
                    }
                    by_length.get(&text.len())?.iter().copied().find(|&at| held[at] == *text)
                });
                match found {
                    Some(at) => JsValue::from_f64(at as f64),
                    None => JsValue::from_str(text),
                }
            })
            .collect();
        *held = cut.split_off(2.min(cut.len()));
        out
    }

    /// Sets the agent's plan (JSON text of `{goal, subtasks?, expectedOutcome?}`), or clears it
    /// with `null`; while set, every summarize request ends with a hint about it.
    #[wasm_bindgen(js_name = setPlan)]
    pub fn set_plan(&self, plan_json: &str) -> Result<(), JsValue> {
        let value = convert::parse(plan_json, ErrorCode::InvalidArgument, "plan")?;
        let plan = match value {
            Value::Null => None,
            v => Some(Plan::from_json(&v).map_err(to_js)?),
        };
        self.inner.set_plan(plan);
        Ok(())
    }

    /// The plan set with `setPlan` (JSON text, `null` when none).
    pub fn plan(&self) -> String {
        convert::to_text(&self.inner.plan())
    }

    /// Marks this memory as living for one pass (the stateless `compress()`): a pass writes
    /// none of its log to the store.
    #[wasm_bindgen(js_name = oneShot)]
    pub fn one_shot(&self) {
        self.inner.one_shot();
    }

    /// Runs a compression pass if needed; resolves to `{ result, errors }`: JSON text of the
    /// result, and one `AutoContextError` per failed summarize call, in the order of the
    /// `SUMMARIZE_FAILED` events, each with what the host threw as its `cause`.
    #[wasm_bindgen(js_name = compressIfNeeded, unchecked_return_type = "Promise<{ result: string; errors: Error[] }>")]
    pub fn compress_if_needed(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let mut result = inner.compress_if_needed().await.map_err(to_js)?;
            let failures = std::mem::take(&mut result.failures);
            Ok(convert::with_errors(convert::to_text(&result), failures))
        })
    }

    /// The originals of an offload; resolves to JSON text of an array of wire messages.
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn reload(&self, uuid: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let messages = inner.reload(&uuid).await.map_err(to_js)?;
            Ok(JsValue::from_str(&convert::ascii_json(crate::json::array_to_string(&messages))))
        })
    }

    /// Deletes the offloads this session wrote and abandoned; resolves to JSON text of
    /// `{ deleted, pending }` (store keys).
    #[wasm_bindgen(js_name = sweepPending, unchecked_return_type = "Promise<string>")]
    pub fn sweep_pending(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move { Ok(JsValue::from_str(&convert::to_text(&inner.sweep_pending().await))) })
    }

    /// Every offload-store key the state reaches; resolves to JSON text of an array of keys.
    /// `listed` is the session's keys as the store lists them (JSON text of an array), read
    /// ahead in the chains' walk.
    #[wasm_bindgen(js_name = reachableKeys, unchecked_return_type = "Promise<string>")]
    pub fn reachable_keys(&self, listed: String) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let listed = convert::string_list(&listed, "listed keys").map_err(|e| JsValue::from_str(&e))?;
            Ok(JsValue::from_str(&convert::to_text(&inner.reachable_keys(&listed).await.map_err(to_js)?)))
        })
    }

    /// Prepares the summaries the next pass will need; resolves to JSON text of the result.
    #[wasm_bindgen(unchecked_return_type = "Promise<string>")]
    pub fn prepare(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let r = inner.prepare().await.map_err(to_js)?;
            Ok(JsValue::from_str(&convert::to_text(&r)))
        })
    }

    /// Whether a background preparation should start now (`prepareOnAdd`).
    #[wasm_bindgen(js_name = shouldPrepare)]
    pub fn should_prepare(&self) -> bool {
        self.inner.should_prepare()
    }

    /// Handles a provider error (JSON text of what the host caught); resolves to
    /// `{ result, errors }` like `compressIfNeeded`.
    #[wasm_bindgen(js_name = handleOverflow, unchecked_return_type = "Promise<{ result: string; errors: Error[] }>")]
    pub fn handle_overflow(&self, error_json: &str) -> Promise {
        let inner = self.inner.clone();
        let error = convert::parse(error_json, ErrorCode::InvalidArgument, "error");
        future_to_promise(async move {
            let mut result = inner.handle_overflow(&error?).await.map_err(to_js)?;
            let failures = result.pass.as_mut().map(|p| std::mem::take(&mut p.failures)).unwrap_or_default();
            Ok(convert::with_errors(convert::to_text(&result), failures))
        })
    }

    /// Reports the provider's usage of the last request (JSON text of `{ promptTokens,
    /// cachedTokens }` or a provider's usage object); returns JSON text of the report.
    #[wasm_bindgen(js_name = observeUsage)]
    pub fn observe_usage(&self, usage_json: &str) -> Result<String, JsValue> {
        let usage = convert::parse(usage_json, ErrorCode::InvalidArgument, "usage")?;
        let (prompt, cached) = crate::engine::calibration::read_usage(&usage).map_err(to_js)?;
        let report = self.inner.observe_usage(prompt, cached).map_err(to_js)?;
        Ok(convert::to_text(&report))
    }

    /// Executes a `context_reload` call (JSON text of the call, its arguments string or its
    /// parsed arguments); resolves to the text to send back as the tool's result.
    #[wasm_bindgen(js_name = handleReloadCall, unchecked_return_type = "Promise<string>")]
    pub fn handle_reload_call(&self, call_json: &str) -> Promise {
        let inner = self.inner.clone();
        let call = convert::parse(call_json, ErrorCode::InvalidArgument, "reload call arguments");
        future_to_promise(async move {
            let text = inner.handle_reload_call(&call?).await.map_err(to_js)?;
            Ok(JsValue::from_str(&text))
        })
    }
}

/// Problems a provider would reject a list of wire messages for (JSON text of an array of
/// `{index, code, message}`; empty when valid). With `request`, the list is checked as a
/// complete request body: every call answered, and the user's turn first where turns alternate.
#[wasm_bindgen(js_name = validateMessages)]
pub fn validate_messages(messages_json: &str, format: &str, request: bool) -> Result<String, JsValue> {
    let format = convert::format(format)?;
    let messages = convert::parse(messages_json, ErrorCode::InvalidMessage, "messages")?;
    Ok(convert::to_text(&convert::validate(&messages, format, request)))
}

/// Tokens of each message of a list of wire messages (JSON text of an array), counted as the
/// engine counts a message of its working list with this build's default tokenizer: the figures
/// `tokenCount()` sums (plus the request's fixed overhead). A replay that prices requests message
/// by message, the cached prefix apart from the rest, reads them here.
#[wasm_bindgen(js_name = countMessageTokens)]
pub fn count_message_tokens(messages_json: &str, format: &str) -> Result<Vec<u32>, JsValue> {
    let format = convert::format(format)?;
    let Value::Array(items) = convert::parse(messages_json, ErrorCode::InvalidMessage, "messages")? else {
        return Err(js_field_error(ErrorCode::InvalidArgument, "messages", "must be an array of messages"));
    };
    let counter = TokenCounter::new(Tokenizer::DEFAULT).map_err(to_js)?;
    items.iter().enumerate().map(|(i, v)| format.parse(i, v).and_then(|m| counter.count_message(&m)).map_err(to_js)).collect()
}

/// Decodes this build's default vocabulary now (none in the estimator-only build), so that
/// the first count does not (see `Tokenizer::prepare`).
#[wasm_bindgen(js_name = prepareTokenizer)]
pub fn prepare_tokenizer() {
    Tokenizer::DEFAULT.prepare();
}

/// Tokens in a text with a built-in tokenizer (`o200k_base`, `cl100k_base` or `estimate`), or
/// with this build's default one when none is named. A tokenizer the build lacks is an
/// `INVALID_CONFIG` error that names the build to import.
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(text: &str, tokenizer: Option<String>) -> Result<f64, JsValue> {
    let kind = match tokenizer.as_deref().map(|name| (name, Tokenizer::from_name(name))) {
        None => Tokenizer::DEFAULT,
        Some((_, Some(kind))) if kind != Tokenizer::Custom => kind,
        Some((name, _)) => {
            return Err(js_field_error(
                ErrorCode::InvalidConfig,
                "tokenizer",
                format!("tokenizer must be \"o200k_base\", \"cl100k_base\" or \"estimate\", got {name:?}"),
            ))
        }
    };
    let counter = TokenCounter::new(kind).map_err(to_js)?;
    counter.count_text(text).map(f64::from).map_err(to_js)
}
