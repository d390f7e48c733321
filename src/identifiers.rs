//! The identifiers of a text: the exact strings (paths, names, codes, hashes, numbers) an agent
//! may need again, found once per message.
//!
//! The identifier index a replacement carries (`engine/identifier_index.rs`) is made of them,
//! and the index rules out what is in view by them. No uuid or marker is ever listed, so the
//! model cannot mistake an identifier for an offload to reload. Extraction is a byte scan of
//! ASCII runs (no regular expressions): deterministic, linear, the same on every platform. Where
//! there are SIMD instructions ([`crate::bytes16`]) it steps over the words that cannot be
//! identifiers sixteen bytes at a time, with the same result (a test compares the two walks).
//!
//! A backslash is either a Windows path's separator or an escape, and an escape is never part
//! of an identifier: listed, `sys\nsys.path.insert` or `\n\nprint` would name nothing the agent
//! wrote and take the place of a real name. A tool call's arguments are JSON text, where every
//! backslash starts an escape (and an escaped backslash before `n`, `t`, `r`, `0` or a quote is
//! the escape of code quoted in a string); other text reads `\n`, `\t`, `\r`, `\0`, quotes and
//! `\uXXXX` as escapes, except in a path anchored by a drive (`C:\new\tests`) or a share
//! (`\\host\dir`). A relative Windows path with such a segment (`src\network`) is cut there:
//! the price of never listing an escape, in conversations where escapes are far more common.
//!
//! A message's identifiers are found the first time a pass needs them and kept with its entry
//! ([`Found`]); a long text met lately is remembered with its identifiers, so a copy of it in
//! another message is not scanned again.

use std::collections::{HashMap, HashSet};

use crate::bytes16::{self, Lanes};
use crate::hashed::{slot, text_key, Keyed};
use crate::message::{is_uuid, Block, Message};

/// How the index opens; the model reads it as a list of exact strings.
pub(crate) const OPENING: &str = crate::message::INDEX_OPENING;

/// Identifiers shorter than this are too common to be worth a place.
pub(crate) const MIN_LEN: usize = 4;
/// Longer runs are data (base64, minified code), not identifiers.
const MAX_LEN: usize = 160;

/// What an identifier is; it weighs in the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `https://...`
    Url,
    /// A path with a separator: `src/engine/pass.rs`, `/usr/lib`, `C:\temp`.
    Path,
    /// A file name: `setup.py`, `README.md`.
    File,
    /// A name from code: `parse_args`, `getUserName`, `ValueError`, `os.path.join`.
    Symbol,
    /// An error or status code: `E0425`, `TS2345`, `ERR_CONNECTION_REFUSED`.
    Code,
    /// A number of four digits or more: a line, a port, an id, an issue.
    Number,
    /// A hex id of seven digits or more with letters and digits: a commit, a hash.
    Hash,
    /// A command-line flag or a hyphenated name with digits: `--no-default-features`, `gpt-4o-mini`.
    Flag,
}

impl Kind {
    pub(crate) fn weight(self) -> f64 {
        match self {
            Kind::Url | Kind::Path | Kind::File => 1.5,
            Kind::Symbol | Kind::Code | Kind::Flag => 1.0,
            Kind::Hash => 0.6,
            Kind::Number => 0.3,
        }
    }
}

/// The engine's own words, which its notices and markers repeat: never an index entry.
const OWN_WORDS: [&str; 4] = ["context_reload", "CONTEXT_OFFLOAD", "working_context_offload_uuid", "system-info"];

const fn is_run_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'\\' | b'-' | b':' | b'~' | b'@' | b'#')
}

/// What a byte is, for the scan's one lookup per byte: not part of a run (0), a lowercase or
/// uppercase letter, a colon, a digit, a path separator or other punctuation of a run, or the
/// first byte of a character that is not ASCII ([`LEAD`]); such a character that continues a
/// run (a letter or digit of another script) is [`WIDE`].
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const COLON: u8 = 4;
const DIGIT: u8 = 8;
const PUNCT: u8 = 16;
const WIDE: u8 = 32;
const SEP: u8 = 64;
/// A byte that is not ASCII: its character decides (see [`wide`]).
const LEAD: u8 = 128;
/// A backslash: a path's separator or the start of an escape, by what follows (see
/// [`escape`]); outside the one test of the walk's common case, as [`LEAD`] is.
const BACKSLASH: u8 = LEAD | SEP;
const CLASS: [u8; 256] = {
    let mut table = [LEAD; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = if c.is_ascii_lowercase() {
            LOWER
        } else if c.is_ascii_uppercase() {
            UPPER
        } else if c == b':' {
            COLON
        } else if c.is_ascii_digit() {
            DIGIT
        } else if c == b'\\' {
            BACKSLASH
        } else if c == b'/' {
            SEP
        } else if is_run_byte(c) {
            PUNCT
        } else {
            0
        };
        b += 1;
    }
    table
};

/// Blocks without a letter or digit that hold most of a conversation's non-ASCII characters
/// (quotes and dashes, arrows and operators, box drawing, emoji): they end a run without a look
/// into the Unicode tables (a test checks every character of them).
fn plainly_not_alphanumeric(c: char) -> bool {
    matches!(c as u32, 0x2000..=0x206F | 0x2190..=0x23FF | 0x2500..=0x25FF | 0x1F300..=0x1FAFF)
}

/// Whether the character at byte `i` of `b` is one of the three-byte characters of
/// [`plainly_not_alphanumeric`] that begin with 0xE2 (U+2000 to U+206F, U+2190 to U+23FF, U+2500
/// to U+25FF): the arrow of every numbered line a tool prints, box drawing, dashes and quotes,
/// most of a conversation's characters that are not ASCII. The walk steps over them without
/// decoding them ([`wide`] gives them no class either).
#[inline(always)]
fn plain_e2(b: &[u8], i: usize) -> bool {
    match b.get(i..i + 3) {
        Some(&[0xE2, second, third]) => match second {
            0x80 | 0x87..=0x8F | 0x94..=0x97 => true,
            0x81 => third <= 0xAF,
            0x86 => third >= 0x90,
            _ => false,
        },
        _ => false,
    }
}

/// The character at byte `i` of `text`, which is not ASCII: its length in bytes and its class
/// (0 when it ends a run; letters and digits of any script continue one, as [`WIDE`]).
#[cold]
fn wide(text: &str, i: usize) -> (usize, u8) {
    match text[i..].chars().next() {
        Some(c) => (c.len_utf8(), if !plainly_not_alphanumeric(c) && c.is_alphanumeric() { WIDE } else { 0 }),
        None => (1, 0),
    }
}

/// The bytes that follow a backslash in an escape of code or of JSON text read as plain text.
const fn escaped(c: u8) -> bool {
    matches!(c, b'n' | b't' | b'r' | b'0' | b'"' | b'\'')
}

/// Whether `b[i..]` is `u` and four hex digits (the rest of a `\\uXXXX` escape).
fn unicode_escape(b: &[u8], i: usize) -> bool {
    b.get(i) == Some(&b'u') && b.len() >= i + 5 && b[i + 1..i + 5].iter().all(u8::is_ascii_hexdigit)
}

/// How many bytes the escape at `b[i]` (a backslash) takes, or 0 when the backslash is a
/// path's separator. In JSON text (`json`) every backslash starts an escape: `\\uXXXX` takes six
/// bytes, an escaped backslash before `n`, `t`, `r`, `0` or a quote three (the escape of code
/// quoted in the string), any other two. In other text an escape is a backslash before
/// [`escaped`] bytes, `\\uXXXX`, an escaped backslash before `n`, `t` or `r` (JSON shown as
/// text), or any other escaped backslash (code's `'\\s'`); in a path anchored by a drive or a
/// share (`path`) it is none.
fn escape(b: &[u8], i: usize, json: bool, path: bool) -> usize {
    let next = b.get(i + 1).copied();
    if json {
        return match next {
            None => 1,
            Some(b'u') if unicode_escape(b, i + 1) => 6,
            Some(b'\\') if b.get(i + 2).is_some_and(|&c| escaped(c)) => 3,
            // Never into a character: an escape is ASCII (what is not is no valid escape).
            Some(c) if c.is_ascii() => 2,
            Some(_) => 1,
        };
    }
    match next {
        _ if path => 0,
        Some(c) if escaped(c) => 2,
        Some(b'u') if unicode_escape(b, i + 1) => 6,
        Some(b'\\') if matches!(b.get(i + 2), Some(b'n' | b't' | b'r')) => 3,
        // An escaped backslash (`\\s` of a regular expression in code): two bytes of one escape.
        Some(b'\\') => 2,
        _ => 0,
    }
}

/// Whether a run starting at `b[i]` is a Windows path anchored by a drive (`C:\\`) or a share
/// (`\\\\host`), whose backslashes are all separators. The drive is an uppercase letter, as
/// Windows writes it: code shown with its escapes has `if f:\\n` and `x:\\t` far more often
/// than a path has a lowercase drive.
fn anchored(b: &[u8], i: usize) -> bool {
    match b.get(i..i + 3) {
        Some([d, b':', b'\\']) => d.is_ascii_uppercase(),
        Some([b'\\', b'\\', h]) => h.is_ascii_alphanumeric(),
        _ => false,
    }
}

/// Calls `f` with every identifier of `text`, in order, as often as it occurs; `json` says the
/// text is JSON (a tool call's arguments), where every backslash starts an escape.
///
/// Most runs are words of prose or code; the kinds that need only the classes the walk saw
/// (a word of one case, a number, letters of both cases) are settled here, the rest by
/// [`classify`].
pub(crate) fn scan<'t>(text: &'t str, json: bool, f: impl FnMut(&'t str, Kind)) {
    scan_in::<{ bytes16::ENABLED }>(text, json, f);
}

/// How many of the sixteen bytes of `b`, where a run may start, hold no identifier: words of
/// letters whose case makes no name (`word`, `Word`, `WORD`, `HTTPServer`: no lowercase letter
/// before an uppercase one, so at most one uppercase letter before a lowercase one; see
/// [`cased_name`]) and the bytes between runs, up to the last byte between runs before anything
/// else (a word cut by the block's end may go on with a digit). Prose, and much of code and of
/// what tools print, is mostly such bytes: the walk steps over them sixteen at a time, and reads
/// byte by byte only the words that may be identifiers.
#[inline(always)]
fn plain_words(b: &[u8; 16]) -> usize {
    let v = Lanes::load(b);
    let lower = v.within(b'a', b'z').bits();
    let upper = v.within(b'A', b'Z').bits();
    // Every other byte of a run (digits and the colon, `-./`, the rest of the punctuation), a
    // backslash, and every byte that is not ASCII.
    let other = v
        .within(b'0', b':')
        .or(v.within(b'-', b'/'))
        .or(v.eq(b'_'))
        .or(v.eq(b'~'))
        .or(v.eq(b'@'))
        .or(v.eq(b'#'))
        .or(v.eq(b'\\'))
        .or(v.within(0x80, 0xff))
        .bits();
    // Characters of three bytes from the blocks of `plainly_not_alphanumeric` that begin with
    // 0xE2 (the arrow of numbered lines, box drawing, dashes and quotes), whole in the block:
    // between runs, as the byte-by-byte walk reads them (see `plain_e2`).
    let e2 = v.eq(0xE2).bits() & 0x3fff;
    let other = if e2 == 0 {
        other
    } else {
        let whole = v.eq(0x80).or(v.within(0x87, 0x8F)).or(v.within(0x94, 0x97)).bits() >> 1;
        let by_third =
            (v.eq(0x86).bits() >> 1 & v.within(0x90, 0xBF).bits() >> 2) | (v.eq(0x81).bits() >> 1 & v.within(0x80, 0xAF).bits() >> 2);
        let plain = e2 & (whole | by_third);
        other & !(plain | plain << 1 | plain << 2)
    };
    let between = !(lower | upper | other) & 0xffff;
    // An uppercase letter after a lowercase one: the word may be a name (`getUser`, `HttpServer`).
    let name = upper & (lower << 1);
    // The bytes between runs before the first other byte (`trailing_zeros` of 0 is 32).
    let first = (other | name).trailing_zeros().min(16);
    let before = between & ((1u32 << first) - 1);
    (u32::BITS - before.leading_zeros()) as usize
}

/// [`scan`], sixteen bytes at a time where the text allows when `LANES` (the same identifiers
/// in the same order: a test compares them).
fn scan_in<'t, const LANES: bool>(text: &'t str, json: bool, mut f: impl FnMut(&'t str, Kind)) {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = 0;
    while i < n {
        // Here a run may start: first step over the words that hold no identifier.
        if let Some(block) = bytes16::at(b, i).filter(|_| LANES) {
            let skip = plain_words(block);
            if skip > 0 {
                i += skip;
                continue;
            }
        }
        let start = i;
        // Whether the run is a path anchored by a drive or a share: asked at a backslash only.
        let path = || !json && anchored(b, start);
        let (len, class) = match CLASS[b[i] as usize] {
            LEAD if plain_e2(b, i) => (3, 0),
            LEAD => wide(text, i),
            BACKSLASH => match escape(b, i, json, path()) {
                0 => (1, SEP),
                skip => (skip, 0),
            },
            class => (1, class),
        };
        i += len;
        if class == 0 {
            continue; // a separator
        }
        let mut seen = class;
        // Where the run ends: before an escape, which the walk then steps over.
        let mut end = None;
        while i < n {
            let class = CLASS[b[i] as usize];
            // One test for the common case: an ASCII byte of a run.
            if class.wrapping_sub(1) < LEAD - 1 {
                seen |= class;
                i += 1;
                continue;
            }
            let (len, class) = match class {
                LEAD if plain_e2(b, i) => (3, 0),
                LEAD => wide(text, i),
                BACKSLASH => match escape(b, i, json, path()) {
                    0 => (1, SEP),
                    skip => {
                        end = Some(i);
                        i += skip;
                        break;
                    }
                },
                _ => (1, 0),
            };
            if class == 0 {
                break;
            }
            seen |= class;
            i += len;
        }
        let run = &text[start..end.unwrap_or(i)];
        // A word of letters of one case is no kind of identifier; one shorter than the
        // shortest is none either (a URL's scheme included).
        if seen == LOWER || seen == UPPER || run.len() < MIN_LEN {
            continue;
        }
        if seen == LOWER | UPPER {
            // Letters alone: a name only when its case says so (`getUserName`, `HttpServer`).
            if run.len() <= MAX_LEN && cased_name(run.as_bytes()) {
                f(run, Kind::Symbol);
            }
            continue;
        }
        if seen == DIGIT {
            if run.len() <= MAX_LEN {
                f(run, Kind::Number);
            }
            continue;
        }
        if b[start] == b'h' && (run.starts_with("http://") || run.starts_with("https://")) {
            // A URL runs on through its query and fragment.
            let len = text[start..]
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')' | ']' | '`' | ',' | '\\'))
                .unwrap_or(n - start);
            let url = text[start..start + len].trim_end_matches(['.', ':', ';', '?', '!']);
            if url.len() > "https://".len() && url.len() <= MAX_LEN {
                f(url, Kind::Url);
            }
            i = i.max(start + len);
            continue;
        }
        let path = seen & SEP != 0;
        if seen & COLON == 0 {
            classify(run, path, &mut f);
        } else {
            classify_run(run, path, &mut f);
        }
    }
}

/// Whether a word's case makes it a name: a lowercase letter followed by an uppercase one
/// (`getUser`), or two uppercase letters each followed by a lowercase one (`HttpServer`).
fn cased_name(w: &[u8]) -> bool {
    let mut humps = 0;
    for p in w.windows(2) {
        if p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase() {
            return true;
        }
        humps += usize::from(p[0].is_ascii_uppercase() && p[1].is_ascii_lowercase());
    }
    humps >= 2
}

/// Splits a run at single colons (`file.py:120`, `error:` …; `a::b` stays) and classifies the pieces.
fn classify_run<'t>(run: &'t str, path: bool, f: &mut impl FnMut(&'t str, Kind)) {
    let b = run.as_bytes();
    let mut piece_start = 0;
    let mut k = 0;
    while k <= b.len() {
        let single_colon = k < b.len() && b[k] == b':' && !(k + 1 < b.len() && b[k + 1] == b':') && !(k > 0 && b[k - 1] == b':');
        // A drive letter (`C:\`) is not a split.
        let drive = single_colon && k == piece_start + 1 && k + 1 < b.len() && b[k + 1] == b'\\';
        if k == b.len() || (single_colon && !drive) {
            classify(&run[piece_start..k], path, f);
            piece_start = k + 1;
        }
        k += 1;
    }
}

/// The bytes a piece's ends lose: punctuation that closes a sentence or opens a mention.
const fn trailing(c: u8) -> bool {
    matches!(c, b'.' | b'-' | b':' | b'/' | b'\\' | b'@' | b'#' | b'~')
}

/// Classifies one piece of a run; `path` says whether the run has a separator (`/` or `\\`).
fn classify<'t>(piece: &'t str, path: bool, f: &mut impl FnMut(&'t str, Kind)) {
    if piece.len() < MIN_LEN {
        return; // trimming only shortens it
    }
    // Every byte trimmed is ASCII, so each cut is at a character's boundary.
    let b = piece.as_bytes();
    let mut end = b.len();
    while end > 0 && trailing(b[end - 1]) {
        end -= 1;
    }
    let core = &b[..end];
    // A flag keeps its dashes, a path its leading separator or dots (`/usr`, `./src`, `~/x`).
    let flag = core.len() > 2 && core.starts_with(b"--") && core[2].is_ascii_alphabetic();
    let mut start = 0;
    if flag || path && core.iter().any(|&c| c == b'/' || c == b'\\') {
        while start < end && matches!(b[start], b'@' | b'#' | b':') {
            start += 1;
        }
    } else {
        while start < end && trailing(b[start]) && b[start] != b'/' && b[start] != b'\\' {
            start += 1;
        }
    }
    let w = &piece[start..end];
    if w.len() < MIN_LEN || w.len() > MAX_LEN {
        return;
    }
    if let Some(kind) = kind_of(w, flag) {
        f(w, kind);
    }
}

/// Whether `w` is or holds one of the engine's own words or a uuid: never an index entry (the
/// line asks this of the words it takes, not the scan of every word).
pub(crate) fn unlisted(w: &str) -> bool {
    // Every own word is 11 characters or more, with a `_` or a `-`; a uuid has four `-`.
    let dash = w.as_bytes().contains(&b'-');
    w.len() >= 11 && (dash || w.as_bytes().contains(&b'_')) && OWN_WORDS.iter().any(|o| holds(w.as_bytes(), o.as_bytes()))
        || dash && contains_uuid(w)
}

/// Whether `w` holds `o`, by a plain walk: `str::contains` builds a two-way searcher per call,
/// which costs more than the search in a word of at most [`MAX_LEN`] bytes, and the scan asks
/// this for every long word with a `_` or a `-`, the index line for every word that fits.
pub(crate) fn holds(w: &[u8], o: &[u8]) -> bool {
    w.len() >= o.len() && w.windows(o.len()).any(|x| x[0] == o[0] && x == o)
}

fn contains_uuid(w: &str) -> bool {
    let b = w.as_bytes();
    // A hyphenated uuid has its four `-` at these offsets: only there is it worth parsing.
    w.len() >= 36
        && (0..=w.len() - 36).any(|i| {
            b[i + 8] == b'-'
                && b[i + 13] == b'-'
                && b[i + 18] == b'-'
                && b[i + 23] == b'-'
                && w.is_char_boundary(i)
                && is_uuid(&w[i..i + 36])
        })
}

/// What a word holds, one table lookup per byte: [`kind_of`] asks only which of these occur
/// (and, last, where the case changes).
const HEX_LOWER: u16 = 1 << 0; // a-f
const LOWER_REST: u16 = 1 << 1; // g-z
const W_UPPER: u16 = 1 << 2;
const W_DIGIT: u16 = 1 << 3;
const W_SLASH: u16 = 1 << 4; // either separator
const W_DOT: u16 = 1 << 5;
const W_UNDERSCORE: u16 = 1 << 6;
const W_DASH: u16 = 1 << 7;
const W_OTHER: u16 = 1 << 8; // any other byte, non-ASCII included
const W_LOWER: u16 = HEX_LOWER | LOWER_REST;
const W_LETTER: u16 = W_LOWER | W_UPPER;
const HOLDS: [u16; 256] = {
    let mut table = [W_OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = match c {
            b'a'..=b'f' => HEX_LOWER,
            b'g'..=b'z' => LOWER_REST,
            b'A'..=b'Z' => W_UPPER,
            b'0'..=b'9' => W_DIGIT,
            b'/' | b'\\' => W_SLASH,
            b'.' => W_DOT,
            b'_' => W_UNDERSCORE,
            b'-' => W_DASH,
            _ => W_OTHER,
        };
        b += 1;
    }
    table
};

fn kind_of(w: &str, flag: bool) -> Option<Kind> {
    if flag {
        return Some(Kind::Flag);
    }
    let b = w.as_bytes();
    let holds = b.iter().fold(0, |h, &c| h | HOLDS[c as usize]);
    let (slash, dot, letters, digits) = (holds & W_SLASH != 0, holds & W_DOT != 0, holds & W_LETTER != 0, holds & W_DIGIT != 0);
    if slash {
        // At least one segment with a letter: not a date (`2024/01/02`) or a fraction.
        // (A letter is in some segment: separators are not letters.)
        return (letters && !w.starts_with("//")).then_some(Kind::Path);
    }
    if dot {
        if !letters {
            return None; // version numbers
        }
        // One walk over the segments: none empty (`a..b`), each a word, each named (a letter, or
        // two characters or more), and the last one.
        let (mut count, mut named, mut start) = (0, true, 0);
        for end in 0..=b.len() {
            match b.get(end) {
                Some(b'.') | None => {}
                Some(&c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' => continue,
                Some(_) => return None,
            }
            let s = &b[start..end];
            if s.is_empty() {
                return None;
            }
            named &= s.len() >= 2 || s[0].is_ascii_alphabetic();
            count += 1;
            if end < b.len() {
                start = end + 1;
            }
        }
        // Every byte cut at is a dot, so the last segment starts at a character's boundary.
        let last = &w[start..];
        let ext_like = last.len() <= 8 && last.as_bytes()[0].is_ascii_alphabetic() && last.bytes().all(|c| c.is_ascii_alphanumeric());
        // `e.g`, `i.e` and sentences run together (`end.Next`) are not names.
        if count == 2 && ext_like && last.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
            return Some(Kind::File);
        }
        return (count >= 2 && named).then_some(Kind::Symbol);
    }
    if !letters {
        return (holds == W_DIGIT).then_some(Kind::Number);
    }
    if digits && b.len() >= 7 && holds & !(HEX_LOWER | W_DIGIT) == 0 {
        return Some(Kind::Hash);
    }
    if holds & W_UNDERSCORE != 0 {
        return Some(if holds & W_LOWER == 0 { Kind::Code } else { Kind::Symbol });
    }
    if holds & W_DASH != 0 {
        return (digits || b.iter().filter(|&&c| c == b'-').count() >= 2).then_some(Kind::Flag);
    }
    if cased_name(b) {
        return Some(Kind::Symbol);
    }
    if digits && holds & W_LOWER == 0 {
        return Some(Kind::Code);
    }
    None
}

/// The texts of a message the model reads, each with its block's position and whether a tool
/// call's arguments hold it (a tool's name is not an identifier worth an index: the tool list
/// names it in every request).
fn texts(m: &Message) -> impl Iterator<Item = (usize, &str, bool)> {
    m.blocks.iter().enumerate().filter_map(|(i, b)| match b {
        Block::Text(t) => Some((i, t.as_str(), false)),
        Block::ToolCall { arguments, .. } => Some((i, arguments.as_str(), true)),
        Block::ToolResult { content, .. } => Some((i, content.as_str(), false)),
        Block::Thinking(_) | Block::Opaque { .. } => None,
    })
}

/// An identifier's key in the sets of what is in view: a hash of its text, so a pass over a
/// long list allocates nothing per identifier (two identifiers sharing a key would only leave
/// one out of an index).
///
/// The scan takes one for every identifier it meets, a few bytes to [`MAX_LEN`] long: whole
/// words of eight bytes, the last one overlapping, each multiplied in, and the result mixed so
/// that its low bits (a set's bucket) and its top bits (the set's tag) both depend on every
/// byte. Keys live in memory only, never in a saved state, so the hash need not be a standard
/// one; xxh64 cost about three times as much on words this short.
pub(crate) fn key(w: &str) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let b = w.as_bytes();
    let n = b.len();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("eight bytes"));
    let mut h = (n as u64).wrapping_mul(K);
    if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            h = (h ^ word(at)).wrapping_mul(K).rotate_left(29);
            at += 8;
        }
        h ^= word(n - 8);
    } else {
        // Up to seven bytes, each in its own place.
        h ^= b.iter().enumerate().fold(0, |x, (i, &c)| x | u64::from(c) << (8 * i));
    }
    h = (h ^ h >> 32).wrapping_mul(K);
    h ^ h >> 29
}

/// The keys of the identifiers in view.
pub(crate) type Visible = HashSet<u64, Keyed>;

/// Every identifier of a message, as keys (through [`scan_distinct`], the one caller of
/// [`scan`]: each caller is a copy of the scanner in the WebAssembly module).
pub(crate) fn identifiers_of(m: &Message, out: &mut Visible) {
    for (_, t, call) in texts(m) {
        out.extend(scan_distinct(t, call).iter().map(|id| id.key));
    }
}

/// One distinct identifier of a message: its first occurrence (block, byte range, kind) and
/// whether any occurrence is in a tool call's arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Occurrence {
    pub(crate) key: u64,
    block: u32,
    start: u32,
    len: u32,
    pub(crate) kind: Kind,
    pub(crate) in_call: bool,
}

impl Occurrence {
    pub(crate) fn text<'m>(&self, m: &'m Message) -> &'m str {
        let t = match &m.blocks[self.block as usize] {
            Block::Text(t) => t.as_str(),
            Block::ToolCall { arguments, .. } => arguments.as_str(),
            Block::ToolResult { content, .. } => content.as_str(),
            Block::Thinking(_) | Block::Opaque { .. } => "",
        };
        // Checked: the range comes from a remembered text of the same hash and length, which
        // only a 64-bit collision could make another text.
        t.get(self.start as usize..(self.start + self.len) as usize).unwrap_or("")
    }
}

/// One distinct identifier of a text: its key, its first occurrence's byte range, and its kind.
#[derive(Debug, Clone, Copy)]
struct Id {
    key: u64,
    start: u32,
    len: u32,
    kind: Kind,
}

/// The distinct identifiers of `text` (JSON text when `json`), in order of first occurrence.
///
/// The set that tells them apart and the list that gathers them are the thread's, emptied and
/// used again for each text: a pass scans a few hundred texts, and a set made for each grew by
/// doubling through every one of them.
fn scan_distinct(text: &str, json: bool) -> std::rc::Rc<[Id]> {
    thread_local! {
        static SCRATCH: std::cell::RefCell<(HashSet<u64, Keyed>, Vec<Id>)> = std::cell::RefCell::default();
    }
    SCRATCH.with(|scratch| {
        // A scan never calls itself; a borrow that fails would mean it did, and gets its own.
        let mut fresh = Default::default();
        let mut held = scratch.try_borrow_mut();
        let (seen, ids) = match held.as_deref_mut() {
            Ok(s) => s,
            Err(_) => &mut fresh,
        };
        seen.clear();
        ids.clear();
        let base = text.as_ptr() as usize;
        scan(text, json, |w, kind| {
            let key = key(w);
            if seen.insert(key) {
                ids.push(Id { key, start: (w.as_ptr() as usize - base) as u32, len: w.len() as u32, kind });
            }
        });
        std::rc::Rc::from(&ids[..])
    })
}

/// Texts shorter than this are scanned every time: scanning them costs about what looking them
/// up would.
const REMEMBERED_MIN: usize = 128;
/// Slots of the table of remembered texts.
const REMEMBERED_SLOTS: usize = 4096;
/// How many identifiers the remembered texts may hold together (24 bytes each: 3 MiB).
const REMEMBERED_IDS: usize = 1 << 17;

/// The identifiers of the texts scanned lately, shared by every memory of the thread. A memory
/// keeps each message's identifiers while the message is in its list ([`Found`]); this is for
/// the lists that are new each time with the same texts in them: the stateless `compress()`
/// handed the whole conversation before every model call, a memory restored from its state for
/// every request. A direct-mapped table of the last text seen per slot, by the text's hash and
/// length; when the texts in it would hold more than [`REMEMBERED_IDS`] identifiers, it is
/// emptied first.
struct Recent {
    slots: Vec<Option<Scanned>>,
    ids: usize,
}

/// A remembered text's key (hash and length) and its identifiers.
type Scanned = ((u64, usize), std::rc::Rc<[Id]>);

thread_local! {
    static RECENT: std::cell::RefCell<Recent> = const { std::cell::RefCell::new(Recent { slots: Vec::new(), ids: 0 }) };
}

/// [`scan_distinct`] of `text`, remembered (a text read as JSON under another key than the
/// same text read as plain text: their escapes differ).
fn ids_of_text(text: &str, json: bool) -> std::rc::Rc<[Id]> {
    if text.len() < REMEMBERED_MIN {
        return scan_distinct(text, json);
    }
    let k = text_key(text);
    let k = if json { (!k.0, k.1) } else { k };
    let at = slot(k, REMEMBERED_SLOTS);
    let found = RECENT.with(|r| match r.borrow().slots.get(at) {
        Some(Some((key, ids))) if *key == k => Some(ids.clone()),
        _ => None,
    });
    if let Some(ids) = found {
        return ids;
    }
    let ids = scan_distinct(text, json);
    RECENT.with(|r| {
        let mut r = r.borrow_mut();
        if r.slots.is_empty() || r.ids + ids.len() > REMEMBERED_IDS {
            r.slots = vec![None; REMEMBERED_SLOTS];
            r.ids = 0;
        }
        r.ids += ids.len();
        if let Some((_, old)) = r.slots[at].replace((k, ids.clone())) {
            r.ids -= old.len();
        }
    });
    ids
}

/// A working message's distinct identifiers, in order of first occurrence, found the first time
/// a pass needs them and kept with the message: a message never changes, and most stay in the
/// list pass after pass, so each is scanned once, not once per step or pass that looks at it.
#[derive(Debug, Clone, Default)]
pub struct Found(std::rc::Rc<std::cell::OnceCell<Box<[Occurrence]>>>);

impl Found {
    pub(crate) fn of(&self, m: &Message) -> &[Occurrence] {
        self.0.get_or_init(|| {
            let occurrence = |block: usize, id: &Id, call: bool| Occurrence {
                key: id.key,
                block: block as u32,
                start: id.start,
                len: id.len,
                kind: id.kind,
                in_call: call,
            };
            let mut blocks = texts(m);
            if let (Some((block, t, call)), None) = (blocks.next(), blocks.next()) {
                // One text (most messages): its identifiers are distinct already.
                return ids_of_text(t, call).iter().map(|id| occurrence(block, id, call)).collect();
            }
            // Several texts: an identifier is the first occurrence over all of them.
            let mut found: Vec<Occurrence> = Vec::new();
            let mut at: HashMap<u64, usize, Keyed> = HashMap::default();
            for (block, t, call) in texts(m) {
                for id in ids_of_text(t, call).iter() {
                    match at.get(&id.key) {
                        Some(&i) => found[i].in_call |= call,
                        None => {
                            at.insert(id.key, found.len());
                            found.push(occurrence(block, id, call));
                        }
                    }
                }
            }
            found.into_boxed_slice()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;

    fn ids(text: &str) -> Vec<(String, Kind)> {
        let mut out = Vec::new();
        scan(text, false, |w, k| out.push((w.to_string(), k)));
        out
    }

    fn words(text: &str) -> Vec<String> {
        ids(text).into_iter().map(|(w, _)| w).collect()
    }

    #[test]
    fn the_blocks_skipped_without_a_lookup_hold_no_letter_or_digit() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32).filter(|&c| plainly_not_alphanumeric(c)) {
            assert!(!c.is_alphanumeric(), "U+{:04X} is alphanumeric", c as u32);
        }
    }

    #[test]
    fn the_characters_stepped_over_undecoded_are_those_wide_gives_no_class() {
        let mut plain = 0;
        for c in ('\u{2000}'..='\u{2fff}').chain(['a', 'é', '€', '😀']) {
            let text = format!("{c}x");
            let want = if c.is_ascii() { false } else { wide(&text, 0) == (3, 0) && plainly_not_alphanumeric(c) };
            assert_eq!(plain_e2(text.as_bytes(), 0), want, "U+{:04X}", c as u32);
            plain += usize::from(want);
        }
        assert_eq!(plain, 0x70 + 0x270 + 0x100);
        // Cut short, it is no such character.
        assert!(!plain_e2("→".as_bytes(), 1) && !plain_e2(&"→".as_bytes()[..2], 0));
    }

    #[test]
    fn each_kind_is_found_and_prose_is_not() {
        let found = ids("Edit src/engine/pass.rs and ./tests/a_b.rs (see README.md), then call parse_args, getUserName, \
             ValueError and os.path.join; error E0425 and ERR_CONNECTION_REFUSED on port 8080 at commit a201444; \
             run cargo --no-default-features with gpt-4o-mini; docs at https://example.com/a/b?q=1.");
        let want = [
            ("src/engine/pass.rs", Kind::Path),
            ("./tests/a_b.rs", Kind::Path),
            ("README.md", Kind::File),
            ("parse_args", Kind::Symbol),
            ("getUserName", Kind::Symbol),
            ("ValueError", Kind::Symbol),
            ("os.path.join", Kind::Symbol),
            ("E0425", Kind::Code),
            ("ERR_CONNECTION_REFUSED", Kind::Code),
            ("8080", Kind::Number),
            ("a201444", Kind::Hash),
            ("--no-default-features", Kind::Flag),
            ("gpt-4o-mini", Kind::Flag),
            ("https://example.com/a/b?q=1", Kind::Url),
        ];
        assert_eq!(found, want.iter().map(|(w, k)| (w.to_string(), *k)).collect::<Vec<_>>());
        assert!(words("The quick brown fox jumps over the lazy dog, e.g. twice; i.e. well-known. Python 3.11 in 2 ms.").is_empty());
    }

    #[test]
    fn words_of_letters_or_digits_alone_are_kinds_by_case_and_length() {
        // Settled in the walk, without `classify`; the same answers as through it (`kind_of`).
        let text = "Hello HttpServer getUser HTTPServer ABCD abcd 1234 123 x1234567 HttpServer.";
        assert_eq!(
            ids(text),
            [
                ("HttpServer".to_string(), Kind::Symbol),
                ("getUser".to_string(), Kind::Symbol),
                ("1234".to_string(), Kind::Number),
                ("HttpServer".to_string(), Kind::Symbol),
            ]
        );
        for w in ["Hello", "HttpServer", "getUser", "HTTPServer", "1234", "x1234567"] {
            assert_eq!(ids(w).first().map(|x| x.1), kind_of(w, false), "{w}");
        }
    }

    #[test]
    fn escapes_are_separators_and_anchored_windows_paths_are_whole() {
        // JSON text (a tool call's arguments): every backslash starts an escape, and an escaped
        // backslash before `n` is the escape of code quoted in the string.
        let args = serde_json::json!({"command": "cat <<'EOF' > t.py\nimport sys\nsys.path.insert(0, '/testbed')\n\nprint(\"a\\nContext\")\nif f:\n    run_it()\nEOF", "x": "caf\u{e9}_bar\tEND_MARK"})
            .to_string();
        assert!(args.contains(r"\nsys") && args.contains(r"\\nContext"), "{args}");
        let found: Vec<String> = {
            let mut out = Vec::new();
            scan(&args, true, |w, _| out.push(w.to_string()));
            out
        };
        assert_eq!(found, ["t.py", "sys.path.insert", "/testbed", "run_it", "café_bar", "END_MARK"], "{args}");
        // `\uXXXX` is six bytes of one escape; an escape at the end, or before a character that
        // is not ASCII, ends the text without a cut inside a character.
        let mut out = Vec::new();
        scan(r#"{"p": "caf\u00e9_main.rs", "q": "\é end_of_it\"}"#, true, |w, _| out.push(w.to_string()));
        assert_eq!(out, ["_main.rs", "end_of_it"]);
        // Other text: `\n`, `\t`, `\r`, `\0`, quotes and `\uXXXX` are escapes (JSON or code shown
        // as text), a backslash before anything else a separator of a path.
        assert_eq!(words(r"sys\nsys.path.insert and '\n\nprint' and end\n\n"), ["sys.path.insert"]);
        assert_eq!(words(r"read src\engine\pass.rs"), [r"src\engine\pass.rs"]);
        assert_eq!(words(r#"{"k": "abc_d\\nfoo_bar"}"#), ["abc_d", "foo_bar"]);
        assert_eq!(words(r"pattern = 'field_name\\s+=' in lookup_field"), ["field_name", "lookup_field"]);
        // A path anchored by a drive or a share keeps every backslash.
        assert_eq!(words(r"open C:\new\tests\run.log and \\nas\team\notes.txt"), [r"C:\new\tests\run.log", r"\\nas\team\notes.txt"]);
        for text in [r"f:\n", r"\n\n", r"\n\t\r\0", r"do\nend"] {
            assert!(words(text).is_empty(), "{text}: {:?}", words(text));
        }
    }

    #[test]
    fn sixteen_bytes_at_a_time_finds_what_byte_by_byte_does() {
        use crate::bytes16::texts;
        let corpus = texts::corpus();
        let scanned = |s: &str, json: bool, lanes: bool| {
            let mut out = Vec::new();
            let push = |w: &str, k: Kind| out.push((w.as_ptr() as usize - s.as_ptr() as usize, w.len(), k));
            if lanes {
                scan_in::<true>(s, json, push);
            } else {
                scan_in::<false>(s, json, push);
            }
            out
        };
        for s in corpus.iter().chain(&texts::adversarial()) {
            for json in [false, true] {
                assert_eq!(scanned(s, json, true), scanned(s, json, false), "{s:?} json {json}");
            }
        }
    }

    /// What [`Found::of`] gives for `m`, as (identifier, kind, in a call), computed afresh.
    fn scanned(m: &Message) -> Vec<(String, Kind, bool)> {
        let mut out: Vec<(String, Kind, bool)> = Vec::new();
        for (_, t, call) in texts(m) {
            scan(t, call, |w, k| match out.iter_mut().find(|o| o.0 == w) {
                Some(o) => o.2 |= call,
                None => out.push((w.to_string(), k, call)),
            });
        }
        out
    }

    fn found(m: &Message) -> Vec<(String, Kind, bool)> {
        Found::default().of(m).iter().map(|o| (o.text(m).to_string(), o.kind, o.in_call)).collect()
    }

    #[test]
    fn a_messages_identifiers_are_the_same_scanned_or_remembered() {
        let long = "See src/engine/pass.rs and parse_args; E0425 at line 40412 in handle_request. ".repeat(3);
        let args = serde_json::json!({"path": "src/engine/pass.rs", "note": long}).to_string();
        let messages = [
            serde_json::json!({"role": "tool", "tool_call_id": "c", "content": long}),
            serde_json::json!({"role": "assistant", "content": long, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": args}},
                {"id": "b", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"parse_args\"}"}}]}),
        ];
        for m in messages {
            let m = Format::OpenAi.parse(0, &m).unwrap();
            let want = scanned(&m);
            assert!(want.len() >= 4, "{want:?}");
            assert_eq!(found(&m), want, "scanned");
            let k = text_key(&long);
            let remembered = RECENT.with(|r| r.borrow().slots.iter().flatten().any(|(key, _)| *key == k));
            assert!(remembered, "the long text is remembered");
            assert_eq!(found(&m), want, "remembered");
        }
    }

    #[test]
    fn the_remembered_texts_hold_a_bounded_number_of_identifiers() {
        for t in 0..80 {
            let text: String = (0..2000).map(|i| format!("ident_{t}_{i} ")).collect();
            assert_eq!(ids_of_text(&text, false).len(), 2000);
        }
        let last: String = (0..2000).map(|i| format!("ident_79_{i} ")).collect();
        let k = text_key(&last);
        RECENT.with(|r| {
            let r = r.borrow();
            assert!(r.ids <= REMEMBERED_IDS, "{}", r.ids);
            assert_eq!(r.ids, r.slots.iter().flatten().map(|(_, ids)| ids.len()).sum::<usize>());
            assert!(r.slots.iter().flatten().any(|(key, _)| *key == k), "the newest text is remembered");
        });
    }
}
