//! Structure analysis and the whole ladder on message lists the bytes choose, in every format,
//! under configs from tiny to default, with a scripted fake summarizer (answers, failures,
//! empty, too long, forged markers and tags) and a store that fails a chosen put or get or
//! hands back another key's value. After every step the guarantees hold: valid pairing,
//! nothing lost, markers only of this session's offloads, passes converge or say why, errors
//! typed, a failed pass changes nothing; a state written mid-session restores to the same
//! memory.
#![no_main]

use autocontext::{AutoContextMemory, ErrorCode, Format};
use autocontext_fuzz::{check, check_pass, memory, message, Bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes::new(data);
    let format = Format::ALL[b.below(Format::ALL.len())];
    let (mut m, store, summarizer) = memory(&mut b, format);
    let mut open = Vec::new();
    let mut next_id = 0;
    for step in 0..40 {
        if b.done() {
            break;
        }
        match b.below(10) {
            0..=5 => {
                let n = 1 + b.below(4);
                let open_before = open.clone();
                let batch: Vec<_> = (0..n).flat_map(|_| message(&mut b, format, &mut open, &mut next_id)).collect();
                let before = m.messages().len();
                if let Err(e) = m.add(&serde_json::Value::Array(batch)) {
                    assert_eq!(e.code(), ErrorCode::InvalidMessage, "{e:?}");
                    assert_eq!(m.messages().len(), before, "a failed add adds nothing");
                    open = open_before;
                }
            }
            6 | 7 => {
                if b.below(6) == 0 {
                    store.fail_put.set(store.puts.get() + 1 + b.below(3));
                }
                let before = (m.messages(), m.events().len(), m.offloads().len());
                let r = futures_executor::block_on(m.compress_if_needed());
                check_pass(&r, &format!("step {step}"));
                if r.is_err() {
                    assert_eq!(before, (m.messages(), m.events().len(), m.offloads().len()), "a failed pass changes nothing");
                }
                store.fail_put.set(0);
                // The log's chunks and the retired records' chunks are the session's too.
                let keys = store.map.borrow().keys().filter(|k| !k.contains("/log-") && !k.contains("/index-")).count();
                assert_eq!(keys, m.offloads().len(), "step {step}: no orphan and no missing offload");
            }
            8 => {
                // A store that fails or answers with another key's value: reloads are typed
                // errors, never another offload's messages.
                if let Some(o) = m.offloads().first() {
                    store.swap_gets.set(store.map.borrow().len() > 1);
                    if b.below(2) == 0 {
                        store.fail_get.set(store.gets.get() + 1);
                    }
                    let r = futures_executor::block_on(m.reload(&o.uuid));
                    if store.swap_gets.get() || store.fail_get.get() == store.gets.get() {
                        assert_eq!(r.expect_err("a wrong value must not reload").code(), ErrorCode::StoreFailed);
                    }
                    store.swap_gets.set(false);
                    store.fail_get.set(0);
                }
            }
            _ => {
                let state = m.to_json();
                let restored = AutoContextMemory::from_json(&state, summarizer.clone(), store.clone(), None)
                    .unwrap_or_else(|e| panic!("step {step}: a state toJSON wrote does not restore: {e:?}"));
                assert_eq!(restored.to_json(), state, "a restored memory writes the same state");
                m = restored;
            }
        }
        check(&m, &format!("{} step {step}", format.name()));
    }
});
