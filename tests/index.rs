//! The identifier index every replacement carries: the exact identifiers of what it took out of
//! view, extracted by the engine (never by the host's model), ranked, bounded, deterministic,
//! never a uuid or a marker, and left out when what it names is still in view.

mod common;

use autocontext::{AutoContextMemory, Config, MemoryStore, Strategy};
use common::*;
use serde_json::{json, Value};

const OPENING: &str = "[Identifiers in what was offloaded: ";

/// The identifiers of the index lines in `text`, in order.
fn index_of(text: &str) -> Vec<String> {
    text.lines().filter_map(|l| l.strip_prefix(OPENING)?.strip_suffix(']')).flat_map(|l| l.split(", ").map(str::to_string)).collect()
}

fn text_of(v: &Value) -> String {
    match &v["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A round whose tool work names identifiers the agent may need again.
fn investigation() -> Vec<Value> {
    vec![
        system("agent"),
        user("The build fails in crates/parser/src/lexer.rs; fix tokenize_block and keep ISSUE-4412 in mind."),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"crates/parser/src/lexer.rs\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "run", "arguments": "{\"cmd\": \"cargo test -p parser --no-default-features\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": format!("fn tokenize_block(src: &str) -> Vec<Token> {{ ... }}\n{}\nfn parse_header_line() calls lex_number_literal", filler("code", 6_000))}),
        json!({"role": "tool", "tool_call_id": "c2", "content": format!("error[E0425]: cannot find value `span_start` in this scope\n{}\ntest result: FAILED at commit 9f3c2ab1d", filler("log", 6_000))}),
        answer("The failure is E0425 in tokenize_block; span_start was renamed."),
        user("Now look at the docs."),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c3", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"docs/grammar.md\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c3", "content": filler("docs", 8_000)}),
        answer("The grammar is documented."),
        user("what next?"),
    ]
}

fn prefix_memory(index_chars: u32, session: &str) -> AutoContextMemory<FakeSummarizer, MemoryStore> {
    let msgs = investigation();
    let mut cfg = config(session, window_for_half(&msgs));
    cfg.strategies = Some(vec![Strategy::PrefixSummary]);
    cfg.protect_last_round = false;
    cfg.identifier_index_chars = index_chars;
    let m = AutoContextMemory::new(cfg, FakeSummarizer::fixed("looked at the lexer and the docs"), MemoryStore::new()).unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed, "{r:?}");
    m
}

/// A window whose trigger is half of `msgs`.
fn window_for_half(msgs: &[Value]) -> u64 {
    (tokens_of(msgs) as f64 / 2.0 / 0.75).ceil() as u64
}

#[test]
fn a_summary_names_the_identifiers_it_took_out_of_view_best_first() {
    let m = prefix_memory(1_200, "index");
    let out = m.messages();
    let summary = out.iter().find(|v| !markers_in(v).is_empty()).expect("a summary");
    let ids = index_of(&text_of(summary));
    // Everything the replaced work named that is out of view now.
    for want in ["docs/grammar.md", "--no-default-features", "E0425", "span_start", "parse_header_line", "lex_number_literal", "9f3c2ab1d"]
    {
        assert!(ids.iter().any(|i| i == want), "{want} missing from {ids:?}");
    }
    // What a tool call named ranks before what only a result held.
    let pos = |w: &str| ids.iter().position(|i| i == w).unwrap();
    assert!(pos("docs/grammar.md") < pos("span_start") && pos("--no-default-features") < pos("span_start"), "{ids:?}");
    // What stays in view is not repeated: the task, kept verbatim, names the lexer's path, the
    // function and the issue; tool names are in every request's tool list.
    assert_eq!(out[1], investigation()[1], "the task stays");
    for seen in ["crates/parser/src/lexer.rs", "tokenize_block", "ISSUE-4412", "read_file"] {
        assert!(!ids.iter().any(|i| i == seen), "{seen} is in view: {ids:?}");
    }
    // Never a uuid, a marker or the engine's own words.
    for i in &ids {
        assert!(!i.contains("CONTEXT_OFFLOAD") && !i.contains("context_reload"), "{i}");
        assert!(!(i.len() >= 36 && i.chars().filter(|c| *c == '-').count() >= 4), "a uuid-like entry: {i}");
    }
    // Bounded, and the same for the same conversation.
    let line = text_of(summary).lines().find(|l| l.starts_with(OPENING)).unwrap().to_string();
    assert!(line.len() <= 1_200, "{} characters", line.len());
    let again = prefix_memory(1_200, "index-again");
    let again_line = again.messages().iter().find_map(|v| text_of(v).lines().find(|l| l.starts_with(OPENING)).map(str::to_string)).unwrap();
    assert_eq!(line, again_line, "deterministic");
    check_recoverable(&m, "index");
}

#[test]
fn the_budget_bounds_the_index_and_zero_turns_it_off() {
    let small = prefix_memory(120, "index-small");
    let line = small.messages().iter().find_map(|v| text_of(v).lines().find(|l| l.starts_with(OPENING)).map(str::to_string)).unwrap();
    assert!(line.len() <= 120, "{line}");
    assert!(line.contains("docs/grammar.md"), "the best-ranked one fits first: {line}");
    let off = prefix_memory(0, "index-off");
    assert!(off.messages().iter().all(|v| !text_of(v).contains(OPENING)), "no index with identifierIndexChars 0");
    // The option reads from JSON, is refused above its range and round-trips.
    let c = Config::from_json(&json!({"identifierIndexChars": 300})).unwrap();
    assert_eq!(c.identifier_index_chars, 300);
    assert_eq!(Config::from_json(&c.to_json()).unwrap().identifier_index_chars, 300);
    let e = Config::from_json(&json!({"identifierIndexChars": 200_000})).unwrap_err();
    assert_eq!(e.field(), Some("identifierIndexChars"));
}

#[test]
fn a_truncated_result_names_what_its_omitted_middle_held() {
    let middle = "The config lives in settings/production.yaml and the handler is process_refund_request.";
    let content = format!("{}\n{middle}\n{}", filler("head", 8_000), filler("tail", 8_000));
    let msgs = vec![
        user("refund order 88231"),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "t1", "content": content}),
    ];
    let mut cfg = config("index-truncate", 1_000_000);
    cfg.tool_result_limit = 4_000;
    let m = AutoContextMemory::new(cfg, FakeSummarizer::fixed("s"), MemoryStore::new()).unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert_eq!(r.events.iter().map(|e| e.event_type.as_str()).collect::<Vec<_>>(), ["TOOL_RESULT_TRUNCATE"]);
    let cut = text_of(&m.messages()[2]);
    assert!(!cut.contains(middle), "the middle is cut");
    let ids = index_of(&cut);
    assert_eq!(ids, ["settings/production.yaml", "process_refund_request"], "{cut}");
    // The index sits before the marker, inside the result.
    assert!(cut.find(OPENING).unwrap() < cut.find("CONTEXT_OFFLOAD").unwrap());
    check_recoverable(&m, "index-truncate");
}

#[test]
fn an_emergency_notice_carries_an_index_too() {
    let mut msgs = vec![system("agent"), user("the task")];
    for r in 0..6 {
        msgs.push(user(&format!("step {r}: open the next module")));
        msgs.push(answer(&format!("opened module_{r}_handler.py: {}", filler(&format!("a{r}"), 3_000))));
    }
    msgs.push(user("what next?"));
    let mut cfg = config("index-emergency", window_for_half(&msgs));
    cfg.strategies = Some(vec![Strategy::Emergency]);
    let m = AutoContextMemory::new(cfg, FakeSummarizer::fixed("s"), MemoryStore::new()).unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed, "{r:?}");
    let notice = m.messages().iter().map(text_of).find(|t| t.starts_with("[Context note")).expect("a notice");
    let ids = index_of(&notice);
    assert!(ids.iter().any(|i| i == "module_0_handler.py"), "{notice}");
    check_recoverable(&m, "index-emergency");
}

/// Every identifier of the index lines a replay of the corpus trace `name` writes, as
/// `autocontext compress --max-token 32000` replays it (the default options, the offline
/// summarizer, a pass before every model call and one at the end); `None` without the corpus.
fn corpus_index(name: &str) -> Option<Vec<String>> {
    let path = corpus_dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).ok()?;
    let trace: Value = serde_json::from_str(&text).unwrap();
    let cfg = Config { session_id: name.to_string(), max_token: 32_000, ..Config::default() };
    let memory = AutoContextMemory::new(cfg, autocontext::OfflineSummarizer, MemoryStore::new()).unwrap();
    let mut found = Vec::new();
    let mut collect = |memory: &AutoContextMemory<autocontext::OfflineSummarizer, MemoryStore>| {
        for m in memory.working().iter().filter(|m| m.synthetic.is_some()) {
            for id in index_of(&m.payload_text()) {
                if !found.contains(&id) {
                    found.push(id);
                }
            }
        }
    };
    for m in trace["messages"].as_array().unwrap() {
        if m["role"] == "assistant" {
            block_on(memory.compress_if_needed()).unwrap();
            collect(&memory);
        }
        memory.add(m).unwrap();
    }
    block_on(memory.compress_if_needed()).unwrap();
    collect(&memory);
    Some(found)
}

#[test]
fn the_index_of_corpus_traces_lists_no_escape_and_nothing_without_a_letter_or_digit() {
    // Tool-call arguments are JSON text: `"cat <<'EOF' > t.py\nimport sys\nsys.path.insert(...)"`
    // read as raw text gave `sys\nsys.path.insert`, `\n\nprint`, `f:\n` (41 of 66 items of the
    // first trace) and `do\n`, `end\n\n`, `\n\n` (8 of 148 of the second).
    for name in ["mini-swe-agent-deepseek-django-11910", "claude-code-spotter-fa812bfe"] {
        let Some(ids) = corpus_index(name) else {
            skip_without_corpus(&format!("the corpus trace {name} is not there (AUTOCONTEXT_CORPUS names its folder)"));
            continue;
        };
        if std::env::var_os("SHOW").is_some() {
            eprintln!("{name}: {ids:?}");
        }
        assert!(ids.len() >= 20, "{name}: only {} identifiers listed: {ids:?}", ids.len());
        let escapes = ['n', 't', 'r', '"', 'u'];
        let bad: Vec<&String> = ids
            .iter()
            .filter(|w| {
                !w.chars().any(char::is_alphanumeric) || w.split('\\').skip(1).any(|after| after.is_empty() || after.starts_with(escapes))
            })
            .collect();
        assert!(bad.is_empty(), "{name}: {} of {} listed items are escapes or hold one: {bad:?}", bad.len(), ids.len());
    }
}
