//! Calibration of the token estimate against the provider's own counts.
//!
//! The engine counts tokens itself (exactly for OpenAI's encodings, approximately for every
//! other model, and without the provider's hidden framing, tool schemas or images as the
//! provider bills them). After each model call the host can report what the provider counted
//! (`usage.prompt_tokens`, `input_tokens`, `promptTokenCount`) with
//! [`crate::AutoContextMemory::observe_usage`]. The ratio of the provider's count to the engine's
//! estimate of the same request, smoothed over calls, becomes a correction factor applied to the
//! trigger: with a provider that counts 20% more, passes start 20% earlier in the estimate's
//! units, so the real request still fits. The report says how far the estimate drifted, and how
//! much of the prompt the provider served from its cache, so a host can see what compactions
//! cost it.
//!
//! A wrong report is worse than none: the usage of another call (the summarizer's), the output
//! tokens, or only the cached share, fed in as the prompt, would lower the factor and push the
//! trigger past the window, so every later request overflows. So a report is checked before it
//! counts. Below half the estimate no tokenizer explains it: it is refused and changes nothing.
//! Otherwise the factor stays between `tokenRatio` (below it the calibrated trigger would pass
//! `maxToken` itself) and 4 (tokens sent besides the messages belong in `reservedTokens`), and a
//! report outside that range is folded in at the bound. Either way the report says so.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::fields::{Fault, Fields, Record};
use crate::json::{Fixed, Num};

/// The factor never leaves this range (a report off by more is a host mistake, not drift).
const MIN_FACTOR: f64 = 0.25;
const MAX_FACTOR: f64 = 4.0;
/// Weight of a new observation in the smoothed factor.
const WEIGHT: f64 = 0.3;
/// A report counting less than this share of the estimate is refused.
const MIN_PLAUSIBLE: f64 = 0.5;

/// What became of a usage report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UsageStatus {
    /// Folded into the correction as it came.
    Accepted,
    /// Outside the plausible range: folded in at its bound.
    Clamped,
    /// Implausibly low: not folded in; the correction is unchanged.
    Refused,
}

/// The correction factor and how many observations made it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// Provider tokens per estimated token (1 until observed).
    pub factor: f64,
    /// Observations so far.
    pub samples: u64,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration { factor: 1.0, samples: 0 }
    }
}

impl Record for Calibration {
    const FIELDS: &'static [&'static str] = &["factor", "samples"];
    fn read(f: &Fields) -> std::result::Result<Calibration, Fault> {
        Ok(Calibration { factor: f.f64("factor")?, samples: f.u64("samples")? })
    }
}

impl Calibration {
    /// `provider` tokens in the estimate's units.
    pub fn estimate_of(&self, provider: u64) -> u64 {
        if self.factor == 1.0 {
            provider
        } else {
            (provider as f64 / self.factor).floor() as u64
        }
    }

    /// The trigger (`maxToken × tokenRatio`) in the estimate's units: what a pass, a
    /// preparation and rent pricing all compare the estimated request with.
    pub fn trigger(&self, config: &crate::options::Config) -> u64 {
        self.estimate_of(config.trigger_tokens())
    }

    /// Folds in one observation of `ratio` (provider / estimate), which the caller has
    /// already bounded (see [`crate::AutoContextMemory::observe_usage`]).
    pub(crate) fn observe(&mut self, ratio: f64) {
        let ratio = ratio.clamp(MIN_FACTOR, MAX_FACTOR);
        self.factor = if self.samples == 0 { ratio } else { (1.0 - WEIGHT) * self.factor + WEIGHT * ratio };
        self.factor = self.factor.clamp(MIN_FACTOR, MAX_FACTOR);
        self.samples += 1;
    }

    /// Raises the factor to at least `ratio` (a provider refused a request as too long).
    pub(crate) fn at_least(&mut self, ratio: f64) {
        let ratio = ratio.clamp(MIN_FACTOR, MAX_FACTOR);
        if ratio > self.factor {
            self.factor = ratio;
        }
        self.samples = self.samples.max(1);
    }

    /// Reads the persisted form (absent in older states).
    pub(crate) fn from_json(v: Option<&Value>) -> Result<Calibration> {
        let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(Calibration::default()) };
        let c: Calibration = crate::fields::record(v, "state.calibration").map_err(|e| Error::new(ErrorCode::InvalidState, e))?;
        if !(c.factor.is_finite() && (MIN_FACTOR..=MAX_FACTOR).contains(&c.factor)) {
            return Err(Error::new(ErrorCode::InvalidState, format!("state.calibration: factor {} is out of range", Num(c.factor))));
        }
        Ok(c)
    }
}

/// What [`crate::AutoContextMemory::observe_usage`] reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    /// The engine's estimate of the request.
    pub estimated_tokens: u64,
    /// What the provider counted.
    pub prompt_tokens: u64,
    /// What the provider served from its prompt cache, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// `cached_tokens / prompt_tokens`, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_ratio: Option<f64>,
    /// `prompt_tokens − estimated_tokens`.
    pub drift: i64,
    /// `prompt_tokens / estimated_tokens − 1` (0.1: the provider counts 10% more).
    pub drift_ratio: f64,
    /// The correction factor now in force (provider tokens per estimated token).
    pub correction: f64,
    /// Observations so far.
    pub samples: u64,
    /// The trigger (`maxToken × tokenRatio`) in the estimate's units, as passes now use it.
    pub trigger_tokens: u64,
    /// `accepted`; `clamped` when the report's ratio to the estimate was past what any tokenizer
    /// or framing explains and only the plausible bound was folded in; `refused` when the
    /// provider counted less than half the estimate (the usage of another call, output tokens, a
    /// cached share) and nothing was folded in, the trigger left as it was.
    pub status: UsageStatus,
    /// Why a report was clamped or refused, for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Reads a usage report: `{ promptTokens, cachedTokens? }`, or a provider's own usage object as
/// its SDK returns it: OpenAI chat (`prompt_tokens`, `prompt_tokens_details.cached_tokens`),
/// OpenAI responses (`input_tokens`, `input_tokens_details.cached_tokens`), Anthropic
/// (`input_tokens` plus `cache_read_input_tokens` and `cache_creation_input_tokens`, which it
/// counts apart), Gemini (`promptTokenCount`, `cachedContentTokenCount`) or the AI SDK
/// (`inputTokens`, `cachedInputTokens` or `inputTokenDetails.cacheReadTokens`). Returns the
/// prompt tokens and the cached ones.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field when none of these shapes is there or a count is not a
/// non-negative integer.
pub fn read_usage(v: &Value) -> Result<(u64, Option<u64>)> {
    let bad = |field: &str, msg: String| Error::new(ErrorCode::InvalidArgument, format!("usage.{field} {msg}")).at_field(field);
    let Value::Object(o) = v else {
        return Err(
            Error::new(ErrorCode::InvalidArgument, "usage must be an object such as { promptTokens, cachedTokens }").at_field("usage")
        );
    };
    let count = |path: &[&str]| -> Result<Option<u64>> {
        let mut cur = v;
        for p in path {
            match cur.get(*p) {
                Some(x) if !x.is_null() => cur = x,
                _ => return Ok(None),
            }
        }
        let n = cur.as_u64().or_else(|| cur.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9e15).map(|f| f as u64));
        n.map(Some).ok_or_else(|| bad(&path.join("."), format!("must be a non-negative integer, got {cur}")))
    };
    let anthropic = o.contains_key("cache_read_input_tokens") || o.contains_key("cache_creation_input_tokens");
    let (prompt, cached) = if let Some(p) = count(&["promptTokens"])? {
        (p, count(&["cachedTokens"])?)
    } else if let Some(p) = count(&["prompt_tokens"])? {
        (p, count(&["prompt_tokens_details", "cached_tokens"])?)
    } else if anthropic {
        let input = count(&["input_tokens"])?.unwrap_or(0);
        let read = count(&["cache_read_input_tokens"])?.unwrap_or(0);
        let created = count(&["cache_creation_input_tokens"])?.unwrap_or(0);
        (input + read + created, Some(read))
    } else if let Some(p) = count(&["input_tokens"])? {
        (p, count(&["input_tokens_details", "cached_tokens"])?)
    } else if let Some(p) = count(&["promptTokenCount"])? {
        (p, count(&["cachedContentTokenCount"])?)
    } else if let Some(p) = count(&["inputTokens"])? {
        (
            p,
            match count(&["cachedInputTokens"])? {
                Some(c) => Some(c),
                None => count(&["inputTokenDetails", "cacheReadTokens"])?,
            },
        )
    } else {
        return Err(bad("promptTokens", "is missing (pass { promptTokens, cachedTokens } or the provider's usage object)".into()));
    };
    Ok((prompt, cached))
}

/// Folds a usage report into `calibration` (see [`crate::AutoContextMemory::observe_usage`]):
/// `estimated` is the engine's count of the request, `trigger` the trigger in provider tokens
/// (`maxToken × tokenRatio`), `token_ratio` the option.
///
/// # Errors
/// `INVALID_ARGUMENT` when `prompt_tokens` is 0 or `cached_tokens` exceeds it.
pub(crate) fn observe_usage(
    calibration: &mut Calibration,
    estimated: u64,
    trigger: u64,
    token_ratio: f64,
    prompt_tokens: u64,
    cached_tokens: Option<u64>,
) -> Result<UsageReport> {
    if prompt_tokens == 0 {
        return Err(Error::new(ErrorCode::InvalidArgument, "promptTokens must be a positive integer").at_field("promptTokens"));
    }
    if cached_tokens.is_some_and(|c| c > prompt_tokens) {
        return Err(Error::new(ErrorCode::InvalidArgument, "cachedTokens cannot exceed promptTokens").at_field("cachedTokens"));
    }
    let estimated = estimated.max(1);
    let ratio = prompt_tokens as f64 / estimated as f64;
    let floor = token_ratio.clamp(MIN_PLAUSIBLE, 1.0);
    let st = calibration;
    let (status, warning) = if ratio < MIN_PLAUSIBLE {
        let why = format!(
            "refused: the provider counted {prompt_tokens} prompt tokens for a request estimated at {estimated}, less than half, \
             which no tokenizer explains (the usage of another call, the output tokens or only the cached share?); \
             the trigger stays at {} estimated tokens",
            st.estimate_of(trigger)
        );
        (UsageStatus::Refused, Some(why))
    } else if ratio < floor {
        st.observe(floor);
        let why = format!(
            "clamped: the provider counted {prompt_tokens} prompt tokens for a request estimated at {estimated} ({}x); \
             folded in as {}x (tokenRatio), since a lower factor would move the trigger past maxToken",
            Fixed(ratio, 2),
            Fixed(floor, 2)
        );
        (UsageStatus::Clamped, Some(why))
    } else if ratio > MAX_FACTOR {
        st.observe(MAX_FACTOR);
        let why = format!(
            "clamped: the provider counted {prompt_tokens} prompt tokens for a request estimated at {estimated} ({}x); \
             folded in as {}x; tokens sent besides the messages (system prompt, tool schemas) belong in reservedTokens",
            Fixed(ratio, 1),
            Num(MAX_FACTOR)
        );
        (UsageStatus::Clamped, Some(why))
    } else {
        st.observe(ratio);
        (UsageStatus::Accepted, None)
    };
    let c = *st;
    Ok(UsageReport {
        estimated_tokens: estimated,
        prompt_tokens,
        cached_tokens,
        cache_hit_ratio: cached_tokens.map(|k| k as f64 / prompt_tokens as f64),
        drift: prompt_tokens as i64 - estimated as i64,
        drift_ratio: ratio - 1.0,
        correction: c.factor,
        samples: c.samples,
        trigger_tokens: c.estimate_of(trigger),
        status,
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_objects_of_every_provider_are_read() {
        use serde_json::json;
        for (v, want) in [
            (json!({"promptTokens": 900, "cachedTokens": 512}), (900, Some(512))),
            (json!({"prompt_tokens": 900, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 512}}), (900, Some(512))),
            (json!({"input_tokens": 900, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5}), (900, Some(0))),
            (
                json!({"input_tokens": 100, "cache_read_input_tokens": 700, "cache_creation_input_tokens": 100, "output_tokens": 5}),
                (900, Some(700)),
            ),
            (json!({"promptTokenCount": 900, "cachedContentTokenCount": 300, "candidatesTokenCount": 5}), (900, Some(300))),
            (json!({"inputTokens": 900, "outputTokens": 5, "cachedInputTokens": 64}), (900, Some(64))),
            (json!({"inputTokens": 900, "inputTokenDetails": {"cacheReadTokens": 32}}), (900, Some(32))),
        ] {
            assert_eq!(read_usage(&v).unwrap(), want, "{v}");
        }
        assert_eq!(read_usage(&json!({"promptTokens": -1})).unwrap_err().field(), Some("promptTokens"));
        assert_eq!(read_usage(&json!({"completion": 3})).unwrap_err().field(), Some("promptTokens"));
        assert_eq!(read_usage(&json!(5)).unwrap_err().field(), Some("usage"));
    }

    #[test]
    fn the_factor_smooths_and_stays_in_range() {
        let mut c = Calibration::default();
        assert_eq!(c.estimate_of(1000), 1000);
        c.observe(1.2);
        assert!((c.factor - 1.2).abs() < 1e-9, "the first observation sets it");
        assert_eq!(c.estimate_of(1200), 1000);
        c.observe(1.0);
        assert!((c.factor - 1.14).abs() < 1e-9);
        c.observe(1000.0);
        assert!(c.factor <= MAX_FACTOR);
        c.at_least(4.0);
        assert_eq!(c.factor, MAX_FACTOR);
        assert!(Calibration::from_json(Some(&serde_json::json!({"factor": 9.0, "samples": 1}))).is_err());
        assert_eq!(Calibration::from_json(None).unwrap(), Calibration::default());
    }
}
