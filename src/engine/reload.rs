//! Reloading offloaded originals, with the memory that wrote them or without it.
//!
//! A memory reloads what its own offload index names, with the digest it recorded. A request
//! handler that compresses with the stateless `compress()` keeps no memory between requests:
//! when the model later calls `context_reload`, the handler has only the store, the session id
//! and the call. [`reload`] and [`handle_call`] serve it from those alone: the stored payload
//! must name the session and the uuid, be in the expected format (or, when none is given, in a
//! format this build reads) and hold messages that read in it. When the caller kept the
//! offload records of the pass (`compress()` returns them), the digest and the message count
//! are checked too, exactly as the memory checks them, and a uuid outside the records is
//! unknown. The text the model reads (a transcript, in pages when long) is written here for
//! both, so a call answered with or without the memory reads the same.

use std::future::Future;

use serde_json::Value;

use crate::engine::offload::{Expected, OffloadRecord, Opened};
use crate::error::{Error, ErrorCode, Result};
use crate::format::{Format, RELOAD_PAGE_PARAM, RELOAD_TOOL_PARAM};
use crate::host::OffloadStore;
use crate::message::{transcript, Message};

pub(crate) use crate::message::is_uuid;

/// `INVALID_ARGUMENT` unless `uuid` is an offload uuid (never a path into the store).
pub(crate) fn check_uuid(uuid: &str) -> Result<()> {
    if is_uuid(uuid) {
        Ok(())
    } else {
        Err(Error::new(ErrorCode::InvalidArgument, format!("{uuid:?} is not an offload uuid (expected 8-4-4-4-12 hex digits)"))
            .at_field("uuid"))
    }
}

/// The store key of an offload.
pub(crate) fn key(session_id: &str, uuid: &str) -> String {
    format!("{session_id}/{uuid}")
}

/// Reads the payload under `<session_id>/<uuid>` and checks it (see [`crate::engine::offload::open`]):
/// `format` when given, else the one the payload names; `message_count` and `digest` when
/// known (0 and `None` when not).
async fn fetch_one<O: OffloadStore>(
    store: &O,
    session_id: &str,
    uuid: &str,
    format: Option<Format>,
    message_count: usize,
    digest: Option<&str>,
) -> Result<Opened> {
    let raw = store
        .get(&key(session_id, uuid))
        .await
        .map_err(|e| Error::host(ErrorCode::StoreFailed, "the offload store failed to get an offload", e))?
        .ok_or_else(|| Error::new(ErrorCode::NotFound, format!("offload {uuid} of session {session_id:?} is missing from the store")))?;
    crate::engine::offload::open(&raw, &Expected { session_id, uuid, format, message_count, digest })
}

/// The original messages of offload `uuid` (checked as [`fetch_one`] checks it), each message
/// that stands for an earlier offload replaced by that offload's originals, checked with the
/// count and digest the payload recorded for it, and so on down (see [`super::offload`]). The
/// walk keeps one reader per level, not one future per level, so a chain of thousands of
/// rolling summaries expands without deep recursion. An offload named again inside its own
/// expansion is a loop in the store, refused. One named again elsewhere is expanded once, where
/// it first appears: the messages of one replacement (a summary and the reply that keeps turns
/// alternating, a call and its result) each name its offload, and a later span may take them in
/// together, or one in an earlier span and the rest in a later one; the originals come back
/// once, in their place.
pub(crate) async fn fetch<O: OffloadStore>(
    store: &O,
    session_id: &str,
    uuid: &str,
    format: Option<Format>,
    message_count: usize,
    digest: Option<&str>,
) -> Result<Vec<Value>> {
    let top = fetch_one(store, session_id, uuid, format, message_count, digest).await?;
    if top.expand.is_empty() {
        return Ok(top.messages);
    }
    // Every nested payload must hold the top one's format.
    let format = top.format;
    struct Level {
        messages: std::iter::Enumerate<std::vec::IntoIter<Value>>,
        expand: std::iter::Peekable<std::vec::IntoIter<crate::engine::offload::Expansion>>,
    }
    let level = |o: Opened| Level { messages: o.messages.into_iter().enumerate(), expand: o.expand.into_iter().peekable() };
    let mut seen = std::collections::HashSet::from([uuid.to_string()]);
    // The offload each level of the stack expands, outermost first.
    let mut path = vec![uuid.to_string()];
    let mut out = Vec::new();
    let mut stack = vec![level(top)];
    while let Some(top) = stack.last_mut() {
        let Some((i, m)) = top.messages.next() else {
            stack.pop();
            path.pop();
            continue;
        };
        let Some(x) = top.expand.next_if(|x| x.at == i) else {
            out.push(m);
            continue;
        };
        if path.contains(&x.uuid) {
            return Err(Error::new(
                ErrorCode::StoreFailed,
                format!("offload {uuid} expands offload {} inside itself (a loop in the store); it was not reloaded", x.uuid),
            ));
        }
        if !seen.insert(x.uuid.clone()) {
            continue; // another message of a replacement whose originals are in `out` already
        }
        let inner = fetch_one(store, session_id, &x.uuid, Some(format), x.message_count, x.digest.as_deref()).await?;
        stack.push(level(inner));
        path.push(x.uuid);
    }
    Ok(out)
}

/// The original messages of offload `uuid` of session `session_id`, from the store alone (no
/// memory): the payload must name this session and uuid and, when `format` is given, that
/// format. With `offloads` (the records `compress()` returned, or a memory's), the uuid must
/// be one of them and its digest and message count must match.
///
/// # Errors
/// `INVALID_ARGUMENT` for a malformed uuid; `NOT_FOUND` when it is not among `offloads` or not
/// in the store; `STORE_FAILED` when the store fails or holds anything but that payload.
pub async fn reload<O: OffloadStore>(
    store: &O,
    session_id: &str,
    uuid: &str,
    format: Option<Format>,
    offloads: Option<&[OffloadRecord]>,
) -> Result<Vec<Value>> {
    check_uuid(uuid)?;
    let record =
        match offloads {
            None => None,
            Some(list) => Some(list.iter().find(|o| o.uuid == uuid).ok_or_else(|| {
                Error::new(ErrorCode::NotFound, format!("offload {uuid} is not among the {} offloads given", list.len()))
            })?),
        };
    let count = record.map_or(0, |r| r.message_count);
    fetch(store, session_id, uuid, format, count, record.and_then(|r| r.digest.as_deref())).await
}

/// Executes a `context_reload` call of the model from the store alone, as
/// `AutoContextMemory::handle_reload_call` does for a memory: the call in `format`'s shape (or
/// its parsed arguments), the answer a transcript of at most `limit` characters, in pages when
/// longer. `offloads` as in [`reload`].
///
/// # Errors
/// `STORE_FAILED` when the store fails or holds something else under the key; an unknown or
/// malformed uuid or page is answered in the text, for the model to read.
pub async fn handle_call<O: OffloadStore>(
    store: &O,
    session_id: &str,
    call: &Value,
    format: Format,
    limit: usize,
    offloads: Option<&[OffloadRecord]>,
) -> Result<String> {
    answer_call(format, call, limit, |uuid| async move { reload(store, session_id, &uuid, Some(format), offloads).await }).await
}

/// The answer to a `context_reload` call in `format`'s shape: reads its arguments, reloads
/// with `reload_fn`, and writes the page asked for. An unknown or malformed uuid or page is
/// answered in the text; other errors of `reload_fn` are returned.
pub(crate) async fn answer_call<F, Fut>(format: Format, call: &Value, limit: usize, reload_fn: F) -> Result<String>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<Vec<Value>>>,
{
    let args = format.reload_call_args(call);
    let Some(uuid) = args.as_ref().and_then(|a| a.get(RELOAD_TOOL_PARAM)).and_then(Value::as_str) else {
        return Ok(format!(
            "context_reload needs one string argument `{RELOAD_TOOL_PARAM}`: the uuid from a <!-- CONTEXT_OFFLOAD: uuid=... --> marker \
             (and optionally `{RELOAD_PAGE_PARAM}`, a page number from 1)."
        ));
    };
    let page = match args.as_ref().and_then(|a| a.get(RELOAD_PAGE_PARAM)) {
        None | Some(Value::Null) => Some(1),
        Some(Value::Number(n)) => n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 1.0).map(|f| f as u64)),
        Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
        Some(_) => None,
    };
    let Some(page) = page.filter(|&p| p >= 1) else {
        return Ok(format!("context_reload: `{RELOAD_PAGE_PARAM}` must be a whole number from 1."));
    };
    match reload_fn(uuid.to_string()).await {
        Ok(values) => {
            let mut msgs = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                msgs.push(format.parse(i, v)?);
            }
            format.link_all(&mut msgs);
            let refs: Vec<&Message> = msgs.iter().collect();
            Ok(reload_page(uuid, msgs.len(), &transcript(&refs), page, limit))
        }
        Err(e) if matches!(e.code(), ErrorCode::NotFound | ErrorCode::InvalidArgument) => {
            Ok(format!("No offloaded context with uuid {} exists in this conversation.", quote_short(uuid)))
        }
        Err(e) => Err(e),
    }
}

/// `s` quoted for an answer to the model, cut to its first characters when it is longer than
/// any uuid: the answer about an argument stays short whatever the model sent.
fn quote_short(s: &str) -> String {
    const SHOWN: usize = 40;
    let n = s.chars().count();
    if n <= SHOWN {
        format!("{s:?}")
    } else {
        format!("{:?}… ({n} characters)", crate::message::head_chars(s, SHOWN))
    }
}

/// Room a page keeps for its header and its note, in characters.
const PAGE_FRAME: usize = 240;

/// Page `page` of a reload's transcript, the whole answer at most `limit` characters (when
/// the limit leaves room for any content at all).
fn reload_page(uuid: &str, count: usize, body: &str, page: u64, limit: usize) -> String {
    let plural = if count == 1 { "" } else { "s" };
    let header = format!("Original content of offload {uuid} ({count} message{plural}):\n");
    if page == 1 && header.chars().count() + body.chars().count() <= limit {
        return format!("{header}{body}");
    }
    let pages = split_pages(body, limit.saturating_sub(PAGE_FRAME).max(100));
    let total = pages.len() as u64;
    let Some(chunk) = usize::try_from(page - 1).ok().and_then(|k| pages.get(k)) else {
        return format!(
            "Offload {uuid} has {total} page{} of content; there is no page {page}. Call context_reload with a page from 1 to {total}.",
            if total == 1 { "" } else { "s" }
        );
    };
    let note = if page < total {
        format!(
            "\n[Page {page} of {total}. For the next part, call context_reload with {} \"{uuid}\" and page {}.]",
            crate::format::RELOAD_TOOL_PARAM,
            page + 1
        )
    } else {
        format!("\n[Page {page} of {total}: the end of offload {uuid}.]")
    };
    format!("Original content of offload {uuid} ({count} message{plural}), page {page} of {total}:\n{chunk}{note}")
}

/// Splits `text` into pieces of at most `size` characters, cutting after a line break in the
/// second half of a piece when there is one, never inside a character.
fn split_pages(text: &str, size: usize) -> Vec<&str> {
    let mut pages = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = match rest.char_indices().nth(size) {
            None => rest.len(),
            Some((end, _)) => {
                let half = rest[..end].char_indices().nth(size / 2).map_or(0, |(i, _)| i);
                match rest[half..end].rfind('\n') {
                    Some(nl) => half + nl + 1,
                    None => end,
                }
            }
        };
        pages.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if pages.is_empty() {
        pages.push("");
    }
    pages
}
