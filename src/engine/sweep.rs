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
//!
//! What a killed process left (one pass's offloads, a chunk of the log, one save's pages) no state
//! names, so no pending list holds it. [`AutoContextMemory::reachable_keys`] gives the other half
//! of that clean-up: every key the state reaches. The binding lists the session's keys, saves
//! through the session store (a fence: every writer that loaded an earlier revision can no longer
//! commit), and deletes the listed keys the saved state does not reach. Keys never collide
//! between writers (random uuids, a writer name in every chunk and page), so a key listed before
//! the fence and not reached after it can only be one no state will ever name.

use std::collections::BTreeSet;

use futures_util::FutureExt;
use serde::Serialize;

use super::log::{walk, Chain};
use super::AutoContextMemory;
use crate::error::Result;
use crate::host::{OffloadStore, Summarizer};

/// What a sweep deleted: the offloads this session wrote and abandoned.
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
        let keys: Vec<String> = pending.iter().map(|u| crate::engine::reload::key(&self.config().session_id, u)).collect();
        // Boxed store calls: join_all is compiled once per result type, not once per call site.
        let results = futures_util::future::join_all(keys.iter().map(|k| self.store().delete(k).boxed_local())).await;
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

    /// Every key of the offload store the state reaches: the offloads of the index and of the
    /// records retired from it, the chunks of the log and of the retired index, and any offload a
    /// working message names. Reads each chunk of both chains (O(history / 64) gets); `listed`,
    /// the session's keys as the store lists them (or none), lets it read several at once.
    /// Pending deletes are not reached: they are abandoned.
    ///
    /// # Errors
    /// `STORE_FAILED` when the store fails or a chunk is missing or changed: then nothing is
    /// known to be unreached, and a caller must delete nothing.
    pub async fn reachable_keys(&self, listed: &[String]) -> Result<BTreeSet<String>> {
        let id = &self.config().session_id;
        let key = |uuid: &str| crate::engine::reload::key(id, uuid);
        let mut out = BTreeSet::new();
        self.materialize()?;
        let heads = {
            let st = self.state.borrow();
            out.extend(st.offloads.iter().map(|o| key(&o.uuid)));
            out.extend(super::retired::named(&st.working).iter().map(|u| key(u)));
            out.extend(st.retired.0.tail().filter_map(super::retired::record).map(|r| key(&r.uuid)));
            [(Chain::Messages, st.log.head().map(str::to_string)), (Chain::Index, st.retired.0.head().map(str::to_string))]
        };
        for (chain, head) in heads {
            walk(self.store(), id, chain, head, listed, |k, items| {
                if chain == Chain::Index {
                    out.extend(items.iter().filter_map(super::retired::record).map(|r| key(&r.uuid)));
                }
                out.insert(k.to_string());
            })
            .await?;
        }
        Ok(out)
    }

    /// The offload uuids whose delete is pending (see [`AutoContextMemory::sweep_pending`]).
    pub fn pending_deletes(&self) -> Vec<String> {
        self.state.borrow().abandoned.clone()
    }
}
