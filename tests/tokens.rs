//! Token counts are tiktoken's own, exactly, for both built-in encodings; a message costs its
//! parts plus the documented overheads; the memory's total is the request's.

mod common;

use autocontext::tokens::{MESSAGE_OVERHEAD, REQUEST_OVERHEAD, TOOL_BLOCK_OVERHEAD};
use autocontext::{AutoContextMemory, Format, MemoryStore, NoSummarizer, TokenCounter, Tokenizer};
use common::*;
use serde_json::json;

fn texts() -> Vec<String> {
    vec![
        "hello world".into(),
        "The quick brown fox jumps over the lazy dog. It's 3:45pm — isn't it?".into(),
        "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{v:?}\");\n}\n".into(),
        r#"{"id": "call_9f8e", "args": {"path": "/src/lib.rs", "lines": [1, 2, 3], "ok": true, "n": null}}"#.into(),
        "日本語のテキストと中文文本，还有한국어 텍스트도 있습니다。".into(),
        "emoji: 🦀🚀👩‍👩‍👧‍👦🇫🇷 ✔️ and combining é vs é".into(),
        "token ".repeat(5_000),
        "supercalifragilisticexpialidocious".repeat(300),
        " \t\n\n   \r\n".repeat(200),
        "<|endoftext|> <|im_start|>user\nspecial tokens are text here<|im_end|>".into(),
        "0123456789".repeat(500),
        filler("mixed", 20_000),
        (0u32..3_000).filter_map(char::from_u32).filter(|c| !c.is_control()).collect(),
        String::from_utf8_lossy(&(0u8..=255).collect::<Vec<u8>>()).into_owned(),
    ]
}

#[test]
fn text_counts_equal_tiktoken_for_both_encodings() {
    let o = TokenCounter::new(Tokenizer::O200kBase).unwrap();
    let o_ref = tiktoken_rs::o200k_base_singleton();
    for t in texts() {
        assert_eq!(o.count_text(&t).unwrap() as usize, o_ref.encode_ordinary(&t).len(), "o200k: {:.60}", t);
    }
    assert_eq!(o.count_text("").unwrap(), 0);
    #[cfg(feature = "cl100k")]
    {
        let c = TokenCounter::new(Tokenizer::Cl100kBase).unwrap();
        let c_ref = tiktoken_rs::cl100k_base_singleton();
        for t in texts() {
            assert_eq!(c.count_text(&t).unwrap() as usize, c_ref.encode_ordinary(&t).len(), "cl100k: {:.60}", t);
        }
    }
}

#[test]
fn message_counts_are_their_parts_plus_overheads() {
    let o = TokenCounter::new(Tokenizer::O200kBase).unwrap();
    let enc = tiktoken_rs::o200k_base_singleton();
    let n = |s: &str| enc.encode_ordinary(s).len() as u32;
    let ts = texts();

    let user = Format::OpenAi.parse(0, &json!({"role": "user", "content": ts[1]})).unwrap();
    assert_eq!(o.count_message(&user).unwrap(), MESSAGE_OVERHEAD + n(&ts[1]));

    let parts = Format::OpenAi
        .parse(0, &json!({"role": "user", "content": [{"type": "text", "text": ts[4]}, {"type": "text", "text": ts[5]}]}))
        .unwrap();
    assert_eq!(o.count_message(&parts).unwrap(), MESSAGE_OVERHEAD + n(&ts[4]) + n(&ts[5]));

    let args = ts[3].clone();
    let calls = Format::OpenAi
        .parse(
            0,
            &json!({"role": "assistant", "content": ts[0], "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": args}},
                {"id": "b", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            ]}),
        )
        .unwrap();
    let want = MESSAGE_OVERHEAD + n(&ts[0]) + 2 * TOOL_BLOCK_OVERHEAD + n("read_file") + n(&args) + n("grep") + n("{}");
    assert_eq!(o.count_message(&calls).unwrap(), want);

    let result = Format::OpenAi.parse(0, &json!({"role": "tool", "tool_call_id": "a", "content": ts[2]})).unwrap();
    assert_eq!(o.count_message(&result).unwrap(), MESSAGE_OVERHEAD + TOOL_BLOCK_OVERHEAD + n(&ts[2]));
}

#[test]
fn the_memory_counts_the_request_with_its_tokenizer() {
    let mut kinds = vec![(Tokenizer::O200kBase, "o200k")];
    if cfg!(feature = "cl100k") {
        kinds.push((Tokenizer::Cl100kBase, "cl100k"));
    }
    for (kind, name) in kinds {
        let mut cfg = config(name, 1_000_000);
        cfg.tokenizer = kind;
        cfg.reserved_tokens = 321;
        let m = AutoContextMemory::new(cfg, NoSummarizer, MemoryStore::new()).unwrap();
        let counter = TokenCounter::new(kind).unwrap();
        let msgs: Vec<_> = texts().into_iter().enumerate().map(|(i, t)| if i % 2 == 0 { user(&t) } else { answer(&t) }).collect();
        let mut sum = 0u64;
        for v in &msgs {
            m.add(v).unwrap();
            sum += counter.count_message(&Format::OpenAi.parse(0, v).unwrap()).unwrap() as u64;
            assert_eq!(m.token_count(), sum + REQUEST_OVERHEAD + 321, "{name}");
        }
    }
    // The two encodings really differ on this input, so the option is not ignored.
    let t = texts()[4].clone();
    assert_ne!(
        tiktoken_rs::o200k_base_singleton().encode_ordinary(&t).len(),
        tiktoken_rs::cl100k_base_singleton().encode_ordinary(&t).len()
    );
}
