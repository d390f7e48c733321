//! Strategy names and presets: how a host picks a ladder.
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

use crate::error::{Error, Result};
use crate::json::kind_of;
use crate::options::read::OptionValue;

/// One strategy of the ladder: a rung's name. What each does is its rung, one file of
/// `src/strategy/` (see [`crate::strategy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// A tool result over `toolResultLimit` characters keeps its head and tail (when that frees 300
    /// characters or more), a new one before it is first sent.
    ToolResultTruncate,
    /// Stale tool results become their first line and identifiers, when their rent has paid for the
    /// rewrite (and, at the trigger, before anything is summarized).
    ToolResultStub,
    /// Large old messages become a preview, sparing the `lastKeep` tail.
    LargeMessageOffloadWithProtection,
    /// The same, into the `lastKeep` tail.
    LargeMessageOffload,
    /// On message-count pressure, rounds outside the focus window roll into one rolling summary.
    HistoryRollup,
    /// Long runs of old tool exchanges become one summary each.
    ToolRunCompress,
    /// Each earlier round's work becomes one summary; the user's message stays.
    PreviousRoundSummary,
    /// A large message the model already answered shrinks in place.
    CurrentRoundLargeMessage,
    /// Answered tool results of the current turn shrink in place, ids kept.
    CurrentRoundCompress,
    /// Oldest rounds, then the oldest answered work, go whole behind a short notice.
    Emergency,
    /// What is left before the protected recent work becomes one structured summary; a later pass adds
    /// its own after it, and folds them into one when they grow.
    PrefixSummary,
    /// Everything before the reserved tail becomes a restoration block of facts, one extraction
    /// per configured concept (LLM); the `factsFallback` strategy runs when none are found.
    FactRetrieval,
    /// The oldest half of the complete turns becomes one summary at the start of the kept
    /// context, when there are more than `maxContextTurns` turns or, with at least five, too
    /// many tokens (LLM when available, a notice otherwise).
    TurnTrim,
    /// With fewer than five complete turns over budget, each keeps only its user message and
    /// final answer; the tool work is offloaded (no LLM).
    TurnTextOnly,
    /// What the provider's own compaction (Anthropic's `compaction` block, a Responses `compaction`
    /// item) already condensed goes whole behind a notice; the compaction itself stays byte-exact,
    /// never summarized.
    ///
    /// A pass runs it first whatever the ladder, unless the ladder names it.
    ProviderCompaction,
}

/// Every strategy with its documented name, its event type and, for a strategy that asks the
/// host's summarizer, the `kind` of its requests; in documentation order.
const NAMES: [(Strategy, &str, &str, Option<&str>); 15] = [
    (Strategy::ToolResultTruncate, "tool-result-truncate", "TOOL_RESULT_TRUNCATE", None),
    (Strategy::ToolResultStub, "tool-result-stub", "TOOL_RESULT_STUB", None),
    (Strategy::LargeMessageOffloadWithProtection, "large-message-offload-protected", "LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION", None),
    (Strategy::LargeMessageOffload, "large-message-offload", "LARGE_MESSAGE_OFFLOAD", None),
    (Strategy::HistoryRollup, "history-rollup", "RECENT_FOCUS_WINDOW_COMPACT", Some("rollup")),
    (Strategy::ToolRunCompress, "tool-run-compress", "TOOL_INVOCATION_COMPRESS", Some("tool_calls")),
    (Strategy::PreviousRoundSummary, "previous-round-summary", "PREVIOUS_ROUND_CONVERSATION_SUMMARY", Some("round")),
    (Strategy::CurrentRoundLargeMessage, "current-round-large-message", "CURRENT_ROUND_LARGE_MESSAGE_SUMMARY", Some("large_message")),
    (Strategy::CurrentRoundCompress, "current-round-compress", "CURRENT_ROUND_MESSAGE_COMPRESS", Some("current_round")),
    (Strategy::Emergency, "emergency", "EMERGENCY_OFFLOAD", None),
    (Strategy::PrefixSummary, "prefix-summary", "PREFIX_SUMMARY", Some("prefix")),
    (Strategy::FactRetrieval, "facts", "FACT_RETRIEVAL", Some("facts")),
    (Strategy::TurnTrim, "turn-trim", "TURN_TRIM", Some("turns")),
    (Strategy::TurnTextOnly, "turn-text-only", "TURN_TEXT_ONLY", None),
    (Strategy::ProviderCompaction, "provider-compaction", "PROVIDER_COMPACTION_OFFLOAD", None),
];

/// The default order: the no-LLM steps first, then the reference's LLM strategies for earlier
/// rounds, then one summary of what is left before the protected recent work (a pass that aims
/// at the low-water mark gets there by a summary, not by offloading rounds behind a notice), then
/// the current round's LLM steps, then the emergency step that guarantees the budget (and does
/// the prefix summary's work without a summarizer).
///
/// The current round's steps come after the prefix summary because they summarize one answered
/// result per call: in an agent's long run (one user message, hundreds of tool calls) they made
/// about 550 of the 690 summarizer calls of the 30 benchmark traces, a third of the summarizer's
/// input, to free what one prefix summary frees in one call. After it, they run only when the
/// summary cannot reach the low-water mark.
pub const DEFAULT_LADDER: &[Strategy] = &[
    Strategy::ToolResultTruncate,
    Strategy::ToolResultStub,
    Strategy::LargeMessageOffloadWithProtection,
    Strategy::LargeMessageOffload,
    Strategy::HistoryRollup,
    Strategy::ToolRunCompress,
    Strategy::PreviousRoundSummary,
    Strategy::PrefixSummary,
    Strategy::CurrentRoundLargeMessage,
    Strategy::CurrentRoundCompress,
    Strategy::Emergency,
];

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
            Preset::PrefixSummary => {
                &[Strategy::ToolResultTruncate, Strategy::PrefixSummary, Strategy::ToolResultStub, Strategy::Emergency]
            }
            Preset::Facts => &[Strategy::ToolResultTruncate, Strategy::FactRetrieval, Strategy::ToolResultStub, Strategy::Emergency],
            Preset::Turns => {
                &[Strategy::ToolResultTruncate, Strategy::TurnTrim, Strategy::TurnTextOnly, Strategy::ToolResultStub, Strategy::Emergency]
            }
        }
    }
}

impl Strategy {
    /// Every strategy, in documentation order.
    pub const ALL: [Strategy; NAMES.len()] = {
        let mut all = [Strategy::Emergency; NAMES.len()];
        let mut i = 0;
        while i < NAMES.len() {
            all[i] = NAMES[i].0;
            i += 1;
        }
        all
    };

    fn names(self) -> (&'static str, &'static str, Option<&'static str>) {
        NAMES.iter().find(|(s, ..)| *s == self).map_or(("", "", None), |&(_, name, event, kind)| (name, event, kind))
    }

    /// The documented name of the strategy, as `strategies` accepts it besides its event type.
    pub fn name(self) -> &'static str {
        self.names().0
    }

    /// The event type recorded for this strategy's changes.
    pub fn event_type(self) -> &'static str {
        self.names().1
    }

    /// The `kind` of the summarize requests this strategy sends the host, if it sends any.
    pub fn summarize_kind(self) -> Option<&'static str> {
        self.names().2
    }

    /// The strategy with this documented name or event type.
    pub fn from_name(name: &str) -> Option<Strategy> {
        NAMES.iter().find(|(_, n, e, _)| *n == name || *e == name).map(|(s, ..)| *s)
    }
}

/// The `preset` option.
impl OptionValue for Preset {
    const TS: &'static str = "PresetName";

    fn read(v: &Value, _field: &str) -> Result<Option<Self>> {
        read_preset(v).map(Some)
    }

    fn write(&self) -> Value {
        Value::from(self.name())
    }
}

/// One strategy of an option (`factsFallback`): `null` keeps the default.
impl OptionValue for Strategy {
    const TS: &'static str = "StrategyName";

    fn read(v: &Value, field: &str) -> Result<Option<Self>> {
        match v {
            Value::Null => Ok(None),
            v => read_strategy(v, field).map(Some),
        }
    }

    fn write(&self) -> Value {
        Value::from(self.name())
    }
}

/// The `strategies` option.
impl OptionValue for Vec<Strategy> {
    const TS: &'static str = "readonly StrategyName[]";

    fn read(v: &Value, _field: &str) -> Result<Option<Self>> {
        read_strategies(v).map(Some)
    }

    fn write(&self) -> Value {
        Value::Array(self.iter().map(|s| Value::from(s.name())).collect())
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
    fn the_names_table_lists_every_variant_once_in_order() {
        for (i, (s, name, event, _)) in NAMES.iter().enumerate() {
            assert_eq!(*s as usize, i, "{name}");
            assert!(!name.is_empty() && !event.is_empty());
        }
        assert_eq!(Strategy::ProviderCompaction as usize + 1, NAMES.len(), "the last variant closes the table");
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
