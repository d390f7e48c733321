//! The five-field structured summary: its JSON schema and a tolerant reader (the template that
//! renders it is the `summaryTemplate` option's, [`crate::options::template`]).
//!
//! The prefix summary asks for the state of the work as five fields (`task_overview`,
//! `current_state`, `important_discoveries`, `next_steps`, `context_to_preserve`) and sends
//! their JSON schema with the request, so a host with structured output can enforce it. Many
//! hosts cannot, and models wrap JSON in prose or code fences, rename keys, answer arrays where
//! strings were asked, or write Markdown sections instead. The reader takes all of these: a
//! JSON object anywhere in the answer (keys matched loosely), else headed sections, and a field
//! that is missing gets its own default; prose with no structure at all is kept as it is (the
//! plain-text fallback), so a summary is never lost to its shape. AgentScope depends on the
//! provider's forced tool call for this and fails without it.

use serde_json::{json, Map, Value};

use crate::options::template::FIELDS;

/// What each field asks for (also the schema's descriptions).
const DESCRIPTIONS: [&str; 5] = [
    "The user's goal, and every instruction and constraint the user gave, quoted word for word.",
    "What has been done so far and where the work stands now: the files and symbols read or changed and what changed, the commands run and their outcome.",
    "Facts found and decisions made with their reasons; every error or failure met, verbatim, and how it was fixed or that it is still open.",
    "What remains to be done, in order, open problems first.",
    "Exact details the work still needs verbatim: file paths, identifiers, commands, values, URLs, error codes, user preferences.",
];

/// What a missing field says.
const DEFAULTS: [&str; 5] = ["(not stated)", "(not stated)", "(none recorded)", "(none recorded)", "(none recorded)"];

/// The JSON schema of the answer, sent as the request's `schema`.
pub fn schema() -> Value {
    let mut props = Map::new();
    for (f, d) in FIELDS.iter().zip(DESCRIPTIONS) {
        props.insert(f.to_string(), json!({"type": "string", "description": d}));
    }
    json!({
        "type": "object",
        "properties": props,
        "required": FIELDS,
        "additionalProperties": false,
    })
}

/// The instruction that asks for the five fields.
pub fn instruction() -> String {
    let mut out = String::from(
        "Write the state of this conversation as one JSON object with exactly these string fields (it replaces the messages above for the rest of the work):\n",
    );
    for (f, d) in FIELDS.iter().zip(DESCRIPTIONS) {
        out.push_str(&format!("- \"{f}\": {d}\n"));
    }
    out.push_str(
        "If the conversation begins with an earlier summary, carry everything in it that still matters into the new fields. \
         Write dates as absolute dates, keep paths, identifiers, commands and error messages verbatim, and list tools still running with their ids. \
         Answer with the JSON object only.",
    );
    out
}

/// A structured summary as read from the host's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// The five fields, each filled (missing ones with their default).
    Fields([String; 5]),
    /// Prose without structure, kept as written.
    Text(String),
}

/// Reads the host's answer (see the module docs).
pub fn parse(answer: &str) -> Parsed {
    let text = answer.trim();
    if let Some(obj) = find_object(text) {
        let mut fields: [Option<String>; 5] = Default::default();
        for (k, v) in &obj {
            if let Some(i) = field_index(k) {
                if let Some(s) = as_text(v).filter(|s| !s.trim().is_empty()) {
                    fields[i] = Some(s);
                }
            }
        }
        // A lone object with one of our fields under another key (`{"summary": {...}}`).
        if fields.iter().all(Option::is_none) {
            for v in obj.values() {
                if let Value::Object(inner) = v {
                    for (k, v) in inner {
                        if let (Some(i), Some(s)) = (field_index(k), as_text(v)) {
                            fields[i] = Some(s);
                        }
                    }
                }
            }
        }
        if fields.iter().any(Option::is_some) {
            return Parsed::Fields(fill(fields));
        }
    }
    if let Some(fields) = sections(text) {
        return Parsed::Fields(fill(fields));
    }
    Parsed::Text(text.to_string())
}

fn fill(fields: [Option<String>; 5]) -> [String; 5] {
    let mut k = 0;
    fields.map(|f| {
        let d = DEFAULTS[k];
        k += 1;
        f.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).unwrap_or_else(|| d.to_string())
    })
}

/// The field a key names: `task_overview`, `taskOverview`, `Task overview`, `TASK-OVERVIEW`.
fn field_index(key: &str) -> Option<usize> {
    let norm: String = key.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect();
    FIELDS.iter().position(|f| f.replace('_', "") == norm)
}

/// A JSON value as field text: strings as they are, lists as lines, objects as `key: value`.
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let lines: Vec<String> = items.iter().filter_map(as_text).map(|s| format!("- {}", s.trim())).collect();
            Some(lines.join("\n"))
        }
        Value::Object(o) => {
            let lines: Vec<String> = o.iter().filter_map(|(k, v)| as_text(v).map(|s| format!("{k}: {}", s.trim()))).collect();
            Some(lines.join("\n"))
        }
        other => Some(other.to_string()),
    }
}

/// The first JSON object in the text: the whole text, a fenced block, or from the first `{` to
/// a matching `}`.
fn find_object(text: &str) -> Option<Map<String, Value>> {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) {
        return Some(o);
    }
    let mut start = 0;
    while let Some(p) = text[start..].find('{') {
        let from = start + p;
        let mut depth = 0usize;
        let mut in_str = false;
        let mut escaped = false;
        for (i, c) in text[from..].char_indices() {
            if in_str {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_str = true,
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&text[from..from + i + 1]) {
                            return Some(o);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
        start = from + 1;
    }
    None
}

/// Headed sections (`## Task overview`, `Task overview:`, `**Next steps**`), when at least two
/// of the five are there.
fn sections(text: &str) -> Option<[Option<String>; 5]> {
    let mut fields: [Option<String>; 5] = Default::default();
    let mut current: Option<usize> = None;
    let mut found = 0;
    for line in text.lines() {
        let head = line.trim().trim_start_matches('#').trim().trim_matches('*').trim();
        let (name, rest) = match head.split_once(':') {
            Some((n, r)) => (n.trim().trim_matches('*').trim(), r.trim()),
            None => (head, ""),
        };
        if let Some(i) = field_index(name).filter(|_| name.len() <= 40) {
            if fields[i].is_none() {
                found += 1;
            }
            current = Some(i);
            let slot = fields[i].get_or_insert_with(String::new);
            if !rest.is_empty() {
                slot.push_str(rest);
                slot.push('\n');
            }
            continue;
        }
        if let Some(i) = current {
            let slot = fields[i].get_or_insert_with(String::new);
            slot.push_str(line);
            slot.push('\n');
        }
    }
    (found >= 2).then_some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(p: Parsed) -> [String; 5] {
        match p {
            Parsed::Fields(f) => f,
            Parsed::Text(t) => panic!("expected fields, got text {t:?}"),
        }
    }

    #[test]
    fn reads_json_in_fences_prose_and_loose_keys() {
        let f = fields(parse(
            r#"{"task_overview":"fix the build","current_state":"linker fails","important_discoveries":["flag -lz missing","ci uses gcc 12"],"next_steps":"patch Makefile","context_to_preserve":"/src/Makefile"}"#,
        ));
        assert_eq!(f[0], "fix the build");
        assert_eq!(f[2], "- flag -lz missing\n- ci uses gcc 12");
        let f = fields(parse(
            "Sure! Here it is:\n```json\n{\"taskOverview\": \"a {braced} goal\", \"Next Steps\": \"x\"}\n```\nHope it helps.",
        ));
        assert_eq!(f[0], "a {braced} goal");
        assert_eq!(f[3], "x");
        assert_eq!(f[1], "(not stated)", "a missing field gets its default");
        let f = fields(parse(r#"{"summary": {"current_state": "done"}}"#));
        assert_eq!(f[1], "done");
    }

    #[test]
    fn reads_sections_and_keeps_prose() {
        let f = fields(parse("## Task overview\nport the parser\n\n**Current state**: half done\nNext steps: tests\n"));
        assert_eq!(f[0], "port the parser");
        assert_eq!(f[1], "half done");
        assert_eq!(f[3], "tests");
        assert_eq!(f[4], "(none recorded)");
        assert_eq!(parse("The user wants X; we did Y."), Parsed::Text("The user wants X; we did Y.".into()));
        assert_eq!(parse("{not json"), Parsed::Text("{not json".into()));
    }

    #[test]
    fn the_schema_asks_for_the_five_fields() {
        assert_eq!(schema()["required"].as_array().unwrap().len(), 5);
    }
}
