//! Persistence: `to_json` → `from_json` restores the same memory (messages, originals, events,
//! offloads, tokens) and reloads still work; a tampered or future state fails with
//! `INVALID_STATE` instead of misbehaving later.

mod common;

use autocontext::{AutoContextMemory, ErrorCode, TokenCounter, Tokenizer};
use common::*;
use serde_json::{json, Value};

type Mem = AutoContextMemory<FakeSummarizer, FlakyStore>;

fn compressed(store: &FlakyStore) -> Mem {
    let mut msgs = vec![system("agent")];
    msgs.extend(tool_round("huge", 1, 30_000));
    for r in 0..4 {
        msgs.extend(tool_round(&format!("r{r}"), 3, 4_000 + 1_500 * r));
    }
    msgs.push(user("and now?"));
    msgs.push(assistant_calls(&["cur"]));
    msgs.push(tool_result("cur", 500));
    let total = tokens_of(&msgs);
    let cfg = config("persist", ((total / 4) as f64 / 0.75) as u64);
    let m = AutoContextMemory::with_counter(
        cfg,
        TokenCounter::new(Tokenizer::O200kBase).unwrap(),
        Some(FakeSummarizer::digest()),
        store.clone(),
    )
    .unwrap();
    m.add(&Value::Array(msgs)).unwrap();
    let r = block_on(m.compress_if_needed()).unwrap();
    assert!(r.compressed && r.under_target);
    assert!(m.events().len() >= 2 && m.working().iter().any(|w| w.synthetic.is_some()));
    m
}

fn restore(state: &Value, store: &FlakyStore) -> autocontext::Result<Mem> {
    AutoContextMemory::from_json(state, Some(FakeSummarizer::digest()), store.clone(), None)
}

#[test]
fn round_trip_restores_everything_and_reloads_still_work() {
    let store = FlakyStore::new();
    let m = compressed(&store);
    // Through text, as a host would keep it.
    let text = serde_json::to_string(&m.to_json()).unwrap();
    let state: Value = serde_json::from_str(&text).unwrap();
    let r = restore(&state, &store).unwrap();
    assert_eq!(r.messages(), m.messages());
    assert_eq!(block_on(r.original_messages()).expect("the log reads back"), block_on(m.original_messages()).expect("the log reads back"));
    assert_eq!(r.events(), m.events());
    assert_eq!(r.offloads(), m.offloads());
    assert_eq!(r.token_count(), m.token_count());
    assert_eq!(r.config(), m.config());
    assert_eq!(r.to_json(), m.to_json());
    let marks: Vec<_> = m.working().iter().map(|w| w.synthetic.clone()).collect();
    let restored_marks: Vec<_> = r.working().iter().map(|w| w.synthetic.clone()).collect();
    assert_eq!(restored_marks, marks, "the engine's marks on its own messages survive");
    assert_valid(&r, "restored");
    check_recoverable(&r, "restored");
    for o in r.offloads() {
        assert_eq!(block_on(r.reload(&o.uuid)).unwrap(), block_on(m.reload(&o.uuid)).unwrap());
    }

    // The restored memory carries on: new messages, another pass, all still recoverable.
    r.add(&answer("done with that")).unwrap();
    r.add(&user(&filler("next big paste", 50_000))).unwrap();
    let before = r.offloads().len();
    block_on(r.compress_if_needed()).unwrap();
    assert!(r.offloads().len() > before, "the restored memory compressed again");
    assert_valid(&r, "restored, continued");
    check_recoverable(&r, "restored, continued");
    // A call id the working list holds is still refused after a restore.
    r.add(&Value::Array(tool_round("late", 1, 100))).unwrap();
    let again = restore(&r.to_json(), &store).unwrap();
    let e = again.add(&assistant_calls(&["late-c0"])).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidMessage);
}

fn assert_invalid(state: &Value, store: &FlakyStore, says: &str) {
    let e = restore(state, store).err().unwrap_or_else(|| panic!("a state that {says} was accepted"));
    assert_eq!(e.code(), ErrorCode::InvalidState, "{says}: {e:?}");
    assert!(e.message().to_lowercase().contains(says), "{:?} should mention {says:?}", e.message());
}

#[test]
fn a_future_or_unversioned_state_is_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    let mut future = state.clone();
    future["autocontext"] = json!(state["autocontext"].as_u64().unwrap() + 1);
    assert_invalid(&future, &store, "newer");
    let mut none = state.clone();
    none.as_object_mut().unwrap().remove("autocontext");
    assert_invalid(&none, &store, "version");
    assert_invalid(&json!([1, 2]), &store, "object");
    assert_invalid(&json!("state"), &store, "object");
}

#[test]
fn a_working_message_naming_an_offload_outside_the_index_is_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    let at = state["working"].as_array().unwrap().iter().position(|w| w["synthetic"]["offload"].is_string()).unwrap();
    let uuid = state["working"][at]["synthetic"]["offload"].as_str().unwrap().to_string();

    // Its offload dropped from the index.
    let mut dropped = state.clone();
    dropped["offloads"].as_array_mut().unwrap().retain(|o| o["uuid"] != uuid.as_str());
    assert_invalid(&dropped, &store, &uuid);

    // Pointed at another (well-formed) uuid.
    let mut other = state.clone();
    other["working"][at]["synthetic"]["offload"] = json!("12345678-1234-4123-8123-123456789abc");
    assert_invalid(&other, &store, "12345678-1234-4123-8123-123456789abc");

    // A malformed or duplicated uuid in the index.
    let mut bad = state.clone();
    bad["offloads"].as_array_mut().unwrap().push(json!({"uuid": "../../etc/passwd", "messageCount": 1}));
    assert_invalid(&bad, &store, "etc/passwd");
    let mut dup = state.clone();
    let first = dup["offloads"][0].clone();
    dup["offloads"].as_array_mut().unwrap().push(first);
    assert_invalid(&dup, &store, "unique");
}

#[test]
fn a_saved_record_with_a_field_missing_or_of_the_wrong_kind_is_refused_by_its_place() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    assert!(state["events"].as_array().is_some_and(|e| !e.is_empty()), "the state has events");
    let at = state["working"].as_array().unwrap().iter().position(|w| w["synthetic"].is_object()).unwrap();
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(Edit, String)> = vec![
        (Box::new(|s| s["offloads"][0]["messageCount"] = json!("two")), "state.offloads[0].messagecount must be a whole number".into()),
        (
            Box::new(|s| s["offloads"][0].as_object_mut().unwrap().remove("uuid").map(drop).unwrap()),
            "state.offloads[0].uuid is missing".into(),
        ),
        (Box::new(|s| s["offloads"] = json!({})), "state.offloads must be an array".into()),
        (Box::new(|s| s["events"][0]["tokensBefore"] = json!(-5)), "state.events[0].tokensbefore must be a whole number, got -5".into()),
        (Box::new(|s| s["events"][0]["type"] = json!(7)), "state.events[0].type must be a string, got 7".into()),
        (
            Box::new(move |s| s["working"][at]["synthetic"]["inPlace"] = json!("yes")),
            format!("state.working[{at}].synthetic.inplace must be true or false"),
        ),
        (Box::new(|s| s["pending"] = json!([1])), "state.pending must hold offload uuids".into()),
        (Box::new(|s| s["calibration"] = json!({"factor": 1.0})), "state.calibration.samples is missing".into()),
        (Box::new(|s| s["cache"] = json!({"emptyReads": 1.5})), "state.cache.emptyreads must be a whole number, got 1.5".into()),
    ];
    for (edit, says) in edits {
        let mut bad = state.clone();
        edit(&mut bad);
        assert_invalid(&bad, &store, &says);
    }
    // Fields a record does not know are left alone, as before.
    let mut extra = state.clone();
    extra["offloads"][0]["note"] = json!("from a later version");
    extra["events"][0]["note"] = json!(1);
    restore(&extra, &store).unwrap();
}

#[test]
fn a_working_list_with_broken_pairing_is_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    let working = state["working"].as_array().unwrap();
    // Drop the assistant message whose calls the last result answers: an orphan result.
    let calls_at = working.iter().rposition(|w| w["message"]["tool_calls"].is_array()).unwrap();
    let mut orphan = state.clone();
    orphan["working"].as_array_mut().unwrap().remove(calls_at);
    assert_invalid(&orphan, &store, "not a valid conversation");

    // A result moved after a later user message: a call without its result.
    let mut moved = state.clone();
    let w = moved["working"].as_array_mut().unwrap();
    let result = w.remove(calls_at + 1);
    w.push(json!({"message": user("interrupting")}));
    w.push(result);
    assert_invalid(&moved, &store, "not a valid conversation");
}

#[test]
fn malformed_parts_of_a_state_are_refused() {
    let store = FlakyStore::new();
    let state = compressed(&store).to_json();
    type Breaks = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Breaks)> = vec![
        ("config", Box::new(|s: &mut Value| s["config"]["maxToken"] = json!(0))),
        ("log.tail", Box::new(|s: &mut Value| s["log"]["tail"] = json!({"not": "an array"}))),
        ("log.tail", Box::new(|s: &mut Value| s["log"]["tail"][1] = json!({"role": "robot"}))),
        ("log.messages", Box::new(|s: &mut Value| s["log"]["messages"] = json!(-1))),
        ("log.messages", Box::new(|s: &mut Value| s["log"]["messages"] = json!(1))),
        ("log.head", Box::new(|s: &mut Value| s["log"]["head"] = json!("other-session/log-0-0123456789abcdef"))),
        ("log.head", Box::new(|s: &mut Value| s["log"]["head"] = json!("persist/../x"))),
        ("working", Box::new(|s: &mut Value| s["working"] = json!(7))),
        ("working", Box::new(|s: &mut Value| s["working"][0] = json!({"msg": {}}))),
        ("working", Box::new(|s: &mut Value| s["working"][1]["message"] = json!({"role": "user", "content": 3}))),
        ("events", Box::new(|s: &mut Value| s["events"] = json!([{"type": 5}]))),
        ("offloads", Box::new(|s: &mut Value| s["offloads"] = json!("none"))),
    ];
    for (says, tamper) in cases {
        let mut s = state.clone();
        tamper(&mut s);
        assert_invalid(&s, &store, says);
    }
}

/// `text` with every uuid (8-4-4-4-12 lowercase hex) replaced by `<uuid>`: offloads a pass
/// writes get new ones each time.
fn uuids_masked(text: &str) -> String {
    let b = text.as_bytes();
    let is_uuid = |w: &[u8]| {
        w.len() == 36
            && w.iter()
                .enumerate()
                .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { *c == b'-' } else { matches!(c, b'0'..=b'9' | b'a'..=b'f') })
    };
    let (mut out, mut i) = (String::with_capacity(text.len()), 0);
    while i < b.len() {
        if i + 36 <= b.len() && is_uuid(&b[i..i + 36]) {
            out.push_str("<uuid>");
            i += 36;
        } else {
            let c = text[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

type Plain = AutoContextMemory<autocontext::NoSummarizer, FlakyStore>;

fn plain(state: &Value, store: &FlakyStore) -> Plain {
    AutoContextMemory::from_json(state, None, store.clone(), None).unwrap()
}

/// Every corpus trace replayed a group at a time in a 32k window, compressing after each, with
/// `at(name, groups, i, memory, store)` called after each group `i` that `stops(groups)` lists.
fn at_corpus_stops(session: &str, stops: fn(usize) -> Vec<usize>, mut at: impl FnMut(&str, &[Value], usize, &Plain, &FlakyStore)) {
    let traces = traces();
    if traces.is_empty() {
        skip_without_corpus(&format!("no corpus at {}", corpus_dir().display()));
        return;
    }
    for (name, messages) in traces {
        let groups = groups(messages);
        let store = FlakyStore::new();
        let cfg = autocontext::Config { max_token: 32_000, session_id: format!("{session}-{name}"), ..autocontext::Config::default() };
        let m: Plain = AutoContextMemory::with_counter(cfg, TokenCounter::new(Tokenizer::O200kBase).unwrap(), None, store.clone()).unwrap();
        let stops = stops(groups.len());
        for (i, g) in groups.iter().enumerate() {
            m.add(g).unwrap();
            block_on(m.compress_if_needed()).unwrap();
            if stops.contains(&i) {
                at(&name, &groups, i, &m, &store);
            }
        }
    }
}

#[test]
fn a_restore_reads_the_counts_the_state_carries_and_they_are_the_counts() {
    // Every corpus trace replayed a group at a time in a 32k window, compressing after each,
    // and saved at three points: restored with the counts the state carries and restored
    // counting every message again, the two memories are the same memory (same counts, same
    // state), and stay the same through the rest of the trace.
    at_corpus_stops(
        "counts",
        |n| vec![n / 3, n / 2, n * 9 / 10],
        |name, groups, i, m, store| {
            let state = m.to_json();
            assert_eq!(state["counts"], json!(autocontext::tokens::COUNT_VERSION), "{name}");
            let mut uncounted = state.clone();
            uncounted.as_object_mut().unwrap().remove("counts");
            let (read, counted) = (plain(&state, store), plain(&uncounted, store));
            assert_eq!(read.to_json_text(), counted.to_json_text(), "{name} at group {i}: a saved count is not the count");
            assert_eq!(read.token_count(), m.token_count(), "{name} at group {i}");
            for g in &groups[i + 1..] {
                for mem in [&read, &counted] {
                    mem.add(g).unwrap();
                    block_on(mem.compress_if_needed()).unwrap();
                }
            }
            assert_eq!(uuids_masked(&read.messages_text()), uuids_masked(&counted.messages_text()), "{name} from group {i}");
            assert_eq!(read.token_count(), counted.token_count(), "{name} from group {i}");
        },
    );
}

#[test]
fn counts_are_read_back_only_under_the_same_counting_rules() {
    let store = FlakyStore::new();
    let m = compressed(&store);
    let mut state = m.to_json();
    let real = m.token_count();
    let mut saved = 0;
    for item in state["working"].as_array_mut().unwrap() {
        saved += item["tokens"].as_u64().unwrap();
        item["tokens"] = json!(1);
    }
    // Under this build's rules, the counts are the state's (the engine's own, as saved).
    let n = state["working"].as_array().unwrap().len() as u64;
    assert_eq!(restore(&state, &store).unwrap().token_count(), real - saved + n);
    // Under other rules (or none named), every message is counted again.
    for counts in [json!(autocontext::tokens::COUNT_VERSION + 1), Value::Null] {
        let mut other = state.clone();
        other["counts"] = counts.clone();
        assert_eq!(restore(&other, &store).unwrap().token_count(), real, "counts {counts}");
    }
    // A count that is no count is a malformed state.
    state["working"][0]["tokens"] = json!("many");
    let e = restore(&state, &store).err().expect("refused");
    assert_eq!(e.code(), ErrorCode::InvalidState);
    assert!(e.message().contains("state.working[0].tokens"), "{}", e.message());
}

#[test]
fn the_counting_rules_change_only_with_their_version() {
    // A fingerprint of how this version counts: messages of every kind of block and text,
    // counted. A change in the counts (a vocabulary, an overhead, the estimator) fails here
    // until COUNT_VERSION is bumped and the fingerprint recorded again, so a state saved under
    // the old rules is counted again on restore instead of read.
    let texts =
        ["", "hello world", "fn main() { println!(\"{}\", 1 + 2); }", "Ünïcödé 字 🙂 \t\n\n  spaces", &"long text line ".repeat(600)];
    let mut messages = Vec::new();
    for t in texts {
        messages.push(json!({"role": "user", "content": t}));
        messages.push(json!({"role": "assistant", "content": t, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\": {}}}", json!(t))}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": "c", "content": t}));
    }
    let mut fingerprint: Vec<(&str, u64)> = Vec::new();
    for kind in [Tokenizer::O200kBase, Tokenizer::Estimate] {
        let counter = TokenCounter::new(kind).unwrap();
        let mut h: u64 = 0;
        for (i, v) in messages.iter().enumerate() {
            let m = autocontext::Format::OpenAi.parse(i, v).unwrap();
            h = h.wrapping_mul(1_000_003).wrapping_add(u64::from(counter.count_message(&m).unwrap()));
        }
        fingerprint.push((kind.name(), h));
    }
    let recorded: [(u64, &[(&str, u64)]); 1] = [(1, &[("o200k_base", 686_277_143_485_610_189), ("estimate", 1_684_152_526_337_822)])];
    let (version, want) = recorded.last().unwrap();
    assert_eq!(*version, autocontext::tokens::COUNT_VERSION, "record the fingerprint of the new COUNT_VERSION");
    assert_eq!(fingerprint, want.to_vec(), "the counts changed: bump tokens::COUNT_VERSION and record its fingerprint here");
}

#[test]
fn a_save_copies_the_pages_it_knows_and_they_are_the_pages_it_would_write() {
    // Every corpus trace replayed in a 32k window and saved in pages at two points. Restored from
    // those pages, a memory keeps their texts and copies them into its saves while their entries
    // or records stay; carried on through the rest of the trace, saving after every group, its
    // pages stay byte for byte (offload uuids masked) what a memory restored from the whole
    // state, which never keeps a page, writes of the same entries and records.
    at_corpus_stops(
        "known",
        |n| vec![n / 3, n * 2 / 3],
        |name, groups, i, m, store| {
            let (head, counts, pages) = pages_of(m);
            let paged = Plain::from_pages(head, &counts, &pages, None, store.clone(), None).unwrap();
            let whole = plain(&m.to_json(), store);
            let working = |pages: &[String]| {
                let n: usize = pages[1].split(',').next().unwrap().parse().unwrap();
                let items: Vec<&str> = pages[2..2 + n].iter().map(|p| &p[1..p.len() - 1]).collect();
                uuids_masked(&format!("[{}]", items.join(",")))
            };
            let written = |mem: &Plain| uuids_masked(&serde_json::to_string(&mem.to_json()["working"]).unwrap());
            // The offload index's and the events' pages; `fresh` as a memory that knows no page
            // writes them.
            let lists = |pages: &[String]| {
                let n: usize = pages[1].split(',').next().unwrap().parse().unwrap();
                pages[2 + n..].join("\n")
            };
            let fresh = |mem: &Plain| plain(&mem.to_json(), store).to_json_pages();
            assert_eq!(working(&paged.to_json_pages()), written(&whole), "{name} restored at group {i}");
            for (k, g) in groups.iter().enumerate().skip(i + 1) {
                for mem in [&paged, &whole] {
                    mem.add(g).unwrap();
                    block_on(mem.compress_if_needed()).unwrap();
                }
                let pages = paged.to_json_pages();
                if k % 4 == 0 || k + 1 == groups.len() {
                    assert_eq!(working(&pages), written(&whole), "{name} restored at group {i}, at group {k}");
                    assert_eq!(lists(&pages), lists(&fresh(&paged)), "{name} restored at group {i}, at group {k}");
                }
            }
        },
    );
}

#[test]
fn a_paged_state_is_the_state_cut_at_its_items_and_reads_back_as_it() {
    // Every corpus trace replayed in a 32k window and cut at two points: each page is a JSON
    // array of at most PAGE items, the pages of a list joined are that list's text in the
    // state, and the head and pages restore the same memory; a page that is no array is
    // STORE_FAILED naming its place.
    at_corpus_stops(
        "pages",
        |n| vec![n / 2, n - 1],
        |name, _, i, m, store| {
            let text = m.to_json_text();
            let cut = m.to_json_pages();
            let counts: Vec<u32> = cut[1].split(',').map(|c| c.parse().unwrap()).collect();
            let pages = &cut[2..];
            assert_eq!(counts.iter().sum::<u32>() as usize, pages.len(), "{name}");
            let mut next = 0;
            let mut rest = text.clone();
            for (field, &count) in ["working", "offloads", "events"].iter().zip(&counts) {
                let mut inner = Vec::new();
                for page in &pages[next..next + count as usize] {
                    let items: Vec<Value> = serde_json::from_str(page).unwrap();
                    assert!(!items.is_empty() && items.len() <= autocontext::engine::pages::PAGE, "{name}: {field}");
                    inner.push(&page[1..page.len() - 1]);
                }
                next += count as usize;
                let list = format!(",\"{field}\":[{}]", inner.join(","));
                assert!(rest.contains(&list), "{name} at group {i}: the {field} pages are not the state's text of them");
                rest = rest.replacen(&list, "", 1);
            }
            // The head is the state's text without its paged lists, and with the facts of each
            // working page at its end, then the digest of the events' pages when there are any.
            let facts = cut[0].find(",\"pageFacts\":[").expect("the facts of the working pages");
            let digest = cut[0].find(",\"eventsDigest\":");
            assert_eq!(digest.is_some(), counts[2] > 0, "{name} at group {i}: a digest when there are events");
            let end = digest.unwrap_or(cut[0].len() - 1);
            let lines: Vec<String> = serde_json::from_str(&cut[0][facts + 13..end]).unwrap();
            assert_eq!(lines.len(), counts[0] as usize, "{name} at group {i}: a line of facts per working page");
            assert_eq!(
                format!("{}}}", &cut[0][..facts]),
                rest,
                "{name} at group {i}: the head is the state's text without its paged lists"
            );
            let head: Value = serde_json::from_str(&cut[0]).unwrap();
            for field in ["working", "offloads", "events"] {
                assert!(head.get(field).is_none() || head[field] == json!([]), "{name}: {field} in the head");
            }
            let read = Plain::from_pages(head.clone(), &counts, pages, None, store.clone(), None).unwrap();
            assert_eq!(read.to_json_text(), text, "{name} at group {i}");
            if let Some(last) = pages.len().checked_sub(1) {
                let mut broken = pages.to_vec();
                broken[last] = "{\"not\":\"a page\"}".into();
                let e = Plain::from_pages(head, &counts, &broken, None, store.clone(), None).err().expect("a broken page");
                assert_eq!((e.code(), e.index()), (ErrorCode::StoreFailed, Some(last)), "{name}: {}", e.message());
            }
        },
    );
}

/// Saves `m` in pages: the head parsed, how many pages each paged list has, and the pages, as a
/// host's load hands them to the engine.
fn pages_of<S: autocontext::Summarizer + Clone>(m: &AutoContextMemory<S, FlakyStore>) -> (Value, Vec<u32>, Vec<String>) {
    let cut = m.to_json_pages();
    let counts: Vec<u32> = cut[1].split(',').map(|c| c.parse().unwrap()).collect();
    (serde_json::from_str(&cut[0]).unwrap(), counts, cut[2..].to_vec())
}

#[test]
fn a_working_page_is_checked_against_the_state_it_comes_in() {
    // The pages of a compressed memory loaded with the offload index emptied: the working page
    // that names an offload is refused with the words a state parsed whole gets, at the load
    // when the load parses it, and at the first call that parses it when the head's facts
    // vouched for it and the load left it unparsed.
    let store = FlakyStore::new();
    let m = compressed(&store);
    let mut whole = m.to_json();
    whole["offloads"] = json!([]);
    let parsed = restore(&whole, &store).err().expect("the same state parsed whole");
    for (head, counts, pages) in [pages_without_facts(&m), pages_of(&m)] {
        let mut emptied_counts = counts.clone();
        let mut kept = pages[..counts[0] as usize].to_vec();
        kept.extend_from_slice(&pages[(counts[0] + counts[1]) as usize..]);
        emptied_counts[1] = 0;
        let e = match AutoContextMemory::from_pages(
            head.clone(),
            &emptied_counts,
            &kept,
            Some(FakeSummarizer::digest()),
            store.clone(),
            None,
        ) {
            Err(e) => e,
            Ok(loaded) => {
                assert!(head.get("pageFacts").is_some(), "a load that parses every page refuses it");
                loaded.materialize().expect_err("a mark naming an offload outside the index")
            }
        };
        assert_eq!(e.code(), ErrorCode::InvalidState);
        assert_eq!(e.message(), parsed.message());
        let mut newer = head.clone();
        newer["autocontext"] = json!(99);
        let newer =
            AutoContextMemory::from_pages(newer, &counts, &pages, Some(FakeSummarizer::digest()), store.clone(), None).err().unwrap();
        assert!(newer.message().contains("newer"), "{}", newer.message());
    }
}

#[test]
fn a_working_page_is_read_as_the_state_parsed_whole_is_read() {
    // A page's working entries are read field by field, not as JSON objects: an item altered in
    // each way a store or a hand could alter it gives, loaded from pages, what the same state
    // parsed whole gives (the same error, or the same memory).
    let store = FlakyStore::new();
    let m = compressed(&store);
    let (head, counts, pages) = pages_of(&m);
    let first: Value = serde_json::from_str(&pages[0]).unwrap();
    let item = first[1].clone();
    let message = item["message"].clone();
    let alterations: Vec<(&str, Value)> = vec![
        ("not an object", json!(["message", message])),
        ("a number", json!(7)),
        ("no message", json!({"tokens": item["tokens"]})),
        ("a null message", json!({"message": null, "tokens": item["tokens"]})),
        ("an invalid message", json!({"message": {"role": "wizard", "content": "x"}, "tokens": item["tokens"]})),
        ("a pin that is not a flag", json!({"message": message, "tokens": item["tokens"], "pinned": "yes"})),
        ("a count that is not one", json!({"message": message, "tokens": -3})),
        ("a null count", json!({"message": message, "tokens": null})),
        ("a mark that is not a record", json!({"message": message, "tokens": item["tokens"], "synthetic": 5})),
        (
            "pinned, and fields unknown",
            json!({"extra": {"message": 1}, "message": message, "tokens": item["tokens"], "pinned": true, "more": [1]}),
        ),
        ("no count", json!({"message": message})),
    ];
    for (what, altered) in alterations {
        let mut page = first.clone();
        page[1] = altered.clone();
        let mut paged = pages.clone();
        paged[0] = serde_json::to_string(&page).unwrap();
        let mut whole = m.to_json();
        whole["working"][1] = altered;
        let from_pages = Plain::from_pages(head.clone(), &counts, &paged, None, store.clone(), None);
        match (from_pages, Plain::from_json(&whole, None, store.clone(), None)) {
            (Err(a), Err(b)) => assert_eq!((a.code(), a.message()), (b.code(), b.message()), "{what}"),
            // The same entries (a page read as written is saved again as it is, unknown fields
            // and all; the entries are what count).
            (Ok(a), Ok(b)) => {
                let entries = |m: &Plain| {
                    let keep = |e: &Value| json!([e["message"], e["tokens"], e["synthetic"], e["pinned"]]);
                    m.to_json()["working"].as_array().unwrap().iter().map(keep).collect::<Vec<_>>()
                };
                assert_eq!(entries(&a), entries(&b), "{what}");
            }
            (a, b) => panic!(
                "{what}: from pages {:?}, whole {:?}",
                a.err().map(|e| e.message().to_string()),
                b.err().map(|e| e.message().to_string())
            ),
        }
    }
    // A field given twice is its last value, as in a JSON object.
    let text = &pages[0];
    let twice = text.replacen("{\"message\":", "{\"message\":{\"role\":\"user\",\"content\":\"first\"},\"message\":", 1);
    let mut paged = pages.clone();
    paged[0] = twice;
    let read = Plain::from_pages(head.clone(), &counts, &paged, None, store.clone(), None).unwrap();
    assert_eq!(read.messages()[0], first[0]["message"]);
}

/// [`pages_of`] without the head's facts of each page and digest of the events: a load then
/// parses every page (as it parses a state saved before pages had facts).
fn pages_without_facts<S: autocontext::Summarizer + Clone>(m: &AutoContextMemory<S, FlakyStore>) -> (Value, Vec<u32>, Vec<String>) {
    let (mut head, counts, pages) = pages_of(m);
    head.as_object_mut().unwrap().remove("pageFacts").expect("a save writes each page's facts");
    head.as_object_mut().unwrap().remove("eventsDigest");
    (head, counts, pages)
}

#[test]
fn a_load_that_leaves_pages_unparsed_is_the_memory_parsing_them_gives() {
    // Every corpus trace replayed in a 32k window and saved in pages at three points, loaded
    // twice: as saved (the head's facts vouch for the pages before the last exchange, which stay
    // unparsed) and with the facts taken out (every page parsed). Through the rest of the trace,
    // each group added to both and compressed if needed, both say the same thing at every step:
    // the trigger, the pass's result, the messages, the counts, the pins, the saves.
    let mut unparsed_loads = 0;
    at_corpus_stops(
        "deferred",
        |n| vec![n / 3, n * 2 / 3, n.saturating_sub(2)],
        |name, groups, i, m, store| {
            let (head, counts, pages) = pages_of(m);
            let lazy = Plain::from_pages(head, &counts, &pages, None, store.clone(), None).unwrap();
            let (head, counts, pages) = pages_without_facts(m);
            let eager = Plain::from_pages(head, &counts, &pages, None, store.clone(), None).unwrap();
            // What two memories that ran the same passes hold alike (offload uuids and times
            // differ): the working list, the log's tail, the events' kinds and places; and the
            // pages of the working list a save writes, with each page's facts.
            let state = |mem: &Plain| {
                let s = mem.to_json();
                let events: Vec<_> = s["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| (e["type"].clone(), e["index"].clone(), e["tokensAfter"].clone()))
                    .collect();
                uuids_masked(&format!("{}\n{}\n{events:?}\n{}", s["working"], s["log"]["tail"], s["offloads"].as_array().unwrap().len()))
            };
            let saved = |mem: &Plain| {
                let cut = mem.to_json_pages();
                let n: usize = cut[1].split(',').next().unwrap().parse().unwrap();
                let head: Value = serde_json::from_str(&cut[0]).unwrap();
                let codes: Vec<&str> = head["pageFacts"].as_array().unwrap().iter().map(|l| &l.as_str().unwrap()[80..]).collect();
                uuids_masked(&format!("{}\n{codes:?}", cut[2..2 + n].join("\n")))
            };
            let at = |k: usize| format!("{name} loaded at group {i}, at group {k}");
            let same = |k: usize| {
                assert!(uuids_masked(&lazy.messages_text()) == uuids_masked(&eager.messages_text()), "{}: messages", at(k));
                assert_eq!(lazy.token_count(), eager.token_count(), "{}", at(k));
                assert_eq!(lazy.pinned(), eager.pinned(), "{}", at(k));
                assert_eq!(lazy.needs_compression(), eager.needs_compression(), "{}", at(k));
                assert!(state(&lazy) == state(&eager), "{}: state", at(k));
                assert!(saved(&lazy) == saved(&eager), "{}: saved pages", at(k));
            };
            same(i);
            // The load left the first page unparsed when a role changed in it (its facts made
            // again to match) is not refused.
            let (head, counts, pages) = forged(m, |p| p.replacen("\"role\":\"", "\"role\":\"x", 1), same_text);
            if Plain::from_pages(head, &counts, &pages, None, store.clone(), None).is_ok() {
                unparsed_loads += 1;
            }
            for (k, g) in groups.iter().enumerate().skip(i + 1) {
                lazy.add(g).unwrap();
                eager.add(g).unwrap();
                let (a, b) = (block_on(lazy.compress_if_needed()).unwrap(), block_on(eager.compress_if_needed()).unwrap());
                assert_eq!(
                    (a.compressed, a.tokens_before, a.tokens_after, a.events.len()),
                    (b.compressed, b.tokens_before, b.tokens_after, b.events.len()),
                    "{}",
                    at(k)
                );
                if k % 3 == 0 || k + 1 == groups.len() {
                    same(k);
                }
            }
            assert_eq!(lazy.validate(), eager.validate(), "{name} at group {i}");
            let masked = |mem: &Plain| uuids_masked(&serde_json::to_string(&mem.messages()).unwrap());
            assert!(masked(&lazy) == masked(&eager), "{name} at group {i}: messages()");
        },
    );
    if !traces().is_empty() {
        assert!(unparsed_loads > 10, "only {unparsed_loads} loads had pages to leave unparsed");
    }
}

/// The pages of `m` saved, with the first working page changed by `change` and its line of the
/// head's facts made to match it again (its digest recomputed, as only a forger would).
fn forged<S: autocontext::Summarizer + Clone>(
    m: &AutoContextMemory<S, FlakyStore>,
    change: impl Fn(&str) -> String,
    facts: impl Fn(&str) -> String,
) -> (Value, Vec<u32>, Vec<String>) {
    let (mut head, counts, mut pages) = pages_of(m);
    pages[0] = change(&pages[0]);
    let line = head["pageFacts"][0].as_str().unwrap();
    let rest = facts(&line[16..]);
    let items = &pages[0][1..pages[0].len() - 1];
    let digest = xxhash_rust::xxh64::xxh64(rest.as_bytes(), xxhash_rust::xxh64::xxh64(items.as_bytes(), 2));
    head["pageFacts"][0] = json!(format!("{digest:016x}{rest}"));
    (head, counts, pages)
}

#[test]
fn a_page_left_unparsed_is_checked_when_it_is_parsed() {
    // A long conversation saved in pages: a page changed without its facts is read whole and
    // refused at the load; one forged to match its facts (its digest made again) is left
    // unparsed by the load, and refused, with a typed error and nothing changed, by the first
    // call that parses it: the messages are checked as a load checks them, and the facts
    // against what the page holds.
    let store = FlakyStore::new();
    let m: Mem = AutoContextMemory::new(config("forged", 1_000_000), FakeSummarizer::digest(), store.clone()).unwrap();
    let call = |id: &str| json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]});
    for k in 0..40 {
        m.add(&json!({"role": "user", "content": format!("question {k}")})).unwrap();
        m.add(&call(&format!("call_{k}"))).unwrap();
        m.add(&json!({"role": "tool", "tool_call_id": format!("call_{k}"), "content": format!("result {k}")})).unwrap();
        m.add(&json!({"role": "assistant", "content": format!("answer {k}")})).unwrap();
    }
    let load = |(head, counts, pages): (Value, Vec<u32>, Vec<String>)| {
        Mem::from_pages(head, &counts, &pages, Some(FakeSummarizer::digest()), store.clone(), None)
    };
    let renamed = |p: &str| p.replacen("\"role\":\"user\"", "\"role\":\"nobody\"", 1);
    let same = |facts: &str| facts.to_string();
    // Changed, its facts not made again: every page is parsed, and the load refuses it.
    let (head, counts, mut pages) = pages_of(&m);
    pages[0] = renamed(&pages[0]);
    let e = load((head, counts, pages)).err().expect("a changed page");
    assert_eq!(e.code(), ErrorCode::InvalidState, "{}", e.message());
    // Forged to match: the load takes it unparsed; what reads the messages refuses it.
    let forged_role = || load(forged(&m, renamed, same)).expect("a page forged to match its facts is not parsed at the load");
    let lazy = forged_role();
    assert_eq!(lazy.token_count(), m.token_count());
    let before = lazy.to_json_text();
    for (what, e) in [
        ("materialize", lazy.materialize().err()),
        ("pin", lazy.pin(0).err()),
        ("pop", lazy.pop().err()),
        ("reachable_keys", block_on(lazy.reachable_keys(&[])).err()),
    ] {
        let e = e.unwrap_or_else(|| panic!("{what} parsed the forged page"));
        assert_eq!(e.code(), ErrorCode::InvalidState, "{what}: {}", e.message());
        assert!(e.message().contains("state.working"), "{what}: {}", e.message());
    }
    assert_eq!(lazy.to_json_text(), before, "a refused parse changes nothing");
    assert_eq!(lazy.validate()[0].code, "INVALID_STATE");
    // A new call reusing an id of the page parses it (the page's filter holds the id).
    let e = forged_role().add(&call("call_0")).expect_err("a call reusing an id of a forged page");
    assert_eq!(e.code(), ErrorCode::InvalidState, "{}", e.message());
    let (head, counts, pages) = pages_of(&m);
    let reused = load((head, counts, pages)).unwrap().add(&call("call_0")).expect_err("a reused call id");
    let whole = m.add(&call("call_0")).expect_err("a reused call id");
    assert_eq!((reused.code(), reused.message()), (whole.code(), whole.message()));
    // Facts forged with it (a count changed): the facts are checked against the page.
    let recount = |facts: &str| facts.replacen("u", "u1", 1);
    let lazy = load(forged(&m, same_text, recount)).expect("forged to match");
    assert!(lazy.token_count() > m.token_count(), "the count the forged facts say");
    let e = lazy.materialize().expect_err("facts that are not the page's");
    assert!(e.message().contains("facts"), "{}", e.message());
    // The page unchanged, its facts made again: the load is the memory's.
    let lazy = load(forged(&m, same_text, same)).unwrap();
    lazy.materialize().unwrap();
    assert_eq!(lazy.to_json_text(), m.to_json_text());
}

fn same_text(p: &str) -> String {
    p.to_string()
}

#[test]
fn the_events_a_load_leaves_unparsed_are_checked_when_they_are_parsed() {
    // A compressed memory saved in pages: the head's digest of the events' pages vouches for
    // them, so a load leaves them as text; a save copies them, and `events()`, a pass or
    // `materialize` parses them. Changed without the digest made again, they are read at the
    // load and refused as the state parsed whole refuses them; forged to match, the first call
    // that parses them refuses them, and nothing changes.
    let store = FlakyStore::new();
    let m = compressed(&store);
    let load = |(head, counts, pages): (Value, Vec<u32>, Vec<String>)| {
        Mem::from_pages(head, &counts, &pages, Some(FakeSummarizer::digest()), store.clone(), None)
    };
    let (head, counts, pages) = pages_of(&m);
    assert!(counts[2] > 0 && head["eventsDigest"].as_str().is_some_and(|d| d.len() == 16));
    let events = (counts[0] + counts[1]) as usize;
    let lazy = load((head.clone(), counts.clone(), pages.clone())).unwrap();
    assert_eq!(lazy.to_json_text(), m.to_json_text());
    assert_eq!(lazy.to_json_pages(), m.to_json_pages(), "a save copies the pages left unparsed");
    assert_eq!(serde_json::to_value(lazy.events()).unwrap(), serde_json::to_value(m.events()).unwrap());
    // Events that are not events: the whole state's words, at the load or at the first parse.
    let broken = "[{\"type\":7}]".to_string();
    let mut whole = m.to_json();
    whole["events"] = serde_json::from_str(&broken).unwrap();
    let parsed = restore(&whole, &store).err().expect("the same state parsed whole");
    let mut changed = pages.clone();
    changed[events] = broken.clone();
    changed.truncate(events + 1);
    let mut fewer = counts.clone();
    fewer[2] = 1;
    let e = load((head.clone(), fewer.clone(), changed.clone())).err().expect("events changed without their digest");
    assert_eq!((e.code(), e.message()), (parsed.code(), parsed.message()));
    let mut vouched = head.clone();
    let digest = xxhash_rust::xxh64::xxh64(&broken.as_bytes()[1..broken.len() - 1], 2);
    vouched["eventsDigest"] = json!(format!("{digest:016x}"));
    let forged = load((vouched, fewer, changed)).expect("events forged to match their digest are not parsed at the load");
    forged.add(&Value::Array(tool_round("late", 1, 30_000))).unwrap();
    // The lists (a pass's end also records the model call that follows it, and flushes the log).
    let state = |m: &Mem| {
        let s = m.to_json();
        json!([s["working"], s["offloads"], s["events"]])
    };
    let before = state(&forged);
    let e = forged.materialize().expect_err("events that are not events");
    assert_eq!((e.code(), e.message()), (parsed.code(), parsed.message()));
    assert!(forged.events().is_empty());
    assert_eq!(forged.validate()[0].code, "INVALID_STATE");
    let e = block_on(forged.compress_if_needed()).expect_err("a pass adds to the events");
    assert_eq!(e.code(), ErrorCode::InvalidState);
    assert!(state(&forged) == before, "a refused parse changes nothing");
}
