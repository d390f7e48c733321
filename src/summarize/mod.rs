//! Summarizers that ship with the engine.
//!
//! The engine's LLM strategies call the host's [`Summarizer`](crate::Summarizer). A host with no
//! model at hand (a command-line run, a demo, a test, a fallback when the model is down) can use
//! [`OfflineSummarizer`]: a deterministic, extractive summarizer that keeps the lines of a span
//! that carry facts and needs no network; to a `facts` request (fact retrieval by concept) it
//! answers the lines that mention the concept. JavaScript sees it as `offlineSummarize(request)`.

pub mod extractive;
mod facts;
mod request;
mod transcript;

pub use extractive::{summarize as offline_summary, OfflineSummarizer};
pub use request::request_from_json;
