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

impl Vocab {
    /// Indexes a vocabulary: `lens[r]` is the length of the token of rank `r`, and the tokens'
    /// bytes follow each other in `bytes`.
    pub fn new(lens: &'static [u8], bytes: &'static [u8]) -> Vocab {
        let bits = (lens.len() * 2).next_power_of_two().trailing_zeros().max(8);
        let mut slots = vec![0u64; 1 << bits].into_boxed_slice();
        let mask = (1usize << bits) - 1;
        let shift = 64 - bits;
        let mut pairs = vec![NONE; 1 << 16].into_boxed_slice();
        let mut max_len = 0;
        let mut offset = 0usize;
        for (rank, &len) in lens.iter().enumerate() {
            let len = len as usize;
            let Some(token) = bytes.get(offset..offset + len) else { break };
            max_len = max_len.max(len);
            if len == 2 {
                pairs[(token[0] as usize) << 8 | token[1] as usize] = rank as u32;
            }
            let h = hash(token);
            let slot = rank as u64 | (offset as u64) << RANK_BITS | (len as u64) << (RANK_BITS + OFFSET_BITS) | (h & !0 << TAG_SHIFT);
            let mut at = (h >> shift) as usize;
            while slots[at] != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = slot;
            offset += len;
        }
        Vocab { bytes, slots, shift, pairs, max_len }
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
                if self.bytes.get(offset..offset + n) == Some(piece) {
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
