//! Token counting: exact BPE encodings, a calibrated estimator, or the host's own counter.
//!
//! The engine counts each message once, when it is added or created, and keeps the count beside
//! it; the total is a running sum. That makes `add` plus the trigger check O(1) amortized
//! whatever the length of the conversation. The exact counts come from `crates/bpe`; which
//! vocabularies a build carries is chosen at compile time (cargo features `o200k`, the default,
//! and `cl100k`), and asking a build for one it lacks is a configuration error that names the
//! build to use instead. A vocabulary is indexed on the first count that needs it, so a host
//! that never counts with it never pays for it. The exact counters of a thread also remember
//! the counts of the texts they counted lately, so a host that hands the stateless `compress()`
//! its whole conversation before every call pays only for what is new.

use crate::error::{Error, ErrorCode, HostError, Result};
use crate::hashed::{slot, text_key, Keyed};
use crate::message::{Block, Message};
use autocontext_bpe::{Encoding, Marks};

/// Tokens every message costs besides its content (OpenAI's accounting: 3 per message plus the
/// role).
pub const MESSAGE_OVERHEAD: u32 = 4;
/// Tokens a tool call or a tool result costs besides its text (id, name and framing).
pub const TOOL_BLOCK_OVERHEAD: u32 = 3;
/// Tokens every request costs once (the reply's priming).
pub const REQUEST_OVERHEAD: u64 = 3;

/// The version of how a message is counted: bumped with every change that can change a
/// built-in tokenizer's count of some message (a vocabulary, the estimator's weights, the
/// overheads above, what of a message is counted). A saved state carries the counts of its
/// messages and this version; a restore under the same version and tokenizer reads the counts
/// instead of counting every message again, which is most of a restore's work (a Worker
/// restores its session on every request). tests/state.rs holds a fingerprint of the counts of
/// this version and fails when they change and it does not.
pub const COUNT_VERSION: u64 = 1;

/// Which counter to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tokenizer {
    /// tiktoken `o200k_base` (GPT-4o and later), exact. The default.
    O200kBase,
    /// tiktoken `cl100k_base` (GPT-4, GPT-3.5), exact.
    Cl100kBase,
    /// A byte-class linear estimate (no vocabulary; about 14% mean error, see [`estimate`]).
    Estimate,
    /// The host's own `(text) => number`.
    Custom,
}

impl Tokenizer {
    /// The built-in tokenizers, by option value (a build may lack a vocabulary: see
    /// [`Tokenizer::available`]).
    pub const BUILT_IN: [Tokenizer; 3] = [Tokenizer::O200kBase, Tokenizer::Cl100kBase, Tokenizer::Estimate];

    /// Reads an option value (`o200k_base`, `cl100k_base`, `estimate`, `custom`).
    pub fn from_name(name: &str) -> Option<Tokenizer> {
        Some(match name {
            "o200k_base" => Tokenizer::O200kBase,
            "cl100k_base" => Tokenizer::Cl100kBase,
            "estimate" => Tokenizer::Estimate,
            "custom" => Tokenizer::Custom,
            _ => return None,
        })
    }

    /// The default of this build: `o200k_base` when it is built in, else `cl100k_base`, else
    /// the estimator (the build without vocabularies).
    pub const DEFAULT: Tokenizer = if Encoding::O200kBase.available() {
        Tokenizer::O200kBase
    } else if Encoding::Cl100kBase.available() {
        Tokenizer::Cl100kBase
    } else {
        Tokenizer::Estimate
    };

    /// Whether this build can count with this tokenizer (the exact ones need their vocabulary
    /// compiled in).
    pub fn available(self) -> bool {
        self.encoding().is_none_or(Encoding::available)
    }

    /// Decodes this tokenizer's vocabulary now, when it has one in this build and nothing did
    /// yet, so that the first count does not: a Worker does it in its startup, which the
    /// platform does not bill to a request, instead of in its first request (about 12 ms of
    /// CPU for `o200k_base` in workerd, more than the free plan's 10 ms for a whole request).
    pub fn prepare(self) {
        if let Some(encoding) = self.encoding() {
            encoding.decode_now();
        }
    }

    fn encoding(self) -> Option<Encoding> {
        match self {
            Tokenizer::O200kBase => Some(Encoding::O200kBase),
            Tokenizer::Cl100kBase => Some(Encoding::Cl100kBase),
            Tokenizer::Estimate | Tokenizer::Custom => None,
        }
    }

    /// The option value.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200kBase => "o200k_base",
            Tokenizer::Cl100kBase => "cl100k_base",
            Tokenizer::Estimate => "estimate",
            Tokenizer::Custom => "custom",
        }
    }
}

/// A host-supplied counter of tokens in a text.
pub trait TextCounter {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> Result<u32, HostError>;
}

/// Counts the tokens of texts and messages with the chosen [`Tokenizer`].
pub struct TokenCounter {
    kind: Tokenizer,
    custom: Option<Box<dyn TextCounter>>,
}

/// Texts shorter than this are counted every time: counting them costs about what looking
/// them up would.
const REMEMBERED_MIN: usize = 128;
/// Slots of the table of remembered counts, per encoding (16 bytes each: 256 KiB).
const REMEMBERED_SLOTS: usize = 1 << 14;
/// Texts shorter than this are counted whole and leave no marks (a cut of a marked text is
/// counted from its marks, whatever its own length).
const MARKED_MIN: usize = 4096;
/// The text the kept marks may cover (about 1.6% of it in marks).
const MARKED_BYTES: usize = 64 << 20;

/// What a thread's exact counters remember of the texts they counted lately, per encoding.
///
/// **Counts.** A host that calls the stateless `compress()` before every model call hands it
/// the whole conversation each time, and two memories of one process (two sessions, a restored
/// one) hold the same texts: counting a text it counted lately again is a lookup. A
/// direct-mapped table of the last text seen per slot, keyed by the text's 64-bit hash and
/// length, a newer text taking an older one's slot.
///
/// **Marks and cuts.** A truncated tool result is its original's head, then a notice and the
/// original's tail: byte-pair counts are not additive across a cut, but with the original's
/// count at piece boundaries along it ([`Marks`]) the head is counted only from its last usable
/// mark ([`Encoding::count_cut`]). The marks are taken as the original is counted (when it is
/// added), so nothing is counted twice for them.
struct Recent {
    /// Remembered counts, empty until the first text long enough to remember.
    counts: Vec<Remembered>,
    marks: std::collections::HashMap<(u64, usize), std::rc::Rc<Marks>, Keyed>,
    /// Marked texts in the order they came, to forget the oldest first.
    order: std::collections::VecDeque<(u64, usize)>,
    bytes: usize,
    /// Cut texts not counted yet, by their key: how long a head they share with their original,
    /// and its marks.
    pending: std::collections::HashMap<(u64, usize), (usize, std::rc::Rc<Marks>), Keyed>,
}

/// One slot of [`Recent::counts`]: a text's hash and length, and its count (length 0: empty).
#[derive(Clone, Copy, Default)]
struct Remembered {
    hash: u64,
    len: u32,
    count: u32,
}

thread_local! {
    /// One [`Recent`] per [`Encoding`], shared by every counter of the thread.
    static RECENT: [std::cell::RefCell<Recent>; 2] = const { [std::cell::RefCell::new(Recent::NEW), std::cell::RefCell::new(Recent::NEW)] };
}

/// Whether `a` and `b` share their first `head` bytes, `head` being a character boundary of both
/// (so false when `head` is past the end of either).
fn same_head(a: &str, b: &str, head: usize) -> bool {
    a.is_char_boundary(head) && b.is_char_boundary(head) && a.as_bytes()[..head] == b.as_bytes()[..head]
}

/// Runs `f` on the thread's [`Recent`] for `encoding`.
fn recent<T>(encoding: Encoding, f: impl FnOnce(&mut Recent) -> T) -> T {
    RECENT.with(|all| f(&mut all[encoding as usize].borrow_mut()))
}

impl Recent {
    const NEW: Recent = Recent {
        counts: Vec::new(),
        marks: std::collections::HashMap::with_hasher(Keyed::new()),
        order: std::collections::VecDeque::new(),
        bytes: 0,
        pending: std::collections::HashMap::with_hasher(Keyed::new()),
    };

    /// The remembered count of the text with this key.
    fn count_of(&self, key: (u64, usize)) -> Option<u32> {
        let r = self.counts.get(slot(key, REMEMBERED_SLOTS))?;
        (r.len != 0 && r.hash == key.0 && r.len as usize == key.1).then_some(r.count)
    }

    fn remember(&mut self, key: (u64, usize), count: u32) {
        let Ok(len) = u32::try_from(key.1) else { return };
        if self.counts.is_empty() {
            self.counts = vec![Remembered::default(); REMEMBERED_SLOTS];
        }
        self.counts[slot(key, REMEMBERED_SLOTS)] = Remembered { hash: key.0, len, count };
    }

    fn keep(&mut self, key: (u64, usize), marks: Marks) {
        if self.marks.insert(key, std::rc::Rc::new(marks)).is_none() {
            self.order.push_back(key);
            self.bytes += key.1;
        }
        while self.bytes > MARKED_BYTES {
            let Some(old) = self.order.pop_front() else { break };
            self.marks.remove(&old);
            self.bytes -= old.1;
        }
    }

    /// Counts `text` (of `key`) afresh: from the marks of the text it was cut from when a cut
    /// was prepared, else whole, leaving its marks when it is long.
    fn count(&mut self, encoding: Encoding, text: &str, key: (u64, usize)) -> u32 {
        // A cut text is counted from its original's marks, however short (a truncated tool
        // result keeps a few kilobytes of a long original, more than half of it its head).
        if let Some((head, marks)) = self.pending.remove(&key) {
            return clamp(encoding.count_cut(text, &marks, head).unwrap_or(0));
        }
        if text.len() < MARKED_MIN {
            return clamp(encoding.count(text).unwrap_or(0));
        }
        let marks = encoding.count_marked(text).unwrap_or_default();
        let n = clamp(marks.total);
        self.keep(key, marks);
        n
    }
}

/// The tokens an offload marker counts in the build's default encoding when its uuid is drawn
/// by the engine: the most common count over random uuids (31 of 25 to 41 in `o200k_base`,
/// measured over 20,000; about one uuid in five counts it).
const MARKER_TOKENS: usize = 31;

/// The tokens of a marker's text around `=<uuid>` (`<!-- CONTEXT_OFFLOAD: uuid` and ` -->`) in
/// `o200k_base`. A text is counted piece by piece, and the marker's pieces split at `=`, which
/// joins the uuid's first piece when that is letters, and at the space after the uuid; so a
/// marker counts these and its `=<uuid>`'s, whatever the uuid (a test checks both ways).
const MARKER_FRAME_TOKENS: usize = 8;

/// Whether the marker of `uuid` counts [`MARKER_TOKENS`] in the build's default exact encoding
/// (`o200k_base`): true in a build without it (the estimator counts a marker by its length,
/// the same for every uuid), and while nothing has counted with it (a process whose memories
/// count with the estimator or the host's function never decodes its vocabulary for this).
/// Only `=<uuid>` is counted, not the whole marker ([`MARKER_FRAME_TOKENS`]): a pass draws
/// about five uuids for each offload, and counting them was a few percent of a pass in Node.
/// Text around a marker changes its count by the same for every uuid (a text is counted piece
/// by piece, and a marker's pieces end at its own punctuation), so every marker of a
/// conversation costs the same whatever its uuid, and a conversation the same on every run. A
/// memory counting with another tokenizer keeps that one's variation.
pub(crate) fn steady_marker(uuid: &str) -> bool {
    match Tokenizer::DEFAULT.encoding() {
        Some(Encoding::O200kBase) if Encoding::O200kBase.indexed() => {
            Encoding::O200kBase.count(&format!("={uuid}")).is_none_or(|n| n + MARKER_FRAME_TOKENS == MARKER_TOKENS)
        }
        _ => true,
    }
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter").field("kind", &self.kind).finish()
    }
}

impl TokenCounter {
    /// A counter of a built-in kind. `Tokenizer::Custom` needs [`TokenCounter::custom`]; an
    /// exact encoding this build lacks is an `INVALID_CONFIG` error naming the build that has it.
    pub fn new(kind: Tokenizer) -> Result<TokenCounter> {
        if kind == Tokenizer::Custom {
            return Err(Error::config("tokenizer", "\"custom\" needs a counting function"));
        }
        if !kind.available() {
            return Err(unavailable(kind));
        }
        Ok(TokenCounter { kind, custom: None })
    }

    /// A counter that asks the host.
    pub fn custom(counter: Box<dyn TextCounter>) -> TokenCounter {
        TokenCounter { kind: Tokenizer::Custom, custom: Some(counter) }
    }

    /// Which tokenizer this is.
    pub fn kind(&self) -> Tokenizer {
        self.kind
    }

    /// Tokens in a text.
    pub fn count_text(&self, text: &str) -> Result<u32> {
        if text.is_empty() {
            return Ok(0);
        }
        Ok(match self.kind {
            Tokenizer::O200kBase | Tokenizer::Cl100kBase => {
                let Some(encoding) = self.kind.encoding().filter(|e| e.available()) else { return Err(unavailable(self.kind)) };
                if text.len() < REMEMBERED_MIN {
                    return Ok(clamp(encoding.count(text).unwrap_or(0)));
                }
                let key = text_key(text);
                recent(encoding, |recent| {
                    if let Some(n) = recent.count_of(key) {
                        recent.pending.remove(&key);
                        return n;
                    }
                    let n = recent.count(encoding, text, key);
                    recent.remember(key, n);
                    n
                })
            }
            Tokenizer::Estimate => estimate(text, &O200K_WEIGHTS),
            Tokenizer::Custom => match &self.custom {
                Some(c) => c.count(text).map_err(|e| Error::host(ErrorCode::TokenizerFailed, "the tokenizer function failed", e))?,
                None => return Err(Error::new(ErrorCode::TokenizerFailed, "no tokenizer function was given")),
            },
        })
    }

    /// Tells the counter that `text` is a cut of `original`: their first `head` bytes are the
    /// same, and what follows in `text` is new. When `original` was counted lately, counting
    /// `text` then counts its head only from the last of the original's marks before the cut.
    /// Nothing changes for another kind of counter, an original not counted lately, or a text
    /// that is not such a cut; the count is the same either way.
    pub fn prepare_cut(&self, original: &str, text: &str, head: usize) {
        let Some(encoding) = self.kind.encoding() else { return };
        if text.len() < REMEMBERED_MIN || !same_head(original, text, head) {
            return;
        }
        recent(encoding, |recent| {
            let Some(marks) = recent.marks.get(&text_key(original)).cloned() else { return };
            if recent.pending.len() >= 1024 {
                recent.pending.clear(); // cuts prepared and never counted
            }
            recent.pending.insert(text_key(text), (head, marks));
        })
    }

    /// Tells the counter that `text` replaces `before`, with something inserted after its cut
    /// head (an identifier index before the marker of a truncated result): a cut prepared for
    /// `before` moves to `text`.
    pub fn recut(&self, before: &str, text: &str) {
        let Some(encoding) = self.kind.encoding() else { return };
        recent(encoding, |recent| {
            let Some((head, marks)) = recent.pending.remove(&text_key(before)) else { return };
            if text.len() >= REMEMBERED_MIN && same_head(before, text, head) {
                recent.pending.insert(text_key(text), (head, marks));
            }
        })
    }

    /// Tokens a message costs in a request: its text, thinking, tool calls (name and
    /// arguments), tool results, a fixed estimate per image or file, and the per-message
    /// overhead.
    pub fn count_message(&self, m: &Message) -> Result<u32> {
        let mut n = MESSAGE_OVERHEAD;
        for b in &m.blocks {
            n = n.saturating_add(match b {
                Block::Text(t) | Block::Thinking(t) => self.count_text(t)?,
                Block::ToolCall { name, arguments, .. } => TOOL_BLOCK_OVERHEAD + self.count_text(name)? + self.count_text(arguments)?,
                Block::ToolResult { content, .. } => TOOL_BLOCK_OVERHEAD + self.count_text(content)?,
                Block::Opaque { tokens, .. } => *tokens,
            });
        }
        Ok(n)
    }
}

/// This build's name, as the npm package's entry points call it.
fn build_name() -> &'static str {
    match (Encoding::O200kBase.available(), Encoding::Cl100kBase.available()) {
        (true, false) => "autocontext (o200k_base)",
        (true, true) => "autocontext/full (o200k_base and cl100k_base)",
        (false, false) => "autocontext/lite (estimator only)",
        (false, true) => "a cl100k_base-only build",
    }
}

/// The error for an exact tokenizer this build was compiled without.
fn unavailable(kind: Tokenizer) -> Error {
    let instead = match kind {
        Tokenizer::O200kBase => "import \"autocontext\" (o200k_base) or \"autocontext/full\" (both encodings)",
        _ => "import \"autocontext/full\" (o200k_base and cl100k_base)",
    };
    Error::config(
        "tokenizer",
        format!("is {:?}, which this build, {}, does not include: {instead}, or use \"estimate\"", kind.name(), build_name()),
    )
}

fn clamp(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Weights of the byte-class estimator fitted for `o200k_base`.
pub const O200K_WEIGHTS: [f64; 10] = [0.086, 0.8166, 0.8358, 0.2484, 0.0891, 1.4462, 1.0497, 0.7831, 2.0002, 0.0579];
/// Weights of the byte-class estimator fitted for `cl100k_base`.
pub const CL100K_WEIGHTS: [f64; 10] = [0.0771, 0.7957, 0.8349, 0.2475, 0.1446, 1.4536, 1.0612, 1.0695, 2.0002, 0.066];

/// Estimates tokens from ten byte-class features in one pass over the UTF-8 bytes: ASCII
/// letters, runs of letters, digits, other ASCII symbols, runs of whitespace, newlines, 2-, 3-
/// and 4-byte characters, and a constant. Fitted by least squares on relative error; about 14%
/// mean and 32% p95 absolute error on held-out messages, 1.6× covers the 99th percentile.
///
/// ```
/// use autocontext::tokens::{estimate, O200K_WEIGHTS};
/// let n = estimate("The quick brown fox jumps over the lazy dog.", &O200K_WEIGHTS);
/// assert!((8..=13).contains(&n));
/// ```
pub fn estimate(text: &str, w: &[f64; 10]) -> u32 {
    let mut f = [0u64; 10];
    let mut in_word = false;
    let mut in_space = false;
    for &b in text.as_bytes() {
        let letter = b.is_ascii_alphabetic();
        let space = matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        if letter {
            f[0] += 1;
            if !in_word {
                f[1] += 1;
            }
        } else if b.is_ascii_digit() {
            f[2] += 1;
        } else if b < 0x80 && !space {
            f[3] += 1;
        }
        if space && !in_space {
            f[4] += 1;
        }
        if b == b'\n' {
            f[5] += 1;
        }
        match b {
            0xC0..=0xDF => f[6] += 1,
            0xE0..=0xEF => f[7] += 1,
            0xF0..=0xFF => f[8] += 1,
            _ => {}
        }
        in_word = letter;
        in_space = space;
    }
    f[9] = 1;
    let sum: f64 = f.iter().zip(w).map(|(x, k)| *x as f64 * k).sum();
    (sum.round() as u32).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_of_a_known_text() {
        for kind in [Tokenizer::O200kBase, Tokenizer::Cl100kBase].into_iter().filter(|k| k.available()) {
            let counter = TokenCounter::new(kind).unwrap();
            assert_eq!(counter.count_text("hello world").unwrap(), 2);
            assert_eq!(counter.count_text("").unwrap(), 0);
        }
    }

    #[test]
    #[cfg(feature = "o200k")]
    fn a_marker_counts_its_frame_and_its_uuid_so_steady_uuids_are_those_whose_marker_counts_31() {
        let e = Encoding::O200kBase;
        assert!(e.count("hello").is_some() && e.indexed());
        let mut steady = 0;
        for _ in 0..5_000 {
            let u = crate::random::uuid_v4().to_string();
            let whole = e.count(&crate::message::offload_marker(&u)).unwrap();
            assert_eq!(whole, e.count(&format!("={u}")).unwrap() + MARKER_FRAME_TOKENS, "{u}");
            assert_eq!(steady_marker(&u), whole == MARKER_TOKENS, "{u}");
            steady += usize::from(whole == MARKER_TOKENS);
        }
        // About one uuid in five: the redraw stays cheap.
        assert!((500..2_000).contains(&steady), "{steady} of 5,000");
    }

    #[test]
    fn a_missing_vocabulary_is_a_config_error_naming_the_build() {
        let want = if cfg!(feature = "o200k") { Tokenizer::O200kBase } else { Tokenizer::Estimate };
        assert_eq!(Tokenizer::DEFAULT, want);
        assert!(TokenCounter::new(Tokenizer::Estimate).is_ok());
        for (kind, import) in [(Tokenizer::O200kBase, "\"autocontext\""), (Tokenizer::Cl100kBase, "\"autocontext/full\"")] {
            if kind.available() {
                continue;
            }
            let e = TokenCounter::new(kind).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidConfig);
            assert_eq!(e.field(), Some("tokenizer"));
            assert!(e.message().contains(kind.name()) && e.message().contains(import), "{}", e.message());
        }
    }

    #[test]
    #[cfg(feature = "o200k")]
    fn estimate_is_close_on_prose_and_counts_cjk() {
        let o = TokenCounter::new(Tokenizer::O200kBase).unwrap();
        let prose = "The engine keeps an agent's conversation inside its context window. ".repeat(20);
        let exact = o.count_text(&prose).unwrap() as f64;
        let est = estimate(&prose, &O200K_WEIGHTS) as f64;
        assert!((est - exact).abs() / exact < 0.35, "exact {exact} estimate {est}");
        assert!(estimate("日本語のテキスト", &O200K_WEIGHTS) >= 5);
    }

    #[test]
    fn a_remembered_count_answers_only_its_own_text() {
        let mut recent = Recent::NEW;
        let key = text_key(&"remember me ".repeat(20));
        assert_eq!(recent.count_of(key), None);
        recent.remember(key, 41);
        assert_eq!(recent.count_of(key), Some(41));
        // The same hash with another length, and another hash in the same slot, are not it.
        assert_eq!(recent.count_of((key.0, key.1 + 1)), None);
        let rival = (key.0 ^ 1 << 60, key.1);
        assert_eq!(slot(rival, REMEMBERED_SLOTS), slot(key, REMEMBERED_SLOTS));
        assert_eq!(recent.count_of(rival), None);
        // A newer text takes the slot.
        recent.remember(rival, 9);
        assert_eq!((recent.count_of(rival), recent.count_of(key)), (Some(9), None));
    }

    #[test]
    fn custom_counter_errors_are_typed() {
        struct Bad;
        impl TextCounter for Bad {
            fn count(&self, _: &str) -> Result<u32, HostError> {
                Err(HostError::new("boom"))
            }
        }
        let c = TokenCounter::custom(Box::new(Bad));
        let e = c.count_text("x").unwrap_err();
        assert_eq!(e.code(), ErrorCode::TokenizerFailed);
        assert!(e.message().contains("boom"));
    }
}
