//! The analysis of a working list: its tool exchanges, its rounds, the work the model has not
//! read yet, and, for every message, what protects it.
//!
//! Every step of the ladder selects its spans through this one analysis, computed once for each
//! state of the working list, so no step can split a tool exchange (an assistant message with N
//! calls plus the N results that answer it) or replace what a protection covers. The reference
//! decided these boundaries by heuristics in each strategy, which is how it came to orphan tool
//! results, to summarize results the model had not read, and to drop its own protections when
//! a strategy was rewritten.
//!
//! The protections of a message are a [`Protection`] set, one flag per reason (system message,
//! unread work, current round, latest final answer, most recent completed round, `lastKeep`
//! tail, pinned message, exchange of a pinned tool, signed turn of the current tool loop, the
//! provider's own compaction and what it condensed). A step asks whether a message is free for
//! it with the mask of the reasons it respects ([`Protection::HISTORY`], [`Protection::CURRENT`],
//! ...); the reasons are facts about the conversation, the masks are the policy.

use std::collections::HashSet;
use std::ops::Range;

use crate::format::Format;
use crate::message::{Block, Message, Role};
use crate::options::Config;

/// An atomic span of the conversation: a single message (or the items of one model response,
/// in the Responses API) or a whole tool exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Message indices of the unit.
    pub span: Range<usize>,
    /// Whether this is a tool exchange.
    pub exchange: bool,
    /// For an exchange: whether every call has its result.
    pub complete: bool,
}

/// Why a message is protected: a set of reasons, one flag each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Protection(u16);

impl Protection {
    /// No reason: any step may replace the message.
    pub const NONE: Protection = Protection(0);
    /// A system (or developer) message.
    pub const SYSTEM: Protection = Protection(1);
    /// A tool call or result no later assistant message follows: the model has not read it.
    pub const UNREAD: Protection = Protection(1 << 1);
    /// A message of the current round (from the user's current message on).
    pub const CURRENT_ROUND: Protection = Protection(1 << 2);
    /// The latest final answer of the model (`protectLatestAnswer`).
    pub const LATEST_ANSWER: Protection = Protection(1 << 3);
    /// A message of the most recent completed round (`protectLastRound`).
    pub const LAST_ROUND: Protection = Protection(1 << 4);
    /// A message of the `lastKeep` tail, widened to whole exchanges.
    pub const LAST_KEEP: Protection = Protection(1 << 5);
    /// A message the host pinned.
    pub const PINNED: Protection = Protection(1 << 6);
    /// A message of an exchange that calls a tool named in `pinnedTools`.
    pub const PINNED_TOOL: Protection = Protection(1 << 7);
    /// A model turn of the current round carrying a signature the provider checks in the
    /// current tool loop (a Gemini thought signature, see [`Format::signed`]): never rewritten
    /// in place or joined to a note; only whole-turn steps (the prefix summary, the emergency
    /// step) may take it, turn and results together.
    pub const SIGNED: Protection = Protection(1 << 8);
    /// The provider's latest compaction (an Anthropic `compaction` block, a Responses
    /// `compaction` item, see [`Format::provider_compaction`]): never replaced, shortened or split.
    pub const PROVIDER: Protection = Protection(1 << 9);
    /// A message before the provider's latest compaction, which it already condensed: no step
    /// summarizes or shortens it; the provider-compaction step takes it whole.
    pub const CONDENSED: Protection = Protection(1 << 10);

    /// The task: the first real user message (`keepTask`).
    pub const TASK: Protection = Protection(1 << 11);

    /// Messages a step that replaces a span of history keeps in place, taking the span after
    /// them: system messages, the task and what the host pinned.
    pub const ISLANDS: Protection =
        Protection(Self::SYSTEM.0 | Self::TASK.0 | Self::PINNED.0 | Self::PINNED_TOOL.0 | Self::PROVIDER.0 | Self::CONDENSED.0);
    /// Where a span of history ends: the first unread, current-round, latest-answer or
    /// last-round message, and everything after it, stays.
    pub const HISTORY_END: Protection = Protection(Self::UNREAD.0 | Self::CURRENT_ROUND.0 | Self::LATEST_ANSWER.0 | Self::LAST_ROUND.0);
    /// What the steps that replace earlier rounds respect (offloads, the rollup, tool-run and
    /// round summaries, turn trimming): everything but the `lastKeep` tail.
    pub const HISTORY: Protection = Protection(Self::HISTORY_END.0 | Self::ISLANDS.0);
    /// [`Protection::HISTORY`] and the `lastKeep` tail (the protected offload, tool-run
    /// compression).
    pub const HISTORY_AND_TAIL: Protection = Protection(Self::HISTORY.0 | Self::LAST_KEEP.0);
    /// What the steps that shrink answered work of the current round respect.
    pub const CURRENT: Protection = Protection(
        Self::SYSTEM.0
            | Self::TASK.0
            | Self::UNREAD.0
            | Self::LATEST_ANSWER.0
            | Self::LAST_ROUND.0
            | Self::PINNED.0
            | Self::PINNED_TOOL.0
            | Self::SIGNED.0
            | Self::PROVIDER.0
            | Self::CONDENSED.0,
    );
    /// What the emergency step respects: it may take the current round's answered work, but
    /// never a system message, unread work or what the host pinned. The latest answer and the
    /// last completed round it respects too, until the pass yields them (when the target
    /// cannot be reached without them, the pass analyses the list again without those two).
    pub const EMERGENCY: Protection = Protection(
        Self::SYSTEM.0
            | Self::UNREAD.0
            | Self::PINNED.0
            | Self::PINNED_TOOL.0
            | Self::LATEST_ANSWER.0
            | Self::LAST_ROUND.0
            | Self::PROVIDER.0
            | Self::CONDENSED.0,
    );
    /// What truncation respects (it keeps structure, head and tail, so it applies even to
    /// unread results): only what the host pinned. Results of pinned tools are spared block by
    /// block ([`Structure::pinned_call`]).
    pub const TRUNCATE: Protection = Protection(Self::PINNED.0 | Self::PROVIDER.0 | Self::CONDENSED.0);
    /// What a stale tool result's stub respects: the result must be read, and in nothing the
    /// host pinned, the provider condensed or signed, the task, the latest answer or the last
    /// completed round. The current round is no protection: in an agent's long run it is the
    /// whole conversation, and a stub keeps its exchange whole.
    pub const STUB: Protection = Protection(
        Self::SYSTEM.0
            | Self::TASK.0
            | Self::UNREAD.0
            | Self::LATEST_ANSWER.0
            | Self::LAST_ROUND.0
            | Self::PINNED.0
            | Self::PINNED_TOOL.0
            | Self::SIGNED.0
            | Self::PROVIDER.0
            | Self::CONDENSED.0,
    );
    /// Where the span of a prefix step ends (the prefix summary and facts summarize answered
    /// work of the current round too): everything from the first such message on stays.
    pub const PREFIX_END: Protection = Protection(Self::UNREAD.0 | Self::LATEST_ANSWER.0 | Self::LAST_ROUND.0);
    /// Messages the engine never rewrites, not even to join one of its notes to them (turns
    /// that must alternate): a joined message keeps its content, but not its bytes.
    pub const NO_JOIN: Protection = Protection(
        Self::SYSTEM.0
            | Self::UNREAD.0
            | Self::LATEST_ANSWER.0
            | Self::PINNED.0
            | Self::PINNED_TOOL.0
            | Self::SIGNED.0
            | Self::PROVIDER.0
            | Self::CONDENSED.0,
    );

    const NAMES: [(Protection, &'static str); 12] = [
        (Self::SYSTEM, "system"),
        (Self::UNREAD, "unread"),
        (Self::CURRENT_ROUND, "current round"),
        (Self::LATEST_ANSWER, "latest answer"),
        (Self::LAST_ROUND, "last round"),
        (Self::LAST_KEEP, "lastKeep tail"),
        (Self::PINNED, "pinned"),
        (Self::PINNED_TOOL, "pinned tool"),
        (Self::SIGNED, "signed turn"),
        (Self::PROVIDER, "provider compaction"),
        (Self::CONDENSED, "condensed by the provider"),
        (Self::TASK, "task"),
    ];

    /// Whether this set shares any reason with `mask`.
    pub fn any(self, mask: Protection) -> bool {
        self.0 & mask.0 != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The reasons, by name, for messages and tests.
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES.iter().filter(|(p, _)| self.any(*p)).map(|(_, n)| *n).collect()
    }
}

impl std::ops::BitOr for Protection {
    type Output = Protection;
    fn bitor(self, o: Protection) -> Protection {
        Protection(self.0 | o.0)
    }
}

impl std::ops::BitOrAssign for Protection {
    fn bitor_assign(&mut self, o: Protection) {
        self.0 |= o.0;
    }
}

impl std::ops::Sub for Protection {
    type Output = Protection;
    fn sub(self, o: Protection) -> Protection {
        Protection(self.0 & !o.0)
    }
}

/// The options the analysis reads.
#[derive(Debug, Clone, Default)]
pub struct Rules<'a> {
    /// The wire format (it says which messages make one model response).
    pub format: Format,
    /// Messages of protected tail (`lastKeep`).
    pub last_keep: usize,
    /// Protect the latest final answer (`protectLatestAnswer`).
    pub protect_latest_answer: bool,
    /// Protect the most recent completed round (`protectLastRound`).
    pub protect_last_round: bool,
    /// Tools whose exchanges are protected (`pinnedTools`).
    pub pinned_tools: &'a [String],
    /// Protect the first real user message, the task (`keepTask`).
    pub keep_task: bool,
}

impl<'a> Rules<'a> {
    /// The rules of a configuration.
    pub fn of(config: &'a Config) -> Rules<'a> {
        Rules {
            format: config.format,
            last_keep: config.last_keep as usize,
            protect_latest_answer: config.protect_latest_answer,
            protect_last_round: config.protect_last_round,
            pinned_tools: &config.pinned_tools,
            keep_task: config.keep_task,
        }
    }
}

/// The analysis of a message list.
#[derive(Debug, Clone)]
pub struct Structure {
    /// The list partitioned into atomic units, in order.
    pub units: Vec<Unit>,
    /// For each message, the index of its unit.
    pub unit_of: Vec<usize>,
    /// Rounds: each starts at a real user message and runs to the next one that starts a
    /// round. A user message that arrives while tool work is unread (the user typed while tools
    /// ran, or a host put a note after the results) joins the round it interjects into, which
    /// stays open until the model answers. Messages before the first round belong to none.
    pub rounds: Vec<Range<usize>>,
    /// Start of the current (last) round; the list's length when there is none.
    pub current_start: usize,
    /// The model has not read some tool work yet (see [`Protection::UNREAD`]).
    pub in_flight: bool,
    /// Start of the `lastKeep` tail, moved back to a unit boundary.
    pub keep_start: usize,
    /// The first real user message, if any.
    pub first_user: Option<usize>,
    /// The latest final answer of the model, if any.
    pub latest_answer: Option<usize>,
    /// The most recent completed round, if any.
    pub last_round: Option<Range<usize>>,
    /// The provider's latest compaction (see [`Protection::PROVIDER`]), if any.
    pub compaction: Option<usize>,
    /// Number of messages.
    pub len: usize,
    protection: Vec<Protection>,
    /// Ids of the calls of pinned tools.
    pinned_calls: HashSet<String>,
    reload_calls: HashSet<String>,
}

impl Structure {
    /// Analyses `messages` with `last_keep` messages of protected tail and the default
    /// protections (latest answer and last round on, nothing pinned).
    pub fn analyze<M: AsRef<Message>>(format: Format, messages: &[M], last_keep: usize) -> Structure {
        let rules = Rules { format, last_keep, protect_latest_answer: true, protect_last_round: true, pinned_tools: &[], keep_task: false };
        Structure::analyze_with(messages, &rules, &|_| false)
    }

    /// Analyses `messages` under `rules`; `pinned(i)` says whether the host pinned message `i`.
    pub fn analyze_with<M: AsRef<Message>>(messages: &[M], rules: &Rules<'_>, pinned: &dyn Fn(usize) -> bool) -> Structure {
        Structure::analyze_refs(&crate::message::refs(messages), rules, pinned)
    }

    /// [`Structure::analyze_with`] over plain references: compiled once for every kind of list.
    fn analyze_refs(messages: &[&Message], rules: &Rules<'_>, pinned: &dyn Fn(usize) -> bool) -> Structure {
        let n = messages.len();
        let msg = |i: usize| messages[i];
        let (units, unit_of) = units(rules.format, messages);

        // Round starts: real user messages, unless tool work before them is still unread (no
        // assistant message since the last call or result).
        let mut starts = Vec::new();
        let mut unread_work = false;
        let mut first_user = None;
        for i in 0..n {
            let m = msg(i);
            if m.role == Role::Assistant {
                // A response of several items (the Responses API) has unread calls if any has.
                let same_response = i > 0 && rules.format.continues_turn(msg(i - 1), m);
                unread_work = m.has_calls() || (same_response && unread_work);
            } else if m.has_results() || m.role == Role::Tool {
                unread_work = true;
            } else if m.is_real_user() {
                first_user.get_or_insert(i);
                if !unread_work {
                    starts.push(i);
                }
            }
        }
        let rounds: Vec<Range<usize>> = starts.iter().enumerate().map(|(k, &s)| s..starts.get(k + 1).copied().unwrap_or(n)).collect();
        let current_start = match starts.last() {
            Some(&s) => s,
            // No user turn at all (the task lives in the system prompt): everything after the
            // system messages is the current round.
            None => (0..n).find(|&i| msg(i).role != Role::System).unwrap_or(n),
        };
        let last_round = rounds.iter().rev().find(|r| r.end <= current_start && r.start < current_start).cloned();

        let mut keep_start = n.saturating_sub(rules.last_keep);
        if keep_start < n {
            keep_start = units[unit_of[keep_start]].span.start;
        }

        let mut protection = vec![Protection::NONE; n];
        // Unread: the calls of the last assistant message (with the rest of its response) and
        // every result after it.
        let last_assistant = (0..n).rev().find(|&i| msg(i).role == Role::Assistant);
        let unread_from = match last_assistant {
            Some(a) if msg(a).has_calls() => {
                Some((0..a).rev().take_while(|&k| rules.format.continues_turn(msg(k), msg(k + 1))).last().unwrap_or(a))
            }
            Some(a) => Some(a + 1),
            None => Some(0),
        };
        let mut in_flight = false;
        for (i, p) in protection.iter_mut().enumerate() {
            let m = msg(i);
            if m.role == Role::System {
                *p |= Protection::SYSTEM;
            }
            let tool_work = m.has_calls() || m.has_results() || m.role == Role::Tool;
            if tool_work && unread_from.is_some_and(|u| i >= u) {
                *p |= Protection::UNREAD;
                in_flight = true;
            }
            if i >= current_start {
                *p |= Protection::CURRENT_ROUND;
                if rules.format.signed(m) {
                    *p |= Protection::SIGNED;
                }
            }
            if i >= keep_start {
                *p |= Protection::LAST_KEEP;
            }
            if pinned(i) {
                *p |= Protection::PINNED;
            }
        }
        if let (true, Some(u)) = (rules.keep_task, first_user) {
            protection[u] |= Protection::TASK;
        }
        let compaction = (0..n).rev().find(|&i| rules.format.provider_compaction(msg(i)));
        if let Some(c) = compaction {
            protection[c] |= Protection::PROVIDER;
            for p in &mut protection[..c] {
                *p |= Protection::CONDENSED;
            }
        }
        let latest_answer = (0..n).rev().find(|&i| msg(i).is_final_assistant());
        if let (true, Some(a)) = (rules.protect_latest_answer, latest_answer) {
            protection[a] |= Protection::LATEST_ANSWER;
        }
        if let (true, Some(r)) = (rules.protect_last_round, &last_round) {
            for p in &mut protection[r.clone()] {
                *p |= Protection::LAST_ROUND;
            }
        }
        let mut pinned_calls = HashSet::new();
        if !rules.pinned_tools.is_empty() {
            for u in units.iter().filter(|u| u.exchange) {
                let mut any = false;
                for b in u.span.clone().flat_map(|k| &msg(k).blocks) {
                    if let Block::ToolCall { id, name, .. } = b {
                        if rules.pinned_tools.iter().any(|t| t == name) {
                            pinned_calls.insert(id.clone());
                            any = true;
                        }
                    }
                }
                if any {
                    for p in &mut protection[u.span.clone()] {
                        *p |= Protection::PINNED_TOOL;
                    }
                }
            }
        }
        // The model's reloads: their answers are pages of what was offloaded, sized by
        // `offloadReloadLimit`, never cut again.
        let reload_calls: HashSet<String> = (0..n)
            .flat_map(|k| &msg(k).blocks)
            .filter_map(|b| match b {
                Block::ToolCall { id, name, .. } if name == crate::format::RELOAD_TOOL_NAME => Some(id.clone()),
                _ => None,
            })
            .collect();
        Structure {
            units,
            unit_of,
            rounds,
            current_start,
            in_flight,
            keep_start,
            first_user,
            latest_answer,
            last_round,
            compaction,
            len: n,
            protection,
            pinned_calls,
            reload_calls,
        }
    }

    /// Why message `i` is protected.
    pub fn protection(&self, i: usize) -> Protection {
        self.protection[i]
    }

    /// Whether a step that respects `mask` may replace message `i`.
    pub fn free(&self, i: usize, mask: Protection) -> bool {
        !self.protection[i].any(mask)
    }

    /// Whether a step that respects `mask` may replace every message of `span`.
    pub fn span_free(&self, span: &Range<usize>, mask: Protection) -> bool {
        self.protection[span.clone()].iter().all(|p| !p.any(mask))
    }

    /// Whether the model has read message `i` (it is no unread tool work).
    pub fn read(&self, i: usize) -> bool {
        !self.protection[i].any(Protection::UNREAD)
    }

    /// The first message of `range` that a step respecting `mask` may not replace.
    pub fn first_protected(&self, range: Range<usize>, mask: Protection) -> Option<usize> {
        range.into_iter().find(|&i| self.protection[i].any(mask))
    }

    /// Whether message `i` is a system message.
    pub fn is_system(&self, i: usize) -> bool {
        self.protection[i].any(Protection::SYSTEM)
    }

    /// Whether the tool call `id` calls a tool named in `pinnedTools`.
    pub fn pinned_call(&self, id: &str) -> bool {
        self.pinned_calls.contains(id)
    }

    /// Whether the tool call `id` is the model's `context_reload`: its answer is a page of an
    /// offload, which truncation leaves whole.
    pub fn reload_call(&self, id: &str) -> bool {
        self.reload_calls.contains(id)
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

/// The list partitioned into atomic units, and each message's unit.
fn units<M: AsRef<Message>>(format: Format, messages: &[M]) -> (Vec<Unit>, Vec<usize>) {
    let n = messages.len();
    let msg = |i: usize| messages[i].as_ref();
    let mut units = Vec::new();
    let mut unit_of = vec![0; n];
    let mut i = 0;
    while i < n {
        // The model response starting here: one message, or the items of one response (the
        // Responses API), which stay together whatever follows.
        let mut turn_end = i + 1;
        while turn_end < n && format.continues_turn(msg(turn_end - 1), msg(turn_end)) {
            turn_end += 1;
        }
        if (i..turn_end).any(|k| msg(k).role == Role::Assistant && msg(k).has_calls()) {
            let mut pending = Pending::of((i..turn_end).flat_map(|k| msg(k).call_ids()));
            let mut j = turn_end;
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
            unit_of[i..turn_end].fill(units.len());
            units.push(Unit { span: i..turn_end, exchange: false, complete: true });
            i = turn_end;
        }
    }
    (units, unit_of)
}

/// The calls of a turn not answered yet, each once. A turn makes a few: a list holds them for
/// less than a hash set costs to build (the analysis runs for every step of a pass, over every
/// turn). A turn of more than [`FEW_CALLS`] gets the set, so that no turn costs the square of
/// its calls.
enum Pending<'m> {
    Few(Vec<&'m str>),
    Many(HashSet<&'m str>),
}

/// The most calls a turn's [`Pending`] holds in a list.
const FEW_CALLS: usize = 16;

impl<'m> Pending<'m> {
    fn of(ids: impl Iterator<Item = &'m str>) -> Self {
        let ids: Vec<&str> = ids.collect();
        if ids.len() > FEW_CALLS {
            return Pending::Many(ids.into_iter().collect());
        }
        let mut few = Vec::with_capacity(ids.len());
        for id in ids {
            if !few.contains(&id) {
                few.push(id);
            }
        }
        Pending::Few(few)
    }

    fn contains(&self, id: &str) -> bool {
        match self {
            Pending::Few(few) => few.contains(&id),
            Pending::Many(many) => many.contains(id),
        }
    }

    fn remove(&mut self, id: &str) {
        match self {
            Pending::Few(few) => few.retain(|p| *p != id),
            Pending::Many(many) => {
                many.remove(id);
            }
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Pending::Few(few) => few.is_empty(),
            Pending::Many(many) => many.is_empty(),
        }
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
    fn a_gemini_turn_of_calls_and_the_turn_of_its_responses_are_one_exchange() {
        let call = json!({"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"p": 1}}}, {"functionCall": {"name": "ls", "args": {}}}, {"functionCall": {"name": "read", "args": {"p": 2}}}]});
        let answer = json!({"role": "user", "parts": [
            {"functionResponse": {"name": "ls", "response": {"output": "a b"}}},
            {"functionResponse": {"name": "read", "response": {"output": "one"}}},
            {"functionResponse": {"name": "read", "response": {"output": "two"}}}]});
        let wire = json!([{"role": "user", "parts": [{"text": "go"}]}, call, answer, {"role": "model", "parts": [{"text": "again"}]}, {"role": "user", "parts": [{"text": "again"}]}, call, answer]);
        let mut m: Vec<Message> = wire.as_array().unwrap().iter().enumerate().map(|(i, m)| Format::Gemini.parse(i, m).unwrap()).collect();
        Format::Gemini.link_all(&mut m);
        let st = Structure::analyze(Format::Gemini, &m, 0);
        assert_eq!(st.unit(1).span, 1..3);
        assert!(st.unit(1).exchange && st.unit(1).complete);
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
        let s = Structure::analyze(Format::OpenAi, &m, 1);
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
        assert_eq!(s.last_round, Some(1..6));
        assert_eq!(s.latest_answer, Some(5));
        assert_eq!(s.protection(0).names(), ["system"]);
        assert_eq!(s.protection(5).names(), ["latest answer", "last round"]);
        assert_eq!(s.protection(7).names(), ["unread", "current round", "lastKeep tail"]);
        assert!(s.free(3, Protection::CURRENT - Protection::LAST_ROUND) && !s.free(3, Protection::HISTORY));
    }

    #[test]
    fn a_turn_of_few_or_many_calls_is_one_exchange_with_the_results_that_answer_it() {
        // On both sides of the count a turn's pending calls move from a list to a set: the
        // results in any order close the exchange, one missing leaves it incomplete, and a
        // result of another call ends it.
        for calls in [1, 3, FEW_CALLS, FEW_CALLS + 1, 40] {
            let ids: Vec<String> = (0..calls).map(|k| format!("c{k}")).collect();
            let turn = json!({"role": "assistant", "tool_calls": ids.iter().map(|id| call(id)).collect::<Vec<_>>()});
            let results: Vec<Value> = ids.iter().rev().map(|id| json!({"role": "tool", "tool_call_id": id, "content": "r"})).collect();
            let mut all = vec![json!({"role": "user", "content": "q"}), turn.clone()];
            all.extend(results.iter().cloned());
            all.push(json!({"role": "assistant", "content": "done"}));
            let s = Structure::analyze(Format::OpenAi, &msgs(Value::Array(all)), 0);
            assert_eq!(s.unit(1).span, 1..2 + calls, "{calls} calls");
            assert!(s.unit(1).exchange && s.unit(1).complete, "{calls} calls");
            let mut partial = vec![json!({"role": "user", "content": "q"}), turn.clone()];
            partial.extend(results[1..].iter().cloned());
            let s = Structure::analyze(Format::OpenAi, &msgs(Value::Array(partial)), 0);
            assert_eq!(s.unit(1).span, 1..1 + calls, "{calls} calls, one unanswered");
            assert!(!s.unit(1).complete, "{calls} calls, one unanswered");
            let mut stray = vec![json!({"role": "user", "content": "q"}), turn];
            stray.push(json!({"role": "tool", "tool_call_id": "other", "content": "r"}));
            let s = Structure::analyze(Format::OpenAi, &msgs(Value::Array(stray)), 0);
            assert_eq!(s.unit(1).span, 1..2, "{calls} calls, a stray result");
        }
    }

    #[test]
    fn answered_round_is_not_in_flight_and_partial_exchange_is_incomplete() {
        let m = msgs(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"}
        ]));
        let s = Structure::analyze(Format::OpenAi, &m, 0);
        assert!(!s.unit(1).complete);
        assert!(s.in_flight);
        assert_eq!(s.keep_start, 3);
        let m = msgs(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "assistant", "content": "done"}
        ]));
        let s = Structure::analyze(Format::OpenAi, &m, 0);
        assert!(!s.in_flight);
        assert!((0..4).all(|i| s.read(i)));
    }

    #[test]
    fn a_user_message_after_unread_results_joins_the_open_round() {
        let m = msgs(json!([
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "also check the tests"},
            {"role": "user", "content": "and the docs"}
        ]));
        let s = Structure::analyze(Format::OpenAi, &m, 0);
        assert_eq!(s.rounds, vec![0..2, 2..7], "the interjections do not open rounds");
        assert_eq!(s.current_start, 2);
        assert_eq!(s.last_round, Some(0..2));
        assert!(!s.read(3) && !s.read(4), "the call and its result are unread");
        assert!(s.read(5), "a user message is no tool work");
        // Once the model answers, the next user message opens a round again.
        let mut more = m.clone();
        more.extend(msgs(json!([{"role": "assistant", "content": "done"}, {"role": "user", "content": "q3"}])));
        let s = Structure::analyze(Format::OpenAi, &more, 0);
        assert_eq!(s.rounds, vec![0..2, 2..8, 8..9]);
        assert!((0..9).all(|i| s.read(i)));
        assert_eq!(s.latest_answer, Some(7));
    }

    #[test]
    fn pins_and_pinned_tools_protect_whole_exchanges() {
        let m = msgs(json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call("a"), {"id": "p", "type": "function", "function": {"name": "plan", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "p", "content": "2"},
            {"role": "assistant", "content": "done"}
        ]));
        let tools = ["plan".to_string()];
        let rules = Rules {
            format: Format::OpenAi,
            last_keep: 0,
            protect_latest_answer: false,
            protect_last_round: false,
            pinned_tools: &tools,
            keep_task: false,
        };
        let s = Structure::analyze_with(&m, &rules, &|i| i == 0);
        assert_eq!(s.protection(0).names(), ["current round", "pinned"]);
        for i in 1..4 {
            assert!(s.protection(i).any(Protection::PINNED_TOOL), "message {i}");
        }
        assert!(s.pinned_call("p") && !s.pinned_call("a"));
        assert!(s.protection(4).names() == ["current round"], "latest answer protection is off");
    }

    #[test]
    fn no_user_means_everything_after_system_is_current() {
        let m = msgs(json!([{"role": "system", "content": "task"}, {"role": "assistant", "content": "x"}]));
        let s = Structure::analyze(Format::OpenAi, &m, 0);
        assert_eq!(s.current_start, 1);
        assert!(s.rounds.is_empty());
        assert_eq!(s.last_round, None);
    }
}
