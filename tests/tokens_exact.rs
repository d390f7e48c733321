//! The exact counter against the reference: for every text here, `o200k_base` and
//! `cl100k_base` counts equal tiktoken-rs's `encode_ordinary(text).len()`.
//!
//! The texts: every message and tool-call argument of the shared corpus (`../shared/corpus`,
//! or the folder named by `AUTOCONTEXT_CORPUS`; skipped with a notice when absent), texts of
//! every kind the engine meets (prose, code, JSON, CJK, emoji, white-space runs, digits,
//! contractions), adversarial single long words, and random strings: short ones over a small
//! alphabet chosen to hit every rule of the split patterns (each kind of letter, marks,
//! numbers, the white-space variants, apostrophes, the case folds of the contraction letters),
//! and random Unicode. The cl100k half runs when the crate is built with `--features cl100k`
//! (as `npm test` does).

use autocontext::{TokenCounter, Tokenizer};
use serde_json::Value;

#[path = "common/corpus.rs"]
mod corpus;
use corpus::{corpus_dir, skip_without_corpus};
#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

/// Counts every text with every encoding this build has and returns the mismatches (at most
/// a few, shortened), after checking that something was compared at all.
fn mismatches(texts: &[String]) -> Vec<String> {
    assert!(!texts.is_empty());
    let mut pairs: Vec<(&str, TokenCounter, &tiktoken_rs::CoreBPE)> =
        vec![("o200k_base", TokenCounter::new(Tokenizer::O200kBase).unwrap(), tiktoken_rs::o200k_base_singleton())];
    if cfg!(feature = "cl100k") {
        pairs.push(("cl100k_base", TokenCounter::new(Tokenizer::Cl100kBase).unwrap(), tiktoken_rs::cl100k_base_singleton()));
    }
    let mut bad = Vec::new();
    for t in texts {
        for (name, ours, reference) in &pairs {
            let want = reference.encode_ordinary(t).len();
            let got = ours.count_text(t).unwrap() as usize;
            if got != want && bad.len() < 5 {
                bad.push(format!("{name}: {got} instead of {want} for {:?}", t.chars().take(120).collect::<String>()));
            }
        }
    }
    bad
}

#[test]
fn every_corpus_text_counts_exactly() {
    let Ok(dir) = std::fs::read_dir(corpus_dir()) else {
        skip_without_corpus(&format!("no corpus at {} (set AUTOCONTEXT_CORPUS)", corpus_dir().display()));
        return;
    };
    let mut texts = Vec::new();
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let trace: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for m in trace["messages"].as_array().into_iter().flatten() {
            texts.extend(m["content"].as_str().map(str::to_owned));
            for call in m["tool_calls"].as_array().into_iter().flatten() {
                texts.extend(call["function"]["arguments"].as_str().map(str::to_owned));
            }
        }
    }
    assert!(texts.len() > 1000, "only {} corpus texts", texts.len());
    assert_eq!(mismatches(&texts), Vec::<String>::new());
    // Counted again, by new counters: the thread's counters remember most of these counts.
    assert_eq!(mismatches(&texts), Vec::<String>::new());
}

/// The corpus texts of at least `min` bytes.
fn long_corpus_texts(min: usize) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(corpus_dir()) else { return Vec::new() };
    let mut texts = Vec::new();
    for path in dir.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")) {
        let trace: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for m in trace["messages"].as_array().into_iter().flatten() {
            texts.extend(m["content"].as_str().filter(|t| t.len() >= min).map(str::to_owned));
        }
    }
    texts
}

#[test]
fn cut_texts_count_exactly_from_their_originals_marks() {
    // A truncated tool result: the original's head, a notice, its tail. The counter that
    // counted the original is told about the cut and counts it from the original's marks.
    let texts = long_corpus_texts(8192);
    if texts.is_empty() {
        skip_without_corpus(&format!("no corpus at {} (set AUTOCONTEXT_CORPUS)", corpus_dir().display()));
        return;
    }
    let mut kinds = vec![(Tokenizer::O200kBase, tiktoken_rs::o200k_base_singleton())];
    if cfg!(feature = "cl100k") {
        kinds.push((Tokenizer::Cl100kBase, tiktoken_rs::cl100k_base_singleton()));
    }
    let mut rng = Rng(0x0bad_cafe_1234_5678);
    let (mut compared, mut short) = (0, 0);
    for (kind, reference) in kinds {
        let counter = TokenCounter::new(kind).unwrap();
        for original in &texts {
            counter.count_text(original).unwrap();
            for k in 0..6 {
                let boundary = |mut at: usize| {
                    while !original.is_char_boundary(at) {
                        at -= 1;
                    }
                    at
                };
                let (head, tail) = if k < 4 {
                    let head = boundary(rng.index(original.len()));
                    (head, boundary(head + rng.index(original.len() - head + 1)))
                } else {
                    // A truncated tool result's shape: a head and a tail of a few hundred to a
                    // few thousand bytes, the cut shorter than the texts that leave marks.
                    let head = boundary(rng.index(2400));
                    (head, boundary(original.len() - rng.index(1200)))
                };
                short += usize::from(tail - head < original.len() && original.len() - (tail - head) < 4096);
                let notice = "\n[... 1234 of 56789 characters omitted; call context_reload with the uuid below ...]\n<!-- CONTEXT_OFFLOAD: uuid=0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a -->\n";
                let cut = [&original[..head], notice, &original[tail..]].concat();
                counter.prepare_cut(original, &cut, head);
                // Half of them get an identifier index inserted after the head, as a pass does.
                let cut = if rng.index(2) == 0 {
                    let indexed = [&cut[..head], "\n[Identifiers in what was offloaded: src/lib.rs, parse_args]", &cut[head..]].concat();
                    counter.recut(&cut, &indexed);
                    indexed
                } else {
                    cut
                };
                let want = reference.encode_ordinary(&cut).len();
                assert_eq!(
                    counter.count_text(&cut).unwrap() as usize,
                    want,
                    "{kind:?}: cut at {head}..{tail} of a {}-byte text",
                    original.len()
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 100, "only {compared} cuts compared");
    assert!(short > 20, "only {short} cuts shorter than 4 KB compared");
}

#[test]
fn texts_of_every_kind_count_exactly() {
    let texts: Vec<String> = [
        "The quick brown fox jumps over the lazy dog. It's 3:45pm — isn't it? WE'LL SEE, they'd say.",
        "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{v:?}\");\n}\n",
        "import { AutoContextMemory } from 'autocontext';\r\n\r\nconst m = new AutoContextMemory({ maxToken: 128_000 });\r\n",
        r#"{"id": "call_9f8e", "args": {"path": "/src/lib.rs", "lines": [1, 2, 3], "ok": true, "n": null, "x": -1.5e-7}}"#,
        "日本語のテキストと中文文本，还有한국어 텍스트도 있습니다。Ελληνικά, русский текст, עברית, العربية, हिन्दी",
        "emoji: 🦀🚀👩‍👩‍👧‍👦🇫🇷 ✔️ and combining é vs é, Z̤̈ä̤l̈g̤ö̤, ǅemal ǈubav ǋe",
        "  leading and trailing  \n\n\n   \t\t \u{a0}\u{3000}\u{85}\u{2028} x \r\n\r\n  ",
        "0123456789 1,234,567.89 ١٢٣٤٥ ½ ⅔ Ⅻ 2024-11-21T22:33:30Z 0xDEADBEEF",
        "don't DON'T Don'T we're WE'RE I'm I'M you'll YOU'LL he'd HE'D it's IT'S I've I'VE 'tis ſ 'ſ 'Ss",
        "<|endoftext|> <|im_start|>user\nspecial tokens are plain text here<|im_end|>",
        "path/to/file.rs:12:5 https://example.com/a/b?c=d&e=f#g C:\\Users\\x\\AppData //comment /* block */",
        "HTMLParser XMLHttpRequest getElementById snake_case_name SCREAMING_CASE kebab-case-name camelCase",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(mismatches(&texts), Vec::<String>::new());
}

#[test]
fn adversarial_long_words_count_exactly() {
    let texts = vec![
        "a".repeat(50_000),
        "ab".repeat(20_000),
        "supercalifragilisticexpialidocious".repeat(1_000),
        "A".repeat(20_000) + "b",
        " ".repeat(30_000),
        " ".repeat(30_000) + "x",
        "!".repeat(30_000),
        "日本".repeat(5_000),
        "\u{301}".repeat(5_000),
        "9".repeat(10_000),
        " \n".repeat(5_000) + "x",
        (0..5_000).map(|i| char::from(b'a' + (i * 7 % 26) as u8)).collect(),
    ];
    assert_eq!(mismatches(&texts), Vec::<String>::new());
}

#[test]
fn random_texts_over_a_rule_hitting_alphabet_count_exactly() {
    let alphabet: Vec<char> = " \t\n\r\u{3000}\u{85}\u{a0}aAǅʰ日\u{301}\u{20dd}1½٣'sSſtlLvVeErRmMdD/.!,🦀-_".chars().collect();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let texts: Vec<String> = (0..60_000)
        .map(|_| {
            let n = 1 + rng.index(24);
            (0..n).map(|_| alphabet[rng.index(alphabet.len())]).collect()
        })
        .collect();
    assert_eq!(mismatches(&texts), Vec::<String>::new());
}

#[test]
fn random_unicode_counts_exactly() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let texts: Vec<String> = (0..10_000)
        .map(|_| {
            let n = 1 + rng.index(40);
            (0..n)
                .filter_map(|_| {
                    let limit = [0x80, 0x800, 0x1_0000, 0x11_0000][rng.index(4)];
                    char::from_u32(rng.index(limit) as u32)
                })
                .collect()
        })
        .collect();
    assert_eq!(mismatches(&texts), Vec::<String>::new());
}
