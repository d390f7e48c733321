//! Character classes of the two split patterns, read straight from UTF-8 bytes.
//!
//! The split patterns only ask a handful of questions about a character: which kind of letter
//! it is (`\p{Lu}`/`\p{Lt}`, `\p{Ll}`, `\p{Lm}`/`\p{Lo}`), whether it is a mark, a number or
//! white space. The build script answers them once for every code point from the regex
//! engine's own Unicode tables (so the split agrees with tiktoken's on every character) and
//! stores the answers in a two-stage table; ASCII has its own 128-entry table.

include!(concat!(env!("OUT_DIR"), "/unicode_classes.rs"));

/// None of the classes below (punctuation, symbols, controls other than white space, ...).
pub const OTHER: u8 = 0;
/// `\p{Lu}` or `\p{Lt}`.
pub const UPPER: u8 = 1;
/// `\p{Ll}`.
pub const LOWER: u8 = 2;
/// `\p{Lm}` or `\p{Lo}` (CJK ideographs, kana, modifier letters).
pub const OLETTER: u8 = 3;
/// `\p{M}` (combining marks).
pub const MARK: u8 = 4;
/// `\p{N}`.
pub const NUMBER: u8 = 5;
/// `\s` (Unicode White_Space).
pub const SPACE: u8 = 6;

/// Whether a class is a letter (`\p{L}`).
#[inline(always)]
pub fn is_letter(class: u8) -> bool {
    matches!(class, UPPER | LOWER | OLETTER)
}

/// The class of a code point.
#[inline(always)]
pub fn class_of(cp: u32) -> u8 {
    let block = BLOCK_INDEX.get((cp >> SHIFT) as usize).copied().unwrap_or(0) as usize;
    BLOCKS.get((block << SHIFT) | (cp & ((1 << SHIFT) - 1)) as usize).copied().unwrap_or(OTHER)
}

/// The class of the character starting at byte `i` and its length in bytes (at least 1, so a
/// caller always advances). `s` is UTF-8 (it comes from a `&str`); a byte that does not start
/// a well-formed character counts as one `OTHER` byte instead of a panic.
#[inline(always)]
pub fn char_at(s: &[u8], i: usize) -> (u8, usize) {
    let b0 = match s.get(i) {
        Some(&b) => b,
        None => return (OTHER, 1),
    };
    if b0 < 0x80 {
        return (ASCII[b0 as usize], 1);
    }
    let cont = |k: usize| s.get(i + k).map_or(0, |&b| (b & 0x3F) as u32);
    let (cp, len) = if b0 < 0xE0 {
        (((b0 & 0x1F) as u32) << 6 | cont(1), 2)
    } else if b0 < 0xF0 {
        (((b0 & 0x0F) as u32) << 12 | cont(1) << 6 | cont(2), 3)
    } else {
        (((b0 & 0x07) as u32) << 18 | cont(1) << 12 | cont(2) << 6 | cont(3), 4)
    };
    if i + len > s.len() {
        return (OTHER, 1);
    }
    (class_of(cp), len)
}

/// Whether the character at byte `i` matches `letter` case-insensitively, as the patterns'
/// `(?i:...)` does (Unicode simple case folding), and its length.
#[inline]
pub fn fold_at(s: &[u8], i: usize, letter: u8) -> Option<usize> {
    let b = *s.get(i)?;
    if b < 0x80 {
        return (b.to_ascii_lowercase() == letter).then_some(1);
    }
    let len = match b {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => return None,
    };
    let c = std::str::from_utf8(s.get(i..i + len)?).ok()?.chars().next()?;
    folds_to(c, letter).then_some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_of_known_characters() {
        let class = |c: char| {
            let mut buf = [0u8; 4];
            char_at(c.encode_utf8(&mut buf).as_bytes(), 0)
        };
        assert_eq!(class('a'), (LOWER, 1));
        assert_eq!(class('Q'), (UPPER, 1));
        assert_eq!(class('7'), (NUMBER, 1));
        assert_eq!(class(' '), (SPACE, 1));
        assert_eq!(class('\n'), (SPACE, 1));
        assert_eq!(class('.'), (OTHER, 1));
        assert_eq!(class('é'), (LOWER, 2));
        assert_eq!(class('ǅ'), (UPPER, 2)); // titlecase
        assert_eq!(class('\u{301}'), (MARK, 2));
        assert_eq!(class('日'), (OLETTER, 3));
        assert_eq!(class('\u{3000}'), (SPACE, 3));
        assert_eq!(class('½'), (NUMBER, 2));
        assert_eq!(class('🦀'), (OTHER, 4));
        assert_eq!(class('\u{E0100}'), (MARK, 4)); // variation selector supplement
    }

    #[test]
    fn broken_utf8_never_panics_and_always_advances() {
        for s in [&[0xE6u8][..], &[0xF0, 0x9F], &[0x80], &[0xFF, 0xFF]] {
            for i in 0..=s.len() {
                assert!(char_at(s, i).1 >= 1);
            }
        }
    }

    #[test]
    fn long_s_folds_to_s() {
        assert_eq!(fold_at("ſ".as_bytes(), 0, b's'), Some(2));
        assert_eq!(fold_at(b"S", 0, b's'), Some(1));
        assert_eq!(fold_at(b"x", 0, b's'), None);
    }
}
