//! Versioned persistence: a memory as JSON and back.
//!
//! The state holds the options, the working list (wire values plus the engine's marks on its
//! own messages), the original log, the offload index and the events. Offloaded originals live
//! in the host's store, not in the state. Restoring checks everything again (version, options,
//! every message, pairing, that every marked offload is one of this session's) so a tampered or
//! future state fails with `INVALID_STATE` instead of misbehaving later. Token counts are
//! recomputed, never trusted.

use std::collections::HashSet;
use std::rc::Rc;

use serde_json::{json, Value};

use crate::config::Config;
use crate::engine::{AutoContextMemory, OffloadRecord, State};
use crate::error::{Error, ErrorCode, Result};
use crate::events::CompressionEvent;
use crate::host::{OffloadStore, Summarizer};
use crate::message::Synthetic;
use crate::strategy::Entry;
use crate::tokens::TokenCounter;

/// The state format version this build writes and reads.
pub const STATE_VERSION: u64 = 1;

/// The steps that rewrite one message in place into a shorter copy of it.
const COPY_KINDS: [&str; 5] = [
    "TOOL_RESULT_TRUNCATE",
    "LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION",
    "LARGE_MESSAGE_OFFLOAD",
    "CURRENT_ROUND_LARGE_MESSAGE_SUMMARY",
    "CURRENT_ROUND_MESSAGE_COMPRESS",
];

fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidState, message)
}

impl<S: Summarizer, O: OffloadStore> AutoContextMemory<S, O> {
    /// The whole memory as versioned JSON (offloaded originals stay in the store).
    pub fn to_json(&self) -> Value {
        let st = self.state.borrow();
        let working: Vec<Value> = st
            .working
            .iter()
            .map(|e| {
                let mut item = json!({"message": e.msg.wire});
                if let Some(s) = &e.msg.synthetic {
                    item["synthetic"] = json!(s);
                }
                if e.pinned {
                    item["pinned"] = json!(true);
                }
                item
            })
            .collect();
        json!({
            "autocontext": STATE_VERSION,
            "config": self.config().to_json(),
            "working": working,
            "original": st.original.iter().map(|v| (**v).clone()).collect::<Vec<_>>(),
            "offloads": st.offloads,
            "events": st.events,
            "plan": st.plan,
            "calibration": (st.calibration.samples > 0).then_some(st.calibration),
        })
    }

    /// Restores a memory from [`AutoContextMemory::to_json`] output. `counter` is needed when
    /// the state was made with a host tokenizer.
    pub fn from_json(state: &Value, summarizer: Option<S>, store: O, counter: Option<TokenCounter>) -> Result<Self> {
        let obj = state.as_object().ok_or_else(|| bad("state must be an object made by toJSON()"))?;
        // Messages sit four levels down (state, list, item, message); deeper is not a state
        // toJSON() made, and copying it would recurse past the stack.
        if crate::format::depth::exceeds(state, crate::format::depth::MAX_DEPTH + 4) {
            return Err(bad(format!("state is nested more than {} levels deep", crate::format::depth::MAX_DEPTH + 4)));
        }
        match obj.get("autocontext").and_then(Value::as_u64) {
            Some(STATE_VERSION) => {}
            Some(v) if v > STATE_VERSION => {
                return Err(bad(format!("state version {v} is newer than this autocontext reads ({STATE_VERSION}); upgrade autocontext")))
            }
            _ => return Err(bad("state has no valid `autocontext` version field; was it made by toJSON()?")),
        }
        let config =
            Config::from_json(obj.get("config").unwrap_or(&Value::Null)).map_err(|e| bad(format!("state.config: {}", e.message())))?;
        let counter = match counter {
            Some(c) => c,
            None => TokenCounter::new(config.tokenizer).map_err(|e| bad(format!("state: {}", e.message())))?,
        };
        let format = config.format;
        let offloads: Vec<OffloadRecord> =
            serde_json::from_value(obj.get("offloads").cloned().unwrap_or(json!([]))).map_err(|e| bad(format!("state.offloads: {e}")))?;
        let mut offload_ids = HashSet::new();
        for o in &offloads {
            if !crate::reload::is_uuid(&o.uuid) || !offload_ids.insert(o.uuid.clone()) {
                return Err(bad(format!("state.offloads: {:?} is not a valid, unique offload uuid", o.uuid)));
            }
            if o.digest.as_deref().is_some_and(|d| !crate::offload::is_digest(d)) {
                return Err(bad(format!("state.offloads: offload {} has a malformed digest {:?}", o.uuid, o.digest)));
            }
        }
        let events: Vec<CompressionEvent> =
            serde_json::from_value(obj.get("events").cloned().unwrap_or(json!([]))).map_err(|e| bad(format!("state.events: {e}")))?;

        let calibration = crate::calibration::Calibration::from_json(obj.get("calibration"))?;
        let plan = match obj.get("plan") {
            None | Some(Value::Null) => None,
            Some(p) => Some(crate::plan::Plan::from_json(p).map_err(|e| bad(format!("state.plan: {}", e.message())))?),
        };
        let original_values = match obj.get("original") {
            Some(Value::Array(a)) => a,
            _ => return Err(bad("state.original must be an array")),
        };
        let mut call_ids = HashSet::new();
        let mut original = Vec::with_capacity(original_values.len());
        for (i, v) in original_values.iter().enumerate() {
            let m = format.parse(i, v).map_err(|e| bad(format!("state.original: {}", e.message())))?;
            call_ids.extend(m.call_ids().map(str::to_string));
            original.push(Rc::new(v.clone()));
        }

        let working_values = match obj.get("working") {
            Some(Value::Array(a)) => a,
            _ => return Err(bad("state.working must be an array")),
        };
        let single: HashSet<&str> = offloads.iter().filter(|o| o.message_count == 1).map(|o| o.uuid.as_str()).collect();
        let mut working = Vec::with_capacity(working_values.len());
        let mut working_tokens = 0u64;
        for (i, item) in working_values.iter().enumerate() {
            let wire = item.get("message").ok_or_else(|| bad(format!("state.working[{i}] has no message")))?;
            let mut m = format.parse(i, wire).map_err(|e| bad(format!("state.working: {}", e.message())))?;
            if let Some(s) = item.get("synthetic") {
                let mut s: Synthetic = serde_json::from_value(s.clone()).map_err(|e| bad(format!("state.working[{i}].synthetic: {e}")))?;
                if let Some(u) = &s.offload {
                    if !offload_ids.contains(u) {
                        return Err(bad(format!("state.working[{i}] names offload {u}, which this session did not create")));
                    }
                    // States from before copies were marked: a message a shrinking step rewrote in
                    // place, whose offload holds one message, is a copy of that message.
                    if s.in_place && COPY_KINDS.contains(&s.kind.as_str()) && single.contains(u.as_str()) {
                        s.copy = true;
                    }
                }
                m.synthetic = Some(s);
            }
            let pinned = match item.get("pinned") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(bad(format!("state.working[{i}].pinned must be true or false"))),
            };
            let tokens = counter.count_message(&m).map_err(|e| bad(format!("state.working[{i}]: {}", e.message())))?;
            working_tokens += tokens as u64;
            working.push(Entry { msg: Rc::new(m), tokens, pinned });
        }
        // Pairing is what the engine relies on; the format's softer rules (Anthropic's
        // alternation) may already be broken by what the host added, and restore keeps that.
        if let Some(p) = crate::format::validate_tool_pairing(format, &working).first() {
            return Err(bad(format!("state.working is not a valid conversation: {}", p.message)));
        }
        let memory = AutoContextMemory::with_counter(config, counter, summarizer, store)
            .map_err(|e| bad(format!("state.config: {}", e.message())))?;
        *memory.state.borrow_mut() = State {
            working,
            working_tokens,
            original,
            offloads,
            offload_ids,
            events,
            call_ids,
            generation: 0,
            plan,
            abandoned: Vec::new(),
            calibration,
        };
        Ok(memory)
    }
}
