//! Presets and strategy names: how a host picks a ladder.
//!
//! Peers compress in very different ways, and none of them is best for every agent: the
//! reference's progressive ladder keeps the most verbatim, a structured prefix summary (the
//! AgentScope Python design) keeps one compact state document, fact retrieval (Koog) keeps only
//! what named concepts need, and turn trimming (chatgpt-on-wechat) is the cheapest. A preset
//! names one of these ladders; a host with other needs lists its own order in `strategies`,
//! naming each step by its event type (`PREFIX_SUMMARY`) or its documented name
//! (`prefix-summary`). Both are checked when the memory is built, so a typo fails with
//! `INVALID_CONFIG` naming the entry instead of silently skipping a step.

use serde_json::Value;

use super::{Strategy, DEFAULT_LADDER};
use crate::error::{Error, Result};
use crate::format::openai::kind_of;

/// A named ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// The reference's progressive ladder ([`DEFAULT_LADDER`]); the default.
    AgentScope,
    /// Truncate huge tool results, then one structured summary of everything before a reserved
    /// recent tail, then the emergency step.
    PrefixSummary,
    /// Truncate huge tool results, then facts per configured concept in place of everything
    /// before the reserved tail (the fallback strategy when none are found), then the
    /// emergency step.
    Facts,
    /// Truncate huge tool results, trim the oldest half of the turns into a summary, keep only
    /// text of the few remaining turns, then the emergency step.
    Turns,
}

impl Preset {
    /// Every preset, in documentation order.
    pub const ALL: [Preset; 4] = [Preset::AgentScope, Preset::PrefixSummary, Preset::Facts, Preset::Turns];

    /// The option value naming this preset.
    pub fn name(self) -> &'static str {
        match self {
            Preset::AgentScope => "agentscope",
            Preset::PrefixSummary => "prefix-summary",
            Preset::Facts => "facts",
            Preset::Turns => "turns",
        }
    }

    /// The preset with this option value.
    pub fn from_name(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The strategies this preset runs, in order.
    pub fn ladder(self) -> &'static [Strategy] {
        match self {
            Preset::AgentScope => DEFAULT_LADDER,
            Preset::PrefixSummary => &[Strategy::ToolResultTruncate, Strategy::PrefixSummary, Strategy::Emergency],
            Preset::Facts => &[Strategy::ToolResultTruncate, Strategy::FactRetrieval, Strategy::Emergency],
            Preset::Turns => &[Strategy::ToolResultTruncate, Strategy::TurnTrim, Strategy::TurnTextOnly, Strategy::Emergency],
        }
    }
}

impl Strategy {
    /// Every strategy, in documentation order.
    pub const ALL: [Strategy; 13] = [
        Strategy::ToolResultTruncate,
        Strategy::LargeMessageOffloadWithProtection,
        Strategy::LargeMessageOffload,
        Strategy::HistoryRollup,
        Strategy::ToolRunCompress,
        Strategy::PreviousRoundSummary,
        Strategy::CurrentRoundLargeMessage,
        Strategy::CurrentRoundCompress,
        Strategy::Emergency,
        Strategy::PrefixSummary,
        Strategy::FactRetrieval,
        Strategy::TurnTrim,
        Strategy::TurnTextOnly,
    ];

    /// The documented name of the strategy, as `strategies` accepts it besides its event type.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::ToolResultTruncate => "tool-result-truncate",
            Strategy::LargeMessageOffloadWithProtection => "large-message-offload-protected",
            Strategy::LargeMessageOffload => "large-message-offload",
            Strategy::HistoryRollup => "history-rollup",
            Strategy::ToolRunCompress => "tool-run-compress",
            Strategy::PreviousRoundSummary => "previous-round-summary",
            Strategy::CurrentRoundLargeMessage => "current-round-large-message",
            Strategy::CurrentRoundCompress => "current-round-compress",
            Strategy::Emergency => "emergency",
            Strategy::PrefixSummary => "prefix-summary",
            Strategy::FactRetrieval => "facts",
            Strategy::TurnTrim => "turn-trim",
            Strategy::TurnTextOnly => "turn-text-only",
        }
    }

    /// The strategy with this documented name or event type.
    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.name() == name || s.event_type() == name)
    }
}

fn known_names() -> String {
    Strategy::ALL.iter().map(|s| format!("\"{}\"", s.name())).collect::<Vec<_>>().join(", ")
}

/// Reads the `preset` option.
pub(crate) fn read_preset(v: &Value) -> Result<Preset> {
    let names: Vec<String> = Preset::ALL.iter().map(|p| format!("\"{}\"", p.name())).collect();
    v.as_str()
        .and_then(Preset::from_name)
        .ok_or_else(|| Error::config("preset", format!("must be one of {}, got {}", names.join(", "), show(v))))
}

/// Reads one strategy name of an option (`strategies[2]`, `factsFallback`).
pub(crate) fn read_strategy(v: &Value, field: &str) -> Result<Strategy> {
    match v {
        Value::String(s) => Strategy::from_name(s).ok_or_else(|| {
            Error::config(
                field,
                format!("{s:?} is not a strategy; use an event type such as \"PREFIX_SUMMARY\" or one of {}", known_names()),
            )
        }),
        other => Err(Error::config(field, format!("must be a strategy name (a string), got {}", kind_of(other)))),
    }
}

/// Reads the `strategies` option: a non-empty list of distinct strategy names.
pub(crate) fn read_strategies(v: &Value) -> Result<Vec<Strategy>> {
    let Value::Array(items) = v else {
        return Err(Error::config("strategies", format!("must be an array of strategy names, got {}", kind_of(v))));
    };
    if items.is_empty() {
        return Err(Error::config("strategies", "must name at least one strategy (an empty ladder never compresses)"));
    }
    let mut out: Vec<Strategy> = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        let field = format!("strategies[{k}]");
        let s = read_strategy(item, &field)?;
        if out.contains(&s) {
            return Err(Error::config(&field, format!("names {:?} a second time; a ladder runs each strategy once per sweep", s.name())));
        }
        out.push(s);
    }
    Ok(out)
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => kind_of(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_event_types_both_name_a_strategy() {
        for s in Strategy::ALL {
            assert_eq!(Strategy::from_name(s.name()), Some(s));
            assert_eq!(Strategy::from_name(s.event_type()), Some(s));
        }
        assert_eq!(Strategy::from_name("Prefix-Summary"), None);
        for p in Preset::ALL {
            assert_eq!(Preset::from_name(p.name()), Some(p));
            assert_eq!(p.ladder().last(), Some(&Strategy::Emergency), "{} ends with the step that guarantees the budget", p.name());
        }
    }

    #[test]
    fn bad_lists_name_the_entry() {
        let e = read_strategies(&json!(["truncate"])).unwrap_err();
        assert_eq!(e.field(), Some("strategies[0]"));
        let e = read_strategies(&json!(["emergency", "EMERGENCY_OFFLOAD"])).unwrap_err();
        assert_eq!(e.field(), Some("strategies[1]"));
        assert!(e.message().contains("second time"));
        assert_eq!(read_strategies(&json!([])).unwrap_err().field(), Some("strategies"));
        assert_eq!(read_strategies(&json!("emergency")).unwrap_err().field(), Some("strategies"));
        assert_eq!(read_strategies(&json!([3])).unwrap_err().field(), Some("strategies[0]"));
        assert_eq!(read_preset(&json!("koog")).unwrap_err().field(), Some("preset"));
        assert_eq!(
            read_strategies(&json!(["tool-result-truncate", "PREFIX_SUMMARY"])).unwrap(),
            vec![Strategy::ToolResultTruncate, Strategy::PrefixSummary]
        );
    }
}
