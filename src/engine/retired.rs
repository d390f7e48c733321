//! The offload index's older records, kept in the host's store so the state stays the size of
//! the working list.
//!
//! Every pass adds an offload or two to the index, so a long session's index would outgrow its
//! working list many times over (about 4,000 records at 20,000 messages of the corpus). The
//! state keeps every record a working message names (its offload, or a marker in its text) and
//! the most recent [`LIVE_OFFLOADS`]; the others are retired to a chain of chunks in the store
//! (`<sessionId>/index-<first>-<digest>`, written like the log's, see [`super::log`]). They stay
//! reloadable: a summary the model reloads may name an older offload, and a reload of a uuid the
//! state does not hold looks for it in the chain, newest first, before it answers `NOT_FOUND`.

use std::collections::HashSet;
use std::rc::Rc;

use serde_json::Value;

use super::log::{read_chunk, Chain, Log};
use crate::engine::offload::OffloadRecord;
use crate::entry::Entry;
use crate::error::Result;
use crate::host::OffloadStore;

/// How many records the state keeps beyond those the working list names.
pub const LIVE_OFFLOADS: usize = 256;

/// The retired records: a [`Log`] of the index chain.
#[derive(Debug, Clone)]
pub(crate) struct Retired(pub Log);

impl Default for Retired {
    fn default() -> Self {
        Retired(Log::new(Chain::Index))
    }
}

impl Retired {
    /// Retires `record`.
    pub fn push(&mut self, record: &OffloadRecord) {
        let value = serde_json::to_value(record).expect("a record always serializes");
        self.0.push(Rc::new(value), 1);
    }

    /// The record of `uuid` among those not yet written to the store.
    pub fn in_tail(&self, uuid: &str) -> Option<OffloadRecord> {
        self.0.tail().filter_map(record).find(|r| r.uuid == uuid)
    }
}

/// A retired record as the chain holds it.
pub(crate) fn record(v: &Value) -> Option<OffloadRecord> {
    crate::fields::record(v, "").ok()
}

/// The offloads the working list names: each replaced message's own, and every marker in the
/// text the engine wrote (a note joined to a turn names its own, and the turn may carry others).
pub(crate) fn named(working: &[Entry]) -> HashSet<String> {
    let mut out = HashSet::new();
    for e in working {
        let Some(s) = &e.msg.synthetic else { continue };
        out.extend(s.offload.iter().cloned());
        out.extend(crate::message::find_markers(&e.msg.wire.to_string()));
    }
    out
}

/// Moves the oldest records the working list does not name out of `offloads` into `retired`
/// until at most [`LIVE_OFFLOADS`] of them stay (and those named); returns the retired uuids.
pub(crate) fn retire(offloads: &mut Vec<OffloadRecord>, working: &[Entry], retired: &mut Retired) -> Vec<String> {
    if offloads.len() <= LIVE_OFFLOADS {
        return Vec::new();
    }
    let named = named(working);
    let mut excess = offloads.len() - LIVE_OFFLOADS;
    let mut gone = Vec::new();
    offloads.retain(|o| {
        if excess > 0 && !named.contains(&o.uuid) {
            retired.push(o);
            gone.push(o.uuid.clone());
            excess -= 1;
            false
        } else {
            true
        }
    });
    gone
}

/// The retired record of `uuid` in the chain whose newest chunk is `head`, newest first (the
/// caller looked in the tail, [`Retired::in_tail`]); `None` when this session never wrote it.
///
/// # Errors
/// `STORE_FAILED` when the store fails or a chunk is missing or changed.
pub(crate) async fn find<O: OffloadStore>(head: Option<String>, store: &O, session_id: &str, uuid: &str) -> Result<Option<OffloadRecord>> {
    let mut key = head;
    while let Some(k) = key {
        let (items, prev) = read_chunk(store, session_id, Chain::Index, &k).await?;
        if let Some(r) = items.iter().rev().filter_map(record).find(|r| r.uuid == uuid) {
            return Ok(Some(r));
        }
        key = prev;
    }
    Ok(None)
}
