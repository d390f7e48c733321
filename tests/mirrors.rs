//! Facts the package states in two languages, checked against each other: a change on one side
//! fails here until the other side follows.
//!
//! - The per-message token accounting (`src/tokens.rs`, `OPAQUE_PART_TOKENS` of
//!   `src/format/openai.rs`) and the providers' default prices (`src/options/prices.rs`) are
//!   restated by the cost model the command line, the benchmark and the demo share
//!   (`js/accounting.js`): a bill that counted otherwise than the engine would skew every
//!   figure silently.
//! - Each method of the memory is written three times: the engine's (`src/engine/mod.rs`), its
//!   binding (`src/wasm/class.rs`) and the class that calls the binding (`js/memory.ts`). Every
//!   binding method calls into JavaScript's class, every call the class makes is a binding
//!   method, and every engine method is bound or named below as the engine's own (with why).
//! - The saved state's page size: the engine cuts the pages (`src/engine/pages.rs`), the class
//!   names the size in the head it writes (`js/saved-pages.ts`).

use std::collections::BTreeSet;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The value of `export const NAME = <number>;` in a JavaScript file.
fn js_const(text: &str, name: &str) -> f64 {
    let at = text.find(&format!("export const {name} = ")).unwrap_or_else(|| panic!("no `export const {name}`"));
    let rest = &text[at + "export const  = ".len() + name.len()..];
    rest[..rest.find(';').unwrap()].trim().parse().unwrap()
}

#[test]
fn a_page_of_the_saved_state_holds_as_many_items_on_both_sides() {
    let rust = read("src/engine/pages.rs");
    let at = rust.find("const PAGE: usize = ").expect("`const PAGE: usize` in src/engine/pages.rs");
    let rest = &rust[at + "const PAGE: usize = ".len()..];
    let rust_page: f64 = rest[..rest.find(';').unwrap()].trim().parse().unwrap();
    assert_eq!(js_const(&read("js/saved-pages.ts"), "PAGE"), rust_page, "PAGE");
}

#[test]
fn the_cost_model_counts_and_prices_as_the_engine_does() {
    let js = read("js/accounting.js");
    assert_eq!(js_const(&js, "MESSAGE_OVERHEAD"), f64::from(autocontext::tokens::MESSAGE_OVERHEAD), "MESSAGE_OVERHEAD");
    assert_eq!(js_const(&js, "TOOL_BLOCK_OVERHEAD"), f64::from(autocontext::tokens::TOOL_BLOCK_OVERHEAD), "TOOL_BLOCK_OVERHEAD");
    assert_eq!(js_const(&js, "REQUEST_OVERHEAD"), autocontext::tokens::REQUEST_OVERHEAD as f64, "REQUEST_OVERHEAD");
    assert_eq!(js_const(&js, "OPAQUE_PART_TOKENS"), f64::from(autocontext::format::openai::OPAQUE_PART_TOKENS), "OPAQUE_PART_TOKENS");
    // `PRICES = { anthropic: { read: R, write: W }, openai: { ... } }` against the engine's
    // defaults for the formats of each provider.
    for (provider, format) in [("anthropic", "anthropic"), ("openai", "openai")] {
        let at = js.find(&format!("  {provider}: {{ read: ")).unwrap_or_else(|| panic!("no prices for {provider}"));
        let line = &js[at..at + js[at..].find('\n').unwrap()];
        let num = |key: &str| -> f64 {
            let s = &line[line.find(&format!("{key}: ")).unwrap() + key.len() + 2..];
            s[..s.find([',', ' ', '}']).unwrap()].parse().unwrap()
        };
        let config = autocontext::Config::from_json(&serde_json::json!({ "format": format })).unwrap();
        let prices = config.prices();
        assert_eq!(num("read"), prices.cache_read, "{provider} read");
        assert_eq!(num("write"), prices.cache_write, "{provider} write");
    }
}

/// The names of the `pub fn` / `pub async fn` items of `text` indented by four spaces (the
/// methods of its impl blocks).
fn methods(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("    pub fn ").or_else(|| l.strip_prefix("    pub async fn ")))
        .map(|rest| rest[..rest.find(['(', '<']).unwrap()].to_string())
        .collect()
}

/// The memory's methods that are the engine's own, not bound to JavaScript, and why.
const ENGINE_ONLY: [(&str, &str); 18] = [
    ("with_counter", "the binding's host may bring a counter; `new` takes it"),
    ("with_ladder", "a native caller's own ladder of rungs"),
    ("with_clock", "a native caller's clock; the binding's host brings one"),
    ("ladder", "the rungs a native caller set"),
    ("config", "read back by native callers and tests"),
    ("format", "read back by native callers and tests"),
    ("store", "the binding holds the host's store itself"),
    ("add_with", "`add` of the binding takes the pin flag and calls it"),
    ("add_owned", "`add` of the binding calls it with the value it parsed"),
    ("restore", "`fromJson` of the binding calls it with the state it parsed"),
    ("messages_text", "`messages` of the binding hands this text to JavaScript"),
    ("messages_since_text", "`messagesSince` of the binding hands this text to JavaScript"),
    ("to_json_text", "`to_json` of the binding hands this text to JavaScript"),
    ("working", "the entries, for native callers and tests"),
    ("calibration", "read back by native callers and tests"),
    ("original_messages", "JavaScript reads the log itself (`logHead`, `logChunk`)"),
    ("sweep", "JavaScript sweeps with `sweepPending` and `reachableKeys`"),
    ("materialize", "each call that needs the pages a load left unparsed parses them itself"),
];

/// Binding methods named otherwise than the engine method they call: (binding, engine).
const RENAMED: [(&str, &str); 1] = [("history_length", "history_len")];

/// Binding methods the class does not call, and why.
const UNCALLED: [(&str, &str); 1] = [("messages", "the class keeps its own copy of the list, updated with `messagesSince`")];

/// Binding methods with no engine method of the same name, and why.
const BINDING_ONLY: [(&str, &str); 5] = [
    ("session_id", "an option, read from the memory's configuration"),
    ("store_timeout_ms", "an option the class applies to the host's store itself"),
    ("reload_tool", "the format's tool definition, read from the memory's format"),
    ("sweep_pending", "a sweep in the steps the class drives around the store's listing"),
    ("reachable_keys", "a sweep in the steps the class drives around the store's listing"),
];

#[test]
fn each_method_of_the_memory_is_the_same_in_the_engine_the_binding_and_the_class() {
    let engine = methods(&read("src/engine/mod.rs"));
    let class = read("src/wasm/class.rs");
    let class = &class[class.find("impl WasmMemory").expect("impl WasmMemory")..];
    let class = &class[..class.find("\n}\n").unwrap()];
    // (Rust name, JavaScript name) of each binding method.
    let mut bound: Vec<(String, String)> = Vec::new();
    let mut js_name = None;
    for l in class.lines() {
        if let Some(at) = l.find("js_name = ") {
            let rest = &l[at + "js_name = ".len()..];
            js_name = Some(rest[..rest.find([',', ')']).unwrap()].trim().to_string());
        }
        if let Some(rest) = l.strip_prefix("    pub fn ") {
            let name = rest[..rest.find(['(', '<']).unwrap()].to_string();
            bound.push((name.clone(), js_name.take().unwrap_or(name)));
        }
    }
    let memory_ts = read("js/memory.ts");
    let calls: BTreeSet<String> = memory_ts
        .match_indices("#wasm.")
        .chain(memory_ts.match_indices("WasmMemory."))
        .chain(memory_ts.match_indices("deref()?."))
        .filter_map(|(at, m)| {
            let rest = &memory_ts[at + m.len()..];
            let end = rest.find(|c: char| !c.is_ascii_alphanumeric() && c != '_')?;
            (rest[end..].starts_with('(')).then(|| rest[..end].to_string())
        })
        .collect();
    let mut problems = Vec::new();
    for (rust, js) in &bound {
        if rust != "new" && !calls.contains(js) && !UNCALLED.iter().any(|(n, _)| n == rust) {
            problems.push(format!("src/wasm/class.rs binds `{js}`, which js/memory.ts never calls"));
        }
        let engine_name = RENAMED.iter().find(|(b, _)| b == rust).map_or(rust.as_str(), |(_, e)| e);
        let engine_has = engine.iter().any(|m| m == engine_name) || BINDING_ONLY.iter().any(|(n, _)| n == rust);
        if !engine_has && !matches!(rust.as_str(), "new" | "from_json") {
            problems.push(format!("src/wasm/class.rs binds `{rust}`, which src/engine/mod.rs does not have"));
        }
    }
    for call in &calls {
        if call != "free" && !bound.iter().any(|(_, js)| js == call) {
            problems.push(format!("js/memory.ts calls `{call}`, which src/wasm/class.rs does not bind"));
        }
    }
    for m in &engine {
        let named = ENGINE_ONLY.iter().any(|(n, _)| n == m);
        let is_bound = bound.iter().any(|(rust, _)| rust == m) || RENAMED.iter().any(|(_, e)| e == m);
        if !named && !is_bound {
            problems
                .push(format!("src/engine/mod.rs has `{m}`, which src/wasm/class.rs does not bind (or name it in ENGINE_ONLY, with why)"));
        }
        if named && is_bound {
            problems.push(format!("`{m}` is bound, so it is not ENGINE_ONLY"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
