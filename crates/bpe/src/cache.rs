//! A small cache of piece → token count, for the pieces that are not whole tokens.
//!
//! Most pieces are tokens and cost one lookup. The rest (identifiers in code, rare words, long
//! numbers in JSON, CJK runs) need a byte-pair merge, and the same ones come back again and
//! again in a conversation: the same identifiers, the same paths, the same field names. A
//! direct-mapped table of the last piece seen per slot answers them without merging (about a
//! fifth faster counting on the corpus in WebAssembly). Keys are compared in full, so a hit is
//! always exact; pieces longer than a key are not cached. One table per encoding per thread
//! (WebAssembly has one thread), 128 KiB each, made on first use.

use std::cell::RefCell;

use super::Encoding;

const SLOTS: usize = 4096;
/// Longest cached piece, in bytes; with its length and count an entry is 32 bytes.
const KEY: usize = 30;

#[derive(Clone, Copy)]
struct Entry {
    key: [u8; KEY],
    len: u8,
    count: u8,
}

const EMPTY: Entry = Entry { key: [0; KEY], len: 0, count: 0 };

thread_local! {
    static TABLES: [RefCell<Vec<Entry>>; 2] = const { [RefCell::new(Vec::new()), RefCell::new(Vec::new())] };
}

/// FNV-1a of a short piece, folded to a slot.
#[inline(always)]
fn slot(piece: &[u8]) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    for &b in piece {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (h ^ h >> 16) as usize & (SLOTS - 1)
}

/// The token count of `piece` in `encoding`: from the cache, or from `merge` (then remembered).
#[inline]
pub fn count(encoding: Encoding, piece: &[u8], merge: impl FnOnce() -> usize) -> usize {
    if piece.len() > KEY || piece.is_empty() {
        return merge();
    }
    let at = slot(piece);
    TABLES.with(|tables| {
        let Ok(mut table) = tables[encoding as usize].try_borrow_mut() else { return merge() };
        if table.is_empty() {
            table.resize(SLOTS, EMPTY);
        }
        let entry = &mut table[at];
        if entry.len as usize == piece.len() && entry.key[..piece.len()] == *piece {
            return entry.count as usize;
        }
        let n = merge();
        // A piece of at most KEY bytes merges into at most KEY tokens.
        entry.key[..piece.len()].copy_from_slice(piece);
        entry.len = piece.len() as u8;
        entry.count = n.min(u8::MAX as usize) as u8;
        n
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_piece_is_answered_without_merging_and_only_for_its_own_bytes() {
        let enc = Encoding::O200kBase;
        assert_eq!(count(enc, b"zqxjkv_cache_test", || 5), 5);
        assert_eq!(count(enc, b"zqxjkv_cache_test", || unreachable!("cached")), 5);
        // Same length, other bytes: merged, not taken from the cache.
        assert_eq!(count(enc, b"zqxjkv_cache_tesu", || 6), 6);
        // The other encoding has its own table.
        assert_eq!(count(Encoding::Cl100kBase, b"zqxjkv_cache_test", || 7), 7);
        // Too long to cache: merged every time.
        let long = [b'a'; KEY + 1];
        assert_eq!(count(enc, &long, || 8), 8);
        assert_eq!(count(enc, &long, || 9), 9);
    }
}
