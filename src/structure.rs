//! The shape of a conversation: tool exchanges, rounds, the current round, what is in flight,
//! and what is protected.
//!
//! Every strategy selects spans through this one analysis, so no strategy can split a tool
//! exchange (an assistant message with N calls plus the N results that answer it) or touch what
//! the model has not seen yet. The reference decided these boundaries by heuristics in each
//! strategy, which is how it came to orphan tool results and to summarize unseen ones.

use std::collections::HashSet;
use std::ops::Range;

use crate::message::{Message, Role};

/// An atomic span of the conversation: a single message or a whole tool exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Message indices of the unit.
    pub span: Range<usize>,
    /// Whether this is a tool exchange.
    pub exchange: bool,
    /// For an exchange: whether every call has its result.
    pub complete: bool,
}

/// The analysis of a message list.
#[derive(Debug, Clone)]
pub struct Structure {
    /// The list partitioned into atomic units, in order.
    pub units: Vec<Unit>,
    /// For each message, the index of its unit.
    pub unit_of: Vec<usize>,
    /// Rounds: each starts at a real user message and runs to the next one. Messages before
    /// the first real user message belong to no round.
    pub rounds: Vec<Range<usize>>,
    /// Start of the current (last) round; the list's length when there is none.
    pub current_start: usize,
    /// The current round has tool traffic the model has not answered yet.
    pub in_flight: bool,
    /// Start of the `lastKeep` tail, moved back to a unit boundary.
    pub keep_start: usize,
    /// Number of messages.
    pub len: usize,
    system: Vec<bool>,
}

impl Structure {
    /// Analyses `messages`, with `last_keep` messages of protected tail.
    pub fn analyze<M: AsRef<Message>>(messages: &[M], last_keep: usize) -> Structure {
        let n = messages.len();
        let msg = |i: usize| messages[i].as_ref();
        let mut units = Vec::new();
        let mut unit_of = vec![0; n];
        let mut i = 0;
        while i < n {
            let m = msg(i);
            if m.role == Role::Assistant && m.has_calls() {
                let mut pending: HashSet<&str> = m.call_ids().collect();
                let mut j = i + 1;
                while j < n && !pending.is_empty() {
                    let r = msg(j);
                    // A tool message without results (an AI SDK approval response) stays in.
                    let answers = r.has_results() || r.role == Role::Tool;
                    if !answers || r.has_calls() || !r.result_ids().all(|id| pending.contains(id)) {
                        break;
                    }
                    for id in r.result_ids() {
                        pending.remove(id);
                    }
                    j += 1;
                }
                unit_of[i..j].fill(units.len());
                units.push(Unit { span: i..j, exchange: true, complete: pending.is_empty() });
                i = j;
            } else {
                unit_of[i] = units.len();
                units.push(Unit { span: i..i + 1, exchange: false, complete: true });
                i += 1;
            }
        }

        let starts: Vec<usize> = (0..n).filter(|&i| msg(i).is_real_user()).collect();
        let mut rounds: Vec<Range<usize>> = Vec::new();
        for (k, &s) in starts.iter().enumerate() {
            let e = starts.get(k + 1).copied().unwrap_or(n);
            rounds.push(s..e);
        }
        let current_start = match starts.last() {
            Some(&s) => s,
            // No user turn at all (the task lives in the system prompt): everything after the
            // system messages is the current round.
            None => (0..n).find(|&i| msg(i).role != Role::System).unwrap_or(n),
        };

        // In flight: the current round's last tool traffic has not been answered by a final
        // assistant message yet.
        let last_tool = (current_start..n).rev().find(|&i| msg(i).has_calls() || msg(i).has_results());
        let in_flight = match last_tool {
            Some(t) => !(t + 1..n).any(|i| msg(i).is_final_assistant()),
            None => false,
        };

        let mut keep_start = n.saturating_sub(last_keep);
        if keep_start < n {
            keep_start = units[unit_of[keep_start]].span.start;
        }
        let system = (0..n).map(|i| msg(i).role == Role::System).collect();
        Structure { units, unit_of, rounds, current_start, in_flight, keep_start, len: n, system }
    }

    /// Whether message `i` is a system message.
    pub fn is_system(&self, i: usize) -> bool {
        self.system[i]
    }

    /// Whether message `i` belongs to the current round.
    pub fn in_current_round(&self, i: usize) -> bool {
        i >= self.current_start
    }

    /// The unit holding message `i`.
    pub fn unit(&self, i: usize) -> &Unit {
        &self.units[self.unit_of[i]]
    }

    /// Whether `span` starts and ends on unit boundaries (splits no exchange).
    pub fn is_whole(&self, span: &Range<usize>) -> bool {
        if span.start >= span.end || span.end > self.len {
            return false;
        }
        self.unit(span.start).span.start == span.start && self.unit(span.end - 1).span.end == span.end
    }

    /// Complete rounds before the current one.
    pub fn previous_rounds(&self) -> impl Iterator<Item = &Range<usize>> {
        let cur = self.current_start;
        self.rounds.iter().filter(move |r| r.start < cur)
    }
}

impl AsRef<Message> for Message {
    fn as_ref(&self) -> &Message {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use serde_json::{json, Value};

    fn msgs(v: Value) -> Vec<Message> {
        v.as_array().unwrap().iter().enumerate().map(|(i, m)| Format::OpenAi.parse(i, m).unwrap()).collect()
    }

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
    }

    #[test]
    fn exchanges_rounds_and_current_round() {
        let m = msgs(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q1"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
            {"role": "assistant", "content": "answer 1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "tool_calls": [call("c")]},
            {"role": "tool", "tool_call_id": "c", "content": "3"}
        ]));
        let s = Structure::analyze(&m, 1);
        assert_eq!(s.units.len(), 6);
        assert_eq!(s.unit(3).span, 2..5);
        assert!(s.unit(3).exchange && s.unit(3).complete);
        assert_eq!(s.rounds, vec![1..6, 6..9]);
        assert_eq!(s.current_start, 6);
        assert!(s.in_flight, "the result of c has not been answered");
        // The tail of 1 starts inside the last exchange and widens to its start.
        assert_eq!(s.keep_start, 7);
        assert!(s.is_whole(&(2..5)));
        assert!(!s.is_whole(&(2..4)));
        assert_eq!(s.previous_rounds().count(), 1);
    }

    #[test]
    fn answered_round_is_not_in_flight_and_partial_exchange_is_incomplete() {
        let m = msgs(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]));
        let s = Structure::analyze(&m, 0);
        assert!(!s.unit(1).complete);
        assert!(s.in_flight);
        assert_eq!(s.keep_start, 3);
        let m = msgs(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "assistant", "content": "done"}
        ]));
        assert!(!Structure::analyze(&m, 0).in_flight);
    }

    #[test]
    fn no_user_means_everything_after_system_is_current() {
        let m = msgs(json!([{"role": "system", "content": "task"}, {"role": "assistant", "content": "x"}]));
        let s = Structure::analyze(&m, 0);
        assert_eq!(s.current_start, 1);
        assert!(s.rounds.is_empty());
    }
}
