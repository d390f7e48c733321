//! Clean-up as an API: [`AutoContextMemory::sweep_pending`] deletes what this session wrote and
//! abandoned, and nothing else.
//!
//! A pass writes the originals of what it replaces before it commits. When it cannot commit (a
//! put failed, the summarizer failed, the host dropped it), it deletes what it wrote; a delete
//! that fails leaves the uuid pending. Pending deletes are part of the state (`toJSON()`'s
//! `pending`), so a memory restored in another request still knows them; the next pass retries
//! them first, and `sweep()` retries them on demand. No clean-up here lists the store and deletes
//! "what the index does not name": with a second writer on the session, that would delete the
//! other writer's live offloads.

use serde::Serialize;

use super::AutoContextMemory;
use crate::host::{OffloadStore, Summarizer};

/// What [`AutoContextMemory::sweep_pending`] did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepReport {
    /// The store keys deleted: offloads this session wrote and abandoned.
    pub deleted: Vec<String>,
    /// Pending deletes that failed again; they stay pending (and in the state).
    pub pending: Vec<String>,
}

impl<S: Summarizer, O: OffloadStore> AutoContextMemory<S, O> {
    /// Deletes the offloads this session wrote and abandoned (a pass that failed or was
    /// dropped, whose own clean-up failed), which no state references. Deletes that fail again
    /// stay pending. Never touches an offload of the index, nor any key this memory did not
    /// write.
    pub async fn sweep_pending(&self) -> SweepReport {
        let pending = std::mem::take(&mut self.state.borrow_mut().abandoned);
        let keys: Vec<String> = pending.iter().map(|u| crate::reload::key(&self.config().session_id, u)).collect();
        let results = futures_util::future::join_all(keys.iter().map(|k| self.store().delete(k))).await;
        let mut report = SweepReport::default();
        let mut again = Vec::new();
        for ((uuid, key), result) in pending.into_iter().zip(keys).zip(results) {
            if result.is_ok() {
                report.deleted.push(key);
            } else {
                report.pending.push(key);
                again.push(uuid);
            }
        }
        self.state.borrow_mut().abandoned.extend(again);
        report
    }

    /// The offload uuids whose delete is pending (see [`AutoContextMemory::sweep_pending`]).
    pub fn pending_deletes(&self) -> Vec<String> {
        self.state.borrow().abandoned.clone()
    }
}
