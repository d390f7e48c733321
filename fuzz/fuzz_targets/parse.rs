//! Message parsing per wire format: arbitrary bytes as JSON, read by one format (the first byte
//! picks it), validated, added to a memory. Nothing may panic; a failed add is a typed
//! `INVALID_MESSAGE` that leaves the memory as it was; an accepted message comes back from the
//! memory byte-exact.
#![no_main]

use autocontext::{AutoContextMemory, Config, ErrorCode, Format, MemoryStore, NoSummarizer, TokenCounter, Tokenizer};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let format = Format::ALL[first as usize % Format::ALL.len()];
    let Ok(value) = serde_json::from_slice::<Value>(rest) else { return };
    let items: Vec<&Value> = match &value {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    };
    let mut parsed = Vec::new();
    for (i, v) in items.iter().enumerate() {
        match format.parse(i, v) {
            Ok(m) => {
                let _ = m.payload_text();
                let _ = m.payload_chars();
                parsed.push(m);
            }
            Err(e) => assert_eq!(e.code(), ErrorCode::InvalidMessage, "{e:?}"),
        }
    }
    let _ = format.validate(&parsed);
    let refs: Vec<&autocontext::Message> = parsed.iter().collect();
    let _ = autocontext::message::transcript(&refs);

    let mut config = Config::default();
    config.format = format;
    config.tokenizer = Tokenizer::Estimate;
    let counter = TokenCounter::new(Tokenizer::Estimate).unwrap();
    let memory = AutoContextMemory::with_counter(config, counter, None::<NoSummarizer>, MemoryStore::new()).unwrap();
    match memory.add(&value) {
        Ok(()) => {
            let back = memory.messages();
            assert_eq!(back.len(), items.len());
            for (a, b) in back.iter().zip(&items) {
                assert_eq!(a.to_string(), b.to_string(), "an untouched message comes back byte-exact");
            }
            assert!(autocontext::format::validate_tool_pairing(format, &memory.working()).is_empty());
        }
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::InvalidMessage, "{e:?}");
            assert!(memory.messages().is_empty(), "a failed add adds nothing");
        }
    }
});
