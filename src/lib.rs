//! # autocontext
//!
//! A context-memory engine for LLM agents. The host adds its conversation's messages; before
//! each model call, [`AutoContextMemory::compress_if_needed`] checks the budget and, when
//! needed, runs a ladder of compression strategies, cheapest first: truncation of huge tool
//! results, offload of large old messages, and summaries written by the host's own LLM through
//! an async [`Summarizer`]. Every original is written to the host's [`OffloadStore`] before it
//! is replaced, and every replacement names it with a `<!-- CONTEXT_OFFLOAD: uuid=... -->`
//! marker, so nothing is ever lost: [`AutoContextMemory::reload`] brings it back.
//!
//! The guarantees, each one tested: the working list is always valid for the provider (tool
//! calls and results stay paired), nothing is lost, untouched messages come back identical to
//! what was added, a pass commits all or nothing, a pass converges or says why it cannot, and
//! no input makes the engine panic.
//!
//! This crate is the engine; the npm package `autocontext` wraps it for browsers, Workers, Deno
//! and Node. Everything outside `src/wasm/` is plain Rust and runs natively.
//!
//! The modules are layers, each importing only those before it in this list (the Layout list of
//! the README, which a check of `npm test` holds): [`error`], `json` (the JSON writer),
//! `fields` (saved records read back), `hashed` (keys that are hashes), `sort` (the engine's one
//! sort), [`message`] and [`tokens`] (over the exact counter,
//! the crate `autocontext-bpe`) at the bottom; the wire formats ([`format`](mod@format)); the
//! identifiers of a text (`identifiers`) and the working list's [`entry`]; the [`options`], each
//! declared once; what the host supplies ([`host`], and at run time the [`plan`]); the analysis of a working list ([`structure`]); the
//! summarize calls ([`summarize`]); the ladder of rungs ([`strategy`]); the memory and its pass
//! ([`engine`]); and the binding to JavaScript (`wasm`).
//!
//! ```
//! use autocontext::{AutoContextMemory, Config, MemoryStore, NoSummarizer};
//! use serde_json::json;
//!
//! let memory = AutoContextMemory::new(Config::default(), NoSummarizer, MemoryStore::new()).unwrap();
//! memory.add(&json!({"role": "user", "content": "hello"})).unwrap();
//! assert_eq!(memory.messages(), vec![json!({"role": "user", "content": "hello"})]);
//! ```
#![deny(missing_docs)]

mod bytes16;
pub mod engine;
pub mod entry;
pub mod error;
mod fields;
pub mod format;
mod hashed;
pub mod host;
mod identifiers;
mod json;
pub mod message;
pub mod options;
pub mod plan;
mod random;
mod sort;
pub mod strategy;
pub mod structure;
pub mod summarize;
pub mod tokens;

#[cfg(target_arch = "wasm32")]
mod wasm;

pub use engine::calibration::UsageReport;
pub use engine::events::CompressionEvent;
pub use engine::offload::OffloadRecord;
pub use engine::SweepReport;
pub use engine::{AutoContextMemory, CompressResult, OverflowResult, PrepareResult, LIVE_OFFLOADS, MAX_EVENTS};
pub use error::{Error, ErrorCode, HostError, Result};
pub use format::Format;
pub use host::{Clock, MemoryStore, NoSummarizer, OffloadStore, SummarizeRequest, Summarizer, Summary, SystemClock};
pub use message::{Block, Message, Role, Synthetic};
pub use options::concepts::{Concept, FactType};
pub use options::presets::{Preset, Strategy};
pub use options::Config;
pub use plan::Plan;
pub use summarize::OfflineSummarizer;
pub use tokens::{TokenCounter, Tokenizer};
