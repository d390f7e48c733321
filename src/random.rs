//! Fresh ids without a call to the host per id: version-4 uuids from one random seed.
//!
//! In WebAssembly every `Uuid::new_v4()` is a call out to `crypto.getRandomValues`, which costs
//! tens of microseconds in Node; a restore drew several (a session id for the default options
//! it then replaced, a writer name per log) and an offload draws a few (its marker must count
//! the same tokens as every other's: see `strategy::new_uuid`), which made them a visible part
//! of a Worker's turn. Here the first id of a thread draws one random seed, and every id after
//! it is two xxh64 hashes of a counter under that seed, with the version and variant bits of a
//! random uuid set: distinct within the thread, and not to be guessed from outside it without
//! the seed. None of these ids is a secret (the store keys they make are the host's own); they
//! need to be unique, which a seed of 128 random bits and a counter give.
//!
//! In WebAssembly the binding draws the seed itself ([`seed`]) before it makes an engine, where
//! a refusal can be reported: a Cloudflare Worker gives no random values in its global scope,
//! and a draw that fails in here could only abort.

use std::cell::Cell;

thread_local! {
    /// The thread's seed (drawn on first use) and how many ids it made.
    static SEED: Cell<Option<(u64, u64, u64)>> = const { Cell::new(None) };
}

/// Whether this thread's seed is drawn.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn seeded() -> bool {
    SEED.get().is_some()
}

/// Seeds this thread's ids with 128 random bits the host drew, unless they are seeded already.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn seed(bits: u128) {
    if SEED.get().is_none() {
        SEED.set(Some((bits as u64, (bits >> 64) as u64, 0)));
    }
}

/// A new random (version 4) uuid.
pub(crate) fn uuid_v4() -> uuid::Uuid {
    let (a, b, n) = SEED.get().unwrap_or_else(|| {
        let s = uuid::Uuid::new_v4().as_u128();
        (s as u64, (s >> 64) as u64, 0)
    });
    SEED.set(Some((a, b, n + 1)));
    let counter = n.to_le_bytes();
    let hi = xxhash_rust::xxh64::xxh64(&counter, a);
    let lo = xxhash_rust::xxh64::xxh64(&counter, b);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hi.to_le_bytes());
    bytes[8..].copy_from_slice(&lo.to_le_bytes());
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_version_4_uuids() {
        let ids: std::collections::HashSet<uuid::Uuid> = (0..100_000).map(|_| uuid_v4()).collect();
        assert_eq!(ids.len(), 100_000);
        assert!(ids.iter().all(|u| u.get_version_num() == 4 && u.get_variant() == uuid::Variant::RFC4122));
        // Another thread draws its own seed.
        let other = std::thread::spawn(uuid_v4).join().unwrap();
        assert!(!ids.contains(&other));
    }

    #[test]
    fn a_seed_given_is_kept_and_not_replaced() {
        std::thread::spawn(|| {
            assert!(!seeded());
            seed(7 << 64 | 9);
            assert!(seeded());
            seed(1);
            let first = uuid_v4();
            // The ids of seed 7, 9: the first one of that seed, whatever `seed(1)` asked.
            let again = std::thread::spawn(|| {
                seed(7 << 64 | 9);
                uuid_v4()
            })
            .join()
            .unwrap();
            assert_eq!(first, again);
            assert_eq!(first.get_version_num(), 4);
        })
        .join()
        .unwrap();
    }
}
