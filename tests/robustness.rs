//! Guarantee 6: no input makes the engine panic. Random JSON into `add`, random operation
//! sequences under extreme options, mutated states into `from_json`, junk into `reload` — each
//! call returns a value or a typed error, and the working list stays valid and recoverable.

mod common;

use autocontext::{AutoContextMemory, Config, ErrorCode, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Map, Value};

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

const STRINGS: [&str; 12] = [
    "",
    "user",
    "assistant",
    "tool",
    "system",
    "developer",
    "text",
    "x",
    "日本語🦀",
    "\u{0}",
    "<!-- CONTEXT_OFFLOAD: uuid=",
    "</tool_result>",
];
const KEYS: [&str; 10] = ["role", "content", "tool_calls", "tool_call_id", "name", "type", "text", "function", "id", "arguments"];

fn random_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth == 0 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(rng.below(1_000) as i64 - 500),
        3 => json!(STRINGS[rng.below(STRINGS.len() as u64) as usize]),
        4 => json!("é".repeat(rng.below(300) as usize)),
        5 => Value::Array((0..rng.below(4)).map(|_| random_value(rng, depth - 1)).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.below(5) {
                m.insert(KEYS[rng.below(KEYS.len() as u64) as usize].into(), random_value(rng, depth - 1));
            }
            Value::Object(m)
        }
    }
}

/// A message that is well-formed more often than not, with random twists.
fn random_message(rng: &mut Rng, ids: &mut Vec<String>) -> Value {
    let role = ["user", "assistant", "tool", "system", "developer", "robot"][rng.below(6) as usize];
    let mut m = json!({"role": role});
    m["content"] = match rng.below(5) {
        0 => Value::Null,
        1 => json!(filler(&format!("{}", rng.next()), rng.below(9_000) as usize)),
        2 => json!([{"type": "text", "text": "part"}, {"type": "image_url", "image_url": {"url": "u"}}]),
        3 => json!("ü".repeat(rng.below(3_000) as usize)),
        _ => random_value(rng, 2),
    };
    if role == "assistant" && rng.below(2) == 0 {
        let calls: Vec<Value> = (0..1 + rng.below(3))
            .map(|_| {
                let id = if rng.below(8) == 0 && !ids.is_empty() {
                    ids[rng.below(ids.len() as u64) as usize].clone()
                } else {
                    format!("id{}", rng.next() % 100_000)
                };
                ids.push(id.clone());
                json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
            })
            .collect();
        m["tool_calls"] = json!(calls);
    }
    if role == "tool" {
        m["tool_call_id"] = if rng.below(6) == 0 {
            random_value(rng, 1)
        } else if ids.is_empty() {
            json!("nope")
        } else {
            json!(ids[ids.len() - 1 - rng.below(ids.len().min(3) as u64) as usize])
        };
    }
    if rng.below(10) == 0 {
        m = random_value(rng, 3);
    }
    m
}

fn extreme_config(rng: &mut Rng, session: &str) -> Config {
    let mut c = config(session, [50, 400, 2_000, 20_000][rng.below(4) as usize]);
    c.msg_threshold = [1, 2, 5, 100][rng.below(4) as usize];
    c.last_keep = rng.below(c.msg_threshold as u64) as u32;
    c.large_payload_threshold = [2, 100, 5_120][rng.below(3) as usize];
    c.offload_single_preview = rng.below(c.large_payload_threshold as u64) as u32;
    c.tool_result_limit = [100, 1_000, 20_000][rng.below(3) as usize];
    c.min_consecutive_tool_messages = [1, 6][rng.below(2) as usize];
    c.min_compression_token_threshold = [1, 5_000][rng.below(2) as usize];
    c.current_round_compression_ratio = [0.01, 0.3, 1.0][rng.below(3) as usize];
    c.max_concurrent_summaries = [1, 4][rng.below(2) as usize];
    c.history_rollup_keep_recent_rounds = rng.below(4) as u32;
    c.history_rollup_keep_recent_tokens = [0, 8_000][rng.below(2) as usize];
    c
}

#[test]
fn random_json_into_add_never_panics_and_never_breaks_the_list() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let m = AutoContextMemory::new(config("junk", 100_000), FakeSummarizer::fixed("s"), FlakyStore::new()).unwrap();
    let mut accepted = 0;
    for _ in 0..3_000 {
        let v = random_value(&mut rng, 4);
        let before = m.messages().len();
        match m.add(&v) {
            Ok(()) => accepted += 1,
            Err(e) => {
                assert!(matches!(e.code(), ErrorCode::InvalidMessage), "{e:?}");
                assert_eq!(m.messages().len(), before);
            }
        }
        assert!(m.validate().is_empty());
    }
    assert!(accepted > 0, "some random values are valid messages");
}

#[test]
fn random_sessions_under_extreme_options_keep_the_guarantees() {
    for seed in 1..=30u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let cfg = extreme_config(&mut rng, &format!("x{seed}"));
        let summarizer = match rng.below(4) {
            0 => None,
            1 => Some(FakeSummarizer::digest()),
            2 => Some(FakeSummarizer::failing("x")),
            _ => Some(FakeSummarizer::empty()),
        };
        let store = FlakyStore::new();
        let m: Mem =
            AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), summarizer, store.clone()).unwrap();
        let mut ids = Vec::new();
        for step in 0..120 {
            let _ = m.add(&random_message(&mut rng, &mut ids));
            if rng.below(3) == 0 {
                if rng.below(15) == 0 {
                    store.fail_put_at(1);
                }
                let before = snapshot(&m);
                match block_on(m.compress_if_needed()) {
                    Ok(r) => assert!(r.under_target || r.exhausted, "seed {seed} step {step}: {r:?}"),
                    Err(e) => {
                        assert_eq!(e.code(), ErrorCode::StoreFailed, "seed {seed} step {step}: {e:?}");
                        assert_eq!(snapshot(&m), before);
                    }
                }
                store.fail_puts(false);
                let at = format!("seed {seed} step {step}");
                assert_valid(&m, &at);
                check_recoverable(&m, &at);
            }
        }
        assert_eq!(store.offload_keys().len(), m.offloads().len(), "seed {seed}: no orphan and no missing offload");
    }
}

#[test]
fn mutated_states_are_refused_or_restored_never_a_panic() {
    let store = FlakyStore::new();
    let mut msgs = vec![system("s")];
    for r in 0..4 {
        msgs.extend(tool_round(&format!("r{r}"), 2, 7_000));
    }
    msgs.push(user("now"));
    let m = AutoContextMemory::new(config("mut", 8_000), FakeSummarizer::digest(), store.clone()).unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    let state = m.to_json();
    let mut rng = Rng(77);
    let mut restored = 0;
    for _ in 0..400 {
        let mut s = state.clone();
        // Replace one random node somewhere in the state by a random value.
        let mut pointer = String::new();
        let mut node = &s;
        for _ in 0..rng.below(6) {
            match node {
                Value::Object(o) if !o.is_empty() => {
                    let k = o.keys().nth(rng.below(o.len() as u64) as usize).unwrap();
                    pointer.push_str(&format!("/{}", k.replace('~', "~0").replace('/', "~1")));
                    node = &o[k];
                }
                Value::Array(a) if !a.is_empty() => {
                    let i = rng.below(a.len() as u64) as usize;
                    pointer.push_str(&format!("/{i}"));
                    node = &a[i];
                }
                _ => break,
            }
        }
        *s.pointer_mut(&pointer).unwrap() = random_value(&mut rng, 2);
        match AutoContextMemory::from_json(&s, Some(FakeSummarizer::digest()), store.clone(), None) {
            Ok(r) => {
                restored += 1;
                assert_valid(&r, "restored mutant");
                let _ = block_on(r.compress_if_needed());
                assert_valid(&r, "restored mutant after a pass");
            }
            Err(e) => assert_eq!(e.code(), ErrorCode::InvalidState, "{e:?}"),
        }
    }
    assert!(restored > 0 && restored < 400, "{restored}");
}

#[test]
fn junk_reload_arguments_are_typed_errors() {
    let m = AutoContextMemory::new(config("junk-reload", 8_000), FakeSummarizer::fixed("s"), FlakyStore::new()).unwrap();
    let mut rng = Rng(99);
    for _ in 0..500 {
        let v = random_value(&mut rng, 3);
        let s = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
        match block_on(m.reload(&s)) {
            Ok(_) => panic!("{s:?} reloaded something"),
            Err(e) => assert!(matches!(e.code(), ErrorCode::InvalidArgument | ErrorCode::NotFound), "{e:?}"),
        }
        assert!(block_on(m.handle_reload_call(&v)).is_ok());
    }
}
