//! A vocabulary in memory: token bytes → rank, built on first use from the embedded tables.
//!
//! The embedded data is the tokens' bytes in rank order plus one length byte per token (see
//! the build script), which the runtime copies into memory with the module. The first count
//! builds an open-addressing hash index over it in one pass: a slot is one `u64` packing the
//! rank, the token's offset and length in the data, and a tag of its hash, so a probe only
//! touches the token bytes when the tag and length already match. A direct table answers the
//! byte pairs, which are the first step of every merge.

/// Bits of a slot: rank (18), offset (21), length (8), hash tag (17).
const RANK_BITS: u32 = 18;
const OFFSET_BITS: u32 = 21;
const LEN_BITS: u32 = 8;
const RANK_MASK: u64 = (1 << RANK_BITS) - 1;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
const LEN_MASK: u64 = (1 << LEN_BITS) - 1;
const TAG_SHIFT: u32 = RANK_BITS + OFFSET_BITS + LEN_BITS;

/// Returned for "not a token"; every real rank is smaller.
pub const NONE: u32 = u32::MAX;

/// One encoding's vocabulary, ready for lookups.
pub struct Vocab {
    bytes: &'static [u8],
    slots: Box<[u64]>,
    shift: u32,
    pairs: Box<[u32]>,
    max_len: usize,
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Tokens indexed per call of `Vocab::insert` (see there).
const CHUNK: usize = 2048;

#[inline(always)]
fn read_u32(p: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&p[at..at + 4]);
    u32::from_le_bytes(b) as u64
}

#[inline(always)]
fn read_u64(p: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&p[at..at + 8]);
    u64::from_le_bytes(b)
}

/// A 64-bit hash of a short byte string: whole-word reads (overlapping at the ends), one
/// multiply per word. Only its quality matters, not its stability: the index is rebuilt with
/// it on every start.
#[inline(always)]
fn hash(p: &[u8]) -> u64 {
    let n = p.len();
    let mut h = (n as u64).wrapping_mul(K);
    if n <= 8 {
        let w = if n >= 4 {
            read_u32(p, 0) | read_u32(p, n - 4) << 32
        } else if n > 0 {
            p[0] as u64 | (p[n / 2] as u64) << 8 | (p[n - 1] as u64) << 16
        } else {
            0
        };
        h ^= w;
    } else {
        let mut at = 0;
        while at + 8 < n {
            h = (h ^ read_u64(p, at)).wrapping_mul(K).rotate_left(31);
            at += 8;
        }
        h ^= read_u64(p, n - 8);
    }
    h = h.wrapping_mul(K);
    h ^ (h >> 29)
}

/// Whether two byte strings of the same length are equal, by whole-word reads: a general
/// `memcmp` call costs more than the comparison itself for tokens of a few bytes, in
/// WebAssembly most of all.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            if read_u64(a, at) != read_u64(b, at) {
                return false;
            }
            at += 8;
        }
        read_u64(a, n - 8) == read_u64(b, n - 8)
    } else if n >= 4 {
        read_u32(a, 0) == read_u32(b, 0) && read_u32(a, n - 4) == read_u32(b, n - 4)
    } else {
        n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1])
    }
}

impl Vocab {
    /// Indexes a vocabulary: `lens[r]` is the length of the token of rank `r`, and the tokens'
    /// bytes follow each other in `bytes`.
    pub fn new(lens: &'static [u8], bytes: &'static [u8]) -> Vocab {
        let bits = (lens.len() * 2).next_power_of_two().trailing_zeros().max(8);
        let mut v = Vocab {
            bytes,
            slots: vec![0u64; 1 << bits].into_boxed_slice(),
            shift: 64 - bits,
            pairs: vec![NONE; 1 << 16].into_boxed_slice(),
            max_len: 0,
        };
        let mut offset = 0usize;
        let mut rank = 0usize;
        for chunk in lens.chunks(CHUNK) {
            offset = v.insert(chunk, rank, offset);
            rank += chunk.len();
        }
        v
    }

    /// Indexes the tokens of ranks `rank..` whose lengths are `lens`, from `offset` in the data;
    /// returns the offset after them. It is called once per chunk of tokens, not once for all:
    /// a WebAssembly engine runs a function's first calls in its baseline compiler and switches
    /// to optimized code on a later call, so chunks let most of the index build run optimized
    /// (about a third less time to the first count in Node).
    #[inline(never)]
    fn insert(&mut self, lens: &[u8], mut rank: usize, mut offset: usize) -> usize {
        let mask = self.slots.len() - 1;
        for &len in lens {
            let len = len as usize;
            let Some(token) = self.bytes.get(offset..offset + len) else { break };
            self.max_len = self.max_len.max(len);
            if len == 2 {
                self.pairs[(token[0] as usize) << 8 | token[1] as usize] = rank as u32;
            }
            let h = hash(token);
            let slot = rank as u64 | (offset as u64) << RANK_BITS | (len as u64) << (RANK_BITS + OFFSET_BITS) | (h & !0 << TAG_SHIFT);
            let mut at = (h >> self.shift) as usize;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
            offset += len;
            rank += 1;
        }
        offset
    }

    /// Length of the longest token; no longer piece can be one.
    #[inline(always)]
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The rank of a byte string, or [`NONE`] when it is no token.
    #[inline]
    pub fn rank(&self, piece: &[u8]) -> u32 {
        let n = piece.len();
        if n > self.max_len || n == 0 {
            return NONE;
        }
        if n == 2 {
            return self.pair(piece[0], piece[1]);
        }
        let h = hash(piece);
        let tag = h & !0 << TAG_SHIFT;
        let want = tag | (n as u64) << (RANK_BITS + OFFSET_BITS);
        let key_mask = !0 << TAG_SHIFT | LEN_MASK << (RANK_BITS + OFFSET_BITS);
        let mask = self.slots.len() - 1;
        let mut at = (h >> self.shift) as usize;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return NONE;
            }
            if slot & key_mask == want {
                let offset = ((slot >> RANK_BITS) & OFFSET_MASK) as usize;
                if self.bytes.get(offset..offset + n).is_some_and(|token| same(token, piece)) {
                    return (slot & RANK_MASK) as u32;
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The rank of the two-byte token `a b`, or [`NONE`].
    #[inline(always)]
    pub fn pair(&self, a: u8, b: u8) -> u32 {
        self.pairs[(a as usize) << 8 | b as usize]
    }
}
