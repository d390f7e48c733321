//! What the host supplies: a summarizer (its own LLM), an offload store and a clock.
//!
//! Both are async traits without a `Send` bound: in WebAssembly everything runs on one thread,
//! and the binding implements them over JavaScript promises. Natively, tests implement them
//! with fakes. Errors are [`HostError`]s, which carry the host's own error through the engine
//! untouched.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures_util::future::LocalBoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::error::HostError;

/// What a strategy asks the host's summarizer to compress.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummarizeRequest {
    /// Which strategy asks (its [`crate::Strategy::summarize_kind`]: `tool_calls`, `round`,
    /// `large_message`, `current_round`, `rollup`, `prefix`, `facts` or `turns`).
    pub kind: String,
    /// Instructions for the summarizer model.
    pub system: String,
    /// The span to compress, serialized as text inside tags, plus any hint.
    pub prompt: String,
    /// The same span in the host's wire format, as a valid request body once the host appends
    /// its own instruction as a user message: whole exchanges stay, a partial one is rendered as
    /// text, and where turns alternate the body opens with the user and closes with the
    /// assistant ([`crate::Format::validate_request`] accepts it).
    pub messages: Vec<Value>,
    /// The length the summary should stay under, in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_chars: Option<usize>,
    /// How long the host may take before the call is aborted, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A JSON schema the answer should follow (the prefix summary's five fields, a facts
    /// list), for hosts with structured output; the engine reads prose answers too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// `messages` is the agent's own request, byte for byte, with the instruction as its last
    /// user message (`summarizeFromCache`): send it to the agent's model with the agent's system
    /// prompt and tools, and the provider reads the conversation from its prompt cache.
    pub from_cache: bool,
}

/// What the summarizer returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// The summary text.
    pub text: String,
    /// Tokens the host's model read, when it reported them.
    pub input_tokens: Option<u64>,
    /// Tokens the host's model wrote, when it reported them.
    pub output_tokens: Option<u64>,
}

/// The host's LLM, used by the summarizing strategies.
#[allow(async_fn_in_trait)]
pub trait Summarizer {
    /// Compresses the request's span into a summary.
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError>;

    /// Whether a model stands behind this summarizer. The engine skips the LLM strategies for
    /// one that says no ([`NoSummarizer`]), as it does when given none, instead of calling it
    /// and recording a failure for every span.
    fn available(&self) -> bool {
        true
    }
}

/// A [`Summarizer`] behind a pointer, as the rungs of the ladder take it: the same call, its
/// future boxed. Every summarizer is one.
pub trait DynSummarizer {
    /// [`Summarizer::summarize`], boxed.
    fn summarize_boxed<'a>(&'a self, request: &'a SummarizeRequest) -> LocalBoxFuture<'a, Result<Summary, HostError>>;
    /// [`Summarizer::available`].
    fn is_available(&self) -> bool;
}

impl<S: Summarizer> DynSummarizer for S {
    fn summarize_boxed<'a>(&'a self, request: &'a SummarizeRequest) -> LocalBoxFuture<'a, Result<Summary, HostError>> {
        Box::pin(self.summarize(request))
    }
    fn is_available(&self) -> bool {
        self.available()
    }
}

impl Summarizer for dyn DynSummarizer + '_ {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        self.summarize_boxed(request).await
    }
    fn available(&self) -> bool {
        self.is_available()
    }
}

/// Where originals of replaced spans are kept, under keys `<sessionId>/<uuid>`.
#[allow(async_fn_in_trait)]
pub trait OffloadStore {
    /// The value under `key`, or `None`.
    async fn get(&self, key: &str) -> Result<Option<String>, HostError>;
    /// Stores `value` under `key`.
    async fn put(&self, key: &str, value: &str) -> Result<(), HostError>;
    /// Removes `key` (no error when absent).
    async fn delete(&self, key: &str) -> Result<(), HostError>;
}

/// The host's clock: the time of a pass's events and how long a summarize call took.
///
/// The binding gives the JavaScript clock; natively, [`SystemClock`] is the default.
pub trait Clock {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> f64;
}

/// The operating system's clock (`std::time`). WebAssembly without a host has none: the
/// binding replaces it with the JavaScript clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> f64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
    }
}

/// An offload store in memory; clones share the same map.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    map: Rc<RefCell<BTreeMap<String, String>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys stored.
    pub fn len(&self) -> usize {
        self.map.borrow().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.map.borrow().is_empty()
    }

    /// All keys, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.map.borrow().keys().cloned().collect()
    }
}

impl OffloadStore for MemoryStore {
    async fn get(&self, key: &str) -> Result<Option<String>, HostError> {
        Ok(self.map.borrow().get(key).cloned())
    }
    async fn put(&self, key: &str, value: &str) -> Result<(), HostError> {
        self.map.borrow_mut().insert(key.to_string(), value.to_string());
        Ok(())
    }
    async fn delete(&self, key: &str) -> Result<(), HostError> {
        self.map.borrow_mut().remove(key);
        Ok(())
    }
}

/// A summarizer for hosts that have none: it always fails, so LLM strategies are skipped.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSummarizer;

impl Summarizer for NoSummarizer {
    async fn summarize(&self, _: &SummarizeRequest) -> Result<Summary, HostError> {
        Err(HostError::new("no summarize function was given"))
    }
    fn available(&self) -> bool {
        false
    }
}
