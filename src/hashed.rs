//! Keys that are hashes already: a text's key, and the hasher of the maps keyed by such keys.
//!
//! The engine keeps sets and tables of texts by a 64-bit hash of their bytes (the identifiers
//! in view, the counts and identifiers of the texts met lately); hashing those keys again for a
//! map would only cost time, so the maps take them as they are.

/// A text's key: its 64-bit hash and its length. Two texts with the same key are taken to be
/// the same text.
pub(crate) fn text_key(text: &str) -> (u64, usize) {
    (xxhash_rust::xxh64::xxh64(text.as_bytes(), 0), text.len())
}

/// The slot of a text's key in a direct-mapped table of `slots` slots (a power of two): the
/// hash's low bits, which xxh64 mixes as well as its high ones.
pub(crate) fn slot(key: (u64, usize), slots: usize) -> usize {
    debug_assert!(slots.is_power_of_two());
    key.0 as usize & (slots - 1)
}

/// A hasher that takes a key that is a hash already (a `u64`, or a [`text_key`]) as it is.
#[derive(Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
    fn write_usize(&mut self, n: usize) {
        self.0 ^= (n as u64).rotate_left(32);
    }
}

/// The hasher of maps and sets keyed by hashes.
pub(crate) type Keyed = std::hash::BuildHasherDefault<KeyHasher>;
