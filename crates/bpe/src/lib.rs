//! Exact token counts for tiktoken's `o200k_base` and `cl100k_base`, fast and small.
//!
//! Counting is the engine's hot path (every added message is counted; a stateless request
//! handler counts the whole conversation on every request), so this is a counter built for
//! counting only, not an encoder:
//!
//! - `split`: the two split patterns, hand-written (no regex engine, linear on any input), over
//!   the character classes of `unicode`;
//! - `vocab`: the vocabulary, embedded in a compact form, decoded on first use and indexed a
//!   bucket at a time as lookups reach it;
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
    /// encoding decodes its vocabulary (a few milliseconds).
    pub fn count(self, text: &str) -> Option<usize> {
        if !self.available() {
            return None;
        }
        if text.is_empty() {
            return Some(0);
        }
        self.count_pieces(text.as_bytes(), None)
    }
}

/// Where a long text's count stood at some of its piece boundaries: `(offset, tokens before it)`,
/// in order, one at the first boundary at or after every [`MARK_EVERY`] bytes. With them the
/// count of a text cut from this one (its head, then anything new) is exact without counting the
/// head again: see [`Encoding::count_cut`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// The text's whole count.
    pub total: usize,
    /// `(offset, tokens before it)` at piece boundaries.
    pub at: Vec<(u32, u32)>,
}

/// Bytes between two marks: a cut counts at most about this much of its head again.
pub const MARK_EVERY: usize = 512;

/// Bytes a split rule reads past the end of a piece that is not white space (a character, and a
/// contraction's apostrophe and two letters after a letter run), with room to spare.
const LOOKAHEAD: usize = 16;

impl Encoding {
    /// Tokens in `text` and its [`Marks`], or `None` when this build lacks the encoding.
    pub fn count_marked(self, text: &str) -> Option<Marks> {
        let mut at = Vec::with_capacity(text.len() / MARK_EVERY);
        let total = self.count_pieces(text.as_bytes(), Some(&mut at))?;
        Some(Marks { total, at })
    }

    /// Tokens in `text`, a cut of a text whose [`Marks`] these are: its first `head` bytes are
    /// that text's first `head` bytes (and whatever follows them is new: a notice, then the
    /// original's tail, say). The head up to its last mark that no split rule reads past `head`
    /// from is taken from the marks; only the rest of `text` is counted. `head` is on a
    /// character boundary of `text`. `None` when this build lacks the encoding.
    ///
    /// Why it is exact: a piece's end depends only on the text from the piece's start on, so the
    /// pieces of `text` before a mark are the original's as long as deciding them read nothing
    /// at or after `head`. A rule reads at most [`LOOKAHEAD`] bytes past a piece that is not
    /// white space, and to the end of the run (and one character more) past white space, so a
    /// mark is usable when the white space at it, if any, ends [`LOOKAHEAD`] bytes before `head`.
    /// From that mark `text` is counted as it is.
    pub fn count_cut(self, text: &str, marks: &Marks, head: usize) -> Option<usize> {
        if !self.available() {
            return None;
        }
        let usable = |&&(at, _): &&(u32, u32)| space_end(&text.as_bytes()[..head], at as usize) + LOOKAHEAD <= head;
        let (from, before) = marks.at.iter().rev().find(usable).map_or((0, 0), |&(at, before)| (at as usize, before as usize));
        Some(before + self.count(&text[from..])?)
    }

    /// Sums the counts of the pieces of `s`, with the marks in `marks` when asked (one counting
    /// loop for both, so the split rules are inlined into it once).
    #[cfg_attr(not(any(feature = "o200k", feature = "cl100k")), allow(unused_variables))]
    fn count_pieces(self, s: &[u8], marks: Option<&mut Vec<(u32, u32)>>) -> Option<usize> {
        if !self.available() {
            return None;
        }
        match self {
            #[cfg(feature = "o200k")]
            Encoding::O200kBase => Some(count_with(self, o200k(), s, split::o200k, marks)),
            #[cfg(feature = "cl100k")]
            Encoding::Cl100kBase => Some(count_with(self, cl100k(), s, split::cl100k, marks)),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

#[cfg(feature = "o200k")]
static O200K: std::sync::OnceLock<Vocab> = std::sync::OnceLock::new();
#[cfg(feature = "cl100k")]
static CL100K: std::sync::OnceLock<Vocab> = std::sync::OnceLock::new();

/// The embedded vocabularies, in the build script's layout.
#[cfg(feature = "o200k")]
const O200K_VOCAB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.vocab"));
#[cfg(feature = "cl100k")]
const CL100K_VOCAB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.vocab"));

#[cfg(feature = "o200k")]
fn o200k() -> &'static Vocab {
    // SAFETY: the build script wrote it.
    O200K.get_or_init(|| unsafe { Vocab::new(O200K_VOCAB) })
}

#[cfg(feature = "cl100k")]
fn cl100k() -> &'static Vocab {
    // SAFETY: the build script wrote it.
    CL100K.get_or_init(|| unsafe { Vocab::new(CL100K_VOCAB) })
}

impl Encoding {
    /// Whether the encoding's vocabulary is decoded already (something counted with it), so a
    /// count costs no decoding (at most the indexing of a few buckets): for work worth doing
    /// only when the process counts with it anyway.
    pub fn indexed(self) -> bool {
        match self {
            #[cfg(feature = "o200k")]
            Encoding::O200kBase => O200K.get().is_some(),
            #[cfg(feature = "cl100k")]
            Encoding::Cl100kBase => CL100K.get().is_some(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Decodes the encoding's vocabulary now, if this build has it and nothing did yet, so the
    /// first count does not (see [`Vocab::new`]): for a host that can spend the time before its
    /// first request better than in it.
    pub fn decode_now(self) {
        match self {
            #[cfg(feature = "o200k")]
            Encoding::O200kBase => {
                o200k();
            }
            #[cfg(feature = "cl100k")]
            Encoding::Cl100kBase => {
                cl100k();
            }
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
}

/// The end of the white space that starts at `at` (`at` itself when there is none).
#[cfg_attr(not(any(feature = "o200k", feature = "cl100k")), allow(unused_mut))]
fn space_end(s: &[u8], mut at: usize) -> usize {
    #[cfg(any(feature = "o200k", feature = "cl100k"))]
    while at < s.len() {
        let (class, n) = unicode::char_at(s, at);
        if class != unicode::SPACE {
            break;
        }
        at += n;
    }
    #[cfg(not(any(feature = "o200k", feature = "cl100k")))]
    let _ = s;
    at
}

#[cfg(any(feature = "o200k", feature = "cl100k"))]
/// Splits `s` with `next` and sums the pieces' token counts; with `marks`, records a mark at the
/// first piece boundary at or after every [`MARK_EVERY`] bytes (none at the end).
#[inline(always)]
fn count_with(encoding: Encoding, v: &Vocab, s: &[u8], next: fn(&[u8], usize) -> usize, mut marks: Option<&mut Vec<(u32, u32)>>) -> usize {
    let mut total = 0;
    let mut i = 0;
    let mut mark_at = MARK_EVERY;
    while i < s.len() {
        // The clamp keeps the loop advancing and in bounds whatever a split rule returns.
        let end = next(s, i).clamp(i + 1, s.len());
        let piece = &s[i..end];
        total += if piece.len() == 1 || v.rank(piece) != NONE { 1 } else { cache::count(encoding, piece, || merge::count(v, piece)) };
        if end >= mark_at && end < s.len() {
            if let Some(m) = marks.as_deref_mut() {
                m.push((end as u32, total as u32));
            }
            mark_at = end + MARK_EVERY;
        }
        i = end;
    }
    total
}

#[cfg(all(test, feature = "o200k"))]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Text made of what the split rules turn on: white-space runs of every kind (spaces, tabs,
    /// line breaks, other Unicode spaces), letters of each case and script, marks, numbers,
    /// apostrophes before contraction letters, punctuation and emoji.
    fn text(rng: &mut Rng, len: usize) -> String {
        const LONG: &str = "                                                  ";
        const PARTS: [&str; 27] = [
            " ",
            "  ",
            "    ",
            "\n",
            "\n\n",
            "\r\n",
            "\t",
            " \n ",
            "\u{a0}",
            "\u{3000}",
            "word",
            "Word",
            "WORD",
            "'s",
            "'LL",
            "'re",
            "123",
            "4567",
            ".",
            ",;",
            "()",
            "日本語",
            "e\u{301}",
            "🙂",
            LONG,
            "\n                                        ",
            "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n",
        ];
        let mut s = String::new();
        while s.len() < len {
            s.push_str(PARTS[rng.below(PARTS.len())]);
        }
        s
    }

    fn boundary(s: &str, mut at: usize) -> usize {
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    #[test]
    fn a_mark_inside_white_space_that_the_cut_reaches_is_not_used() {
        // The piece before the mark ends at the run's last line break; a cut inside the run that
        // brings a line break of its own moves that piece's end past the mark.
        let original = format!("{}   \n{}{}", "a".repeat(510), " ".repeat(100), "b".repeat(700));
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase].into_iter().filter(|e| e.available()) {
            let marks = encoding.count_marked(&original).unwrap();
            assert!(marks.at.iter().any(|&(at, _)| at == 514), "{:?}", marks.at);
            let (head, middle, tail) = (600, "\n[... omitted ...]\n", 1200);
            let cut = [&original[..head], middle, &original[tail..]].concat();
            assert_eq!(encoding.count_cut(&cut, &marks, head), encoding.count(&cut), "{encoding:?}");
        }
    }

    #[test]
    fn a_cut_counts_as_the_text_it_makes() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let encodings = [Encoding::O200kBase, Encoding::Cl100kBase].into_iter().filter(|e| e.available());
        for encoding in encodings {
            for _ in 0..600 {
                let len = 2000 + rng.below(6000);
                let original = text(&mut rng, len);
                let marks = encoding.count_marked(&original).unwrap();
                assert_eq!(marks.total, encoding.count(&original).unwrap());
                assert!(marks.at.windows(2).all(|w| w[0].0 < w[1].0), "marks in order");
                let head = boundary(&original, rng.below(original.len()));
                let tail = boundary(&original, head + rng.below(original.len() - head + 1));
                let len = rng.below(40);
                let middle = text(&mut rng, len);
                let middle = ["", "\n[... omitted ...]\n", " ", "\n", &middle][rng.below(5)];
                let cut = [&original[..head], middle, &original[tail..]].concat();
                assert_eq!(
                    encoding.count_cut(&cut, &marks, head),
                    encoding.count(&cut),
                    "{encoding:?}: head {head}, tail {tail}, middle {middle:?}"
                );
            }
        }
    }

    /// Threads counting at once with a fresh vocabulary, which they fill as they go, count
    /// what tiktoken counts.
    #[test]
    fn threads_counting_at_once_on_a_fresh_vocabulary_agree() {
        // SAFETY: the build script wrote it.
        let v = unsafe { Vocab::new(O200K_VOCAB) };
        let reference = tiktoken_rs::o200k_base_singleton();
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let mut texts: Vec<String> = (0..6).map(|_| text(&mut rng, 20_000)).collect();
        let sources = [include_str!("lib.rs"), include_str!("vocab.rs"), include_str!("merge.rs"), include_str!("split.rs")];
        texts.extend(sources.map(str::to_owned));
        texts.push("Grüße aus Köln — 東京の天気は晴れ。Привет, мир! مرحبا بالعالم 🙂 ".repeat(200));
        let expected: Vec<usize> = texts.iter().map(|t| reference.encode_ordinary(t).len()).collect();
        std::thread::scope(|s| {
            for t in 0..4 {
                let (v, texts, expected) = (&v, &texts, &expected);
                s.spawn(move || {
                    for i in (0..texts.len()).map(|i| (i + t * 3) % texts.len()) {
                        let count = count_with(Encoding::O200kBase, v, texts[i].as_bytes(), split::o200k, None);
                        assert_eq!(count, expected[i], "thread {t}, text {i}");
                    }
                });
            }
        });
    }
}
