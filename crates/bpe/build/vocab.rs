//! Writes one vocabulary as `<encoding>.vocab`: every ordinary token in rank order, each one
//! after the first 256 written as the two lower-ranked tokens it concatenates.
//!
//! Why pairs: byte-pair encoding builds its vocabulary by merging two tokens into a new one, so
//! every token of rank 256 or more is the concatenation of two tokens of lower rank (the build
//! checks it for every token). Two ranks name a token in fewer bits, once compressed, than its
//! bytes and length do: for `o200k_base` the pairs gzip to about 0.68 MB where the bytes and
//! lengths gzip to 0.99 MB (gpt-tokenizer ships the same vocabulary in 1.01 MB). The ranks
//! themselves need no storage: rank `r` is the `r`-th token.
//!
//! How a rank is written: as a magnitude symbol, one byte, and the bits below it. A rank below
//! 64 is its own symbol; a larger one, of bit length `L` (7 to 18), is the symbol
//! `16 * (L - 4) + (its top five bits)`, and its `L - 5` lower bits go, as they are, into one
//! bit stream. Small ranks are far more frequent than large ones (a token made early in
//! training is common and a part of many later ones), and gzip codes a plane of symbols by
//! their frequency, so a rank costs about its order of magnitude plus the bits below it, which
//! are close to random and which gzip could not shorten anyway. Measured with gzip -9 on
//! `o200k_base`: 688 KB, where the ranks' low, middle and top bits as five byte planes (the
//! previous layout) took 723 KB; decoding takes 0.25 ms longer natively (1.6 ms). Splitting
//! into more symbols saves little (one more leading bit would not fit a byte); grouping the
//! right parts by their first byte's category and naming the category from the left part's
//! last bytes saves 36 KB more, but makes each token's decoding a chain of dependent reads:
//! 1.5 to 2 ms longer natively.
//!
//! Of the ways to cut a token into two earlier ones, first the one whose ranks are smallest as a
//! product (`(left + 1) * (right + 1)`), which is the one of fewest bits, give or take: 680 KB,
//! where the cut with the lowest right rank took 688 KB and the true merge (byte-pair encoding
//! of the token with the earlier ranks) 693 KB; then, twice, the cut of fewest bits counted
//! with the symbols' frequencies that choice gave (each symbol's information plus the raw
//! bits): 678 KB, and more rounds gain nothing. The choice is the build's alone: decoding is
//! the same whatever the cut. (Brotli gains less, having context modeling
//! of its own: 679 KB where the byte planes took 700 KB.)
//!
//! Layout (little-endian): token count `n` (u32), total bytes of all tokens (u32), the 256
//! single-byte tokens of ranks 0..256, then for the ranks 256..n, `m = n - 256` bytes each:
//! the left ranks' symbols, the right ranks' symbols; then the bit stream: for each pair the
//! left rank's bits, then the right rank's, each least significant bit first, and `SLACK`
//! zero bytes after them. `src/vocab.rs` decodes it; the build decodes it too and compares
//! every token with tiktoken-rs's before writing it.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;

use tiktoken_rs::CoreBPE;

/// Ranks must fit in 18 bits (the magnitude symbols fill a byte at 18, and `src/vocab.rs`'s
/// index slots).
const MAX_TOKENS: usize = 1 << 18;

/// Zero bytes after the bit stream: the decoder reads it eight bytes at a time.
const SLACK: usize = 8;

pub fn generate(bpe: &CoreBPE, out: &Path, name: &str) {
    let tokens = ordinary_tokens(bpe, name);
    let encoded = encode(&tokens, name);
    assert_eq!(decode(&encoded), tokens, "{name}: the encoding does not decode to the vocabulary");
    fs::write(out.join(format!("{name}.vocab")), &encoded).expect("write the vocabulary");
}

/// The ordinary tokens' bytes in rank order, from tiktoken-rs.
fn ordinary_tokens(bpe: &CoreBPE, name: &str) -> Vec<Vec<u8>> {
    let special: HashSet<&str> = bpe.special_tokens();
    let mut tokens = Vec::new();
    // Ordinary tokens have the ranks 0..n without gaps; the special tokens come after a gap.
    while let Ok(token) = bpe.decode_bytes(&[tokens.len() as u32]) {
        if std::str::from_utf8(&token).is_ok_and(|s| special.contains(s)) {
            break;
        }
        assert!(!token.is_empty() && token.len() <= 255, "{name}: token {} has {} bytes", tokens.len(), token.len());
        tokens.push(token);
    }
    let n = tokens.len() as u32;
    // Nothing ordinary hides beyond the first gap.
    for r in n + 1..n + 4096 {
        if let Ok(token) = bpe.decode_bytes(&[r]) {
            assert!(std::str::from_utf8(&token).is_ok_and(|s| special.contains(s)), "{name}: ordinary token {r} after the gap at {n}");
        }
    }
    assert!((256..MAX_TOKENS).contains(&tokens.len()), "{name}: {n} tokens");
    tokens
}

/// The `.vocab` layout described above.
fn encode(tokens: &[Vec<u8>], name: &str) -> Vec<u8> {
    let total: usize = tokens.iter().map(Vec::len).sum();
    assert!(total < 1 << 24, "{name}: {total} token bytes");
    let rank: HashMap<&[u8], usize> = tokens.iter().enumerate().map(|(r, t)| (t.as_slice(), r)).collect();
    let mut out = Vec::new();
    out.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    for (r, token) in tokens[..256].iter().enumerate() {
        assert_eq!(token.len(), 1, "{name}: token {r} is not a single byte");
        out.push(token[0]);
    }
    // Every way to cut each token into two earlier ones.
    let cuts: Vec<Vec<(usize, usize)>> = tokens[256..]
        .iter()
        .enumerate()
        .map(|(i, token)| {
            let r = i + 256;
            let cuts: Vec<(usize, usize)> = (1..token.len())
                .filter_map(|k| Some((*rank.get(&token[..k])?, *rank.get(&token[k..])?)))
                .filter(|&(a, b)| a < r && b < r)
                .collect();
            assert!(!cuts.is_empty(), "{name}: token {r} is no concatenation of two lower-ranked tokens");
            cuts
        })
        .collect();
    // First the cut of smallest product, then, twice, the cut that costs fewest bits under the
    // symbol frequencies the previous choice gave (the raw bits plus each symbol's information).
    let mut pairs: Vec<(usize, usize)> =
        cuts.iter().map(|c| *c.iter().min_by_key(|&&(a, b)| (a as u64 + 1) * (b as u64 + 1)).expect("a cut")).collect();
    for _ in 0..2 {
        let (mut left, mut right) = ([0f64; 256], [0f64; 256]);
        for &(a, b) in &pairs {
            left[magnitude(a).0 as usize] += 1.0;
            right[magnitude(b).0 as usize] += 1.0;
        }
        let total = pairs.len() as f64;
        let bits = |counts: &[f64; 256], x: usize| {
            let (symbol, _, k) = magnitude(x);
            k as f64 - ((counts[symbol as usize] + 0.5) / total).log2()
        };
        pairs = cuts
            .iter()
            .map(|c| {
                *c.iter()
                    .min_by(|&&(a, b), &&(x, y)| (bits(&left, a) + bits(&right, b)).total_cmp(&(bits(&left, x) + bits(&right, y))))
                    .expect("a cut")
            })
            .collect();
    }
    let mut bits = Bits::default();
    out.extend(pairs.iter().map(|&(a, _)| magnitude(a).0));
    out.extend(pairs.iter().map(|&(_, b)| magnitude(b).0));
    for &(a, b) in &pairs {
        for (_, low, k) in [magnitude(a), magnitude(b)] {
            bits.put(low, k);
        }
    }
    out.extend(bits.finish());
    out
}

/// A rank as its magnitude symbol, the bits below it, and their count.
fn magnitude(x: usize) -> (u8, u64, u32) {
    assert!(x < MAX_TOKENS);
    if x < 64 {
        return (x as u8, 0, 0);
    }
    let k = usize::BITS - x.leading_zeros() - 5;
    ((16 * (k as usize + 1) + (x >> k)) as u8, x as u64 & ((1 << k) - 1), k)
}

/// A bit stream, least significant bit first.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    pending: u64,
    count: u32,
}

impl Bits {
    fn put(&mut self, value: u64, k: u32) {
        self.pending |= value << self.count;
        self.count += k;
        while self.count >= 8 {
            self.bytes.push(self.pending as u8);
            self.pending >>= 8;
            self.count -= 8;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.count > 0 {
            self.bytes.push(self.pending as u8);
        }
        self.bytes.extend([0; SLACK]);
        self.bytes
    }
}

/// The tokens of an encoding, decoded the plain way (the runtime does the same in one buffer).
fn decode(encoded: &[u8]) -> Vec<Vec<u8>> {
    let n = u32::from_le_bytes(encoded[0..4].try_into().unwrap()) as usize;
    let m = n - 256;
    let mut tokens: Vec<Vec<u8>> = encoded[8..264].iter().map(|&b| vec![b]).collect();
    let stream = &encoded[264 + 2 * m..];
    let mut at = 0;
    let mut rank = |symbol: u8| {
        let s = symbol as usize;
        if s < 64 {
            return s;
        }
        let k = s / 16 - 2;
        let low: usize = (0..k).map(|j| ((stream[(at + j) / 8] >> ((at + j) % 8)) as usize & 1) << j).sum();
        at += k;
        (16 + s % 16) << k | low
    };
    for i in 0..m {
        let a = rank(encoded[264 + i]);
        let b = rank(encoded[264 + m + i]);
        let token = [tokens[a].as_slice(), tokens[b].as_slice()].concat();
        tokens.push(token);
    }
    assert_eq!(stream.len(), at.div_ceil(8) + SLACK);
    let total: usize = tokens.iter().map(Vec::len).sum();
    assert_eq!(total, u32::from_le_bytes(encoded[4..8].try_into().unwrap()) as usize);
    tokens
}
