//! The payload an offload keeps in the host's store, and the checks a reload makes on it.
//!
//! An offload is one JSON object under `<sessionId>/<uuid>`: the session, the uuid, the format
//! and the original wire messages. A message of the span that the engine wrote in an earlier
//! pass (a summary, a notice, a truncated copy) is kept as the model saw it, and the payload's
//! `expand` list names the earlier offload that holds what it stands for: a reload puts those
//! originals in its place, offload after offload, so one reload of any marker gives originals
//! while each offload stores only what its own pass replaced (a rolling summary that copied its
//! predecessor's originals would store the history once per pass). A reader that does not know
//! `expand` still gets the messages the model saw.
//!
//! The engine keeps a digest of the exact text it wrote in its
//! offload index (and in the persisted state), so a reload can tell the payload it wrote from
//! anything else the store hands back: a value truncated or garbled on the way, another key's
//! value, another session's offload, or a payload edited in place. Each of those is a
//! `STORE_FAILED` error; a reload never returns messages the engine did not offload.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::fields::{Fault, Fields, Record};
use crate::format::Format;

/// An offload a session created, as its memory records it (and `compress()` returns it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OffloadRecord {
    /// Its uuid.
    pub uuid: String,
    /// How many messages it holds.
    pub message_count: usize,
    /// Digest of the payload written to the store: a reload whose store value differs fails with
    /// `STORE_FAILED` instead of returning messages this session did not offload (absent in
    /// states made before digests were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// A message of an offload that stands for the originals of an earlier offload: message `at`
/// of the payload is replaced, on reload, by the messages of offload `uuid` (expanded in turn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Expansion {
    /// The index of the message in the payload's list.
    pub at: usize,
    /// The earlier offload that holds what it stands for.
    pub uuid: String,
    /// How many messages that offload's payload holds.
    pub message_count: usize,
    /// That payload's digest, when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl OffloadRecord {
    /// The record as JSON text, as serde writes it.
    pub(crate) fn write(&self, out: &mut String) {
        let mut o = crate::json::Obj::new(out);
        o.str("uuid", &self.uuid).int("messageCount", self.message_count as u64);
        if let Some(d) = &self.digest {
            o.str("digest", d);
        }
        o.end();
    }
}

/// The offload index's pages as a save wrote them, read without a JSON tree: the records and
/// how many each page holds, or `None` when any record of any page is laid out otherwise.
///
/// A Worker loads its session on every request, and the offload index was most of what a load
/// that leaves the working list's pages unparsed still parsed: a tree of a few small objects per
/// offload, a hash of each of their keys. A save writes each record one way
/// ([`OffloadRecord::write`]: `uuid`, `messageCount`, then `digest` if any, no space, no escape
/// in the strings the engine makes), and a record laid out exactly so means what the JSON
/// reader would make of it. Anything else (another order, a space, an escape, a number the
/// reader would not take as it stands) is read by the JSON reader, with every check and error
/// as before: what this takes, it takes as that reader would.
pub(crate) fn read_pages(pages: &[String]) -> Option<(Vec<OffloadRecord>, Vec<usize>)> {
    let mut records = Vec::new();
    let mut sizes = Vec::with_capacity(pages.len());
    for page in pages {
        let before = records.len();
        let mut rest = page.strip_prefix('[')?.strip_suffix(']')?;
        while !rest.is_empty() {
            let (record, after) = read_written(rest)?;
            records.push(record);
            rest = match after.strip_prefix(',') {
                Some(next) if !next.is_empty() => next,
                Some(_) => return None,
                None if after.is_empty() => after,
                None => return None,
            };
        }
        sizes.push(records.len() - before);
    }
    Some((records, sizes))
}

/// One record at the start of `s` as [`OffloadRecord::write`] lays it out, and what follows it.
fn read_written(s: &str) -> Option<(OffloadRecord, &str)> {
    let (uuid, s) = plain_string(s.strip_prefix(r#"{"uuid":""#)?)?;
    let s = s.strip_prefix(r#","messageCount":"#)?;
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (count, s) = s.split_at(digits);
    // JSON has no leading zero; a count past a `u64` the reader keeps as a float, one past a
    // `usize` is refused: each is left to the reader.
    if count.is_empty() || count.len() > 1 && count.starts_with('0') {
        return None;
    }
    let message_count = usize::try_from(count.parse::<u64>().ok()?).ok()?;
    let (digest, s) = match s.strip_prefix(r#","digest":""#) {
        Some(s) => {
            let (digest, s) = plain_string(s)?;
            (Some(digest.to_string()), s)
        }
        None => (None, s),
    };
    Some((OffloadRecord { uuid: uuid.to_string(), message_count, digest }, s.strip_prefix('}')?))
}

/// The text of a string whose JSON text is itself (no escape, no control character), up to
/// its closing quote, and what follows the quote.
fn plain_string(s: &str) -> Option<(&str, &str)> {
    let end = s.bytes().position(|b| b == b'"' || b == b'\\' || b < 0x20)?;
    (s.as_bytes()[end] == b'"').then(|| (&s[..end], &s[end + 1..]))
}

impl Record for OffloadRecord {
    const FIELDS: &'static [&'static str] = &["uuid", "messageCount", "digest"];
    fn read(f: &Fields) -> std::result::Result<OffloadRecord, Fault> {
        Ok(OffloadRecord { uuid: f.str("uuid")?, message_count: f.usize("messageCount")?, digest: f.opt_str("digest")? })
    }
}

/// Every field of an expansion is known: a field this version does not know would be a part
/// of the reload it cannot honour.
impl Record for Expansion {
    const FIELDS: &'static [&'static str] = &["at", "uuid", "messageCount", "digest"];
    const CLOSED: bool = true;
    fn read(f: &Fields) -> std::result::Result<Expansion, Fault> {
        Ok(Expansion { at: f.usize("at")?, uuid: f.str("uuid")?, message_count: f.usize("messageCount")?, digest: f.opt_str("digest")? })
    }
}

/// The text stored for an offload of `messages`, with the earlier offloads some of them stand
/// for: written straight from the messages (no copy of them into a new JSON tree), in the field
/// order readers see; without expansions the text is what versions before them wrote.
/// `size` is about how long it will be (room is made for it at once). Also returns where each
/// message's text lies in it (for the log's flush, [`super::texts`]).
pub(crate) fn payload(
    session_id: &str,
    uuid: &str,
    format: Format,
    messages: &[&Value],
    expand: &[Expansion],
    size: usize,
) -> (String, Vec<std::ops::Range<usize>>) {
    use crate::json::{write, write_items, write_str};
    let mut out = String::with_capacity(size + 256);
    out.push_str(r#"{"autocontext":1,"sessionId":"#);
    write_str(&mut out, session_id);
    out.push_str(r#","uuid":"#);
    write_str(&mut out, uuid);
    out.push_str(r#","format":"#);
    write_str(&mut out, format.name());
    out.push_str(r#","messages":["#);
    let mut spans = Vec::with_capacity(messages.len());
    write_items(&mut out, messages.iter().copied(), |out, m| {
        let start = out.len();
        write(out, m);
        spans.push(start..out.len());
    });
    out.push(']');
    if !expand.is_empty() {
        out.push_str(r#","expand":"#);
        out.push_str(&serde_json::to_string(expand).expect("expansions always serialize"));
    }
    out.push('}');
    (out, spans)
}

/// A digest of a stored payload: XXH64 (seed 0) of its UTF-8 bytes, 16 lowercase hex digits.
/// It detects accidents (truncation, a wrong value, an edit), not an adversary who controls
/// the store; the store is the host's own. A pass digests every byte it offloads, so the hash
/// must be fast: XXH64 reads eight bytes a step where the FNV-1a of earlier versions read one
/// (a quarter of a native pass went to it); a reload still accepts their digests.
pub fn digest(text: &str) -> String {
    format!("{:016x}", xxhash_rust::xxh64::xxh64(text.as_bytes(), 0))
}

/// The FNV-1a digest that states written by earlier versions carry.
fn legacy_digest(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Whether `s` has the shape of a [`digest`].
pub(crate) fn is_digest(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What a reload expects to find.
pub(crate) struct Expected<'a> {
    pub session_id: &'a str,
    pub uuid: &'a str,
    /// The format its messages must be in; `None` takes the one the payload names.
    pub format: Option<Format>,
    /// Messages the offload holds (0 when unknown).
    pub message_count: usize,
    /// The digest recorded when the payload was written (absent in states made before digests).
    pub digest: Option<&'a str>,
}

/// A payload as read back: its messages, and the earlier offloads some of them stand for.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The format its messages are in.
    pub format: Format,
    pub messages: Vec<Value>,
    /// In order of `at`, each `at` a message of `messages`.
    pub expand: Vec<Expansion>,
}

/// The messages in `raw`, after checking that it is exactly the payload this session wrote for
/// this uuid: the digest when one was recorded, then the envelope (session, uuid, format), the
/// message count when known, that every message reads in the format, and that each expansion
/// names another offload by uuid at a message of the list, in order.
pub(crate) fn open(raw: &str, want: &Expected<'_>) -> Result<Opened> {
    let uuid = want.uuid;
    let bad = |why: String| Error::new(ErrorCode::StoreFailed, format!("offload {uuid} in the store {why}; it was not reloaded"));
    if let Some(d) = want.digest {
        let got = digest(raw);
        if got != d && legacy_digest(raw) != d {
            return Err(bad(format!("is not the payload this session wrote (digest {got}, expected {d})")));
        }
    }
    let body: Value = serde_json::from_str(raw).map_err(|e| bad(format!("is not valid JSON ({e})")))?;
    let field = |k: &str| body.get(k).and_then(Value::as_str);
    if field("uuid") != Some(uuid) {
        return Err(bad(format!("is not an autocontext offload for this uuid (it names {:?})", field("uuid"))));
    }
    if field("sessionId") != Some(want.session_id) {
        return Err(bad(format!("belongs to session {:?}, not {:?}", field("sessionId"), want.session_id)));
    }
    let format = match want.format {
        Some(f) if field("format") == Some(f.name()) => f,
        Some(f) => return Err(bad(format!("holds {:?} messages, not {:?}", field("format"), f.name()))),
        None => field("format")
            .and_then(Format::from_name)
            .ok_or_else(|| bad(format!("names no format this build reads ({:?})", field("format"))))?,
    };
    let Some(Value::Array(messages)) = body.get("messages") else {
        return Err(bad("has no message list".into()));
    };
    if want.message_count != 0 && messages.len() != want.message_count {
        return Err(bad(format!("holds {} messages, not the {} offloaded", messages.len(), want.message_count)));
    }
    for (i, m) in messages.iter().enumerate() {
        format.parse(i, m).map_err(|e| bad(format!("holds an unreadable message: {}", e.message())))?;
    }
    let expand = crate::fields::list::<Expansion>(body.get("expand"), "expand")
        .map_err(|e| bad(format!("has an unreadable expansion list ({e})")))?;
    let mut next = 0;
    for x in &expand {
        if x.at < next || x.at >= messages.len() {
            return Err(bad(format!("expands message {} out of order or outside its {} messages", x.at, messages.len())));
        }
        if !crate::message::is_uuid(&x.uuid) || x.uuid == uuid {
            return Err(bad(format!("expands message {} into {:?}, not another offload", x.at, x.uuid)));
        }
        next = x.at + 1;
    }
    match body {
        Value::Object(mut o) => match o.remove("messages") {
            Some(Value::Array(messages)) => Ok(Opened { format, messages, expand }),
            _ => Err(bad("has no message list".into())),
        },
        _ => Err(bad("is not an object".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_is_written_and_read_as_serde_writes_and_reads_it() {
        for r in [
            OffloadRecord { uuid: "u".into(), message_count: 3, digest: None },
            OffloadRecord { uuid: "é\"\n".into(), message_count: usize::MAX, digest: Some("0123456789abcdef".into()) },
        ] {
            let mut out = String::new();
            r.write(&mut out);
            assert_eq!(out, serde_json::to_string(&r).unwrap());
            assert_eq!(crate::fields::record::<OffloadRecord>(&serde_json::from_str(&out).unwrap(), "").unwrap(), r);
        }
    }

    #[test]
    fn digests_are_stable_hex_and_tell_texts_apart() {
        assert_eq!(digest(""), "ef46db3751d8e999", "XXH64 of nothing, seed 0");
        assert_eq!(digest("abc"), "44bc2cf5ad770999", "XXH64 of abc, seed 0");
        assert_eq!(legacy_digest(""), "cbf29ce484222325");
        // Another text matches neither kind of digest recorded for "abc".
        for recorded in [digest("abc"), legacy_digest("abc")] {
            assert!(digest("abd") != recorded && legacy_digest("abd") != recorded);
        }
        assert!(is_digest(&digest("x")));
        assert_ne!(digest("{\"a\":1}"), digest("{\"a\":2}"));
        assert!(!is_digest("CBF29CE484222325") && !is_digest("abc") && !is_digest("cbf29ce48422232g"));
    }

    #[test]
    fn the_payload_text_is_the_envelope_as_json() {
        // Digests in persisted states are over this exact text: field order, escapes and numbers
        // must stay what a JSON tree of the envelope would print.
        let m = json!({"role": "tool", "tool_call_id": "c1", "content": "é \u{1F600} \"q\" \\ \n", "n": 1.0e-7, "big": 12345678901234567890u64, "z": null, "a": [true, {"y": 2, "x": 1}]});
        let other = json!({"role": "user", "content": [{"type": "text", "text": "hi"}]});
        let want = json!({
            "autocontext": 1,
            "sessionId": "s/é",
            "uuid": "u",
            "format": "anthropic",
            "messages": [&m, &other],
        })
        .to_string();
        let (text, spans) = payload("s/é", "u", Format::Anthropic, &[&m, &other], &[], 0);
        assert_eq!(text, want);
        assert_eq!(
            spans.iter().map(|s| &text[s.clone()]).collect::<Vec<_>>(),
            [m.to_string(), other.to_string()],
            "each message's own text"
        );
    }

    #[test]
    fn only_the_payload_written_opens() {
        let m = json!({"role": "user", "content": "hi"});
        let uuid = "0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a";
        let raw = payload("s", uuid, Format::OpenAi, &[&m], &[], 0).0;
        let d = digest(&raw);
        let want = |digest| Expected { session_id: "s", uuid, format: Some(Format::OpenAi), message_count: 1, digest };
        assert_eq!(open(&raw, &want(Some(&d))).unwrap().messages, vec![m.clone()]);
        assert_eq!(open(&raw, &want(None)).unwrap().messages, vec![m.clone()], "states from before digests still reload");
        let any_format = Expected { format: None, ..want(Some(&d)) };
        assert_eq!(open(&raw, &any_format).unwrap().messages, vec![m.clone()], "without a format, the payload's own is read");
        let unknown = raw.replace("\"format\":\"openai\"", "\"format\":\"telex\"");
        assert_eq!(open(&unknown, &Expected { digest: None, ..any_format }).unwrap_err().code(), ErrorCode::StoreFailed);
        let legacy = legacy_digest(&raw);
        assert_eq!(open(&raw, &want(Some(&legacy))).unwrap().messages, vec![m.clone()], "states with FNV-1a digests still reload");
        let other = |s: &str, u: &str, f: Format, ms: &[&Value]| payload(s, u, f, ms, &[], 0).0;
        let cases = [
            raw.replace("hi", "ho"),
            raw[..raw.len() - 3].to_string(),
            other("t", uuid, Format::OpenAi, &[&m]),
            other("s", "1b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a", Format::OpenAi, &[&m]),
            other("s", uuid, Format::Anthropic, &[&m]),
            other("s", uuid, Format::OpenAi, &[&m, &m]),
            other("s", uuid, Format::OpenAi, &[&json!({"role": "robot"})]),
            "[]".into(),
        ];
        for bad in &cases {
            // Without a digest the envelope checks still refuse everything but the text edit.
            let e = open(bad, &want(Some(&d))).unwrap_err();
            assert_eq!(e.code(), ErrorCode::StoreFailed, "{bad}");
            if !bad.contains("ho") {
                assert_eq!(open(bad, &want(None)).unwrap_err().code(), ErrorCode::StoreFailed, "{bad}");
            }
        }
    }

    #[test]
    fn expansions_are_read_back_and_checked() {
        let m = json!({"role": "user", "content": "summary"});
        let n = json!({"role": "user", "content": "hi"});
        let uuid = "0b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a";
        let earlier = "1b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a";
        let x = |at: usize, u: &str| Expansion { at, uuid: u.into(), message_count: 3, digest: Some("0123456789abcdef".into()) };
        let want = Expected { session_id: "s", uuid, format: Some(Format::OpenAi), message_count: 2, digest: None };
        let raw = payload("s", uuid, Format::OpenAi, &[&m, &n], &[x(0, earlier)], 0).0;
        assert!(
            raw.ends_with(
                r#""expand":[{"at":0,"uuid":"1b7e3a9c-5d1f-4e2a-9c3b-7f6e5d4c3b2a","messageCount":3,"digest":"0123456789abcdef"}]}"#
            ),
            "{raw}"
        );
        let opened = open(&raw, &want).unwrap();
        assert_eq!((opened.messages, opened.expand), (vec![m.clone(), n.clone()], vec![x(0, earlier)]));
        // An expansion outside the list, out of order, of the offload itself or of no uuid.
        for bad in [vec![x(2, earlier)], vec![x(1, earlier), x(0, earlier)], vec![x(0, uuid)], vec![x(0, "../other")]] {
            let raw = payload("s", uuid, Format::OpenAi, &[&m, &n], &bad, 0).0;
            assert_eq!(open(&raw, &want).unwrap_err().code(), ErrorCode::StoreFailed, "{raw}");
        }
        let garbled = raw.replace(r#""at":0"#, r#""at":"first""#);
        assert_eq!(open(&garbled, &want).unwrap_err().code(), ErrorCode::StoreFailed);
    }

    /// What the JSON reader makes of a page of records, as a load reads a state's lists.
    fn by_json(page: &str) -> Option<Vec<OffloadRecord>> {
        let v: Value = serde_json::from_str(page).ok()?;
        crate::fields::list::<OffloadRecord>(Some(&v), "state.offloads").ok()
    }

    #[test]
    fn the_offload_index_read_from_its_text_is_what_the_json_reader_reads() {
        // Pages as a save cuts them: every record read back, and how many each page holds.
        let records: Vec<OffloadRecord> = (0..70usize)
            .map(|i| OffloadRecord {
                uuid: format!("{i:08x}-0000-4000-8000-{:012x}", i * 7919),
                message_count: [1, 0, 38, 4_000_000][i % 4],
                digest: (i % 3 != 0).then(|| format!("{:016x}", i * 31)),
            })
            .collect();
        let pages: Vec<String> = records
            .chunks(32)
            .map(|page| {
                let mut text = String::from("[");
                for (k, r) in page.iter().enumerate() {
                    if k > 0 {
                        text.push(',');
                    }
                    r.write(&mut text);
                }
                text.push(']');
                text
            })
            .collect();
        let (read, sizes) = read_pages(&pages).expect("the pages a save writes");
        assert_eq!(read, records);
        assert_eq!(sizes, [32, 32, 6]);
        for page in &pages {
            assert_eq!(read_pages(std::slice::from_ref(page)).map(|r| r.0), by_json(page));
        }
        assert_eq!(read_pages(&[]), Some((Vec::new(), Vec::new())));
        // Taken as they stand: each is what the JSON reader reads.
        let taken = [
            "[]",
            r#"[{"uuid":"u-1","messageCount":3,"digest":"00ff"}]"#,
            r#"[{"uuid":"u-1","messageCount":3},{"uuid":"u-2","messageCount":0,"digest":"x"}]"#,
            r#"[{"uuid":"é😀","messageCount":4294967295}]"#,
            r#"[{"uuid":"","messageCount":7,"digest":""}]"#,
        ];
        for page in taken {
            let fast = read_pages(&[page.to_string()]).map(|r| r.0);
            assert!(fast.is_some(), "{page}");
            assert_eq!(fast, by_json(page), "{page}");
        }
        // Laid out otherwise: left to the JSON reader, which reads some and refuses the rest.
        let left = [
            r#"[{"uuid":"u","messageCount":03}]"#,
            r#"[{"uuid":"u","messageCount":3.0}]"#,
            r#"[{"uuid":"u","messageCount":-3}]"#,
            r#"[{"uuid":"u","messageCount":3e0}]"#,
            r#"[{"uuid":"u","messageCount":18446744073709551616}]"#,
            r#"[{"uuid":"u","messageCount":}]"#,
            r#"[{"uuid":"u\u0041","messageCount":3}]"#,
            r#"[{"uuid":"u\\","messageCount":3}]"#,
            "[{\"uuid\":\"a\tb\",\"messageCount\":3}]",
            r#"[{"uuid":"u","messageCount":3,"digest":null}]"#,
            r#"[{"uuid":"u","messageCount":3,"digest":7}]"#,
            r#"[{"messageCount":3,"uuid":"u"}]"#,
            r#"[{"uuid":"u"}]"#,
            r#"[ {"uuid":"u","messageCount":3}]"#,
            r#"[{"uuid": "u","messageCount":3}]"#,
            r#"[{"uuid":"u","messageCount":3,"other":1}]"#,
            r#"[{"uuid":"u","messageCount":3,"digest":"d","other":1}]"#,
            r#"[{"uuid":"u","messageCount":3},]"#,
            r#"[{"uuid":"u","messageCount":3}{"uuid":"v","messageCount":3}]"#,
            r#"[{"uuid":"u","messageCount":3}"#,
            r#"{"uuid":"u","messageCount":3}"#,
            r#"[{"uuid":"u,"messageCount":3}]"#,
            "",
        ];
        for page in left {
            assert_eq!(read_pages(&[page.to_string()]), None, "{page}");
        }
        // One page laid out otherwise leaves the whole index to the JSON reader.
        assert_eq!(read_pages(&[pages[0].clone(), left[0].to_string()]), None);
        // On a 32-bit target a count past a `usize` is refused by the JSON reader's path too.
        if usize::BITS == 32 {
            assert_eq!(read_pages(&[r#"[{"uuid":"u","messageCount":4294967296}]"#.to_string()]), None);
        }
    }
}
