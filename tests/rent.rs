//! A bill that follows the cache: stale tool results become stubs when the rent they pay has
//! paid for the rewrite, and not before; a cold cache (the clock past the cache's lifetime, or
//! a provider that reads nothing from it) makes every edit free; prices follow the format and
//! are checked.

mod common;

use std::cell::Cell;
use std::rc::Rc;

use autocontext::{AutoContextMemory, Clock, CompressResult, Config, ErrorCode, Format, MemoryStore, NoSummarizer, Summarizer};
use common::*;
use serde_json::{json, Value};

/// A clock the test moves.
#[derive(Clone, Default)]
struct FakeClock(Rc<Cell<f64>>);

impl FakeClock {
    fn advance(&self, ms: f64) {
        self.0.set(self.0.get() + ms);
    }
}

impl Clock for FakeClock {
    fn now_ms(&self) -> f64 {
        self.0.get()
    }
}

/// The default policy in a window too large to fill: only the price of tokens moves a pass.
/// Results are cut at arrival above 10,000 characters, so the tests' results come whole.
fn options(extra: Value) -> Config {
    let mut o = json!({"sessionId": "rent", "maxToken": 1_000_000, "toolResultLimit": 10_000});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        o[k] = v;
    }
    Config::from_json(&o).unwrap()
}

fn memory<S: Summarizer>(config: Config, summarizer: S, clock: &FakeClock) -> AutoContextMemory<S, MemoryStore> {
    AutoContextMemory::new(config, summarizer, MemoryStore::new()).unwrap().with_clock(clock.clone())
}

/// One step of an agent's loop, a second apart: the pass before the model call, the model's
/// call of `read` and its result of `chars` characters. Returns the pass's result.
fn step<S: Summarizer>(m: &AutoContextMemory<S, MemoryStore>, clock: &FakeClock, k: usize, chars: usize) -> CompressResult {
    clock.advance(1_000.0);
    let r = block_on(m.compress_if_needed()).unwrap();
    let id = format!("c{k}");
    m.add(&json!({"role": "assistant", "content": null, "tool_calls": [call(&id, "read")]})).unwrap();
    m.add(&json!({"role": "tool", "tool_call_id": id, "content": format!("/src/module_{k}.rs: listing\n{}\nfn helper_{k}_parse at line {}\n", filler(&id, chars), 4_000 + k)})).unwrap();
    r
}

fn stubs(r: &CompressResult) -> usize {
    r.events.iter().filter(|e| e.event_type == "TOOL_RESULT_STUB").count()
}

/// Steps until a pass stubs, at most `max`; the step it came at, or `None`.
fn first_stub<S: Summarizer>(m: &AutoContextMemory<S, MemoryStore>, clock: &FakeClock, max: usize) -> Option<usize> {
    (0..max).find(|&k| stubs(&step(m, clock, k, 4_000)) > 0)
}

#[test]
fn a_stale_batch_is_stubbed_once_its_rent_has_paid_for_the_rewrite_and_not_before() {
    let clock = FakeClock::default();
    let m = memory(options(json!({"format": "openai", "prices": {"cacheWrite": 1.25}})), NoSummarizer, &clock);
    m.add(&json!([system("agent"), user("map the modules")])).unwrap();
    let mut before = Vec::new();
    let mut at = None;
    for k in 0..60 {
        before = m.messages();
        let r = step(&m, &clock, k, 4_000);
        if stubs(&r) > 0 {
            at = Some((k, r));
            break;
        }
        assert!(!r.compressed, "step {k}: nothing but a stub is due in a window this large: {r:?}");
    }
    let (k, r) = at.expect("the rent of stale results pays for their stubs within 60 calls");
    // Not at once: the results went stale four results after they came, and their rent then
    // had to reach the price of re-sending what follows them.
    assert!(k >= 8, "stubbed at step {k}, before the rent could have paid");
    let after = m.messages();
    let results: Vec<usize> = (0..before.len()).filter(|&i| before[i]["role"] == "tool").collect();
    // The newest results are never stubbed, and neither is anything outside the batch.
    for &i in &results[results.len() - 4..] {
        assert_eq!(after[i], before[i], "one of the newest results changed");
    }
    let stubbed: Vec<usize> = results.iter().copied().filter(|&i| after[i] != before[i]).collect();
    assert_eq!(stubbed.len(), stubs(&r));
    assert!(stubbed.windows(2).all(|w| results.iter().filter(|&&i| i > w[0] && i < w[1]).count() == 0), "one batch: {stubbed:?}");
    for &i in &stubbed {
        let text = after[i]["content"].as_str().unwrap();
        assert!(text.starts_with(&format!("/src/module_{}.rs: listing\n", (i - 3) / 2)), "the first line stays: {text}");
        assert!(text.contains(&format!("[Identifiers in what was offloaded: helper_{}_parse", (i - 3) / 2)), "{text}");
        assert_eq!(markers_in(&after[i]).len(), 1, "{text}");
        assert!(text.len() < 1_200, "a stub is short: {} characters", text.len());
        assert_eq!(after[i]["tool_call_id"], before[i]["tool_call_id"]);
    }
    assert!(r.tokens_after < r.tokens_before);
    check_recoverable(&m, "stubs");
    assert_valid(&m, "stubs");
    // The rewrite was bought: the next calls rent the stubs, nothing changes.
    for j in 0..3 {
        let r = step(&m, &clock, 100 + j, 4_000);
        assert!(!r.compressed, "{r:?}");
    }
}

#[test]
fn the_prices_decide_when_stubs_pay() {
    let when = |prices: Value| {
        let clock = FakeClock::default();
        let m = memory(options(json!({"format": "openai", "prices": prices})), NoSummarizer, &clock);
        m.add(&json!([system("agent"), user("map the modules")])).unwrap();
        first_stub(&m, &clock, 80)
    };
    let anthropic = when(json!({"cacheWrite": 1.25})).expect("due with Anthropic's prices");
    let openai = when(json!({})).expect("due with OpenAI's prices");
    let hour = when(json!({"cacheWrite": 2})).expect("due with the hour cache's write price");
    assert!(openai <= anthropic && anthropic < hour, "a dearer rewrite waits longer: {openai}, {anthropic}, {hour}");
    // A rewrite that costs nothing pays at once: the first result is stubbed as soon as four
    // newer ones have come.
    assert_eq!(when(json!({"cacheRead": 1, "cacheWrite": 1})), Some(5));
    // No rent, no stub.
    assert_eq!(when(json!({"cacheRead": 0})), None);
}

#[test]
fn a_cache_past_its_lifetime_is_cold_and_every_stale_result_is_stubbed_at_once() {
    let clock = FakeClock::default();
    let m = memory(options(json!({"format": "anthropic"})), NoSummarizer, &clock);
    m.add(&json!({"role": "user", "content": "map the modules"})).unwrap();
    let step = |k: usize| {
        clock.advance(1_000.0);
        let r = block_on(m.compress_if_needed()).unwrap();
        let id = format!("c{k}");
        m.add(&json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "read", "input": {}}]})).unwrap();
        m.add(&json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": filler(&id, 4_000)}]})).unwrap();
        r
    };
    for k in 0..7 {
        assert!(!step(k).compressed);
    }
    // The results are young: the rent has paid for nothing yet. A pause past the five minutes
    // the cache lives leaves nothing cached, and the next request is written whole anyway.
    clock.advance(300_001.0);
    let r = block_on(m.compress_if_needed()).unwrap();
    assert_eq!(stubs(&r), 3, "every result but the newest four: {r:?}");
    check_recoverable(&m, "cold");
    // A pause within the lifetime changes nothing.
    step(7);
    clock.advance(299_000.0);
    assert!(!block_on(m.compress_if_needed()).unwrap().compressed);
    // The lifetime is the option's: the hour cache.
    let m = memory(options(json!({"format": "anthropic", "prices": {"cacheTtlMs": 3_600_000}})), NoSummarizer, &clock);
    m.add(&json!({"role": "user", "content": "go"})).unwrap();
    block_on(m.compress_if_needed()).unwrap();
    clock.advance(600_000.0);
    assert!(!m.needs_compression(), "ten minutes is within the hour");
}

#[test]
fn a_restored_memory_sees_the_pause_since_its_last_call() {
    let clock = FakeClock::default();
    let m = memory(options(json!({})), NoSummarizer, &clock);
    m.add(&json!([system("agent"), user("map the modules")])).unwrap();
    for k in 0..7 {
        step(&m, &clock, k, 4_000);
    }
    let state = m.to_json();
    clock.advance(400_000.0);
    let restored = AutoContextMemory::from_json(&state, Some(NoSummarizer), MemoryStore::new(), None).unwrap().with_clock(clock.clone());
    assert!(restored.needs_compression(), "the state remembers when the last call was");
    assert_eq!(stubs(&block_on(restored.compress_if_needed()).unwrap()), 3);
}

#[test]
fn a_provider_that_reads_nothing_from_its_cache_twice_is_not_caching() {
    let clock = FakeClock::default();
    let m = memory(options(json!({})), NoSummarizer, &clock);
    m.add(&json!([system("agent"), user("map the modules")])).unwrap();
    for k in 0..7 {
        step(&m, &clock, k, 4_000);
    }
    let prompt = m.token_count();
    // One report that read nothing is the first call after a pause: it wrote the cache.
    m.observe_usage(prompt, Some(0)).unwrap();
    assert!(!m.needs_compression());
    // Two in a row: the requests are not cached (no breakpoints), so no edit costs a rewrite.
    m.observe_usage(prompt, Some(0)).unwrap();
    assert!(m.needs_compression());
    assert_eq!(stubs(&block_on(m.compress_if_needed()).unwrap()), 3);
    // Once the provider reads from its cache again, stubs wait for their rent.
    m.observe_usage(prompt, Some(prompt / 2)).unwrap();
    step(&m, &clock, 7, 4_000);
    assert!(!m.needs_compression());
}

#[test]
fn a_cold_cache_compacts_deep_when_the_summary_pays() {
    let clock = FakeClock::default();
    // A 100k window: the trigger at 75,000 tokens, the low-water mark at 18,750.
    let config = options(json!({"maxToken": 100_000, "format": "openai"}));
    let summarizer = FakeSummarizer::new(Mode::Digest);
    let m = memory(config, summarizer.clone(), &clock);
    m.add(&json!([system("agent"), user("map the modules")])).unwrap();
    let mut k = 0;
    while m.token_count() < 50_000 {
        let r = step(&m, &clock, k, 1_100);
        assert!(!r.events.iter().any(|e| e.summarize_input_tokens.is_some()), "no summary before the pause: {r:?}");
        k += 1;
    }
    let calls = summarizer.calls();
    clock.advance(600_000.0);
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.tokens_after < r.low_water_tokens, "compacted to the low-water mark: {r:?}");
    assert!(summarizer.calls() > calls, "by a summary, not by offloading rounds whole: {r:?}");
    assert!(!r.events.iter().any(|e| e.event_type == "EMERGENCY_OFFLOAD"), "{r:?}");
    check_recoverable(&m, "deep");
    assert_requests_valid(Format::OpenAi, &summarizer, "deep");
    // Without a summarizer there is nothing that pays to go deeper than the stubs.
    let m = memory(options(json!({"maxToken": 100_000})), NoSummarizer, &clock);
    m.add(&json!([system("agent"), user("map the modules")])).unwrap();
    let mut k = 0;
    while m.token_count() < 50_000 {
        step(&m, &clock, k, 1_100);
        k += 1;
    }
    clock.advance(600_000.0);
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.events.iter().all(|e| e.event_type == "TOOL_RESULT_STUB"), "{r:?}");
}

#[test]
fn prices_follow_the_format_and_a_wrong_one_names_its_field() {
    for (format, write) in [("anthropic", 1.25), ("ai-sdk", 1.25), ("openai", 1.0), ("openai-responses", 1.0), ("gemini", 1.0)] {
        let c = Config::from_json(&json!({"format": format})).unwrap();
        assert_eq!((c.prices().cache_read, c.prices().cache_write), (0.1, write), "{format}");
    }
    let c = Config::from_json(&json!({"format": "anthropic", "prices": {"cacheWrite": 2, "cacheTtlMs": 3_600_000}})).unwrap();
    assert_eq!((c.prices().cache_write, c.prices().cache_ttl_ms, c.prices().summarize_output), (2.0, 3_600_000, 5.0));
    assert_eq!(Config::from_json(&c.to_json()).unwrap(), c, "given prices are saved and restored");
    for (prices, field) in [
        (json!({"cacheRead": -0.1}), "prices.cacheRead"),
        (json!({"cacheRead": 0.5, "cacheWrite": 0.2}), "prices.cacheRead"),
        (json!({"cacheWrite": "1.25"}), "prices.cacheWrite"),
        (json!({"cacheTtlMs": -1}), "prices.cacheTtlMs"),
        (json!({"summarizeInput": 1e9}), "prices.summarizeInput"),
        (json!({"cache_read": 0.1}), "prices.cache_read"),
        (json!([0.1, 1.25]), "prices"),
    ] {
        let e = Config::from_json(&json!({"prices": prices})).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidConfig, "{prices}");
        assert_eq!(e.field(), Some(field), "{prices}: {}", e.message());
        assert!(e.message().contains(field), "{}", e.message());
    }
}
