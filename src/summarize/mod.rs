//! Summarize calls: what the rungs send the host's summarizer, what a preparation obtained
//! ahead of the pass, and the summarizer that ships with the engine.
//!
//! The engine's LLM strategies call the host's [`Summarizer`](crate::Summarizer) with a request
//! whose `messages` are the span in the host's wire format (`body`: a valid request body,
//! whole exchanges, turns fitted). Answers obtained by [`crate::AutoContextMemory::prepare`]
//! before the pass that needs them are kept and looked up first (`prepared`). Both sit below
//! the rungs that share them, and import neither the rungs nor the engine.
//!
//! A host with no model at hand (a command-line run, a demo, a test, a fallback when the model
//! is down) can use [`OfflineSummarizer`]: a deterministic, extractive summarizer that keeps the
//! lines of a span that carry facts and needs no network; to a `facts` request (fact retrieval
//! by concept) it answers the lines that mention the concept. JavaScript sees it as
//! `offlineSummarize(request)`.

pub(crate) mod body;
pub mod extractive;
mod facts;
pub(crate) mod prepared;
mod request;
mod transcript;

pub use extractive::{summarize as offline_summary, OfflineSummarizer};
pub use request::request_from_json;
