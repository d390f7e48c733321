//! A vocabulary in memory: token bytes → rank, decoded on first use from the embedded encoding
//! and indexed as lookups need it.
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
//!
//! The hash table is filled lazily, a bucket at a time. Filling all of it took about as long as
//! decoding (about 5 ms natively, 9 ms in Node for `o200k_base`), most of it in cache misses and
//! page faults over the 2 MiB of slots, while a short text looks up few of the tokens: a 1 KB
//! message of English reaches 86 buckets, 314 tokens and 75 of the table's 512 pages. A bucket
//! is the tokens whose hash has the same top 16 bits, whose slots start in the same 8 slots for
//! `o200k_base`: about 3 of them, at most 13. So after decoding, one pass, from the last rank
//! down, hashes every token and puts it at the head of its bucket's list (`heads`, `next`: each
//! list in rank order, 1 MB more for `o200k_base`), puts the two-byte tokens in the pair table
//! instead and finds the longest token. A lookup hashes its piece anyway; the bucket is the
//! hash's top bits, and if its bit in `ready` is clear, the bucket's tokens go into the table
//! first. Exact whatever the order buckets fill in: a piece can only be a token of its own
//! bucket, and a slot, once filled, stays filled, so a token is found from its hash's slot in
//! any later state of the table. The pass takes about 2 ms natively and 3 to 4 ms in Node, and
//! the table's memory stays untouched until a bucket is filled (see `zeroed`).
//!
//! A bucket costs more per token than filling in rank order did: its list, the tokens' spans and
//! bytes and the slots are all read at random, about 1 µs a bucket natively, so a first text of
//! 30 KB or more was slower to count than with the whole table filled up front. After
//! `FILLS_BEFORE_ALL` buckets (about what a 6 KB text reaches), the next fill puts every token
//! not in yet into the table, in rank order; a first text of any size then costs at most the
//! pass and those fills more than before (natively about 3 ms more for a first text of 37 KB).
//! The first count of a 1 KB message takes about 20 ms of CPU in Node where it took 24.5, and
//! 7 ms natively where it took 9.
//!
//! The vocabulary is shared by all threads (natively; WebAssembly has one): the slots and the
//! bits are atomics, whose relaxed loads and stores are plain ones, and the hot path adds one
//! load and a bit test. A fill takes a mutex, checks the bit again, writes its slots and then
//! sets the bit with release ordering; a lookup reads the bit with acquire ordering before it
//! probes, so it sees every slot of its bucket. A slot another thread writes meanwhile is read
//! whole or not at all, and was empty before: it can only lengthen the probe of a piece that is
//! no token, since a token's own probe runs over slots filled before the token was put.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

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
    bytes: &'static mut [u8],
    spans: &'static mut [u32],
    /// The hash table: zero, or a tag and rank + 1 (see `RANK_BITS`). Atomic so that a shared
    /// vocabulary can fill buckets while other threads read it; a relaxed atomic load or store
    /// is a plain one.
    slots: &'static [AtomicU32],
    shift: u32,
    /// Per bucket, one bit: whether its tokens are in `slots`.
    ready: Box<[AtomicU64; BUCKETS / 64]>,
    /// Per bucket, its first token's rank + 1 (zero: none), and per token the next one's in
    /// its bucket, in rank order.
    heads: &'static mut [u32; BUCKETS],
    next: &'static mut [u32],
    /// Taken to fill a bucket, so that two threads do not both fill one; holds the buckets
    /// filled so far.
    filling: Mutex<u32>,
    /// After this many buckets, the next fill fills all of them (see `fill`).
    fills_before_all: u32,
    pairs: &'static mut [u32],
    max_len: usize,
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Tokens decoded or grouped per call (see `Vocab::new`).
const CHUNK: usize = 2048;

/// Bits of a bucket: the tokens whose hash has the same top 16 bits, whose slots start in the
/// same 8 slots for `o200k_base` (about 3 tokens), 4 for `cl100k_base`. The same count for
/// every vocabulary, so that the bit of a bucket needs no bounds check.
const BUCKET_BITS: u32 = 16;
const BUCKETS: usize = 1 << BUCKET_BITS;

/// Buckets filled one by one before the next fill fills all the rest (see `fill`): about what
/// a 6 KB text reaches.
const FILLS_BEFORE_ALL: u32 = 512;

/// The bucket of a hash.
#[inline(always)]
fn bucket(h: u64) -> usize {
    (h >> (64 - BUCKET_BITS)) as usize
}

/// A value whose bits may all be zero: what [`zeroed`] gives.
///
/// # Safety
/// A value of all-zero bits must be a valid one.
unsafe trait Zero {}
// SAFETY: zero is a valid integer, and an atomic integer has the integer's bit validity.
unsafe impl Zero for u8 {}
unsafe impl Zero for u32 {}
unsafe impl Zero for AtomicU32 {}

/// `len` values holding zero, in memory that nothing wrote: the vocabulary's tables. Writing
/// zeros first would fault in every page of the hash table up front, and, for the tables decoding
/// fills in whole, write each page twice (in Node about 0.3 ms of the first count). Natively
/// that is a zeroed allocation (fresh pages from the system). In WebAssembly the allocator
/// writes the zeros itself, so each table takes pages of its own from `memory.grow`, which come
/// zeroed. Never freed: a vocabulary lives as long as the process (the tests make a few more).
fn zeroed<T: Zero>(len: usize) -> &'static mut [T] {
    #[cfg(target_arch = "wasm32")]
    {
        const PAGE: usize = 1 << 16;
        let bytes = len * std::mem::size_of::<T>();
        let page = core::arch::wasm32::memory_grow(0, bytes.div_ceil(PAGE));
        assert_ne!(page, usize::MAX, "out of memory");
        // SAFETY: the pages are new, zeroed, aligned to a page and this table's alone; zero
        // bits are a valid `T` (`Zero`).
        unsafe { std::slice::from_raw_parts_mut((page * PAGE) as *mut T, len) }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let layout = std::alloc::Layout::array::<T>(len.max(1)).expect("a table's size fits in memory");
        // SAFETY: the layout's size is not zero; the memory is zeroed, and zero bits are a
        // valid `T` (`Zero`).
        unsafe {
            let p = std::alloc::alloc_zeroed(layout);
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            std::slice::from_raw_parts_mut(p.cast::<T>(), len)
        }
    }
}

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
///
/// # Safety
/// `buf` holds the blocks of 16 the copy reads and writes: `from + len + 15` and `to + len +
/// 15` bytes at least.
#[inline(always)]
unsafe fn copy_token(buf: &mut [u8], from: usize, len: usize, to: usize) {
    debug_assert!(from.max(to) + len.max(1).next_multiple_of(16) <= buf.len());
    let p = buf.as_mut_ptr();
    let mut at = 0;
    loop {
        // SAFETY: `at < len`, so the block ends by `len + 15` (the caller's bound).
        unsafe {
            let block = std::ptr::read_unaligned(p.add(from + at).cast::<[u8; 16]>());
            std::ptr::write_unaligned(p.add(to + at).cast::<[u8; 16]>(), block);
        }
        at += 16;
        if at >= len {
            break;
        }
    }
}

impl Vocab {
    /// Decodes a vocabulary in the build script's layout (see `build/vocab.rs`) and groups its
    /// tokens by bucket; the hash table is filled bucket by bucket as lookups reach them.
    ///
    /// Both steps run a chunk of tokens per call, not all of them in one: a WebAssembly engine
    /// runs a function's first calls in its baseline compiler and switches to optimized code on
    /// a later call, so chunks let most of the work run optimized (about a third less time to
    /// the first count in Node).
    ///
    /// # Safety
    /// `encoded` is a vocabulary the build script wrote (one the crate embeds): decoding reads
    /// and writes without checking bounds that such a vocabulary keeps (see `Pairs::decode`).
    pub unsafe fn new(encoded: &[u8]) -> Vocab {
        // SAFETY: the caller's.
        unsafe { Vocab::with_fills(encoded, FILLS_BEFORE_ALL) }
    }

    /// [`Vocab::new`], filling every bucket at once after `fills_before_all` buckets.
    ///
    /// # Safety
    /// As [`Vocab::new`].
    unsafe fn with_fills(encoded: &[u8], fills_before_all: u32) -> Vocab {
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
        let bits = (n * 2).next_power_of_two().trailing_zeros().max(9);
        let mut v = Vocab {
            bytes: zeroed(total + SLACK),
            spans: zeroed(n),
            slots: zeroed(1 << bits),
            shift: 64 - bits,
            ready: Box::new(std::array::from_fn(|_| AtomicU64::new(0))),
            heads: zeroed(BUCKETS).try_into().expect("BUCKETS heads"),
            next: zeroed(n),
            filling: Mutex::new(0),
            fills_before_all,
            pairs: zeroed(1 << 16),
            max_len: 0,
        };
        v.bytes[..256].copy_from_slice(&encoded[8..264]);
        for (rank, span) in v.spans[..256].iter_mut().enumerate() {
            *span = (rank as u32) << LEN_BITS | 1;
        }
        // All decoding first, then all grouping: each loop stays small.
        let mut end = 256;
        let mut at = 0;
        while at < m {
            let next = (at + CHUNK).min(m);
            // SAFETY: the caller's (a vocabulary the build script wrote), and the tables are
            // sized by its counts above.
            end = unsafe { pairs.decode(at..next, v.bytes, v.spans, end) };
            at = next;
        }
        assert_eq!(end, total, "the vocabulary decodes to its stated size");
        // From the last rank down, so that each bucket's list is in rank order.
        let mut rank = n;
        while rank > 0 {
            let next = rank.saturating_sub(CHUNK);
            v.group(next..rank);
            rank = next;
        }
        v
    }

    /// Puts the tokens of ranks `ranks` at the head of their buckets' lists, the last rank
    /// first, and the two-byte ones in the pair table instead.
    #[inline(never)]
    fn group(&mut self, ranks: std::ops::Range<usize>) {
        for rank in ranks.rev() {
            let (offset, len) = self.span(rank);
            let token = &self.bytes[offset..offset + len];
            self.max_len = self.max_len.max(len);
            if len == 2 {
                self.pairs[(token[0] as usize) << 8 | token[1] as usize] = rank as u32 + 1;
                continue;
            }
            let bucket = bucket(hash(token));
            self.next[rank] = self.heads[bucket];
            self.heads[bucket] = rank as u32 + 1;
        }
    }

    /// Adds the tokens of the bucket `bucket` to the hash table, unless another thread did.
    #[cold]
    #[inline(never)]
    fn fill(&self, bucket: usize) {
        let mut filled = self.filling.lock().unwrap_or_else(PoisonError::into_inner);
        let (word, bit) = (&self.ready[bucket / 64], 1u64 << (bucket % 64));
        if word.load(Ordering::Relaxed) & bit != 0 {
            return;
        }
        *filled += 1;
        if *filled > self.fills_before_all {
            // Text enough to reach this many buckets reaches many more: the rest in rank order,
            // whose reads of the tokens are sequential, costs less than bucket by bucket.
            let n = self.spans.len();
            let mut rank = 0;
            while rank < n {
                let next = (rank + CHUNK).min(n);
                self.fill_all(rank..next);
                rank = next;
            }
            for word in self.ready.iter() {
                word.store(u64::MAX, Ordering::Release);
            }
            return;
        }
        let mut next = self.heads[bucket];
        while next != 0 {
            let rank = next as usize - 1;
            let (offset, len) = self.span(rank);
            self.put(hash(&self.bytes[offset..offset + len]), rank);
            next = self.next[rank];
        }
        // Release: whoever sees the bit set sees the slots written before it.
        word.fetch_or(bit, Ordering::Release);
    }

    /// Puts the tokens of ranks `ranks` whose buckets are not filled yet into the table, the
    /// two-byte ones excepted.
    #[inline(never)]
    fn fill_all(&self, ranks: std::ops::Range<usize>) {
        for rank in ranks {
            let (offset, len) = self.span(rank);
            if len == 2 {
                continue;
            }
            let h = hash(&self.bytes[offset..offset + len]);
            let bucket = bucket(h);
            if self.ready[bucket / 64].load(Ordering::Relaxed) & 1 << (bucket % 64) == 0 {
                self.put(h, rank);
            }
        }
    }

    /// Puts the token of rank `rank` and hash `h` into the table.
    #[inline(always)]
    fn put(&self, h: u64, rank: usize) {
        let mask = self.slots.len() - 1;
        let mut at = (h >> self.shift) as usize;
        while self.slots[at].load(Ordering::Relaxed) != 0 {
            at = (at + 1) & mask;
        }
        self.slots[at].store(tag(h) | (rank as u32 + 1), Ordering::Relaxed);
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
        let bucket = bucket(h);
        // Acquire: pairs with the release in `fill`.
        if self.ready[bucket / 64].load(Ordering::Acquire) & 1 << (bucket % 64) == 0 {
            self.fill(bucket);
        }
        loop {
            let slot = self.slots[at].load(Ordering::Relaxed);
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
    ///
    /// The first count decodes mostly in V8's baseline compiler (see `Vocab::new`), where each
    /// check of a bound is a compare and a branch, and a branch makes the compiler spill what
    /// it held in registers: the slices' checks (of each block a copy moves, of the spans, of
    /// the stream) took about 1 ms of the first count's CPU in Node, and checks that keep
    /// every access in bounds by masks and clamps, or one check per token, still most of that.
    /// So the accesses are unchecked, for the vocabularies the build script writes (the
    /// caller's contract): there each pair names two tokens decoded before it, the tokens fit
    /// the buffer (stated size, then `SLACK` for the last copy's block) and the stream ends in
    /// padding for its last read. In tests (debug builds) every access is checked still, over
    /// both embedded vocabularies, token by token against tiktoken's.
    ///
    /// # Safety
    /// The pairs are a vocabulary the build script wrote, `bytes` and `spans` sized by its
    /// counts (`Vocab::with_fills`), and `end` where the tokens before `pairs` end.
    #[inline(never)]
    unsafe fn decode(&mut self, pairs: std::ops::Range<usize>, bytes: &mut [u8], spans: &mut [u32], mut end: usize) -> usize {
        // The bit position in a local, which stays in a register: through `self`, decoding took
        // 3% longer.
        let (stream, magnitudes) = (self.stream, &self.magnitudes);
        let mut bit = self.bit;
        let mut rank = |symbol: u8| {
            let m = magnitudes[symbol as usize] as usize;
            let k = m & 31;
            debug_assert!((bit >> 3) + 8 <= stream.len());
            // SAFETY: the stream ends in padding for its last read (the caller's contract).
            let word = unsafe { std::ptr::read_unaligned(stream.as_ptr().add(bit >> 3).cast::<[u8; 8]>()) };
            let low = (u64::from_le_bytes(word) >> (bit & 7)) as usize & ((1 << k) - 1);
            bit += k;
            m >> 5 | low
        };
        debug_assert!(pairs.end <= self.left.len() && pairs.end <= self.right.len() && 256 + pairs.end <= spans.len());
        for i in pairs {
            // SAFETY: each pair names two tokens decoded before it, whose tokens lie before
            // `end`; its token fits the buffer, with `SLACK` bytes for the last block of a copy
            // (the caller's contract).
            unsafe {
                let (left, right) = (rank(*self.left.get_unchecked(i)), rank(*self.right.get_unchecked(i)));
                debug_assert!(left < 256 + i && right < 256 + i);
                let (l, r) = (*spans.get_unchecked(left), *spans.get_unchecked(right));
                let (left_len, right_len) = ((l & LEN_MASK) as usize, (r & LEN_MASK) as usize);
                copy_token(bytes, (l >> LEN_BITS) as usize, left_len, end);
                copy_token(bytes, (r >> LEN_BITS) as usize, right_len, end + left_len);
                let len = left_len + right_len;
                debug_assert!(len <= LEN_MASK as usize);
                *spans.get_unchecked_mut(256 + i) = (end as u32) << LEN_BITS | len as u32;
                end += len;
            }
        }
        self.bit = bit;
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// The reference's ordinary tokens, by rank.
    fn reference_tokens(reference: &tiktoken_rs::CoreBPE) -> Vec<Vec<u8>> {
        let special = reference.special_tokens();
        let mut tokens = Vec::new();
        while let Ok(token) = reference.decode_bytes(&[tokens.len() as u32]) {
            if std::str::from_utf8(&token).is_ok_and(|s| special.contains(s)) {
                break;
            }
            tokens.push(token);
        }
        assert!(tokens.len() > 100_000, "{} tokens", tokens.len());
        tokens
    }

    /// The slots in use.
    fn filled(v: &Vocab) -> usize {
        v.slots.iter().filter(|slot| slot.load(Ordering::Relaxed) != 0).count()
    }

    /// Tokens the hash table holds once every one was looked up: all but the two-byte ones,
    /// which the pair table answers.
    fn in_table(tokens: &[Vec<u8>]) -> usize {
        tokens.iter().filter(|token| token.len() != 2).count()
    }

    fn bucket_of(piece: &[u8]) -> usize {
        bucket(hash(piece))
    }

    /// Every ordinary token of the reference is found at its own rank, and the table holds no
    /// other (every bucket a lookup reached was filled once): the vocabulary the counter uses is
    /// tiktoken's, token for token.
    fn same_as_reference(v: &Vocab, reference: &tiktoken_rs::CoreBPE) {
        let tokens = reference_tokens(reference);
        for (rank, token) in tokens.iter().enumerate() {
            assert_eq!(v.rank(token), rank as u32, "rank {rank}, {token:?}");
        }
        assert_eq!(filled(v), in_table(&tokens), "tokens in the table");
        assert_eq!(v.max_len(), tokens.iter().map(Vec::len).max().unwrap());
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

    /// A small deterministic generator (xorshift).
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// Per bucket, a piece that is no token: random bytes, or a token with a byte after it
    /// (which shares the token's first bytes, as what merging asks for does).
    fn absent_per_bucket(v: &Vocab, tokens: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let known: HashSet<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
        let mut absent = vec![Vec::new(); v.heads.len()];
        let mut left = absent.len();
        let mut state = 0x9E37_79B9_7F4A_7C15;
        while left > 0 {
            let r = next(&mut state);
            let mut piece = if r & 1 == 0 {
                let len = 3 + (r >> 1) as usize % 10;
                let (a, b) = (next(&mut state).to_le_bytes(), next(&mut state).to_le_bytes());
                [a, b].concat()[..len].to_vec()
            } else {
                tokens[(r >> 1) as usize % tokens.len()].clone()
            };
            piece.push((r >> 40) as u8);
            let b = bucket_of(&piece);
            if piece.len() >= 3 && absent[b].is_empty() && !known.contains(&piece[..]) {
                absent[b] = piece;
                left -= 1;
            }
        }
        absent
    }

    /// A fresh vocabulary answers right whatever order its buckets fill in: every bucket asked,
    /// in a scrambled order, half of them first for a piece that is no token and then for their
    /// tokens (the highest rank first), the other half the other way round; bucket by bucket
    /// throughout, or all at once after `fills_before_all`.
    fn any_order(encoded: &[u8], reference: &tiktoken_rs::CoreBPE, fills_before_all: u32) {
        // SAFETY: the tests pass the vocabularies the crate embeds.
        let v = unsafe { Vocab::with_fills(encoded, fills_before_all) };
        let tokens = reference_tokens(reference);
        let absent = absent_per_bucket(&v, &tokens);
        let mut by_bucket = vec![Vec::new(); v.heads.len()];
        for (rank, token) in tokens.iter().enumerate().rev().filter(|(_, token)| token.len() != 2) {
            by_bucket[bucket_of(token)].push(rank);
        }
        assert_eq!(filled(&v), 0, "nothing is in the table before a lookup");
        for i in 0..by_bucket.len() {
            let b = i.wrapping_mul(0x9E37_79B9) & (by_bucket.len() - 1);
            let present = || {
                for &rank in &by_bucket[b] {
                    assert_eq!(v.rank(&tokens[rank]), rank as u32, "rank {rank}, {:?}", tokens[rank]);
                }
            };
            if i % 2 == 0 {
                assert_eq!(v.rank(&absent[b]), NONE, "{:?}", absent[b]);
                present();
            } else {
                present();
                assert_eq!(v.rank(&absent[b]), NONE, "{:?}", absent[b]);
            }
        }
        assert!(v.ready.iter().all(|word| word.load(Ordering::Relaxed) == u64::MAX), "every bucket filled");
        assert_eq!(filled(&v), in_table(&tokens), "tokens in the table");
        for (rank, token) in tokens.iter().enumerate() {
            assert_eq!(v.rank(token), rank as u32, "rank {rank}, {token:?}");
        }
    }

    #[test]
    #[cfg(feature = "o200k")]
    fn o200k_answers_in_any_order() {
        any_order(super::super::O200K_VOCAB, tiktoken_rs::o200k_base_singleton(), u32::MAX);
        any_order(super::super::O200K_VOCAB, tiktoken_rs::o200k_base_singleton(), FILLS_BEFORE_ALL);
    }

    #[test]
    #[cfg(feature = "cl100k")]
    fn cl100k_answers_in_any_order() {
        any_order(super::super::CL100K_VOCAB, tiktoken_rs::cl100k_base_singleton(), u32::MAX);
        any_order(super::super::CL100K_VOCAB, tiktoken_rs::cl100k_base_singleton(), FILLS_BEFORE_ALL);
    }

    /// Threads looking up at once in a fresh vocabulary, each in its own order and each asking
    /// for pieces that are no token too, all get the right answers, and every bucket is filled
    /// once.
    #[test]
    #[cfg(feature = "o200k")]
    fn threads_looking_up_at_once_agree() {
        let tokens = reference_tokens(tiktoken_rs::o200k_base_singleton());
        assert_eq!(tokens.len(), 199_998);
        for fills_before_all in [u32::MAX, FILLS_BEFORE_ALL] {
            // SAFETY: a vocabulary the crate embeds.
            let v = unsafe { Vocab::with_fills(super::super::O200K_VOCAB, fills_before_all) };
            threads_agree(&v, &tokens);
        }
    }

    fn threads_agree(v: &Vocab, tokens: &[Vec<u8>]) {
        let absent = absent_per_bucket(v, tokens);
        std::thread::scope(|s| {
            for t in 0..6usize {
                let absent = &absent;
                s.spawn(move || {
                    // Strides prime to the token count (2 * 3 * 3 * 41 * 271): each visits every index
                    // once, from a start of its own.
                    let stride = [1, 7919, 104_729, 5, 65_537, 999_983][t];
                    for i in 0..tokens.len() {
                        let rank = (t * 12_345 + i * stride) % tokens.len();
                        assert_eq!(v.rank(&tokens[rank]), rank as u32, "rank {rank}, {:?}", tokens[rank]);
                        let piece = &absent[(t * 777 + i * stride) % absent.len()];
                        assert_eq!(v.rank(piece), NONE, "{piece:?}");
                    }
                });
            }
        });
        assert_eq!(filled(v), in_table(tokens), "tokens in the table");
    }
}
