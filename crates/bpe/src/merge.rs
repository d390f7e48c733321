//! Byte-pair merging, counting only: how many tokens a piece that is not itself a token
//! becomes.
//!
//! tiktoken's rule: start from single bytes and repeatedly merge the adjacent pair whose
//! concatenation has the lowest rank (the leftmost on a tie) until no adjacent pair is a token.
//! Short pieces (almost all of them) use tiktoken's own array scan, which beats anything
//! cleverer at that size. Long pieces (a 50,000-letter "word", a wall of punctuation) use a
//! heap of candidate merges with lazy invalidation, O(n log n) in the piece's length, so
//! adversarial input stays in milliseconds where the array scan would be quadratic. Both
//! apply the same merges in the same order; concatenations longer than the longest token are
//! rejected without a lookup.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::vocab::{Vocab, NONE};

/// Pieces at least this long use the heap.
const LARGE: usize = 64;

/// Number of tokens `piece` (two bytes or more, not itself a token) merges into.
pub fn count(v: &Vocab, piece: &[u8]) -> usize {
    if piece.len() < LARGE {
        short(v, piece)
    } else {
        long(v, piece)
    }
}

/// The rank of `piece[a..b]`, or [`NONE`].
#[inline(always)]
fn rank(v: &Vocab, piece: &[u8], a: usize, b: usize) -> u32 {
    if b - a > v.max_len() {
        return NONE;
    }
    piece.get(a..b).map_or(NONE, |p| v.rank(p))
}

/// tiktoken's scan: `parts[i]` is the start of part `i` and the rank of merging it with part
/// `i + 1`; each step merges the minimum and updates the two ranks around it.
fn short(v: &Vocab, piece: &[u8]) -> usize {
    let n = piece.len();
    let mut starts = [0u32; LARGE + 1];
    let mut ranks = [NONE; LARGE + 1];
    for i in 0..n {
        starts[i] = i as u32;
        ranks[i] = if i + 1 < n { v.pair(piece[i], piece[i + 1]) } else { NONE };
    }
    starts[n] = n as u32;
    let mut len = n + 1; // parts plus the end sentinel
    loop {
        let mut min = NONE;
        let mut at = 0;
        for (i, &r) in ranks[..len - 1].iter().enumerate() {
            if r < min {
                min = r;
                at = i;
            }
        }
        if min == NONE {
            return len - 1;
        }
        // Part `at` absorbs part `at + 1`; its new pair reaches to the end of part `at + 2`.
        ranks[at] = if at + 3 < len { rank(v, piece, starts[at] as usize, starts[at + 3] as usize) } else { NONE };
        if at > 0 {
            ranks[at - 1] = rank(v, piece, starts[at - 1] as usize, starts[at + 2] as usize);
        }
        starts.copy_within(at + 2..len, at + 1);
        ranks.copy_within(at + 2..len, at + 1);
        len -= 1;
    }
}

/// A part of a long piece: where it ends, where the part after it ends, where the part before
/// it starts, and the rank of merging it with the next part ([`NONE`] if that is no token).
#[derive(Clone, Copy)]
struct Part {
    end: u32,
    next_end: u32,
    prev: u32,
    rank: u32,
}

/// The heap version (tiktoken's `_byte_pair_merge_large`, counting parts instead of
/// collecting ranks).
fn long(v: &Vocab, piece: &[u8]) -> usize {
    let n = piece.len();
    let mut parts: Vec<Part> =
        (0..n).map(|i| Part { end: i as u32 + 1, next_end: i as u32 + 2, prev: (i as u32).wrapping_sub(1), rank: NONE }).collect();
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        let r = v.pair(piece[i], piece[i + 1]);
        if r != NONE {
            parts[i].rank = r;
            heap.push(Reverse((r, i as u32)));
        }
    }
    let mut count = n;
    while let Some(Reverse((r, start))) = heap.pop() {
        let left = start as usize;
        if parts[left].rank != r {
            continue; // stale: this part changed since the merge was queued
        }
        let right = parts[left].end as usize;
        let right_end = parts[left].next_end as usize;
        let right_next_end = parts[right].next_end as usize;
        // Merge the right part into the left one.
        parts[left].end = right_end as u32;
        parts[right].rank = NONE;
        count -= 1;
        let r = if right_next_end <= n { rank(v, piece, left, right_next_end) } else { NONE };
        parts[left].next_end = right_next_end as u32;
        parts[left].rank = r;
        if r != NONE {
            heap.push(Reverse((r, left as u32)));
        }
        if right_end < n {
            parts[right_end].prev = left as u32;
        }
        if left > 0 {
            let prev = parts[left].prev as usize;
            let r = rank(v, piece, prev, right_end);
            parts[prev].next_end = right_end as u32;
            parts[prev].rank = r;
            if r != NONE {
                heap.push(Reverse((r, prev as u32)));
            }
        }
    }
    count
}
