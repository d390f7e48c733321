//! A vocabulary in memory: token bytes → rank, built on first use from the embedded encoding.
//!
//! The module embeds each vocabulary in its compact form (see the build script): the 256
//! single-byte tokens, then every later token as the pair of lower-ranked tokens it
//! concatenates, which ships in about 0.31 MB less than the tokens' bytes and lengths for
//! `o200k_base` once compressed. The first count decodes it once, in rank order, into one
//! buffer holding every token's bytes (decoding a token copies the bytes of two tokens decoded
//! before it): the only copy of the vocabulary's text, which the index below points into. No
//! token is stored twice and no map owns strings of its own.
//!
//! The index has two parts: `spans`, by rank, each token's offset and length in the buffer, and
//! an open-addressing hash table of `u32` slots, each holding a rank and a tag of the token's
//! hash, so a probe only reads a token's bytes when the tag matches. For `o200k_base` that is
//! 2.8 MB where slots carrying the offset and length too (`u64`) take 4 MB: memory touched for
//! the first time costs a page fault per page, so the smaller index reaches the first count
//! about 2 ms sooner in Node, for about 2% of counting speed (one more read per hit). A direct
//! table answers the byte pairs, which are the first step of every merge.

/// Bits of a slot: rank + 1 (18; zero marks an empty slot), hash tag (14).
const RANK_BITS: u32 = 18;
const RANK_MASK: u32 = (1 << RANK_BITS) - 1;

/// Bits of a span: offset in the buffer (24), length (8).
const LEN_BITS: u32 = 8;
const LEN_MASK: u32 = (1 << LEN_BITS) - 1;

/// Returned for "not a token"; every real rank is smaller.
pub const NONE: u32 = u32::MAX;

/// The buffer's spare bytes after the last token: decoding copies 16 bytes at a time.
const SLACK: usize = 16;

/// One encoding's vocabulary, ready for lookups.
pub struct Vocab {
    bytes: Box<[u8]>,
    spans: Box<[u32]>,
    slots: Box<[u32]>,
    shift: u32,
    pairs: Box<[u32]>,
    max_len: usize,
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Tokens decoded or indexed per call (see `Vocab::new`).
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

/// The tag of a hash, in a slot's tag bits: bits 32..46 of the hash, below the top bits that
/// choose the slot (at most 19 of them here), so that two tokens meeting in a run of slots
/// rarely share a tag unless they share the hash.
#[inline(always)]
fn tag(h: u64) -> u32 {
    (h >> (32 - RANK_BITS)) as u32 & !RANK_MASK
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

/// Copies `len` bytes of `buf` from `from` to `to` (after it), 16 at a time: the tokens are a
/// few bytes long, where a general copy costs more than the copying. The copy may reach past
/// the token's end, into bytes a later token overwrites or the slack.
#[inline(always)]
fn copy_token(buf: &mut [u8], from: usize, len: usize, to: usize) {
    let mut block = [0u8; 16];
    let mut at = 0;
    loop {
        block.copy_from_slice(&buf[from + at..from + at + 16]);
        buf[to + at..to + at + 16].copy_from_slice(&block);
        at += 16;
        if at >= len {
            break;
        }
    }
}

impl Vocab {
    /// Decodes and indexes a vocabulary in the build script's layout (see `build/vocab.rs`).
    ///
    /// Both steps run a chunk of tokens per call, not all of them in one: a WebAssembly engine
    /// runs a function's first calls in its baseline compiler and switches to optimized code on
    /// a later call, so chunks let most of the work run optimized (about a third less time to
    /// the first count in Node).
    pub fn new(encoded: &[u8]) -> Vocab {
        let n = u32::from_le_bytes([encoded[0], encoded[1], encoded[2], encoded[3]]) as usize;
        let total = u32::from_le_bytes([encoded[4], encoded[5], encoded[6], encoded[7]]) as usize;
        let m = n - 256;
        let mut pairs = Pairs {
            left: &encoded[264..264 + m],
            right: &encoded[264 + m..264 + 2 * m],
            stream: &encoded[264 + 2 * m..],
            bit: 0,
            magnitudes: std::array::from_fn(magnitude),
        };
        let bits = (n * 2).next_power_of_two().trailing_zeros().max(8);
        let mut v = Vocab {
            bytes: vec![0u8; total + SLACK].into_boxed_slice(),
            spans: vec![0u32; n].into_boxed_slice(),
            slots: vec![0u32; 1 << bits].into_boxed_slice(),
            shift: 64 - bits,
            pairs: vec![0u32; 1 << 16].into_boxed_slice(),
            max_len: 0,
        };
        v.bytes[..256].copy_from_slice(&encoded[8..264]);
        for (rank, span) in v.spans[..256].iter_mut().enumerate() {
            *span = (rank as u32) << LEN_BITS | 1;
        }
        // All decoding first, then all indexing: each loop stays small, and was measured a
        // little faster to the first count than indexing each chunk right after decoding it.
        let mut end = 256;
        let mut at = 0;
        while at < m {
            let next = (at + CHUNK).min(m);
            end = pairs.decode(at..next, &mut v.bytes, &mut v.spans, end);
            at = next;
        }
        assert_eq!(end, total, "the vocabulary decodes to its stated size");
        let mut rank = 0;
        while rank < n {
            let next = (rank + CHUNK).min(n);
            v.index(rank..next);
            rank = next;
        }
        v
    }

    /// Adds the tokens of ranks `ranks` to the hash table and the pair table.
    #[inline(never)]
    fn index(&mut self, ranks: std::ops::Range<usize>) {
        let mask = self.slots.len() - 1;
        for rank in ranks {
            let (offset, len) = self.span(rank);
            let token = &self.bytes[offset..offset + len];
            self.max_len = self.max_len.max(len);
            if len == 2 {
                self.pairs[(token[0] as usize) << 8 | token[1] as usize] = rank as u32 + 1;
            }
            let h = hash(token);
            let mut at = (h >> self.shift) as usize;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = tag(h) | (rank as u32 + 1);
        }
    }

    /// Offset and length of the token of rank `rank` in the buffer.
    #[inline(always)]
    fn span(&self, rank: usize) -> (usize, usize) {
        let span = self.spans[rank];
        ((span >> LEN_BITS) as usize, (span & LEN_MASK) as usize)
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
        let want = tag(h);
        let mask = self.slots.len() - 1;
        let mut at = (h >> self.shift) as usize;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return NONE;
            }
            if slot & !RANK_MASK == want {
                let rank = (slot & RANK_MASK) as usize - 1;
                let (offset, len) = self.span(rank);
                if len == n && same(&self.bytes[offset..offset + n], piece) {
                    return rank as u32;
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// The rank of the two-byte token `a b`, or [`NONE`].
    #[inline(always)]
    pub fn pair(&self, a: u8, b: u8) -> u32 {
        // Rank + 1, zero for none (a table of zeros costs no pass to fill): none wraps to NONE.
        self.pairs[(a as usize) << 8 | b as usize].wrapping_sub(1)
    }
}

/// The pairs (ranks 256 and up) as the build script lays them out: per pair the magnitude
/// symbols of the left and right ranks, and the bit stream of the bits below them.
struct Pairs<'a> {
    left: &'a [u8],
    right: &'a [u8],
    stream: &'a [u8],
    /// The next bit of `stream` to read.
    bit: usize,
    /// Per symbol, its rank's bits above those in the stream (`>> 5`) and their count (`& 31`):
    /// a table lookup decodes `o200k_base` 0.2 ms sooner natively than computing them without
    /// a branch (which doubles what the symbols add to the byte planes' decoding).
    magnitudes: [u32; 256],
}

/// A magnitude symbol's entry of `Pairs::magnitudes`: below 64 the rank itself; above, the
/// top five bits of a rank of `s / 16 + 3` bits, with `s / 16 - 2` bits below them.
fn magnitude(s: usize) -> u32 {
    if s < 64 {
        return (s as u32) << 5;
    }
    let k = s / 16 - 2;
    (((16 + s % 16) << k) as u32) << 5 | k as u32
}

impl Pairs<'_> {
    /// Decodes the tokens of the pairs `pairs` (ranks `256 + pairs`) into `bytes` from `end`,
    /// recording their spans; returns the end of the last one.
    #[inline(never)]
    fn decode(&mut self, pairs: std::ops::Range<usize>, bytes: &mut [u8], spans: &mut [u32], mut end: usize) -> usize {
        // The bit position in a local, which stays in a register: through `self`, decoding took
        // 3% longer.
        let (stream, magnitudes) = (self.stream, &self.magnitudes);
        let mut bit = self.bit;
        let mut rank = |symbol: u8| {
            let m = magnitudes[symbol as usize] as usize;
            let k = m & 31;
            let low = (read_u64(stream, bit >> 3) >> (bit & 7)) as usize & ((1 << k) - 1);
            bit += k;
            m >> 5 | low
        };
        for i in pairs {
            let left = rank(self.left[i]);
            let right = rank(self.right[i]);
            let (l, r) = (spans[left], spans[right]);
            let (left_len, right_len) = ((l & LEN_MASK) as usize, (r & LEN_MASK) as usize);
            copy_token(bytes, (l >> LEN_BITS) as usize, left_len, end);
            copy_token(bytes, (r >> LEN_BITS) as usize, right_len, end + left_len);
            let len = left_len + right_len;
            spans[256 + i] = (end as u32) << LEN_BITS | len as u32;
            end += len;
        }
        self.bit = bit;
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ordinary token of the reference is found at its own rank, and the table holds no
    /// other: the vocabulary the counter uses is tiktoken's, token for token.
    fn same_as_reference(v: &Vocab, reference: &tiktoken_rs::CoreBPE) {
        let special = reference.special_tokens();
        let mut rank = 0u32;
        let mut longest = 0;
        while let Ok(token) = reference.decode_bytes(&[rank]) {
            if std::str::from_utf8(&token).is_ok_and(|s| special.contains(s)) {
                break;
            }
            assert_eq!(v.rank(&token), rank, "rank {rank}, {token:?}");
            longest = longest.max(token.len());
            rank += 1;
        }
        assert!(rank > 100_000, "{rank} tokens");
        assert_eq!(v.slots.iter().filter(|&&slot| slot != 0).count(), rank as usize, "tokens in the table");
        assert_eq!(v.max_len(), longest);
    }

    #[test]
    #[cfg(feature = "o200k")]
    fn o200k_is_tiktokens_vocabulary() {
        same_as_reference(super::super::o200k(), tiktoken_rs::o200k_base_singleton());
    }

    #[test]
    #[cfg(feature = "cl100k")]
    fn cl100k_is_tiktokens_vocabulary() {
        same_as_reference(super::super::cl100k(), tiktoken_rs::cl100k_base_singleton());
    }

    #[test]
    #[cfg(feature = "o200k")]
    fn what_is_no_token_has_no_rank() {
        let v = super::super::o200k();
        for piece in [&b""[..], b"qzxjvkwqzxjvkw", b" unbelievablyunpredictable", &[0xFF, 0xFE, 0xFD], &[b'a'; 300]] {
            assert_eq!(v.rank(piece), NONE, "{piece:?}");
        }
        assert_ne!(v.rank(b" hello"), NONE);
        assert_eq!(v.rank(b"he"), v.pair(b'h', b'e'));
    }
}
