//! What the engine knows of the provider's prompt cache: when the last model call was made,
//! and whether the provider reads anything from its cache at all.
//!
//! A cache that holds nothing of the next request makes every edit free: the provider writes
//! the whole request anyway, so a pass that stubs or summarizes then costs no rewrite (see
//! [`crate::strategy::rent`]). The cache is cold when
//! - the host's clock says more than `prices.cacheTtlMs` passed since the last call (a tool
//!   that ran for minutes, a user back from a break): the provider has evicted it; or
//! - the provider's last two usage reports read nothing from it on requests long enough to
//!   cache: it is not caching these requests (no cache breakpoints, a model without caching).
//!   One such report alone says nothing: the first request after a pause reads nothing and
//!   writes the cache for the next.
//!
//! The last call is when the host last asked for a pass (`compressIfNeeded`, before each model
//! call) or reported usage (after one). Both facts are saved with the state, so a Worker that
//! restores its memory for every request still sees the pause.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::fields::{Fault, Fields, Record};

/// The shortest prompt a provider caches (Anthropic's minimum for most models): a report on
/// a shorter one says nothing about the cache.
const MIN_CACHEABLE: u64 = 1024;

/// Reports in a row that read nothing before the cache counts as absent.
const EMPTY_READS: u32 = 2;

/// The engine's view of the provider's cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CacheWatch {
    /// When the last model call was made, by the host's clock (milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_call_ms: Option<f64>,
    /// Usage reports in a row that read nothing from the cache.
    #[serde(default)]
    pub empty_reads: u32,
}

impl Record for CacheWatch {
    const FIELDS: &'static [&'static str] = &["lastCallMs", "emptyReads"];
    fn read(f: &Fields) -> std::result::Result<CacheWatch, Fault> {
        Ok(CacheWatch { last_call_ms: f.opt_f64("lastCallMs")?, empty_reads: f.opt_u32("emptyReads")?.unwrap_or(0) })
    }
}

impl CacheWatch {
    /// Whether nothing of the next request is cached, at `now` with a cache that lives
    /// `ttl_ms` after a call.
    pub fn cold(&self, now: f64, ttl_ms: u64) -> bool {
        self.empty_reads >= EMPTY_READS || self.last_call_ms.is_some_and(|t| now - t > ttl_ms as f64)
    }

    /// A model call is made at `now`.
    pub fn called(&mut self, now: f64) {
        if now.is_finite() {
            self.last_call_ms = Some(now);
        }
    }

    /// The provider reported a call at `now`: `prompt` tokens, `cached` of them from its cache.
    pub fn observed(&mut self, now: f64, prompt: u64, cached: Option<u64>) {
        self.called(now);
        match cached {
            Some(0) if prompt >= MIN_CACHEABLE => self.empty_reads = self.empty_reads.saturating_add(1),
            Some(c) if c > 0 => self.empty_reads = 0,
            _ => {}
        }
    }

    /// The saved form, `None` when there is nothing to save.
    pub fn to_json(self) -> Option<Value> {
        (self != CacheWatch::default()).then(|| serde_json::to_value(self).unwrap_or(Value::Null))
    }

    /// Reads the saved form (absent in older states).
    pub fn from_json(v: Option<&Value>) -> Result<CacheWatch> {
        let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(CacheWatch::default()) };
        let c: CacheWatch = crate::fields::record(v, "state.cache").map_err(|e| Error::new(ErrorCode::InvalidState, e))?;
        if c.last_call_ms.is_some_and(|t| !t.is_finite()) {
            return Err(Error::new(ErrorCode::InvalidState, "state.cache.lastCallMs must be a finite number"));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_after_the_lifetime_or_two_empty_reads() {
        let mut c = CacheWatch::default();
        assert!(!c.cold(1e9, 300_000), "no call yet: nothing is known");
        c.called(1_000.0);
        assert!(!c.cold(301_000.0, 300_000));
        assert!(c.cold(301_001.0, 300_000));
        c.observed(2_000.0, 50_000, Some(0));
        assert!(!c.cold(3_000.0, 300_000), "one empty read is a cache written for the next call");
        c.observed(3_000.0, 500, Some(0));
        assert!(!c.cold(4_000.0, 300_000), "a prompt too short to cache says nothing");
        c.observed(4_000.0, 60_000, Some(0));
        assert!(c.cold(5_000.0, 300_000), "two in a row: the provider is not caching");
        c.observed(5_000.0, 60_000, Some(40_000));
        assert!(!c.cold(6_000.0, 300_000));
        let saved = CacheWatch { last_call_ms: Some(5.0), empty_reads: 1 };
        assert_eq!(CacheWatch::from_json(saved.to_json().as_ref()).unwrap(), saved);
        assert_eq!(CacheWatch::from_json(None).unwrap(), CacheWatch::default());
        assert!(CacheWatch::from_json(Some(&serde_json::json!({"emptyReads": -1}))).is_err());
    }
}
