//! A small deterministic generator (xorshift64), so generated inputs are varied but
//! reproducible, without a dependency. The tests include it through `common`; tests that need
//! nothing else of `common` include it with `#[path]`.

#![allow(dead_code)] // each test uses part of it

/// xorshift64 from a nonzero seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (not zero).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// An index below `n` (not zero).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// One of `items` (not empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.index(items.len())]
    }
}
