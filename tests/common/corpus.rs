//! The shared corpus of agent traces: where it is (the folder `AUTOCONTEXT_CORPUS` names, or
//! `../shared/corpus` beside the repository), and the shapes the tests and benchmarks read it
//! in. The tests include it through `common`, the benchmarks through benches/common.
// Each includer uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A test that needs the corpus, which is not there: says it was skipped (`what` names what is
/// missing). Under CI (`CI=true`), which has the corpus beside the repository, it fails instead:
/// there a test that read nothing must not pass.
pub fn skip_without_corpus(what: &str) {
    assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "CI must have the corpus: {what}");
    eprintln!("skipped: {what}");
}

/// The corpus folder.
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("AUTOCONTEXT_CORPUS") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("shared").join("corpus"),
    }
}

/// Every trace of the corpus, `(name, messages)`, by file name; empty without a corpus.
pub fn traces() -> Vec<(String, Vec<Value>)> {
    let Ok(dir) = std::fs::read_dir(corpus_dir()) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = dir.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|path| {
            let mut trace: Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
            let Value::Array(messages) = trace["messages"].take() else { return None };
            Some((path.file_stem()?.to_string_lossy().into_owned(), messages))
        })
        .collect()
}

/// The largest trace by size, its messages as JSON text (the size the Node benchmarks pick by).
pub fn largest() -> Option<(String, Vec<Value>)> {
    traces().into_iter().max_by_key(|(_, messages)| serde_json::to_string(messages).map_or(0, |s| s.len()))
}

/// A trace's messages in the groups a host adds them: a message, or an assistant message with
/// the tool results that answer it.
pub fn groups(messages: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Vec<Value>> = Vec::new();
    for m in messages {
        match out.last_mut() {
            Some(g) if m["role"] == "tool" => g.push(m),
            _ => out.push(vec![m]),
        }
    }
    out.into_iter().map(Value::Array).collect()
}

/// `messages` with every text new to the thread: the run's number at the end of each content,
/// a space per run at the end of each tool call's arguments (still the same JSON). The engine
/// remembers the counts and identifiers of the texts it met lately, which a new memory of the
/// same conversation would find; a run on these measures a conversation it has not met.
pub fn unseen(messages: &[Value], run: usize) -> Vec<Value> {
    let pad = " ".repeat(run + 1);
    let mut out = messages.to_vec();
    for m in &mut out {
        if let Some(text) = m["content"].as_str().filter(|t| !t.is_empty()) {
            m["content"] = Value::String(format!("{text} {run}"));
        }
        for call in m.get_mut("tool_calls").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(args) = call["function"]["arguments"].as_str() {
                call["function"]["arguments"] = Value::String(format!("{args}{pad}"));
            }
        }
    }
    out
}
