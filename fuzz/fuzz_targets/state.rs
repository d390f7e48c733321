//! Restoring arbitrary JSON as a state, and the model's `context_reload` calls with arbitrary
//! arguments. A state either restores to a memory that keeps the guarantees (and compresses
//! without panicking) or fails with `INVALID_STATE`; a reload call is answered in text or fails
//! with a typed error, and never serves an offload the memory does not own.
#![no_main]

use autocontext::{AutoContextMemory, ErrorCode, Format, MemoryStore, NoSummarizer};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let store = MemoryStore::new();
    match AutoContextMemory::from_json(&value, None::<NoSummarizer>, store.clone(), None) {
        Ok(m) => {
            assert!(autocontext::format::validate_tool_pairing(m.config().format, &m.working()).is_empty());
            let _ = futures_executor::block_on(m.compress_if_needed());
            assert!(autocontext::format::validate_tool_pairing(m.config().format, &m.working()).is_empty());
            let _ = m.to_json();
            // The store is empty: nothing the state names can be served.
            for o in m.offloads() {
                match futures_executor::block_on(m.reload(&o.uuid)) {
                    Ok(v) => assert!(!v.is_empty() && store.len() > 0, "served an offload nobody wrote"),
                    Err(e) => assert!(matches!(e.code(), ErrorCode::NotFound | ErrorCode::StoreFailed), "{e:?}"),
                }
            }
            let _ = futures_executor::block_on(m.handle_reload_call(&value));
        }
        Err(e) => assert_eq!(e.code(), ErrorCode::InvalidState, "{e:?}"),
    }
    // The value as a reload call's arguments, in every format, against a memory with no offloads.
    for format in Format::ALL {
        let mut config = autocontext::Config::default();
        config.format = format;
        config.tokenizer = autocontext::Tokenizer::Estimate;
        let counter = autocontext::TokenCounter::new(autocontext::Tokenizer::Estimate).unwrap();
        let m = AutoContextMemory::with_counter(config, counter, None::<NoSummarizer>, MemoryStore::new()).unwrap();
        match futures_executor::block_on(m.handle_reload_call(&value)) {
            Ok(text) => assert!(text.chars().count() <= 1_000, "an answer about nothing stays short"),
            Err(e) => panic!("a reload call with no store access failed: {e:?}"),
        }
    }
});
