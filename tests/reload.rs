//! Reloads are confined to the session's own offloads: a malformed uuid is an argument error,
//! an unknown one — including another session's, in the very same store — is not found. The
//! model's `context_reload` call gets its answer as text.

mod common;

use autocontext::{AutoContextMemory, ErrorCode, MemoryStore};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, MemoryStore>;

/// A memory over `store` whose one big tool result was truncated (one offload).
fn with_offload(session: &str, store: &MemoryStore, seed: &str) -> (Mem, String, Value) {
    let big = tool_result(&format!("{seed}-c0"), 80_000);
    let m = AutoContextMemory::new(config(session, 16_000), FakeSummarizer::fixed("s"), store.clone()).unwrap();
    m.add(&json!([user("read it"), assistant_calls(&[&format!("{seed}-c0")]), big.clone()])).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed);
    let uuid = m.offloads()[0].uuid.clone();
    (m, uuid, big)
}

#[test]
fn malformed_uuids_are_argument_errors() {
    let (m, uuid, _) = with_offload("s1", &MemoryStore::new(), "a");
    for bad in [
        "",
        "abc",
        "not-a-uuid-at-all-but-36-characters!",
        "../s1/x",
        &format!("s1/{uuid}"),
        &format!("{{{uuid}}}"),
        &format!("{uuid} "),
        &uuid.replace('-', ""),
        &format!("urn:uuid:{uuid}"),
    ] {
        let e = block_on(m.reload(bad)).expect_err(bad);
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad:?}: {e:?}");
        assert_eq!(e.field(), Some("uuid"));
    }
    assert!(block_on(m.reload(&uuid)).is_ok());
}

#[test]
fn unknown_uuids_are_not_found() {
    let (m, _, _) = with_offload("s1", &MemoryStore::new(), "a");
    let e = block_on(m.reload("0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a")).unwrap_err();
    assert_eq!(e.code(), ErrorCode::NotFound);
}

#[test]
fn another_sessions_offload_in_the_same_store_is_not_found() {
    let store = MemoryStore::new();
    let (a, ua, big_a) = with_offload("alpha", &store, "a");
    let (b, ub, big_b) = with_offload("beta", &store, "b");
    assert_eq!(store.len(), 2, "both sessions wrote to the one store");
    assert_eq!(block_on(a.reload(&ua)).unwrap(), vec![big_a]);
    assert_eq!(block_on(b.reload(&ub)).unwrap(), vec![big_b]);
    assert_eq!(block_on(a.reload(&ub)).unwrap_err().code(), ErrorCode::NotFound);
    assert_eq!(block_on(b.reload(&ua)).unwrap_err().code(), ErrorCode::NotFound);
    // Even a second memory with the same session id cannot read what it did not offload.
    let (c, uc, _) = with_offload("alpha", &store, "c");
    assert_eq!(block_on(c.reload(&ua)).unwrap_err().code(), ErrorCode::NotFound);
    assert_eq!(block_on(a.reload(&uc)).unwrap_err().code(), ErrorCode::NotFound);
    // And the model asking for it gets a plain answer, not the content.
    let text = block_on(a.handle_reload_call(&json!({"working_context_offload_uuid": ub}))).unwrap();
    assert!(!text.contains(&filler("b-c0", 80)), "{text}");
}

#[test]
fn an_offload_deleted_from_the_store_is_not_found() {
    let store = MemoryStore::new();
    let (m, uuid, _) = with_offload("gone", &store, "a");
    block_on(autocontext::OffloadStore::delete(&store, &format!("gone/{uuid}"))).unwrap();
    assert_eq!(block_on(m.reload(&uuid)).unwrap_err().code(), ErrorCode::NotFound);
}

#[test]
fn a_corrupt_store_entry_is_a_store_error() {
    let store = MemoryStore::new();
    let (m, uuid, _) = with_offload("corrupt", &store, "a");
    let key = format!("corrupt/{uuid}");
    for junk in ["not json", "{\"messages\": []}", "[1,2,3]"] {
        block_on(autocontext::OffloadStore::put(&store, &key, junk)).unwrap();
        assert_eq!(block_on(m.reload(&uuid)).unwrap_err().code(), ErrorCode::StoreFailed, "{junk}");
    }
}

#[test]
fn the_reload_tool_answers_the_model_in_text() {
    let (m, uuid, big) = with_offload("tool", &MemoryStore::new(), "a");
    let original = big["content"].as_str().unwrap();
    let args = json!({"working_context_offload_uuid": uuid});
    let shapes = [
        args.clone(),
        Value::String(args.to_string()),
        json!({"id": "r1", "type": "function", "function": {"name": "context_reload", "arguments": args.to_string()}}),
    ];
    for call in shapes {
        let text = block_on(m.handle_reload_call(&call)).unwrap();
        assert!(text.contains(&uuid), "{call}");
        assert!(text.chars().count() <= m.config().offload_reload_limit as usize, "one answer stays within offloadReloadLimit");
        assert!(text.contains("page 1 of"), "80000 characters come in pages ({call})");
    }
    assert!(all_pages(&m, &uuid).contains(original), "the pages hold the whole original");
    let text = block_on(m.handle_reload_call(&json!({"working_context_offload_uuid": "0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a"}))).unwrap();
    assert!(text.contains("No offloaded context"), "{text}");
    let text = block_on(m.handle_reload_call(&json!({"working_context_offload_uuid": "../../etc"}))).unwrap();
    assert!(text.contains("No offloaded context"), "{text}");
    // A uuid argument of any length is quoted short (found by the state fuzz target).
    let long = format!("0b3e3a9c-5d1f-4e08{}", "0".repeat(5_000));
    let text = block_on(m.handle_reload_call(&json!({"working_context_offload_uuid": long}))).unwrap();
    assert!(text.starts_with("No offloaded context") && text.contains("5018 characters"), "{text}");
    assert!(text.chars().count() < 200, "{text}");
    let text = block_on(m.handle_reload_call(&json!({"uuid": uuid}))).unwrap();
    assert!(text.contains("working_context_offload_uuid"), "{text}");
    let text = block_on(m.handle_reload_call(&json!(17))).unwrap();
    assert!(text.contains("working_context_offload_uuid"), "{text}");

    let tool = m.format().reload_tool();
    assert_eq!(tool["function"]["name"], "context_reload");
    assert_eq!(tool["function"]["parameters"]["required"], json!(["working_context_offload_uuid"]));
}

/// The content of every page of a reload, in order, without the headers and notes.
fn all_pages(m: &Mem, uuid: &str) -> String {
    let mut out = String::new();
    for page in 1..1_000 {
        let text = block_on(m.handle_reload_call(&json!({"working_context_offload_uuid": uuid, "page": page}))).unwrap();
        let body = &text[text.find('\n').unwrap() + 1..];
        let note = body.rfind("\n[Page ").expect("a paged answer ends with its note");
        out.push_str(&body[..note]);
        if body[note..].contains("the end of offload") {
            return out;
        }
    }
    panic!("no last page");
}

#[test]
fn offloads_reload_from_the_store_alone() {
    // What compress() leaves behind: a store, a session id, offload records; no memory.
    let store = MemoryStore::new();
    let (m, uuid, big) = with_offload("stateless", &store, "a");
    let records = m.offloads();
    let fresh = AutoContextMemory::new(config("stateless", 16_000), FakeSummarizer::fixed("s"), store.clone()).unwrap();
    assert_eq!(block_on(fresh.reload(&uuid)).unwrap_err().code(), ErrorCode::NotFound, "a new memory's index is empty");

    use autocontext::engine::reload::{handle_call, reload};
    use autocontext::Format;
    for (format, records) in [(None, None), (Some(Format::OpenAi), None), (Some(Format::OpenAi), Some(&records[..]))] {
        assert_eq!(block_on(reload(&store, "stateless", &uuid, format, records)).unwrap(), vec![big.clone()]);
    }
    // The model's call reads the same whether the memory answers it or the store alone.
    let limit = m.config().offload_reload_limit as usize;
    for page in [1, 2, 9] {
        let call = json!({"id": "r", "type": "function", "function": {"name": "context_reload",
            "arguments": json!({"working_context_offload_uuid": uuid, "page": page}).to_string()}});
        let want = block_on(m.handle_reload_call(&call)).unwrap();
        assert_eq!(block_on(handle_call(&store, "stateless", &call, Format::OpenAi, limit, None)).unwrap(), want);
        assert_eq!(block_on(handle_call(&store, "stateless", &call, Format::OpenAi, limit, Some(&records))).unwrap(), want);
    }

    // Another session, another format, a uuid outside the records: not this offload.
    assert_eq!(block_on(reload(&store, "other", &uuid, None, None)).unwrap_err().code(), ErrorCode::NotFound);
    assert_eq!(block_on(reload(&store, "stateless", &uuid, Some(Format::Anthropic), None)).unwrap_err().code(), ErrorCode::StoreFailed);
    assert_eq!(block_on(reload(&store, "stateless", &uuid, None, Some(&[]))).unwrap_err().code(), ErrorCode::NotFound);
    assert_eq!(block_on(reload(&store, "stateless", "../x", None, None)).unwrap_err().code(), ErrorCode::InvalidArgument);
    let args = json!({"working_context_offload_uuid": uuid});
    let text = block_on(handle_call(&store, "stateless", &args, Format::OpenAi, limit, Some(&[]))).unwrap();
    assert!(text.starts_with("No offloaded context"), "{text}");
    let text = block_on(handle_call(&store, "other", &args, Format::OpenAi, limit, None)).unwrap();
    assert!(text.starts_with("No offloaded context"), "{text}");

    // A payload edited in place still reads without the records (the envelope holds), and is
    // refused with them: the digest is what tells.
    let key = format!("stateless/{uuid}");
    let raw = block_on(autocontext::OffloadStore::get(&store, &key)).unwrap().unwrap();
    let edited = raw.replacen("a-c0", "a-c9", 1);
    assert_ne!(raw, edited);
    block_on(autocontext::OffloadStore::put(&store, &key, &edited)).unwrap();
    assert!(block_on(reload(&store, "stateless", &uuid, None, None)).is_ok());
    assert_eq!(block_on(reload(&store, "stateless", &uuid, None, Some(&records))).unwrap_err().code(), ErrorCode::StoreFailed);
    assert_eq!(
        block_on(handle_call(&store, "stateless", &args, Format::OpenAi, limit, Some(&records))).unwrap_err().code(),
        ErrorCode::StoreFailed
    );
}

#[test]
fn one_reload_of_a_rolled_summary_gives_every_original_it_stands_for() {
    // Prefix summaries appended, then folded into one, twice: each offload stores its own span and
    // names the one before, and one reload of the newest marker gives all their originals.
    let store = MemoryStore::new();
    let mut cfg = config("chain", 6_000);
    cfg.strategies = Some(vec![autocontext::Strategy::PrefixSummary]);
    let m = AutoContextMemory::new(cfg, FakeSummarizer::fixed("the work so far"), store.clone()).unwrap();
    let mut added = vec![system("agent"), user("the task")];
    m.add(&Value::Array(added.clone())).unwrap();
    let folded = |m: &Mem| {
        m.working()
            .iter()
            .find_map(|w| w.synthetic.as_ref().filter(|s| s.kind == "PREFIX_SUMMARY" && s.generation.unwrap_or(1) >= 3)?.offload.clone())
    };
    let mut r = 0;
    while folded(&m).is_none() {
        assert!(r < 400, "no summary folded two generations");
        let round = tool_round(&format!("r{r}"), 2, 1_200);
        m.add(&Value::Array(round.clone())).unwrap();
        added.extend(round);
        block_on(m.compress_if_needed()).unwrap();
        r += 1;
    }
    let newest = folded(&m).unwrap();
    let working = m.messages();
    assert_eq!(working[1], added[1], "the task stays");
    let back = block_on(m.reload(&newest)).unwrap();
    assert_eq!(back[0], added[2], "the folded summary starts after the task");
    assert!(back.iter().all(|v| markers_in(v).is_empty()), "originals only, every earlier summary expanded");
    let first_kept = added.iter().position(|a| working[3..].contains(a)).unwrap();
    assert_eq!(back, added[2..first_kept].to_vec(), "the originals before the kept tail, in order");
    let markers = [newest];
    // The model's call reads them too, and the store alone gives the same.
    let text = all_pages(&m, &markers[0]);
    assert!(text.contains("r0-c0") && !text.contains("CONTEXT_OFFLOAD"), "{}", &text[..300]);
    use autocontext::engine::reload::reload;
    assert_eq!(block_on(reload(&store, "chain", &markers[0], None, None)).unwrap(), back);
    assert_eq!(block_on(reload(&store, "chain", &markers[0], None, Some(&m.offloads()))).unwrap(), back);
    // Each offload stores its own span: the history is stored about once, not once per pass.
    let stored: usize = store.keys().iter().map(|k| block_on(autocontext::OffloadStore::get(&store, k)).unwrap().unwrap().len()).sum();
    let history: usize = added.iter().map(|v| v.to_string().len()).sum();
    assert!(stored < 2 * history, "{stored} bytes stored for {history} bytes of history");

    // A loop in the store (an offload that names itself further down) is refused, not followed.
    let key = format!("chain/{}", markers[0]);
    let raw = block_on(autocontext::OffloadStore::get(&store, &key)).unwrap().unwrap();
    let v: Value = serde_json::from_str(&raw).unwrap();
    let inner = v["expand"][0]["uuid"].as_str().unwrap().to_string();
    let inner_key = format!("chain/{inner}");
    let inner_raw = block_on(autocontext::OffloadStore::get(&store, &inner_key)).unwrap().unwrap();

    // Two messages of one replacement (a summary and its reply, a call and its result) both name
    // its offload: the originals come back once, in the place of the first. Here the folded
    // summary's first two messages (two earlier summaries) are made to name the same offload.
    let expand = v["expand"].as_array().unwrap();
    assert!(expand.len() >= 2 && expand[1]["at"].as_u64() == Some(expand[0]["at"].as_u64().unwrap() + 1), "{v}");
    let (first, second) = (expand[0]["uuid"].as_str().unwrap(), expand[1]["uuid"].as_str().unwrap());
    let at = expand[0]["at"].as_u64().unwrap() as usize;
    let first_back = block_on(reload(&store, "chain", first, None, None)).unwrap();
    let second_back = block_on(reload(&store, "chain", second, None, None)).unwrap();
    let mut doubled = v.clone();
    doubled["expand"][1] = json!({"at": at + 1, "uuid": first, "messageCount": expand[0]["messageCount"]});
    block_on(autocontext::OffloadStore::put(&store, &key, &doubled.to_string())).unwrap();
    let mut once = back.clone();
    once.drain(at + first_back.len()..at + first_back.len() + second_back.len());
    assert_eq!(block_on(reload(&store, "chain", &markers[0], None, None)).unwrap(), once);
    block_on(autocontext::OffloadStore::put(&store, &key, &raw)).unwrap();
    let mut looped: Value = serde_json::from_str(&inner_raw).unwrap();
    looped["expand"] = json!([{"at": 0, "uuid": markers[0], "messageCount": v["messages"].as_array().unwrap().len()}]);
    block_on(autocontext::OffloadStore::put(&store, &inner_key, &looped.to_string())).unwrap();
    let e = block_on(reload(&store, "chain", &markers[0], None, None)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::StoreFailed, "{e:?}");
    // With the records, the edited payload fails its digest first.
    assert_eq!(block_on(m.reload(&markers[0])).unwrap_err().code(), ErrorCode::StoreFailed);
}

#[test]
fn a_reload_answer_is_a_page_truncation_leaves_whole() {
    // Results over 2,000 characters are cut at arrival; a reload's page of 8,000 is not: the
    // model asked for exactly that text, and cutting it again would only nest offloads.
    let store = MemoryStore::new();
    let cfg = autocontext::Config { tool_result_limit: 2_000, ..config("pages", 200_000) };
    let m = AutoContextMemory::new(cfg, FakeSummarizer::fixed("s"), store).unwrap();
    m.add(&json!([user("read it"), assistant_calls(&["c0"]), tool_result("c0", 30_000)])).unwrap();
    assert!(block_on(m.compress_if_needed()).unwrap().compressed, "the new result is cut");
    let uuid = m.offloads()[0].uuid.clone();
    let call = json!({"id": "r1", "type": "function", "function": {"name": "context_reload", "arguments": json!({"working_context_offload_uuid": uuid}).to_string()}});
    m.add(&json!({"role": "assistant", "content": null, "tool_calls": [call.clone()]})).unwrap();
    let page = block_on(m.handle_reload_call(&call)).unwrap();
    assert!(page.chars().count() > 6_000 && page.chars().count() <= 8_000, "{} characters", page.chars().count());
    m.add(&json!({"role": "tool", "tool_call_id": "r1", "content": page})).unwrap();
    assert!(!m.needs_compression(), "no pass for a reload's page");
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(!r.compressed, "{r:?}");
    assert_eq!(m.messages().last().unwrap()["content"], json!(page));
    // Another tool's result of the same length is cut as it comes.
    m.add(&json!([assistant_calls(&["c1"]), tool_result("c1", 8_000)])).unwrap();
    assert!(block_on(m.compress_if_needed()).unwrap().events.iter().any(|e| e.event_type == "TOOL_RESULT_TRUNCATE"));
}
