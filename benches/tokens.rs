//! Native benchmark of the exact counter against tiktoken-rs (the reference it is tested
//! against): throughput per message-size bucket on the shared corpus plus generated prose, code,
//! JSON and CJK, the first count (vocabulary decoding), and adversarial single long words.
//!
//! `cargo bench --bench tokens --features cl100k [-- --out <file.json>] [-- --quick]`
//!
//! It prints a table and, with `--out`, writes the numbers as JSON for `npm run bench`, which
//! puts them in docs/benchmarks.md beside the WebAssembly numbers. Every count is compared with
//! tiktoken-rs and the run fails on a mismatch. Speed is reported, never asserted.

use std::path::{Path, PathBuf};
use std::time::Instant;

use autocontext::{TokenCounter, Tokenizer};
use serde_json::json;

mod common;
use common::{corpus_dir, median, traces};

/// Message texts of the corpus: contents and tool-call arguments.
fn corpus() -> Vec<String> {
    let mut texts = Vec::new();
    for (_, messages) in traces() {
        for m in &messages {
            texts.extend(m["content"].as_str().filter(|s| !s.is_empty()).map(str::to_owned));
            for call in m["tool_calls"].as_array().into_iter().flatten() {
                texts.extend(call["function"]["arguments"].as_str().filter(|s| !s.is_empty()).map(str::to_owned));
            }
        }
    }
    texts
}

/// Generated texts of one kind, cut into messages of about `size` bytes (at char boundaries).
fn generated(size: usize, total: usize) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let mut code = String::new();
    for dir in ["src", "src/strategy", "src/format", "crates/bpe/src"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "rs")).collect();
        files.sort();
        for f in files {
            code.push_str(&read(&f));
        }
    }
    let mut prose = String::new();
    for dir in ["../shared/research", "../shared/seeds"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "md")).collect();
        files.sort();
        for f in files {
            prose.push_str(&read(&f));
        }
    }
    let json = read(&root.join("package-lock.json"));
    let cjk = cjk_text(total);
    let mut out = Vec::new();
    for (kind, text) in [("prose", prose), ("code", code), ("json", json), ("cjk", cjk)] {
        let mut at = 0;
        let mut taken = 0;
        while at < text.len() && taken < total {
            let mut end = (at + size).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            out.push((kind.to_string(), text[at..end].to_string()));
            taken += end - at;
            at = end;
        }
    }
    out
}

/// Deterministic CJK-heavy text: ideographs, kana, hangul, CJK punctuation, some ASCII digits.
fn cjk_text(bytes: usize) -> String {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut s = String::new();
    while s.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let c = match x % 20 {
            0..=9 => char::from_u32(0x4E00 + (x >> 8) as u32 % 3000),
            10..=13 => char::from_u32(0x3041 + (x >> 8) as u32 % 83),
            14..=15 => char::from_u32(0x30A1 + (x >> 8) as u32 % 90),
            16 => char::from_u32(0xAC00 + (x >> 8) as u32 % 2000),
            17 => Some(['，', '。', '、', '「', '」', '！'][(x >> 8) as usize % 6]),
            18 => Some(char::from(b'0' + (x >> 8) as u8 % 10)),
            _ => Some(if (x >> 8) % 3 == 0 { '\n' } else { ' ' }),
        };
        s.extend(c);
    }
    s
}

/// Size buckets (bytes): ~100 B, ~1 KB, ~10 KB, ~100 KB.
const BUCKETS: [(&str, usize, usize); 4] =
    [("~100 B", 0, 316), ("~1 KB", 316, 3_162), ("~10 KB", 3_162, 31_623), ("~100 KB", 31_623, usize::MAX)];

/// Median MB/s of `count` over all texts, `rounds` times.
fn throughput(texts: &[&str], rounds: usize, mut count: impl FnMut(&str) -> usize) -> (f64, usize) {
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let mut speeds = Vec::new();
    let mut tokens = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        tokens = texts.iter().map(|t| count(t)).sum();
        speeds.push(bytes as f64 / start.elapsed().as_secs_f64() / 1e6);
    }
    (median(speeds), tokens)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let rounds = if quick { 1 } else { 7 };

    let mut encodings = vec![(Tokenizer::O200kBase, "o200k_base")];
    if Tokenizer::Cl100kBase.available() {
        encodings.push((Tokenizer::Cl100kBase, "cl100k_base"));
    }

    // First count: decoding the embedded vocabulary, then one short text.
    let mut first = Vec::new();
    for &(kind, name) in &encodings {
        let start = Instant::now();
        TokenCounter::new(kind).unwrap().count_text("hello world").unwrap();
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let reference =
            if kind == Tokenizer::O200kBase { tiktoken_rs::o200k_base_singleton() } else { tiktoken_rs::cl100k_base_singleton() };
        reference.encode_ordinary("hello world");
        let ref_ms = start.elapsed().as_secs_f64() * 1e3;
        println!("first count {name}: ours {ms:.1} ms, tiktoken-rs {ref_ms:.1} ms");
        first.push(json!({"encoding": name, "ours_ms": ms, "tiktoken_rs_ms": ref_ms}));
    }

    let corpus = corpus();
    if corpus.is_empty() {
        println!("no corpus at {} (set AUTOCONTEXT_CORPUS): generated texts only", corpus_dir().display());
    }
    let mut texts: Vec<(String, String)> = corpus.into_iter().map(|t| ("corpus".to_string(), t)).collect();
    let per_kind = if quick { 20_000 } else { 400_000 };
    for size in [100, 1_000, 10_000, 100_000] {
        texts.extend(generated(size, per_kind));
    }

    let mut rows = Vec::new();
    let mut mismatches = 0;
    for &(kind, name) in &encodings {
        let ours = TokenCounter::new(kind).unwrap();
        let reference =
            if kind == Tokenizer::O200kBase { tiktoken_rs::o200k_base_singleton() } else { tiktoken_rs::cl100k_base_singleton() };
        for t in &texts {
            if ours.count_text(&t.1).unwrap() as usize != reference.encode_ordinary(&t.1).len() {
                mismatches += 1;
                eprintln!("MISMATCH {name}: {:?}", t.1.chars().take(80).collect::<String>());
            }
        }
        for (bucket, lo, hi) in BUCKETS {
            let sel: Vec<&str> = texts.iter().map(|t| t.1.as_str()).filter(|t| (lo..hi).contains(&t.len())).collect();
            if sel.is_empty() {
                continue;
            }
            let bytes: usize = sel.iter().map(|t| t.len()).sum();
            let (mine, tokens) = throughput(&sel, rounds, |t| ours.count_text(t).unwrap() as usize);
            let (theirs, _) = throughput(&sel, rounds, |t| reference.encode_ordinary(t).len());
            println!(
                "{name} {bucket:>8}: {:>5} texts {:>6.2} MB {:>9} tokens | ours {mine:>6.1} MB/s | tiktoken-rs {theirs:>5.1} MB/s | {:.1}x",
                sel.len(),
                bytes as f64 / 1e6,
                tokens,
                mine / theirs
            );
            rows.push(json!({"encoding": name, "bucket": bucket, "texts": sel.len(), "bytes": bytes, "tokens": tokens,
                "ours_mb_s": mine, "tiktoken_rs_mb_s": theirs}));
        }
    }

    // Adversarial single words: the heap merge keeps them linear.
    let mut adversarial = Vec::new();
    for n in [1_000usize, 10_000, 50_000, 200_000] {
        let word: String = (0..n).map(|i| char::from(b'a' + ((i * 7 + i / 26) % 26) as u8)).collect();
        for &(kind, name) in &encodings {
            let ours = TokenCounter::new(kind).unwrap();
            let start = Instant::now();
            let got = ours.count_text(&word).unwrap() as usize;
            let ms = start.elapsed().as_secs_f64() * 1e3;
            let reference =
                if kind == Tokenizer::O200kBase { tiktoken_rs::o200k_base_singleton() } else { tiktoken_rs::cl100k_base_singleton() };
            let start = Instant::now();
            let want = reference.encode_ordinary(&word).len();
            let ref_ms = start.elapsed().as_secs_f64() * 1e3;
            if got != want {
                mismatches += 1;
            }
            println!("{name} one {n}-letter word: ours {ms:.2} ms, tiktoken-rs {ref_ms:.2} ms");
            adversarial.push(json!({"encoding": name, "letters": n, "ours_ms": ms, "tiktoken_rs_ms": ref_ms}));
        }
    }

    println!("mismatches against tiktoken-rs: {mismatches}");
    if let Some(path) = out {
        let report = json!({"first": first, "throughput": rows, "adversarial": adversarial, "mismatches": mismatches, "rounds": rounds});
        std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).expect("write the report");
    }
    if mismatches > 0 {
        std::process::exit(1);
    }
}
