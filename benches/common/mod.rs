//! What the native benchmarks share: the corpus and its shapes (tests/common/corpus.rs, which
//! the tests read too) and the median they report.
// Each benchmark uses a part of it.
#![allow(dead_code)]

#[path = "../../tests/common/corpus.rs"]
mod corpus;
#[allow(unused_imports)] // each benchmark uses a part
pub use corpus::{corpus_dir, groups, largest, traces, unseen};

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
