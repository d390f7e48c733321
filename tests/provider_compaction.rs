//! Provider-native compaction passes through: Anthropic's `compaction` block and the Responses
//! API's `compaction` item are kept byte-exact and counted, never summarized, shortened or
//! split, and treated as the start of what the provider already condensed: what comes before the
//! latest one goes whole behind one notice, first in every pass, and no summarizer ever reads it.

mod common;

use autocontext::strategy::Strategy;
use autocontext::{AutoContextMemory, Config, Format, MemoryStore, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, MemoryStore>;

fn memory(format: Format, cfg: Config, summarizer: Option<FakeSummarizer>) -> Mem {
    let mut cfg = cfg;
    cfg.format = format;
    AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), summarizer, MemoryStore::new()).unwrap()
}

fn events(m: &Mem) -> Vec<String> {
    m.events().into_iter().map(|e| e.event_type).collect()
}

/// Rounds of tool work before the provider compacted, the compaction, and rounds after it, in
/// `format` (converted from the OpenAI shape), with the compaction spliced in.
fn compacted(format: Format, before: usize, after: usize) -> (Vec<Value>, Value) {
    let mut early = Vec::new();
    for r in 0..before {
        early.extend(tool_round(&format!("old{r}"), 2, 5_000));
    }
    let mut late = Vec::new();
    for r in 0..after {
        late.extend(tool_round(&format!("new{r}"), 2, 5_000));
    }
    late.push(user("and now?"));
    let compaction = match format {
        Format::Anthropic => json!({"role": "assistant", "content": [
            {"type": "compaction", "content": "The user and the assistant read old0 to old3; every file holds parsers."},
            {"type": "text", "text": "Carrying on."}]}),
        _ => json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAB".repeat(200)}),
    };
    let mut msgs = convert(format, &early);
    if format == Format::Anthropic {
        // The compaction answers the last user turn: a user turn must come before it.
        msgs.push(json!({"role": "user", "content": "Go on."}));
    }
    msgs.push(compaction.clone());
    let rest = convert(format, &late);
    msgs.extend(rest);
    (msgs, compaction)
}

#[test]
fn what_the_provider_condensed_goes_first_whole_and_the_compaction_stays_byte_exact() {
    for format in [Format::Anthropic, Format::OpenAiResponses] {
        let what = format.name();
        let (msgs, compaction) = compacted(format, 4, 3);
        let at = msgs.iter().position(|m| *m == compaction).unwrap();
        let summarizer = FakeSummarizer::digest();
        let cfg = Config { session_id: format!("cmp-{what}"), max_token: 20_000, ..Config::default() };
        let m = memory(format, cfg, Some(summarizer.clone()));
        m.add(&Value::Array(msgs.clone())).unwrap();
        assert_eq!(m.messages(), msgs, "{what}: untouched, the list is the host's");
        let before = m.token_count();
        let r = block_on(m.compress_if_needed()).unwrap();
        assert!(r.compressed && r.under_target, "{what}: {r:?}");
        assert_eq!(events(&m)[0], "PROVIDER_COMPACTION_OFFLOAD", "{what}: first in the pass: {:?}", events(&m));
        let out = m.messages();
        // One notice in place of everything before the compaction, which is there as it came.
        let c = out.iter().position(|w| *w == compaction).unwrap_or_else(|| panic!("{what}: the compaction is gone"));
        assert_eq!(c, 1, "{what}: {}", Value::Array(out[..2].to_vec()));
        assert!(out[0].to_string().contains("provider's compaction"), "{what}: {}", out[0]);
        assert!(m.token_count() < before);
        // No summarizer read what the provider condensed.
        for q in summarizer.requests.borrow().iter() {
            let shown = format!("{}{}", q.prompt, Value::Array(q.messages.clone()));
            assert!(!shown.contains("question old") && !shown.contains("old0-c0"), "{what}: a {} request reads condensed work", q.kind);
            assert!(
                !shown.contains("gAAAAB") && !shown.contains("every file holds parsers"),
                "{what}: a {} request reads the compaction",
                q.kind
            );
        }
        assert_valid(&m, what);
        check_recoverable(&m, what);
        assert_untouched_are_identical(&m, what);
        assert_requests_valid(format, &summarizer, what);
        // The compaction stays through later passes, never shortened, summarized or moved out.
        // (The model answers the last question first, so the turns go on alternating.)
        let mut more = vec![answer("Nothing else.")];
        more.extend((0..4).flat_map(|r| tool_round(&format!("more{r}"), 2, 6_000)));
        let more = convert(format, &more);
        for (i, v) in more.iter().cloned().enumerate() {
            if starts_response(format, &more, i) {
                block_on(m.compress_if_needed()).unwrap();
                assert!(m.messages().contains(&compaction), "{what}: a pass took the compaction: {:?}", events(&m));
                assert_valid(&m, what);
            }
            m.add(&v).unwrap();
        }
        assert_eq!(events(&m).iter().filter(|e| *e == "PROVIDER_COMPACTION_OFFLOAD").count(), 1, "{what}: {:?}", events(&m));
        assert!(at > 10);
    }
}

#[test]
fn the_compaction_is_counted_and_runs_first_in_every_ladder() {
    let (msgs, compaction) = compacted(Format::OpenAiResponses, 3, 1);
    let counter = TokenCounter::new(Tokenizer::O200kBase).unwrap();
    let parsed = Format::OpenAiResponses.parse(0, &compaction).unwrap();
    assert!(counter.count_message(&parsed).unwrap() > 100, "the encrypted content counts its JSON text");
    for strategies in [vec![Strategy::Emergency], vec![Strategy::ToolResultTruncate, Strategy::PrefixSummary, Strategy::Emergency]] {
        let cfg = Config { session_id: "cmp-ladder".into(), max_token: 8_000, strategies: Some(strategies.clone()), ..Config::default() };
        let m = memory(Format::OpenAiResponses, cfg, Some(FakeSummarizer::digest()));
        m.add(&Value::Array(msgs.clone())).unwrap();
        block_on(m.compress_if_needed()).unwrap();
        assert_eq!(events(&m).first().map(String::as_str), Some("PROVIDER_COMPACTION_OFFLOAD"), "{strategies:?}: {:?}", events(&m));
        assert!(m.messages().contains(&compaction));
        check_recoverable(&m, "ladder");
    }
    // Without a compaction the step does nothing, and a list without one is left to the ladder.
    let plain: Vec<Value> = convert(Format::Anthropic, &(0..6).flat_map(|r| tool_round(&format!("p{r}"), 2, 5_000)).collect::<Vec<_>>());
    let m = memory(Format::Anthropic, Config { session_id: "plain".into(), max_token: 8_000, ..Config::default() }, None);
    m.add(&Value::Array(plain)).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    assert!(!events(&m).contains(&"PROVIDER_COMPACTION_OFFLOAD".to_string()), "{:?}", events(&m));
}

#[test]
fn pinned_and_system_messages_before_the_compaction_stay_in_place() {
    let (mut msgs, compaction) = compacted(Format::OpenAiResponses, 3, 1);
    msgs.insert(0, json!({"role": "developer", "content": "Be terse."}));
    let m = memory(Format::OpenAiResponses, Config { session_id: "cmp-pin".into(), max_token: 8_000, ..Config::default() }, None);
    m.add(&Value::Array(msgs.clone())).unwrap();
    let at = msgs.iter().position(|v| v.to_string().contains("question old1")).unwrap();
    m.pin(at).unwrap();
    let pinned = msgs[at].clone();
    block_on(m.compress_if_needed()).unwrap();
    let out = m.messages();
    assert_eq!(out[0], msgs[0], "the developer message stays first");
    assert!(out.contains(&pinned), "the pinned item stays");
    let c = out.iter().position(|w| *w == compaction).unwrap();
    let notes = out[..c].iter().filter(|w| w.to_string().contains("provider's compaction")).count();
    assert_eq!(
        notes,
        2,
        "one notice on each side of the pinned item: {:?}",
        out[..c].iter().map(|w| w.to_string().chars().take(80).collect::<String>()).collect::<Vec<_>>()
    );
    assert_valid(&m, "pinned");
    check_recoverable(&m, "pinned");
}
