//! Writes one vocabulary as two flat files: token lengths (one byte each) and token bytes, both
//! in rank order. Rank `r` is the `r`-th token, so the ranks need no storage of their own.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use tiktoken_rs::CoreBPE;

pub fn generate(bpe: &CoreBPE, out: &Path, name: &str) {
    let special: HashSet<&str> = bpe.special_tokens();
    let mut lens = Vec::new();
    let mut bytes = Vec::new();
    let mut rank = 0u32;
    // Ordinary tokens have the ranks 0..n without gaps; the special tokens come after a gap.
    while let Ok(token) = bpe.decode_bytes(&[rank]) {
        if std::str::from_utf8(&token).is_ok_and(|s| special.contains(s)) {
            break;
        }
        assert!(!token.is_empty() && token.len() <= 255, "{name}: token {rank} has {} bytes", token.len());
        lens.push(token.len() as u8);
        bytes.extend_from_slice(&token);
        rank += 1;
    }
    // Nothing ordinary hides beyond the first gap.
    for r in rank + 1..rank + 4096 {
        if let Ok(token) = bpe.decode_bytes(&[r]) {
            assert!(std::str::from_utf8(&token).is_ok_and(|s| special.contains(s)), "{name}: ordinary token {r} after the gap at {rank}");
        }
    }
    assert!((256..(1 << 18)).contains(&rank), "{name}: {rank} tokens");
    assert!(bytes.len() < (1 << 21), "{name}: {} token bytes", bytes.len());
    fs::write(out.join(format!("{name}.lens")), &lens).expect("write lens");
    fs::write(out.join(format!("{name}.bytes")), &bytes).expect("write bytes");
}
