//! The offline summarizer: deterministic, extractive, no model.
//!
//! It reads the span from the request's `prompt` (the tagged transcript the engine writes, so it
//! works the same for every wire format) and keeps, within the target length, the lines that
//! carry facts a later turn may need:
//!
//! - the user's requests (their first line, and every other line that carries a fact);
//! - one line per tool call: its name, its key arguments and how it ended (`→ error`,
//!   `→ 61 lines`, or a one-line result verbatim); identical calls merge into one line with a
//!   count;
//! - from tool results, arguments and messages: error messages and the head and tail of stack
//!   traces, file paths, commands, identifiers (ticket keys, hashes, uuids, `#123`), numbers,
//!   definitions, decisions and what was changed;
//! - every line of an earlier summary being merged (a rolling summary keeps its memory): its
//!   content only, never the wrapper the engine put around it (its tags, the sentence that says
//!   what it is, its identifier index: the engine wraps and indexes the new summary once), and
//!   with its counts (`(×2)`, `(+3 similar)`) carried, not written twice.
//!
//! Lines are scored by the facts they carry; the best ones are taken until the target length is
//! reached, then written in their original order, each fact under the call or message it came
//! from. Repeated lines are written once; lines that differ only in their numbers (log lines,
//! table rows) are written once with a count of the others. Offload markers are never written.
//!
//! The target is the request's `targetChars`, else a fifth of the span's text (at least 400 and
//! at most 6,000 characters), and never more than 60% of the span, so a summary is always
//! shorter than what it replaces. For a `round` request the user's request stays in the
//! conversation as it is, so the summary does not repeat it.

use std::collections::HashMap;

use serde_json::Value;

use super::facts;
use super::transcript::{clean, cut, instruction, is_summary, parse, strip_markers, unwrapped, Block, Kind, MARKER};
use crate::error::HostError;
use crate::host::{SummarizeRequest, Summarizer, Summary};
use crate::options::presets::Strategy;
use crate::sort;

/// The default target, as a share of the span's characters.
pub const DEFAULT_FRACTION: f64 = 0.2;
/// The smallest default target, in characters.
pub const MIN_TARGET_CHARS: usize = 400;
/// The largest default target, in characters.
pub const MAX_TARGET_CHARS: usize = 6_000;
/// A summary never exceeds this share of the span's characters.
const MAX_SHARE: f64 = 0.6;

/// Longest line kept, in characters (longer ones are cut with `…`).
const LINE_CHARS: usize = 200;
/// Longest first line of a user request.
const REQUEST_CHARS: usize = 320;
/// Longest rendering of one argument value.
const ARG_CHARS: usize = 60;
/// Longest rendering of one tool call.
const CALL_CHARS: usize = 160;
/// Longest one-line tool result shown inline after its call.
const INLINE_RESULT_CHARS: usize = 90;

/// The offline summarizer as a [`Summarizer`]: never fails, reports no token usage.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineSummarizer;

impl Summarizer for OfflineSummarizer {
    async fn summarize(&self, request: &SummarizeRequest) -> Result<Summary, HostError> {
        Ok(Summary { text: summarize(request), input_tokens: None, output_tokens: None })
    }
}

/// The extractive summary of a request's span.
pub fn summarize(request: &SummarizeRequest) -> String {
    let (mut blocks, goal_words) = parse(&request.prompt);
    if Strategy::PreviousRoundSummary.summarize_kind() == Some(request.kind.as_str()) {
        // The round's request stays in place above the summary.
        if let Some(first) = blocks.first() {
            if first.kind == Kind::User && !is_summary(&first.text) {
                blocks.remove(0);
            }
        }
    }
    // The span's size as the engine measures what a summary replaces: message text and tool
    // results, not call arguments or thinking.
    let input: usize = blocks.iter().filter(|b| b.kind.counts()).map(|b| b.text.chars().count()).sum();
    if input == 0 {
        return String::new();
    }
    let target =
        request.target_chars.unwrap_or_else(|| ((input as f64 * DEFAULT_FRACTION) as usize).clamp(MIN_TARGET_CHARS, MAX_TARGET_CHARS));
    let budget = target.min((input as f64 * MAX_SHARE) as usize).max(1);
    if Strategy::FactRetrieval.summarize_kind() == Some(request.kind.as_str()) {
        if let Some(keyword) = facts::concept(instruction(&request.prompt)) {
            return facts::answer(&blocks, &keyword, budget);
        }
    }
    let items = Items::build(&blocks, &goal_words);
    let text = items.select(budget);
    if !text.is_empty() {
        return text;
    }
    // Nothing scored (or nothing fit): the beginning of the span, cut to the budget.
    let first = blocks.iter().flat_map(|b| b.text.lines()).map(clean).find(|l| !l.is_empty()).unwrap_or_default();
    cut(&first, budget)
}

// ---------------------------------------------------------------------------------------------
// Candidate lines.

/// One line the summary may keep.
#[derive(Debug)]
struct Item {
    /// Position in the span, for writing the kept lines in their original order.
    order: (usize, usize),
    text: String,
    score: i32,
    /// The call or message line this fact belongs under; kept whenever the fact is.
    parent: Option<usize>,
    /// How many identical calls this line stands for.
    count: usize,
    /// How many lines that differ only in their numbers were folded into this one.
    similar: usize,
}

impl Item {
    fn render(&self) -> String {
        let mut s = String::new();
        if self.parent.is_some() {
            s.push_str("  ");
        }
        s.push_str(&self.text);
        if self.count > 1 {
            s.push_str(&format!(" (×{})", self.count));
        }
        if self.similar > 0 {
            s.push_str(&format!(" (+{} similar)", self.similar));
        }
        s
    }

    fn cost(&self) -> usize {
        self.render().chars().count() + 1
    }
}

struct Items {
    items: Vec<Item>,
    /// Normalized text → item, to write each line once.
    seen: HashMap<String, usize>,
    /// Text with its numbers blanked → item, to fold lines that differ only in numbers.
    shapes: HashMap<String, usize>,
    /// Rendered call → item, to merge identical calls.
    calls: HashMap<String, usize>,
    /// Call id → the item of its call line.
    call_ids: HashMap<String, usize>,
    goal: Vec<String>,
}

impl Items {
    fn build(blocks: &[Block], goal: &[String]) -> Items {
        let mut it = Items {
            items: Vec::new(),
            seen: HashMap::new(),
            shapes: HashMap::new(),
            calls: HashMap::new(),
            call_ids: HashMap::new(),
            goal: goal.to_vec(),
        };
        for (b, block) in blocks.iter().enumerate() {
            match &block.kind {
                Kind::Call { id, name } => it.call(b, id, name, &block.text),
                Kind::Result { id, error } => it.result(b, id, *error, &block.text),
                // Summaries and notices the engine wrote earlier (they name their offload).
                _ if is_summary(&block.text) || block.text.contains(MARKER) => it.earlier_summary(b, &block.text),
                kind => it.message(b, kind, &block.text),
            }
        }
        it
    }

    fn push(&mut self, item: Item) -> usize {
        self.items.push(item);
        self.items.len() - 1
    }

    /// Adds a fact line unless it repeats one already there; returns whether it was added.
    fn fact(&mut self, order: (usize, usize), text: String, score: i32, parent: Option<usize>) -> bool {
        self.counted_fact(order, text, score, parent, (1, 0))
    }

    /// [`Items::fact`] of a line that stands for `count` identical lines and `similar` others
    /// (an earlier summary's `(×2)` and `(+3 similar)`, read off its line).
    fn counted_fact(
        &mut self,
        order: (usize, usize),
        text: String,
        score: i32,
        parent: Option<usize>,
        (count, similar): (usize, usize),
    ) -> bool {
        if score <= 0 || text.is_empty() {
            return false;
        }
        let key = normalize(&text);
        if self.seen.contains_key(&key) {
            return false;
        }
        let shape = shape(&key);
        if shape != key {
            if let Some(&first) = self.shapes.get(&shape) {
                self.items[first].similar += count + similar;
                return false;
            }
        }
        let i = self.push(Item { order, text, score, parent, count, similar });
        self.seen.insert(key, i);
        if shape != normalize(&self.items[i].text) {
            self.shapes.insert(shape, i);
        }
        true
    }

    /// A user, assistant, system or thinking message: a line that says who spoke (with the
    /// first line), then its facts beneath.
    fn message(&mut self, b: usize, kind: &Kind, text: &str) {
        let lines: Vec<String> = text.lines().map(clean).filter(|l| !l.is_empty()).collect();
        let Some(first) = lines.first() else { return };
        let (head_score, bonus, head_chars) = match kind {
            Kind::User => (100, 8, REQUEST_CHARS),
            Kind::Assistant => (22, 3, LINE_CHARS),
            Kind::System => (18, 2, LINE_CHARS),
            Kind::Thinking => (4, -2, LINE_CHARS),
            _ => (18, 2, LINE_CHARS),
        };
        let head_text = format!("{}: {}", kind.label(), cut(first, head_chars));
        let head_score = head_score + self.score(first) / 2;
        // An earlier summary being merged may hold this very line (`User: ...`): once.
        let head = match self.seen.get(&normalize(&head_text)) {
            Some(&same) => same,
            None => {
                let head =
                    self.push(Item { order: (b, 0), text: head_text.clone(), score: head_score, parent: None, count: 1, similar: 0 });
                self.seen.insert(normalize(&head_text), head);
                head
            }
        };
        self.seen.insert(normalize(first), head);
        for (l, line) in lines.iter().enumerate().skip(1) {
            let mut s = self.score(line);
            if s > 0 || *kind == Kind::User {
                s += bonus;
            }
            self.fact((b, l), cut(line, LINE_CHARS), s, Some(head));
        }
    }

    /// An earlier summary being merged: every line of it matters, in its own layout (an
    /// indented line stays under the line above it, and is kept only with it).
    fn earlier_summary(&mut self, b: usize, text: &str) {
        let mut head: Option<usize> = None;
        for (l, line) in text.lines().enumerate() {
            let line = strip_markers(line.trim_end());
            let Some(line) = unwrapped(&line) else { continue };
            if is_summary(line) {
                continue;
            }
            let (line, counts) = counted(line);
            let indented = line.starts_with(' ');
            let parent = if indented { head } else { None };
            let score = 60 + self.score(line) - if parent.is_some() { 2 } else { 0 };
            let shown = if parent.is_some() { line.trim_start() } else { line };
            let before = self.items.len();
            // A user's request keeps the length its own line had (see `message`).
            let limit = if shown.starts_with("User: ") { REQUEST_CHARS } else { LINE_CHARS };
            self.counted_fact((b, l), cut(shown, limit), score, parent, counts);
            if !indented {
                head = (self.items.len() > before).then_some(before);
            }
        }
    }

    /// A tool call: one line with its name and key arguments; long string arguments (a file's
    /// content, a patch) contribute their facts beneath it.
    fn call(&mut self, b: usize, id: &str, name: &str, arguments: &str) {
        let (rendered, long) = render_call(name, arguments);
        if let Some(&first) = self.calls.get(&rendered) {
            self.items[first].count += 1;
            self.call_ids.insert(id.to_string(), first);
            return;
        }
        let head = self.push(Item { order: (b, 0), text: rendered.clone(), score: 50, parent: None, count: 1, similar: 0 });
        self.calls.insert(rendered, head);
        self.call_ids.insert(id.to_string(), head);
        let mut l = 1;
        for text in long {
            for line in text.lines().map(clean).filter(|l| !l.is_empty()) {
                let diff = (line.starts_with('+') && !line.starts_with("+++")) || (line.starts_with('-') && !line.starts_with("---"));
                let s = self.score(&line) + if diff { 2 } else { 0 } - 1;
                self.fact((b, l), cut(&line, LINE_CHARS), s, Some(head));
                l += 1;
            }
        }
    }

    /// A tool result: how it ended goes on its call's line; its facts go beneath.
    fn result(&mut self, b: usize, id: &str, error: bool, text: &str) {
        let text = strip_markers(text);
        let lines: Vec<String> = text.lines().map(clean).filter(|l| !l.is_empty()).collect();
        let head = match self.call_ids.get(id) {
            Some(&h) => h,
            None => self.push(Item { order: (b, 0), text: "- a tool result".into(), score: 30, parent: None, count: 1, similar: 0 }),
        };
        let status = if error {
            " → error".to_string()
        } else if lines.is_empty() {
            " → (empty)".to_string()
        } else if lines.len() == 1 && lines[0].chars().count() <= INLINE_RESULT_CHARS {
            format!(" → {}", lines[0])
        } else {
            format!(" → {} lines", lines.len())
        };
        let call = &mut self.items[head];
        if !call.text.contains(" → ") {
            call.text.push_str(&status);
            if error {
                call.score += 10;
            }
        }
        if lines.len() == 1 && !error && lines[0].chars().count() <= INLINE_RESULT_CHARS {
            return;
        }
        let frames = frame_runs(&lines);
        for (l, line) in lines.iter().enumerate() {
            let mut s = self.score(line);
            if l == 0 && s > 0 {
                s += 3; // a result's first line often says what it is (a file and its range)
            }
            if error && s > 0 {
                s += 4;
            }
            if frames[l] {
                s -= 8; // the middle of a stack trace
            }
            self.fact((b, l + 1), cut(line, LINE_CHARS), s, Some(head));
        }
    }

    /// What a line carries, as a score (0: nothing worth keeping).
    fn score(&self, line: &str) -> i32 {
        let mut s = fact_score(line);
        if !self.goal.is_empty() {
            let lower = line.to_lowercase();
            if self.goal.iter().any(|w| lower.contains(w.as_str())) {
                s += 3;
            }
        }
        s
    }

    /// The best lines within `budget` characters, in their original order.
    fn select(&self, budget: usize) -> String {
        let items = &self.items;
        let mut order: Vec<usize> = (0..items.len()).filter(|&i| items[i].score > 0).collect();
        // Best score first, then in order: sorted by place, then (stably) by score.
        sort::by_key(&mut order, |&i| place(items[i].order));
        sort::by_key(&mut order, |&i| (i64::from(i32::MAX) - i64::from(items[i].score)) as u128);
        let mut chosen = vec![false; items.len()];
        let mut used = 0;
        for i in order {
            if chosen[i] {
                continue;
            }
            let parent = items[i].parent.filter(|&p| !chosen[p]);
            let need = items[i].cost() + parent.map_or(0, |p| items[p].cost());
            if used + need <= budget {
                chosen[i] = true;
                if let Some(p) = parent {
                    chosen[p] = true;
                }
                used += need;
            }
        }
        // Children follow their parent: sort by the parent's position first.
        let mut kept: Vec<usize> = (0..items.len()).filter(|&i| chosen[i]).collect();
        // By (the parent's place, child or not, own place): one stable sort per field, last first.
        let top = |i: usize| items[i].parent.unwrap_or(i);
        sort::by_key(&mut kept, |&i| place(items[i].order));
        sort::by_key(&mut kept, |&i| items[i].parent.is_some() as u128);
        sort::by_key(&mut kept, |&i| place(items[top(i)].order));
        let lines: Vec<String> = kept.iter().map(|&i| items[i].render()).collect();
        lines.join("\n")
    }
}

/// A line of an earlier summary without the counts [`Item::render`] wrote after it, and those
/// counts: how many identical lines it stands for (`(×2)`) and how many similar ones (`(+3
/// similar)`; several, from a summary written before they were read back, add up).
fn counted(line: &str) -> (&str, (usize, usize)) {
    let (mut line, mut count, mut similar) = (line, 1, 0);
    loop {
        if let Some((rest, n)) = line.strip_suffix(" similar)").and_then(|r| r.rsplit_once(" (+")) {
            if let Ok(n) = n.parse::<usize>() {
                similar += n;
                line = rest;
                continue;
            }
        }
        if let Some((rest, n)) = line.strip_suffix(')').and_then(|r| r.rsplit_once(" (×")) {
            if let Ok(n) = n.parse::<usize>() {
                count = count.max(n);
                line = rest;
                continue;
            }
        }
        return (line, (count, similar));
    }
}

/// A line's place (block, line) as a sort key.
fn place(order: (usize, usize)) -> u128 {
    sort::pair(order.0 as u64, order.1 as u64)
}

/// For each line, whether it is in the middle of a run of stack frames (not its first or last
/// frame), which a summary can do without.
fn frame_runs(lines: &[String]) -> Vec<bool> {
    let is_frame = |l: &str| {
        l.starts_with("at ") || l.starts_with("File \"") || (l.starts_with('#') && l[1..].starts_with(|c: char| c.is_ascii_digit()))
    };
    let frames: Vec<usize> = (0..lines.len()).filter(|&i| is_frame(&lines[i])).collect();
    let mut out = vec![false; lines.len()];
    let mut k = 0;
    while k < frames.len() {
        // A run: frames at most two lines apart (a Python frame is followed by its code line).
        let mut j = k;
        while j + 1 < frames.len() && frames[j + 1] - frames[j] <= 2 {
            j += 1;
        }
        if j > k {
            for flag in &mut out[frames[k] + 1..frames[j]] {
                *flag = true;
            }
        }
        k = j + 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Tool calls.

/// `- name(key=value, ...)` and the long string arguments whose lines may hold facts.
fn render_call(name: &str, arguments: &str) -> (String, Vec<String>) {
    let mut long = Vec::new();
    let args = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                if let Value::String(s) = v {
                    if s.chars().count() > ARG_CHARS || s.contains('\n') {
                        long.push(s.clone());
                    }
                }
                format!("{k}={}", render_value(v))
            })
            .collect::<Vec<_>>()
            .join(", "),
        Ok(Value::Null) => String::new(),
        Ok(other) => render_value(&other),
        Err(_) => cut(&clean(arguments), ARG_CHARS),
    };
    let name = if name.is_empty() { "tool" } else { name };
    (cut(&format!("- {name}({args})"), CALL_CHARS), long)
}

fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let first = s.lines().next().unwrap_or_default();
            let shown = cut(first, ARG_CHARS);
            let more = shown.chars().count() < s.chars().count() && !shown.ends_with('…');
            let text = if more { format!("{shown}…") } else { shown };
            if s.chars().count() > ARG_CHARS {
                format!("{} ({} chars)", Value::String(text), s.chars().count())
            } else {
                Value::String(text).to_string()
            }
        }
        Value::Array(_) | Value::Object(_) => {
            let compact = v.to_string();
            if compact.chars().count() <= ARG_CHARS {
                compact
            } else if v.is_array() {
                "[…]".into()
            } else {
                "{…}".into()
            }
        }
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Lines.

fn normalize(text: &str) -> String {
    text.to_lowercase()
}

/// The text with every run of digits (and hex that contains digits) blanked: lines that differ
/// only in numbers, timestamps or ids share a shape.
fn shape(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for word in key.split(' ') {
        if !out.is_empty() {
            out.push(' ');
        }
        let mut last_digit = false;
        for c in word.chars() {
            if c.is_ascii_digit() {
                if !last_digit {
                    out.push('#');
                }
                last_digit = true;
            } else {
                out.push(c);
                last_digit = false;
            }
        }
    }
    out
}

const ERROR_WORDS: [&str; 20] = [
    "error",
    "exception",
    "traceback",
    "failed",
    "failure",
    "fatal",
    "panic",
    "assert",
    "denied",
    "refused",
    "not found",
    "no such",
    "timed out",
    "timeout",
    "segfault",
    "abort",
    "cannot",
    "unable to",
    "invalid",
    "crash",
];
const WARN_WORDS: [&str; 3] = ["warn", "deprecat", "retry"];
const DECISION_WORDS: [&str; 24] = [
    "decid",
    "decision",
    "chose",
    "choose",
    "root cause",
    "the cause",
    "because",
    "instead",
    "will ",
    "plan",
    "agreed",
    "conclu",
    "next step",
    "todo",
    "fixed",
    "fix ",
    "changed",
    "must",
    "should",
    "need",
    "do not",
    "don't",
    "confirmed",
    "verified",
];
const COMMAND_WORDS: [&str; 16] = [
    "pytest", "cargo ", "npm ", "npx ", "git ", "python ", "pip ", "make ", "docker ", "kubectl ", "curl ", "node ", "yarn ", "go test",
    "go build", "./",
];
const DEFINITION_WORDS: [&str; 8] = ["def ", "class ", "fn ", "function ", "struct ", "interface ", "enum ", "impl "];
const EXTENSIONS: [&str; 28] = [
    "py", "rs", "ts", "tsx", "js", "mjs", "jsx", "json", "toml", "yaml", "yml", "md", "txt", "log", "sql", "sh", "go", "java", "kt", "c",
    "h", "cpp", "hpp", "html", "css", "lock", "cfg", "ini",
];

/// The facts a line carries, as a score: errors 6, paths and ids 4, decisions 4, commands 3,
/// definitions 2, warnings 3, numbers 1 (2 for measures). 0 for a line with none.
pub(crate) fn fact_score(line: &str) -> i32 {
    // A listing's line number (`  42\tcode`, after cleaning `42 code`) is no fact by itself.
    let line = match line.split_once(' ') {
        Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !rest.starts_with(|c: char| c.is_ascii_digit()) => {
            rest
        }
        _ => line,
    };
    let lower = line.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let mut s = 0;
    if has(&ERROR_WORDS) {
        s += 6;
    } else if has(&WARN_WORDS) {
        s += 3;
    }
    if has(&DECISION_WORDS) {
        s += 4;
    }
    if lower.starts_with("$ ") || has(&COMMAND_WORDS) {
        s += 3;
    }
    if has(&DEFINITION_WORDS) {
        s += 2;
    }
    let tokens: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | ',' | ';' | '"' | '\'' | '`' | '='))
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.iter().any(|t| is_path(t)) {
        s += 4;
    }
    if tokens.iter().any(|t| is_id(t)) {
        s += 4;
    }
    if line.chars().any(|c| c.is_ascii_digit()) {
        s += if is_measure(line) { 2 } else { 1 };
    }
    s
}

fn is_path(token: &str) -> bool {
    let t = token.trim_matches(|c: char| matches!(c, '.' | ':' | '<' | '>' | '*'));
    let t = t.split(':').next().unwrap_or_default();
    let bytes = t.as_bytes();
    let slash = bytes.windows(3).any(|w| w[1] == b'/' && w[0].is_ascii_alphanumeric() && (w[2].is_ascii_alphanumeric() || w[2] == b'_'))
        || (t.starts_with('/') && t.len() > 2 && t[1..].starts_with(|c: char| c.is_ascii_alphabetic()))
        || t.starts_with("./")
        || t.starts_with("~/");
    if slash {
        return true;
    }
    match t.rsplit_once('.') {
        Some((stem, ext)) => !stem.is_empty() && stem.chars().any(|c| c.is_ascii_alphabetic()) && EXTENSIONS.contains(&ext),
        None => false,
    }
}

fn is_id(token: &str) -> bool {
    let t = token.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '#');
    if t.is_empty() {
        return false;
    }
    // #123
    if let Some(n) = t.strip_prefix('#') {
        return !n.is_empty() && n.chars().all(|c| c.is_ascii_digit());
    }
    // BILL-2291, JIRA-12
    if let Some((key, n)) = t.split_once('-') {
        if key.len() >= 2 && key.chars().all(|c| c.is_ascii_uppercase()) && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) {
            return true;
        }
    }
    // uuids and hashes: long hex with digits and letters
    let hex: String = t.chars().filter(|&c| c != '-').collect();
    hex.len() >= 7
        && hex.chars().all(|c| c.is_ascii_hexdigit())
        && hex.chars().any(|c| c.is_ascii_digit())
        && hex.chars().any(|c| c.is_ascii_alphabetic())
}

/// A number with a unit, a percentage or decimals (amounts, durations, sizes).
fn is_measure(line: &str) -> bool {
    let b = line.as_bytes();
    for i in 0..b.len() {
        if !b[i].is_ascii_digit() {
            continue;
        }
        match b.get(i + 1) {
            Some(b'%') => return true,
            Some(b'.') if b.get(i + 2).is_some_and(u8::is_ascii_digit) => return true,
            Some(b'm') if b.get(i + 2) == Some(&b's') => return true,
            Some(b'k' | b'K' | b'M' | b'G') if b.get(i + 2).is_some_and(|c| matches!(c, b'B' | b'b' | b'i')) => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{offload_marker, transcript, Message};
    use crate::Format;
    use serde_json::json;

    fn request(kind: &str, messages: &[Value], target: Option<usize>) -> SummarizeRequest {
        let parsed: Vec<Message> = messages.iter().enumerate().map(|(i, m)| Format::OpenAi.parse(i, m).unwrap()).collect();
        let refs: Vec<&Message> = parsed.iter().collect();
        SummarizeRequest {
            kind: kind.into(),
            system: "s".into(),
            prompt: format!("<conversation>\n{}</conversation>\n\nSummarize.", transcript(&refs)),
            messages: messages.to_vec(),
            target_chars: target,
            timeout_ms: None,
            schema: None,
            from_cache: false,
        }
    }

    fn call(id: &str, name: &str, args: Value) -> Value {
        json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
    }

    fn filler(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("the quick brown fox jumps over the lazy dog again and again {}", "x".repeat(i % 7)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn session() -> Vec<Value> {
        let log = format!(
            "{}\nTraceback (most recent call last):\n  File \"app/main.py\", line 10, in <module>\n    run()\n  File \"app/jobs.py\", line 88, in run\n    step()\n  File \"app/steps.py\", line 5, in step\n    raise ValueError('bad amount 4.85')\nValueError: bad amount 4.85\n{}",
            filler(200),
            filler(100)
        );
        vec![
            json!({"role": "user", "content": "Ticket BILL-2291: the footer discount is off by a cent. Can you find the cause?"}),
            json!({"role": "assistant", "content": "I will read the totals first.", "tool_calls": [call("c1", "read_file", json!({"path": "ledgerline/billing/totals.py"}))]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": format!("ledgerline/billing/totals.py (lines 1-300 of 300)\n{}\ndef compute_invoice_totals(lines, discount):\n{}", filler(150), filler(150))}),
            json!({"role": "assistant", "content": null, "tool_calls": [call("c2", "run", json!({"command": "pytest tests/billing -q", "timeout_s": 600}))]}),
            json!({"role": "tool", "tool_call_id": "c2", "content": log}),
            json!({"role": "assistant", "content": "The root cause is rounding per line in apply_discount; I decided to round once and allocate.\nSee commit 55323292485574adcfc20fd0d9774b60545c0d13."}),
        ]
    }

    #[test]
    fn keeps_the_facts_and_drops_the_filler() {
        let req = request("rollup", &session(), None);
        let input: usize = req.prompt.chars().count();
        let out = summarize(&req);
        assert!(out.chars().count() < input / 4, "{} chars of {input}", out.chars().count());
        for needle in [
            "User: Ticket BILL-2291: the footer discount is off by a cent. Can you find the cause?",
            "- read_file(path=\"ledgerline/billing/totals.py\") → ",
            "- run(command=\"pytest tests/billing -q\", timeout_s=600) → ",
            "ValueError: bad amount 4.85",
            "Traceback (most recent call last):",
            "def compute_invoice_totals(lines, discount):",
            "root cause is rounding per line",
            "55323292485574adcfc20fd0d9774b60545c0d13",
        ] {
            assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
        }
        assert!(!out.contains("quick brown fox"), "{out}");
        // The middle of the stack trace goes, its ends stay.
        assert!(out.contains("File \"app/main.py\", line 10"), "{out}");
        assert!(!out.contains("app/jobs.py"), "{out}");
        // Deterministic.
        assert_eq!(out, summarize(&req));
    }

    #[test]
    fn the_goal_picks_between_lines_of_equal_worth() {
        // Two lines alike but for a name; the budget keeps one. The plan's goal (after the
        // transcript) names one of them, and that one is kept, whichever comes first.
        let ledger = "Error: config/ledger_settings.yaml: field timeout_ms must be a number";
        let archive = "Error: config/archive_settings.yaml: field timeout_ms must be a number";
        for (first, second) in [(ledger, archive), (archive, ledger)] {
            let messages = vec![
                json!({"role": "user", "content": "Check both exports."}),
                json!({"role": "assistant", "content": null, "tool_calls": [call("c1", "run", json!({"command": "make check"}))]}),
                json!({"role": "tool", "tool_call_id": "c1", "content": format!(
                    "{}\n{first}\n{second}\n{}",
                    filler(40),
                    filler(40)
                )}),
            ];
            let mut req = request("rollup", &messages, Some(150));
            req.prompt = req.prompt.replace(
                "</conversation>\n",
                "</conversation>\n<plan_aware_hint>\nGoal: Repair the Ledger first, then the ledger totals\n</plan_aware_hint>\n",
            );
            let out = summarize(&req);
            assert!(out.contains(ledger), "{first} first:\n{out}");
            assert!(!out.contains(archive), "{first} first:\n{out}");
        }
        // Each of the goal's words once, in its order.
        assert_eq!(
            super::super::transcript::goal_words("\n<plan_aware_hint>\nGoal: Repair the Ledger first, then the ledger totals\n"),
            ["repair", "ledger", "first", "totals"]
        );
    }

    #[test]
    fn facts_sit_under_the_call_they_came_from_in_order() {
        let out = summarize(&request("tool_calls", &session(), None));
        let lines: Vec<&str> = out.lines().collect();
        let run = lines.iter().position(|l| l.starts_with("- run(")).unwrap();
        let err = lines.iter().position(|l| l.contains("ValueError: bad amount")).unwrap();
        let read = lines.iter().position(|l| l.starts_with("- read_file(")).unwrap();
        assert!(read < run && run < err, "{out}");
        assert!(lines[err].starts_with("  "), "indented under its call: {out}");
    }

    #[test]
    fn stays_within_the_target_and_always_shorter_than_the_span() {
        let messages = session();
        for target in [1, 10, 50, 120, 300, 1000, 5000, 100_000] {
            let out = summarize(&request("current_round", &messages, Some(target)));
            assert!(out.chars().count() <= target.max(1), "target {target}: {} chars", out.chars().count());
        }
        // Tiny spans: still shorter than the span.
        for text in ["hi", "a b", "Error: x", "ok then", "x".repeat(30).as_str()] {
            let req = request("large_message", &[json!({"role": "assistant", "content": text})], None);
            let out = summarize(&req);
            assert!(out.chars().count() < text.chars().count().max(1), "{text:?} -> {out:?}");
        }
    }

    #[test]
    fn repeated_and_similar_lines_are_written_once() {
        let mut log = String::new();
        for i in 0..50 {
            log.push_str(&format!("2024-05-0{} 12:00:{i:02} WARN retry 3 for job {}\n", i % 9, 1000 + i));
            log.push_str("ERROR connection refused by db.internal:5432\n");
        }
        let messages = vec![
            json!({"role": "user", "content": "Why does the job fail?"}),
            json!({"role": "assistant", "content": null, "tool_calls": [call("a", "read_log", json!({"file": "logs/worker.log"}))]}),
            json!({"role": "tool", "tool_call_id": "a", "content": log}),
            json!({"role": "assistant", "content": null, "tool_calls": [call("b", "read_log", json!({"file": "logs/worker.log"}))]}),
            json!({"role": "tool", "tool_call_id": "b", "content": "same again"}),
        ];
        let out = summarize(&request("tool_calls", &messages, None));
        assert_eq!(out.matches("connection refused").count(), 1, "{out}");
        assert_eq!(out.matches("WARN retry").count(), 1, "{out}");
        assert!(out.contains("(+49 similar)"), "{out}");
        assert_eq!(out.matches("- read_log(file=\"logs/worker.log\")").count(), 1, "{out}");
        assert!(out.contains("(×2)"), "{out}");
    }

    #[test]
    fn never_writes_offload_markers() {
        let marker = offload_marker("0b5e3a5c-1111-4222-8333-944455556666");
        let messages = vec![
            json!({"role": "user", "content": format!("[Summary of the earlier conversation]\nThe user wants BILL-2291 fixed.\nDecided: allocate per line.\n{marker}")}),
            json!({"role": "assistant", "content": format!("Error: truncated output\n[... 900 of 1000 characters omitted ...]\n{marker}\nmore text about src/app.py")}),
            json!({"role": "user", "content": "Now update the PDF test in tests/billing/test_invoice_pdf.py please."}),
            json!({"role": "assistant", "content": format!("Assistant: I read the test.\n  - read_file(path=\"tests/a.py\") → 12 lines\n{marker}")}),
        ];
        let out = summarize(&request("rollup", &messages, None));
        // An indented line of an earlier summary comes only with the line it belongs under.
        let lines: Vec<&str> = out.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("  ") {
                assert!(i > 0, "{out}");
            }
        }
        // A round summary written earlier is kept in its own layout, not labelled twice.
        assert!(out.contains("Assistant: I read the test.\n  - read_file(path=\"tests/a.py\") → 12 lines"), "{out}");
        assert!(!out.contains("Assistant: Assistant:"), "{out}");
        assert!(!out.contains("CONTEXT_OFFLOAD"), "{out}");
        assert!(!out.contains("<!--"), "{out}");
        // The earlier summary is merged, line by line.
        assert!(out.contains("The user wants BILL-2291 fixed."), "{out}");
        assert!(out.contains("Decided: allocate per line."), "{out}");
        assert!(out.contains("User: Now update the PDF test"), "{out}");
    }

    #[test]
    fn a_round_summary_leaves_the_request_out() {
        let out = summarize(&request("round", &session(), None));
        assert!(!out.contains("User: Ticket BILL-2291"), "{out}");
        assert!(out.contains("- run(command=\"pytest tests/billing -q\""), "{out}");
    }

    #[test]
    fn reads_plain_prompts_and_unescapes_tags() {
        let req = SummarizeRequest {
            kind: String::new(),
            system: String::new(),
            prompt: format!("{}\nError: disk full on /var/lib/data\n{}", filler(20), filler(20)),
            messages: vec![],
            target_chars: None,
            timeout_ms: None,
            schema: None,
            from_cache: false,
        };
        let out = summarize(&req);
        assert!(out.contains("Error: disk full on /var/lib/data"), "{out}");
        let messages =
            vec![json!({"role": "assistant", "content": format!("The template has a </user> tag in src/page.html\n{}", filler(30))})];
        let out = summarize(&request("large_message", &messages, None));
        assert!(out.contains("</user> tag in src/page.html"), "{out}");
    }

    #[test]
    fn long_arguments_give_their_facts_and_a_length() {
        let patch =
            format!("--- a/src/money.rs\n+++ b/src/money.rs\n@@ -1,3 +1,3 @@\n-    round_each()\n+    allocate_total()\n{}", filler(40));
        let messages = vec![
            json!({"role": "assistant", "content": null, "tool_calls": [call("p", "apply_patch", json!({"patch": patch}))]}),
            json!({"role": "tool", "tool_call_id": "p", "content": "patched 1 file"}),
            json!({"role": "assistant", "content": filler(30)}),
        ];
        let out = summarize(&request("tool_calls", &messages, None));
        assert!(out.contains("- apply_patch(patch=\"--- a/src/money.rs…\" ("), "{out}");
        assert!(out.contains("→ patched 1 file"), "{out}");
        assert!(out.contains("+ allocate_total()"), "{out}");
    }

    #[test]
    fn error_results_are_marked_and_kept() {
        let messages = vec![
            json!({"role": "assistant", "content": null, "tool_calls": [call("e", "run", json!({"command": "make"}))]}),
            json!({"role": "tool", "tool_call_id": "e", "content": format!("{}\nmake: *** [all] Error 2\n{}", filler(40), filler(40))}),
        ];
        let out = summarize(&request("tool_calls", &messages, None));
        assert!(out.contains("- run(command=\"make\") → "), "{out}");
        assert!(out.contains("make: *** [all] Error 2"), "{out}");
    }

    #[test]
    fn stack_frames_lose_their_middle_only() {
        let lines: Vec<String> = ["x", "at a (f.js:1:2)", "y", "at b (g.js:3:4)", "at c (h.js:5:6)", "at d (i.js:7:8)", "z"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // Frames at most two lines apart make one run (a Python frame is followed by its code).
        assert_eq!(frame_runs(&lines), vec![false, false, true, true, true, false, false]);
        // One frame alone, or at the end, is no run to cut.
        assert_eq!(frame_runs(&["at a (f.js:1:2)".to_string()]), vec![false]);
        assert_eq!(frame_runs(&["x".to_string(), "File \"a.py\", line 1".to_string()]), vec![false, false]);
    }

    #[test]
    fn scores_facts() {
        assert_eq!(fact_score("the quick brown fox"), 0);
        assert_eq!(fact_score("42 return value"), 0, "a listing's line number is no fact");
        assert!(fact_score("42 items failed") >= 6);
        assert!(fact_score("ValueError: bad") >= 6);
        assert!(fact_score("see src/lib.rs") >= 4);
        assert!(fact_score("ticket BILL-2291") >= 4);
        assert!(fact_score("fixed in #1031") >= 4);
        assert!(fact_score("commit 5532a292") >= 4);
        assert!(fact_score("$ cargo test") >= 3);
        assert!(fact_score("took 12ms") >= 2);
        assert!(is_path("ledgerline/money.py:38:"));
        assert!(is_path("Cargo.toml"));
        assert!(!is_path("e.g."));
        assert!(!is_path("and/or") || is_path("and/or")); // words with slashes count; harmless
        assert!(!is_id("deadbeef")); // no digits: a word
        assert!(is_id("0b5e3a5c-1111-4222-8333-944455556666"));
    }
}
