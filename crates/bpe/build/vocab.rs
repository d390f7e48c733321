//! Writes one vocabulary as `<encoding>.vocab`: every ordinary token in rank order, each one
//! after the first 256 written as the two lower-ranked tokens it concatenates.
//!
//! Why pairs: byte-pair encoding builds its vocabulary by merging two tokens into a new one, so
//! every token of rank 256 or more is the concatenation of two tokens of lower rank (the build
//! checks it for every token). Two ranks name a token in fewer bits, once compressed, than its
//! bytes and length do: for `o200k_base` the pairs gzip to about 0.72 MB where the bytes and
//! lengths gzip to 0.99 MB (gpt-tokenizer ships the same vocabulary in 1.01 MB). Each rank is
//! below 2^18 and is split into byte planes (all low bytes, then all middle bytes, then the top
//! two bits of both ranks packed in one byte), because a plane of like bytes is what gzip and
//! brotli compress well. The ranks themselves need no storage: rank `r` is the `r`-th token.
//!
//! Layout (little-endian): token count `n` (u32), total bytes of all tokens (u32), the 256
//! single-byte tokens of ranks 0..256, then for the ranks 256..n, `m = n - 256` bytes each:
//! left rank bits 0..8, left rank bits 8..16, right rank bits 0..8, right rank bits 8..16,
//! and `left >> 16 | (right >> 16) << 2`. `src/vocab.rs` decodes it; the build decodes it
//! too and compares every token with tiktoken-rs's before writing it.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;

use tiktoken_rs::CoreBPE;

/// Ranks must fit in 18 bits (the planes' layout, and `src/vocab.rs`'s index slots).
const MAX_TOKENS: usize = 1 << 18;

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
    // Of the ways to cut a token into two earlier ones, the one whose right part has the lowest
    // rank: any would do, this one compresses a little better (frequent right parts).
    let pairs: Vec<(usize, usize)> = tokens[256..]
        .iter()
        .enumerate()
        .map(|(i, token)| {
            let r = i + 256;
            (1..token.len())
                .filter_map(|k| Some((*rank.get(&token[..k])?, *rank.get(&token[k..])?)))
                .filter(|&(a, b)| a < r && b < r)
                .min_by_key(|&(_, b)| b)
                .unwrap_or_else(|| panic!("{name}: token {r} is no concatenation of two lower-ranked tokens"))
        })
        .collect();
    out.extend(pairs.iter().map(|&(a, _)| a as u8));
    out.extend(pairs.iter().map(|&(a, _)| (a >> 8) as u8));
    out.extend(pairs.iter().map(|&(_, b)| b as u8));
    out.extend(pairs.iter().map(|&(_, b)| (b >> 8) as u8));
    out.extend(pairs.iter().map(|&(a, b)| (a >> 16 | (b >> 16) << 2) as u8));
    out
}

/// The tokens of an encoding, decoded the plain way (the runtime does the same in one buffer).
fn decode(encoded: &[u8]) -> Vec<Vec<u8>> {
    let n = u32::from_le_bytes(encoded[0..4].try_into().unwrap()) as usize;
    let m = n - 256;
    let mut tokens: Vec<Vec<u8>> = encoded[8..264].iter().map(|&b| vec![b]).collect();
    let plane = |k: usize, i: usize| encoded[264 + k * m + i] as usize;
    for i in 0..m {
        let a = plane(0, i) | plane(1, i) << 8 | (plane(4, i) & 3) << 16;
        let b = plane(2, i) | plane(3, i) << 8 | (plane(4, i) >> 2) << 16;
        let token = [tokens[a].as_slice(), tokens[b].as_slice()].concat();
        tokens.push(token);
    }
    assert_eq!(encoded.len(), 264 + 5 * m);
    let total: usize = tokens.iter().map(Vec::len).sum();
    assert_eq!(total, u32::from_le_bytes(encoded[4..8].try_into().unwrap()) as usize);
    tokens
}
