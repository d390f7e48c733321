//! Native benchmark of a Worker's turn on the largest trace of the shared corpus: restore the
//! session from the head and pages a save wrote (the head parsed, then handed over with the
//! pages, as the binding does), add the next
//! message (or assistant message with its tool results), `compress_if_needed()`, take the
//! messages, write the state again (cut into the pages a save writes), drop the memory (what
//! `dispose()` frees at the end of a Worker's request); in a 32,000-token window
//! with no summarizer, for a turn whose pass runs ("pass") and one that runs none ("no pass").
//! Each state is made in a thread of its own on texts new to every run, so the thread that
//! measures has counted, scanned and parsed none of them (as a Worker's isolate has not); in a
//! third case, "no pass, read before", the measuring thread first runs the session's previous
//! turn (not measured), as an isolate that served the session's last request did, and the turn
//! loads the pages that turn saved.
//!
//! `cargo bench --bench turn [-- --out <file.json>] [-- --quick]`
//!
//! `npm run bench` puts it beside the same turn in Node and in workerd (bench/worker-turn.mjs):
//! the engine's share of a turn, without the JavaScript around it. Reported, never asserted.

use std::path::PathBuf;
use std::time::Instant;

use autocontext::{AutoContextMemory, Config, MemoryStore, NoSummarizer, OffloadStore};
use serde_json::{json, Value};

mod common;
use common::{corpus_dir, groups, largest, median, unseen};

const WINDOW: u64 = 32_000;

type Memory = AutoContextMemory<NoSummarizer, MemoryStore>;

fn memory(session: &str) -> Memory {
    let config = Config { max_token: WINDOW, session_id: session.to_string(), ..Config::default() };
    AutoContextMemory::with_counter(
        config.clone(),
        autocontext::TokenCounter::new(config.tokenizer).expect("tokenizer"),
        None,
        MemoryStore::new(),
    )
    .expect("a valid config")
}

/// Replays `list` a group at a time, compressing if needed after each; stops before `upTo`.
/// Returns the memory and which groups' turns ran a pass.
fn replay(list: &[Value], session: &str, up_to: Option<usize>) -> (Memory, Vec<bool>) {
    let m = memory(session);
    let mut triggered = Vec::new();
    for (i, g) in list.iter().enumerate() {
        if Some(i) == up_to {
            break;
        }
        m.add(g).expect("the trace is valid");
        triggered.push(futures_executor::block_on(m.compress_if_needed()).expect("a pass").compressed);
    }
    (m, triggered)
}

/// The turns measured: one that runs a pass, one that runs none, and one that runs none on a
/// session whose previous turn this thread ran.
#[derive(Clone, Copy, PartialEq)]
enum Case {
    Pass,
    NoPass,
    ReadBefore,
}

/// A saved state for one run of a case (made in its own thread), its store and the next group;
/// for [`Case::ReadBefore`], the state before the previous group, which is returned too.
fn saved(messages: &[Value], case: Case, run: usize) -> (Vec<String>, MemoryStore, Value, Option<Value>) {
    let messages = unseen(messages, run);
    std::thread::spawn(move || {
        let list = groups(messages);
        let session = format!("turn-{run}");
        let (_, triggered) = replay(&list, &session, None);
        let (at, before) = match case {
            Case::Pass => (triggered.iter().rposition(|t| *t).expect("a turn that compresses"), 0),
            Case::NoPass => (triggered.iter().rposition(|t| !*t).expect("a turn that does not"), 0),
            Case::ReadBefore => {
                ((1..triggered.len()).rev().find(|&i| !triggered[i] && !triggered[i - 1]).expect("two turns in a row that do not"), 1)
            }
        };
        let (m, _) = replay(&list, &session, Some(at - before));
        futures_executor::block_on(m.flush(true)).expect("flush");
        let state = m.to_json_pages();
        let store = m.store();
        let entries: Vec<(String, String)> = store
            .keys()
            .into_iter()
            .map(|k| {
                let v = futures_executor::block_on(store.get(&k)).expect("get").expect("stored");
                (k, v)
            })
            .collect();
        (state, entries, list[at].clone(), (before > 0).then(|| list[at - 1].clone()))
    })
    .join()
    .map(|(state, entries, next, prev)| {
        let store = MemoryStore::new();
        for (k, v) in entries {
            futures_executor::block_on(store.put(&k, &v)).expect("put");
        }
        (state, store, next, prev)
    })
    .expect("the state's thread")
}

/// Restores `state`, adds `group`, compresses if needed and returns the pages a save writes.
fn previous_turn(state: &[String], store: MemoryStore, group: &Value) -> Vec<String> {
    let head: Value = serde_json::from_str(&state[0]).expect("JSON");
    let counts: Vec<u32> = state[1].split(',').map(|c| c.parse().expect("a count")).collect();
    let m = AutoContextMemory::from_pages(head, &counts, &state[2..], None::<NoSummarizer>, store, None).expect("restore");
    m.add(group).expect("add");
    futures_executor::block_on(m.compress_if_needed()).expect("pass");
    std::hint::black_box(m.messages_text());
    m.to_json_pages()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let runs = if args.iter().any(|a| a == "--quick") { 3 } else { 15 };
    let Some((name, messages)) = largest() else {
        eprintln!("turn: no corpus at {} (set AUTOCONTEXT_CORPUS)", corpus_dir().display());
        std::process::exit(1);
    };
    let mut cases = Vec::new();
    for (k, case) in [Case::Pass, Case::NoPass, Case::ReadBefore].into_iter().enumerate() {
        let pass = case == Case::Pass;
        let mut phases: Vec<[f64; 6]> = Vec::new();
        for run in 0..runs {
            let (mut state, store, next, prev) = saved(&messages, case, k * runs + run);
            if let Some(prev) = prev {
                // The session's previous turn, in this thread.
                state = previous_turn(&state, store.clone(), &prev);
            }
            let mut t = [0.0; 6];
            let mut lap = {
                let mut at = Instant::now();
                move |i: usize, t: &mut [f64; 6]| {
                    t[i] = at.elapsed().as_secs_f64() * 1000.0;
                    at = Instant::now();
                }
            };
            let head: Value = serde_json::from_str(&state[0]).expect("JSON");
            let counts: Vec<u32> = state[1].split(',').map(|c| c.parse().expect("a count")).collect();
            let m = AutoContextMemory::from_pages(head, &counts, &state[2..], None::<NoSummarizer>, store, None).expect("restore");
            lap(0, &mut t);
            m.add(&next).expect("add");
            lap(1, &mut t);
            let r = futures_executor::block_on(m.compress_if_needed()).expect("pass");
            assert_eq!(r.compressed, pass);
            lap(2, &mut t);
            std::hint::black_box(m.messages_text());
            lap(3, &mut t);
            std::hint::black_box(m.to_json_pages());
            lap(4, &mut t);
            drop(m);
            lap(5, &mut t);
            phases.push(t);
        }
        let names = ["restore", "add", "pass", "messages", "save", "drop"];
        let med: Vec<f64> = (0..6).map(|i| median(phases.iter().map(|p| p[i]).collect())).collect();
        let total = median(phases.iter().map(|p| p.iter().sum()).collect());
        let case = match case {
            Case::Pass => "pass",
            Case::NoPass => "no pass",
            Case::ReadBefore => "no pass, read before",
        };
        println!(
            "{case:<20} turn {total:6.2} ms   {}",
            names.iter().zip(&med).map(|(n, v)| format!("{n} {v:5.2}")).collect::<Vec<_>>().join("   ")
        );
        cases.push(json!({"case": case, "turnMs": total, "phases": names.iter().zip(&med).map(|(n, v)| json!({"phase": n, "ms": v})).collect::<Vec<_>>()}));
    }
    if let Some(path) = out {
        let report = json!({"trace": name, "window": WINDOW, "runs": runs, "cases": cases});
        std::fs::write(&path, serde_json::to_string_pretty(&report).expect("JSON")).expect("write the report");
    }
}
