//! The pre-tokenizers: where the two encodings' split patterns cut a text into pieces, written
//! by hand instead of run through a regex engine.
//!
//! tiktoken cuts a text with a regular expression before it merges bytes, and the token count
//! is the sum over the pieces. The two patterns, as `tiktoken-rs` spells them:
//!
//! ```text
//! cl100k_base: '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
//! o200k_base:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!             |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!             |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//!
//! Both are matched with backtracking semantics: at each position the first alternative that
//! matches wins, and a greedy quantifier gives back characters only until the rest matches.
//! Each function below resolves that backtracking in closed form for its alternative (the
//! comments say how), so a piece costs one or two scans of its own characters: the split is
//! linear in the text, with no pathological input. Every character starts some alternative,
//! so the pieces tile the text. The differential tests check every rule against tiktoken-rs.

use super::unicode::{char_at, fold_at, is_letter, LOWER, MARK, NUMBER, OLETTER, OTHER, SPACE, UPPER};

/// `[^\s\p{L}\p{N}]`: punctuation, symbols, marks, controls.
#[inline(always)]
fn is_punct(class: u8) -> bool {
    matches!(class, OTHER | MARK)
}

/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, o200k's "upper" side.
#[inline(always)]
fn is_upperish(class: u8) -> bool {
    matches!(class, UPPER | OLETTER | MARK)
}

/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`, o200k's "lower" side.
#[inline(always)]
fn is_lowerish(class: u8) -> bool {
    matches!(class, LOWER | OLETTER | MARK)
}

/// End of the run of characters from `i` whose class passes `keep`.
#[inline(always)]
fn run(s: &[u8], mut i: usize, keep: impl Fn(u8) -> bool) -> usize {
    while i < s.len() {
        let (c, n) = char_at(s, i);
        if !keep(c) {
            break;
        }
        i += n;
    }
    i
}

/// End of the run of ASCII bytes from `i` in `set`.
#[inline(always)]
fn byte_run(s: &[u8], mut i: usize, set: &[u8]) -> usize {
    while i < s.len() && set.contains(&s[i]) {
        i += 1;
    }
    i
}

/// The white-space alternatives shared by both patterns, from the run of white space `[i, j)`:
/// the run up to its last line break (`\s*[\r\n]`), the whole run at the end of the text, or
/// the run minus its last character so that it ends before a non-space (`\s+(?!\S)`), else one
/// character. `cl100k` (`\s++$` first) keeps a run that ends the text whole; `o200k` (which tries
/// `\s*[\r\n]+` first) cuts it after its last line break.
#[inline]
fn space(s: &[u8], i: usize, end_first: bool) -> usize {
    let mut j = i;
    let mut last_break = None;
    let mut last_start = i;
    let mut chars = 0usize;
    while j < s.len() {
        let (c, n) = char_at(s, j);
        if c != SPACE {
            break;
        }
        if s[j] == b'\r' || s[j] == b'\n' {
            last_break = Some(j);
        }
        last_start = j;
        chars += 1;
        j += n;
    }
    if j == i {
        // Not white space: callers never get here, but a piece must not be empty.
        return i + char_at(s, i).1;
    }
    if end_first && j == s.len() {
        return j;
    }
    if let Some(k) = last_break {
        return k + 1;
    }
    if j == s.len() {
        return j;
    }
    if chars >= 2 {
        return last_start;
    }
    j
}

/// End of the cl100k_base piece that starts at `i` (`i < s.len()`).
pub fn cl100k(s: &[u8], i: usize) -> usize {
    let b = s[i];
    // '(?i:[sdmt]|ll|ve|re)
    if b == b'\'' {
        let j = i + 1;
        for letter in [b's', b'd', b'm', b't'] {
            if let Some(n) = fold_at(s, j, letter) {
                return j + n;
            }
        }
        for [x, y] in [[b'l', b'l'], [b'v', b'e'], [b'r', b'e']] {
            if let Some(n) = fold_at(s, j, x) {
                if let Some(m) = fold_at(s, j + n, y) {
                    return j + n + m;
                }
            }
        }
    }
    let (c, n) = char_at(s, i);
    // [^\r\n\p{L}\p{N}]?+\p{L}++ : a letter run, or one other non-number, non-line-break
    // character followed by a letter run (possessive, so nothing to give back).
    if is_letter(c) {
        return run(s, i + n, is_letter);
    }
    let prefix = c != NUMBER && b != b'\r' && b != b'\n';
    if prefix && i + n < s.len() && is_letter(char_at(s, i + n).0) {
        return run(s, i + n, is_letter);
    }
    // \p{N}{1,3}+
    if c == NUMBER {
        return up_to_three_numbers(s, i + n);
    }
    // ' ?[^\s\p{L}\p{N}]++[\r\n]*+'
    if let Some(e) = punctuation(s, i, b, c, b"\r\n") {
        return e;
    }
    // \s++$ | \s*[\r\n] | \s+(?!\S) | \s
    space(s, i, true)
}

/// The rest of `\p{N}{1,3}` after its first number, which ends at `j`: up to two more.
#[inline(always)]
fn up_to_three_numbers(s: &[u8], mut j: usize) -> usize {
    for _ in 0..2 {
        if j >= s.len() {
            break;
        }
        let (c, n) = char_at(s, j);
        if c != NUMBER {
            break;
        }
        j += n;
    }
    j
}

/// ` ?[^\s\p{L}\p{N}]+` followed by any run of the bytes in `trailing`, at `i` (whose byte is
/// `b` and class `c`); `None` when no punctuation starts there.
#[inline(always)]
fn punctuation(s: &[u8], i: usize, b: u8, c: u8, trailing: &[u8]) -> Option<usize> {
    if b == b' ' && i + 1 < s.len() && is_punct(char_at(s, i + 1).0) {
        return Some(byte_run(s, run(s, i + 1, is_punct), trailing));
    }
    if is_punct(c) {
        return Some(byte_run(s, run(s, i, is_punct), trailing));
    }
    None
}

/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+` from `p`: the greedy
/// "upper" run stops at `q`; if a lowercase letter follows, the "lower" run takes it and what
/// follows; otherwise the star gives back characters until the last one that is also "lower"
/// (`Lm`, `Lo`, `M`), which alone forms the plus. `None` when there is none.
#[inline]
fn upper_lower(s: &[u8], p: usize) -> Option<usize> {
    let mut q = p;
    let mut last_lowerish_end = None;
    while q < s.len() {
        let (c, n) = char_at(s, q);
        if !is_upperish(c) {
            if c == LOWER {
                return Some(run(s, q + n, is_lowerish));
            }
            break;
        }
        q += n;
        if c != UPPER {
            last_lowerish_end = Some(q);
        }
    }
    last_lowerish_end
}

/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*` from `p` (both greedy,
/// nothing to give back).
#[inline]
fn upper_then_lower(s: &[u8], p: usize) -> Option<usize> {
    let q = run(s, p, is_upperish);
    (q > p).then(|| run(s, q, is_lowerish))
}

/// o200k's optional `(?i:'s|'t|'re|'ve|'m|'ll|'d)` after a word ending at `e`.
#[inline]
fn contraction(s: &[u8], e: usize) -> usize {
    if s.get(e) != Some(&b'\'') {
        return e;
    }
    let j = e + 1;
    for letter in [b's', b't'] {
        if let Some(n) = fold_at(s, j, letter) {
            return j + n;
        }
    }
    for [x, y] in [[b'r', b'e'], [b'v', b'e']] {
        if let Some(n) = fold_at(s, j, x) {
            if let Some(m) = fold_at(s, j + n, y) {
                return j + n + m;
            }
        }
    }
    if let Some(n) = fold_at(s, j, b'm') {
        return j + n;
    }
    if let Some(n) = fold_at(s, j, b'l') {
        if let Some(m) = fold_at(s, j + n, b'l') {
            return j + n + m;
        }
    }
    if let Some(n) = fold_at(s, j, b'd') {
        return j + n;
    }
    e
}

/// End of the o200k_base piece that starts at `i` (`i < s.len()`).
pub fn o200k(s: &[u8], i: usize) -> usize {
    let b = s[i];
    let (c, n) = char_at(s, i);
    // The optional one-character prefix [^\r\n\p{L}\p{N}] (marks and white space included) is
    // greedy: each word alternative is tried with it, then without it.
    let prefix = !is_letter(c) && c != NUMBER && b != b'\r' && b != b'\n';
    let wordy = is_upperish(c) || is_lowerish(c);
    if prefix && i + n < s.len() {
        if let Some(e) = upper_lower(s, i + n) {
            return contraction(s, e);
        }
    }
    if wordy {
        if let Some(e) = upper_lower(s, i) {
            return contraction(s, e);
        }
    }
    if prefix && i + n < s.len() {
        if let Some(e) = upper_then_lower(s, i + n) {
            return contraction(s, e);
        }
    }
    if wordy {
        if let Some(e) = upper_then_lower(s, i) {
            return contraction(s, e);
        }
    }
    // \p{N}{1,3}
    if c == NUMBER {
        return up_to_three_numbers(s, i + n);
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    if let Some(e) = punctuation(s, i, b, c, b"\r\n/") {
        return e;
    }
    // \s*[\r\n]+ | \s+(?!\S) | \s+
    space(s, i, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str, next: fn(&[u8], usize) -> usize) -> Vec<&str> {
        let s = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            let e = next(s, i);
            out.push(&text[i..e]);
            i = e;
        }
        out
    }

    #[test]
    fn cl100k_pieces() {
        assert_eq!(pieces("Hello world's 12345 end", cl100k), ["Hello", " world", "'s", " ", "123", "45", " end"]);
        assert_eq!(pieces("a  \n\n  b  ", cl100k), ["a", "  \n\n", " ", " b", "  "]);
        assert_eq!(pieces("x := y!!\n\nz", cl100k), ["x", " :=", " y", "!!\n\n", "z"]);
    }

    #[test]
    fn o200k_pieces() {
        assert_eq!(pieces("Hello WORLD don't HTMLParser", o200k), ["Hello", " WORLD", " don't", " HTMLParser"]);
        assert_eq!(pieces("a  \n\n  b  ", o200k), ["a", "  \n\n", " ", " b", "  "]);
        assert_eq!(pieces("x := y!!\n/z", o200k), ["x", " :=", " y", "!!\n/", "z"]);
    }
}
