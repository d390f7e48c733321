//! Exact token counts for tiktoken's `o200k_base` and `cl100k_base`, fast and small.
//!
//! Counting is the engine's hot path (every added message is counted; a stateless request
//! handler counts the whole conversation on every request), so this is a counter built for
//! counting only, not an encoder:
//!
//! - `split`: the two split patterns, hand-written (no regex engine, linear on any input), over
//!   the character classes of `unicode`;
//! - `vocab`: the vocabulary, embedded in a compact form, decoded and indexed on first use;
//! - `merge`: byte-pair merging of the pieces that are not whole tokens, linear-logarithmic
//!   for long ones, behind `cache`, which remembers the counts of recent such pieces.
//!
//! A piece that is itself a token (most of them) costs one hash lookup. The counts equal
//! tiktoken's `encode_ordinary(text).len()` on every text: the tests compare them with
//! `tiktoken-rs` on the shared corpus and on generated adversarial text. Which vocabularies
//! are compiled in is chosen by the cargo features `o200k` and `cl100k`.

#![deny(missing_docs)]

// A build with one encoding leaves the other's split rules unused.
#[cfg(any(feature = "o200k", feature = "cl100k"))]
mod cache;
#[cfg(any(feature = "o200k", feature = "cl100k"))]
mod merge;
#[cfg(any(feature = "o200k", feature = "cl100k"))]
#[cfg_attr(not(all(feature = "o200k", feature = "cl100k")), allow(dead_code))]
mod split;
#[cfg(any(feature = "o200k", feature = "cl100k"))]
mod unicode;
#[cfg(any(feature = "o200k", feature = "cl100k"))]
mod vocab;

#[cfg(any(feature = "o200k", feature = "cl100k"))]
use vocab::{Vocab, NONE};

/// A built-in exact encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `o200k_base` (GPT-4o and later).
    O200kBase,
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100kBase,
}

impl Encoding {
    /// Whether this build carries the encoding's vocabulary.
    pub const fn available(self) -> bool {
        match self {
            Encoding::O200kBase => cfg!(feature = "o200k"),
            Encoding::Cl100kBase => cfg!(feature = "cl100k"),
        }
    }

    /// Tokens in `text`, or `None` when this build lacks the encoding. The first call per
    /// encoding indexes its vocabulary (a few milliseconds).
    pub fn count(self, text: &str) -> Option<usize> {
        if !self.available() {
            return None;
        }
        if text.is_empty() {
            return Some(0);
        }
        match self {
            #[cfg(feature = "o200k")]
            Encoding::O200kBase => Some(count_with(self, o200k(), text.as_bytes(), split::o200k)),
            #[cfg(feature = "cl100k")]
            Encoding::Cl100kBase => Some(count_with(self, cl100k(), text.as_bytes(), split::cl100k)),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

#[cfg(feature = "o200k")]
fn o200k() -> &'static Vocab {
    static V: std::sync::OnceLock<Vocab> = std::sync::OnceLock::new();
    V.get_or_init(|| Vocab::new(include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.vocab"))))
}

#[cfg(feature = "cl100k")]
fn cl100k() -> &'static Vocab {
    static V: std::sync::OnceLock<Vocab> = std::sync::OnceLock::new();
    V.get_or_init(|| Vocab::new(include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.vocab"))))
}

#[cfg(any(feature = "o200k", feature = "cl100k"))]
/// Splits `s` with `next` and sums the pieces' token counts.
#[inline(always)]
fn count_with(encoding: Encoding, v: &Vocab, s: &[u8], next: fn(&[u8], usize) -> usize) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < s.len() {
        // The clamp keeps the loop advancing and in bounds whatever a split rule returns.
        let end = next(s, i).clamp(i + 1, s.len());
        let piece = &s[i..end];
        total += if piece.len() == 1 || v.rank(piece) != NONE { 1 } else { cache::count(encoding, piece, || merge::count(v, piece)) };
        i = end;
    }
    total
}
