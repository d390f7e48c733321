//! Reading the span of a summarize request: the tagged transcript the engine writes into the
//! prompt (`<conversation>` with one `<user>`, `<assistant>`, `<tool_call>`, `<tool_result>`
//! ... block per message part, content escaped so it cannot forge a tag), the plan's goal
//! after it, and the line helpers the built-in summarizers share.

/// How every offload marker begins.
pub(super) const MARKER: &str = "<!-- CONTEXT_OFFLOAD";

/// What a block of the transcript is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Kind {
    User,
    Assistant,
    System,
    Thinking,
    /// Text outside any tag, or of a role this reader does not know.
    Text,
    Call {
        id: String,
        name: String,
    },
    Result {
        id: String,
        error: bool,
    },
}

impl Kind {
    /// The speaker's name as a summary writes it.
    pub(super) fn label(&self) -> &'static str {
        match self {
            Kind::User => "User",
            Kind::Assistant => "Assistant",
            Kind::System => "System",
            Kind::Thinking => "Thinking",
            _ => "Note",
        }
    }

    /// Whether the engine counts the block's text in the size of a span.
    pub(super) fn counts(&self) -> bool {
        !matches!(self, Kind::Call { .. } | Kind::Thinking)
    }
}

/// One block of the transcript: a message's text, a tool call (its arguments) or a result.
#[derive(Debug, Clone)]
pub(super) struct Block {
    pub kind: Kind,
    pub text: String,
}

/// Tags the engine escapes inside content (see `message::escape_tags`).
const TAGS: [&str; 10] =
    ["conversation", "user", "assistant", "system", "tool_call", "tool_result", "tool", "thinking", "plan_aware_hint", "attachment"];

/// The blocks of the prompt's `<conversation>` and the words of the plan's goal, if any. A
/// prompt without a transcript is one block of text.
pub(super) fn parse(prompt: &str) -> (Vec<Block>, Vec<String>) {
    const OPEN: &str = "<conversation>\n";
    const CLOSE: &str = "</conversation>";
    let (body, rest) = match (prompt.find(OPEN), prompt.rfind(CLOSE)) {
        (Some(a), Some(b)) if b >= a + OPEN.len() => (&prompt[a + OPEN.len()..b], &prompt[b + CLOSE.len()..]),
        _ => return (vec![Block { kind: Kind::Text, text: prompt.to_string() }], Vec::new()),
    };
    let mut blocks = Vec::new();
    let mut open: Option<(Kind, String, Vec<&str>)> = None;
    for line in body.lines() {
        if let Some((kind, close, lines)) = open.as_mut() {
            if line == close {
                blocks.push(Block { kind: kind.clone(), text: unescape_tags(&lines.join("\n")) });
                open = None;
            } else {
                lines.push(line);
            }
            continue;
        }
        if let Some((kind, close)) = opening(line) {
            // `<user>[attachment]</user>` opens and closes on one line.
            if let Some(inner) = line.find('>').map(|i| &line[i + 1..]).and_then(|r| r.strip_suffix(close.as_str())) {
                blocks.push(Block { kind, text: inner.to_string() });
            } else {
                open = Some((kind, close, Vec::new()));
            }
        }
    }
    if let Some((kind, _, lines)) = open {
        blocks.push(Block { kind, text: unescape_tags(&lines.join("\n")) });
    }
    (blocks, goal_words(rest))
}

/// The block a line opens, and the line that closes it.
fn opening(line: &str) -> Option<(Kind, String)> {
    let rest = line.strip_prefix('<')?;
    let name_end = rest.find(['>', ' '])?;
    let name = &rest[..name_end];
    let kind = match name {
        "user" => Kind::User,
        "assistant" => Kind::Assistant,
        "system" => Kind::System,
        "thinking" => Kind::Thinking,
        "tool" => Kind::Text,
        "tool_call" => Kind::Call { id: attr(rest, "id"), name: attr(rest, "name") },
        "tool_result" => Kind::Result { id: attr(rest, "id"), error: attr(rest, "error") == "true" },
        _ => return None,
    };
    Some((kind, format!("</{name}>")))
}

/// The value of `name="..."` in a tag, unescaped.
fn attr(tag: &str, name: &str) -> String {
    let key = format!(" {name}=\"");
    let Some(start) = tag.find(&key).map(|i| i + key.len()) else { return String::new() };
    let value = tag[start..].split('"').next().unwrap_or_default();
    value.replace("&quot;", "\"").replace("&lt;", "<").replace("&amp;", "&")
}

/// Undoes the transcript's escaping of tag-like text (`&lt;user>` back to `<user>`).
fn unescape_tags(text: &str) -> String {
    if !text.contains("&lt;") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(p) = rest.find("&lt;") {
        out.push_str(&rest[..p]);
        let after = &rest[p + 4..];
        let name = after.strip_prefix('/').unwrap_or(after);
        let tag = TAGS
            .iter()
            .any(|t| name.starts_with(t) && name[t.len()..].chars().next().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_')));
        out.push_str(if tag { "<" } else { "&lt;" });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Words of the plan's goal (from the `<plan_aware_hint>` after the transcript): lines that
/// mention them matter more.
pub(super) fn goal_words(rest: &str) -> Vec<String> {
    let Some(goal) = rest.lines().find_map(|l| l.strip_prefix("Goal: ")) else { return Vec::new() };
    // Each once, in the goal's order.
    let mut seen = std::collections::HashSet::new();
    goal.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 5)
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// What the prompt says after the transcript: the instruction and any hint (the whole prompt
/// when it has no transcript).
pub(super) fn instruction(prompt: &str) -> &str {
    match prompt.rfind("</conversation>") {
        Some(b) => &prompt[b + "</conversation>".len()..],
        None => prompt,
    }
}

/// Whether a message's text is a summary or notice the engine wrote earlier.
pub(super) fn is_summary(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("[Summary")
        || t.starts_with("[Earlier tool calls")
        || t.strip_prefix(SUMMARY_TAG).is_some_and(|r| r.starts_with("Summary"))
}

/// The tag a prefix summary opens with (and closes with, as `</system-info>`).
const SUMMARY_TAG: &str = "<system-info>";
const SUMMARY_TAG_CLOSE: &str = "</system-info>";

/// The content of a line of a summary the engine wrote earlier, without the wrapper the engine
/// put around that summary: `None` for a line that is all wrapper (the `<system-info>` line
/// that says what the summary is, its closing tag, the identifier index), the line without a
/// tag otherwise. A summary that rolls an earlier one forward rewrites its content; the engine
/// wraps the new summary once, and indexes it afresh.
pub(super) fn unwrapped(line: &str) -> Option<&str> {
    let mut l = line.trim_end();
    if let Some(before) = l.strip_suffix(SUMMARY_TAG_CLOSE) {
        l = before.trim_end();
    }
    let body = l.trim_start();
    if body.starts_with(crate::message::INDEX_OPENING) {
        return None;
    }
    match body.strip_prefix(SUMMARY_TAG) {
        Some(rest) if rest.trim().is_empty() || rest.starts_with("Summary of the earlier conversation") => None,
        Some(rest) => Some(rest),
        None => (!body.is_empty()).then_some(l),
    }
}

/// A line with its surrounding and repeated whitespace collapsed and offload markers removed.
pub(super) fn clean(line: &str) -> String {
    let line = strip_markers(line);
    let mut out = String::with_capacity(line.len());
    for word in line.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    // Lines of pure punctuation or drawing carry nothing.
    if out.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
        return String::new();
    }
    out
}

/// Removes every offload marker, in any spelling a reader could take for one (a summary never
/// names offloads).
pub(super) fn strip_markers(line: &str) -> String {
    let spans = crate::message::marker_spans(line);
    if spans.is_empty() {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for r in spans {
        out.push_str(&line[at..r.start]);
        at = r.end;
    }
    out.push_str(&line[at..]);
    out
}

/// At most `n` characters of `s`, ending in `…` when cut.
pub(super) fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    if n == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(n - 1).collect();
    out.push('…');
    out
}
