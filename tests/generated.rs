//! The package's vocabulary is declared once, in Rust, and the TypeScript declarations and the
//! README's tables and lists are generated from that declaration: the options and their defaults
//! and docs (`src/options/mod.rs`), the strategy and preset names, the kinds of summarize
//! requests and the README's ladder table (`src/options/presets.rs`), the built-in tokenizers,
//! the error codes, the formats' names, titles and the README's paragraphs on them (the table of
//! formats in `src/format/mod.rs`), and the results and events the engine hands JavaScript (the
//! serde types of [`WIRE`], read from their source: their fields, names and docs as serde writes
//! them). So a new format or rung is written where it is declared, and nowhere else.
//!
//! Each generated part stands between two marker lines in its file (`generated:<name>` and
//! `end generated:<name>`). This test fails when a part is stale, naming it; run
//!
//! ```sh
//! AUTOCONTEXT_GENERATE=1 cargo test --test generated
//! ```
//!
//! to write them.

use std::path::{Path, PathBuf};

use autocontext::options::{options, OptionDoc};
use autocontext::{ErrorCode, Format, Preset, Strategy, Tokenizer};

/// A file's generated parts: (marker name, text between the markers).
struct Target {
    file: &'static str,
    /// How a line comment starts in the file (`//`, or `<!--` for Markdown).
    markdown: bool,
    parts: Vec<(&'static str, String)>,
}

fn targets() -> Vec<Target> {
    let all = options();
    let engine: Vec<&OptionDoc> = all.iter().filter(|o| !o.host).collect();
    let host: Vec<&OptionDoc> = all.iter().filter(|o| o.host).collect();
    vec![
        Target {
            file: "js/types.ts",
            markdown: false,
            parts: vec![
                ("names", names()),
                (
                    "options",
                    interface(
                        "EngineOptions",
                        "",
                        "The engine's options; every one is checked, and a wrong one fails with `INVALID_CONFIG`.",
                        &engine,
                    ),
                ),
                ("wire", wire()),
                (
                    "host-options",
                    interface(
                        "HostOptions",
                        "<M = AnyMessage>",
                        "What the host supplies besides the engine's options: its functions, and where diagnostics go. \
                         They never reach the engine.",
                        &host,
                    ),
                ),
            ],
        },
        Target { file: "js/errors.ts", markdown: false, parts: vec![("error-codes", error_codes())] },
        Target { file: "js/formats.ts", markdown: false, parts: vec![("format-names", format_names())] },
        Target { file: "js/host.ts", markdown: false, parts: vec![("host-keys", host_keys(&host))] },
        Target { file: "README.md", markdown: true, parts: vec![("ladder", ladder()), ("options", table(&all)), ("formats", formats())] },
    ]
}

/// The paragraphs of a doc comment, each one line.
fn paragraphs(doc: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for line in doc.lines().map(str::trim) {
        if line.is_empty() {
            if !out.last().unwrap().is_empty() {
                out.push(String::new());
            }
        } else {
            let p = out.last_mut().unwrap();
            if !p.is_empty() {
                p.push(' ');
            }
            p.push_str(line);
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Wraps a paragraph to lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().unwrap();
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// A TypeScript doc comment at `indent`.
fn jsdoc(indent: &str, paragraphs: &[String]) -> String {
    let width = 96 - indent.len() - 3;
    let mut lines = Vec::new();
    for (i, p) in paragraphs.iter().enumerate() {
        if i > 0 {
            lines.push(String::new());
        }
        lines.extend(wrap(p, width));
    }
    if lines.len() == 1 && lines[0].chars().count() + indent.len() + 7 <= 120 {
        return format!("{indent}/** {} */\n", lines[0]);
    }
    let mut out = format!("{indent}/**\n");
    for l in lines {
        if l.is_empty() {
            out.push_str(&format!("{indent} *\n"));
        } else {
            out.push_str(&format!("{indent} * {l}\n"));
        }
    }
    out.push_str(&format!("{indent} */\n"));
    out
}

/// The words of an option's doc that stand for the list of formats, which the docs spell out
/// from the table of formats (`src/format/mod.rs`), so a new format is named there alone.
const FORMAT_LIST: &str = "one of [`Format::ALL`], by name";

/// An option's documentation as the TypeScript declarations and the README show it.
fn doc_of(o: &OptionDoc) -> String {
    let titled: Vec<String> = Format::ALL.iter().map(|f| format!("{} (`'{}'`)", f.title(), f.name())).collect();
    let (last, rest) = titled.split_last().expect("there are formats");
    o.doc.replace(FORMAT_LIST, &format!("{} or {last}", rest.join(", ")))
}

/// The README's table of the default ladder: the provider's compaction (a pass runs it first
/// whatever the ladder) as step 0, then the default ladder's rungs, each with its event type,
/// whether it asks the summarizer, and the first paragraph of its variant's doc
/// (`src/options/presets.rs`), so that a rung's line in the table is its row there.
fn ladder() -> String {
    let (_, _, _, variants) = item("src/options/presets.rs", "Strategy");
    let mut out = String::from("| step | event type | needs `summarize` | what it does |\n|---|---|---|---|\n");
    for (step, s) in std::iter::once(&Strategy::ProviderCompaction).chain(Preset::AgentScope.ladder()).enumerate() {
        let name = format!("{s:?}");
        let v = variants.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name}"));
        let first = paragraphs(&v.doc.join("\n")).into_iter().next().unwrap_or_default();
        let what = first.strip_suffix('.').unwrap_or(&first);
        let mut chars = what.chars();
        let what: String = chars.next().map(|c| c.to_lowercase().chain(chars).collect()).unwrap_or_default();
        let needs = if s.summarize_kind().is_some() { "yes" } else { "no" };
        out.push_str(&format!("| {step} | `{}` | {needs} | {} |\n", s.event_type(), what.replace('|', "\\|")));
    }
    out
}

/// The README's paragraphs on the formats, one item each, from the table of formats.
fn formats() -> String {
    let mut out = String::new();
    for f in Format::ALL {
        for (i, line) in f.doc().lines().enumerate() {
            let line = line.strip_prefix(' ').unwrap_or(line);
            match i {
                0 => out.push_str(&format!("- `'{}'`: {line}\n", f.name())),
                _ if line.is_empty() => out.push('\n'),
                _ => out.push_str(&format!("  {line}\n")),
            }
        }
    }
    out
}

fn interface(name: &str, params: &str, doc: &str, options: &[&OptionDoc]) -> String {
    let mut out = jsdoc("", &[doc.to_string()]);
    out.push_str(&format!("export interface {name}{params} {{\n"));
    for o in options {
        let mut doc = paragraphs(&doc_of(o));
        doc.push(format!("Default: {}.", o.default));
        out.push_str(&jsdoc("  ", &doc));
        out.push_str(&format!("  {}?: {};\n", o.name, o.ts));
    }
    out.push_str("}\n");
    out
}

/// A union of string literals, one a line.
fn union(name: &str, doc: &str, values: &[&str]) -> String {
    let mut out = jsdoc("", &[doc.to_string()]);
    out.push_str(&format!("export type {name} =\n"));
    for v in values {
        out.push_str(&format!("  | '{v}'\n"));
    }
    out.pop();
    out.push_str(";\n");
    out
}

fn names() -> String {
    let presets: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
    let mut strategies: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
    strategies.extend(Strategy::ALL.iter().map(|s| s.event_type()));
    let tokenizers: Vec<&str> = Tokenizer::BUILT_IN.iter().map(|t| t.name()).collect();
    let kinds: Vec<&str> = Strategy::ALL.iter().filter_map(|s| s.summarize_kind()).collect();
    [
        union("PresetName", "The named ladders.", &presets),
        union("StrategyName", "A strategy of the ladder, by its documented name or its event type.", &strategies),
        union("SummarizeKind", "Which strategy asks for a summary.", &kinds),
        union(
            "TokenizerName",
            "A built-in tokenizer: exact `o200k_base` (in `autocontext` and `autocontext/full`) or `cl100k_base` (in \
             `autocontext/full`), or a fast estimate (in every build, and the default of `autocontext/lite`).",
            &tokenizers,
        ),
    ]
    .join("\n")
}

fn format_names() -> String {
    let names: Vec<String> = Format::ALL.iter().map(|f| format!("'{}'", f.name())).collect();
    format!(
        "/** Every wire format's name, in the engine's order. */\nexport const FORMAT_NAMES = [{}] as const satisfies readonly FormatName[];\n",
        names.join(", ")
    )
}

fn error_codes() -> String {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    union("ErrorCode", "The stable error codes; hosts may switch on them.", &codes)
}

fn host_keys(host: &[&OptionDoc]) -> String {
    let names: Vec<String> = host.iter().map(|o| format!("'{}'", o.name)).collect();
    format!(
        "/** The options JavaScript takes with the host's pieces; the engine gets the others. */\nconst HOST_KEYS = new Set([{}]);\n",
        names.join(", ")
    )
}

/// The README's options table: one row an option, its first paragraph as its meaning.
fn table(options: &[OptionDoc]) -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from("| option | default | meaning |\n|---|---|---|\n");
    for o in options {
        let meaning = paragraphs(&doc_of(o)).into_iter().next().unwrap_or_default();
        out.push_str(&format!("| `{}` | {} | {} |\n", o.name, cell(&o.default), cell(&meaning)));
    }
    out
}

/// The types the engine hands JavaScript as JSON (or reads from it), each with its file and its
/// TypeScript name, in the order they are declared in.
const WIRE: &[(&str, &str, &str)] = &[
    ("src/engine/events.rs", "CompressionEvent", "CompressionEvent"),
    ("src/engine/results.rs", "CompressResult", "CompressResult"),
    ("src/engine/results.rs", "PrepareResult", "PrepareResult"),
    ("src/engine/results.rs", "OverflowResult", "OverflowResult"),
    ("src/engine/calibration.rs", "UsageReport", "UsageReport"),
    ("src/engine/calibration.rs", "UsageStatus", "UsageStatus"),
    ("src/engine/sweep.rs", "SweepReport", "SweepReport"),
    ("src/engine/offload.rs", "OffloadRecord", "OffloadInfo"),
    ("src/format/mod.rs", "Problem", "ValidationProblem"),
    ("src/plan.rs", "Plan", "Plan"),
    ("src/plan.rs", "Subtask", "Subtask"),
    ("src/plan.rs", "SubtaskState", "SubtaskState"),
];

/// A struct's field or an enum's variant, as its source declares it.
struct Member {
    doc: Vec<String>,
    serde: String,
    name: String,
    ty: String,
}

/// A struct or enum of `file`, read from its source (rustfmt's layout: one field or variant a
/// line, its docs and attributes on the lines before it).
fn item(file: &str, name: &str) -> (Vec<String>, String, bool, Vec<Member>) {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let is_enum;
    let start = if let Some(i) = lines.iter().position(|l| *l == format!("pub struct {name} {{")) {
        is_enum = false;
        i
    } else {
        is_enum = true;
        lines.iter().position(|l| *l == format!("pub enum {name} {{")).unwrap_or_else(|| panic!("{file} declares no `pub struct {name}`"))
    };
    let mut doc = Vec::new();
    let mut serde = String::new();
    for l in lines[..start].iter().rev().take_while(|l| l.starts_with("///") || l.starts_with("#[")) {
        if let Some(d) = l.strip_prefix("///") {
            doc.insert(0, d.trim().to_string());
        } else if l.starts_with("#[serde(") {
            serde.push_str(l);
        }
    }
    let mut members = Vec::new();
    let (mut mdoc, mut mserde) = (Vec::new(), String::new());
    for l in lines[start + 1..].iter().take_while(|l| **l != "}") {
        let l = l.trim();
        if let Some(d) = l.strip_prefix("///") {
            mdoc.push(d.trim().to_string());
        } else if l.starts_with("#[serde(") {
            mserde.push_str(l);
        } else if l.starts_with("#[") || l.is_empty() {
        } else {
            let l = l.trim_end_matches(',');
            let (name, ty) = match l.strip_prefix("pub ").and_then(|f| f.split_once(": ")) {
                Some((n, t)) => (n.to_string(), t.to_string()),
                None => (l.to_string(), String::new()),
            };
            members.push(Member { doc: std::mem::take(&mut mdoc), serde: std::mem::take(&mut mserde), name, ty });
        }
    }
    (doc, serde, is_enum, members)
}

/// The value of `key = "..."` in serde attributes.
fn serde_value<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let i = attrs.find(&format!("{key} = \""))? + key.len() + 4;
    attrs[i..].split('"').next()
}

/// A Rust name as serde's `rename_all` writes it.
fn renamed(name: &str, rule: Option<&str>) -> String {
    let words: Vec<String> = if name.contains('_') {
        name.split('_').map(str::to_string).collect()
    } else {
        let mut w: Vec<String> = Vec::new();
        for c in name.chars() {
            if c.is_uppercase() || w.is_empty() {
                w.push(String::new());
            }
            w.last_mut().unwrap().push(c);
        }
        w.into_iter().map(|s| s.to_lowercase()).collect()
    };
    let cap = |s: &str| s[..1].to_uppercase() + &s[1..];
    match rule {
        Some("camelCase") => words.iter().enumerate().map(|(i, w)| if i == 0 { w.to_lowercase() } else { cap(w) }).collect(),
        Some("lowercase") => words.concat().to_lowercase(),
        Some("snake_case") => words.join("_").to_lowercase(),
        Some("SCREAMING_SNAKE_CASE") => words.join("_").to_uppercase(),
        None => name.to_string(),
        Some(other) => panic!("rename_all = {other:?} is not handled"),
    }
}

/// The TypeScript type of a field's Rust type.
fn ts_type(ty: &str) -> String {
    if let Some(inner) = ty.strip_prefix("Option<").and_then(|t| t.strip_suffix('>')) {
        return ts_type(inner);
    }
    if let Some(inner) = ty.strip_prefix("Vec<").and_then(|t| t.strip_suffix('>')) {
        return format!("{}[]", ts_type(inner));
    }
    match ty {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i32" | "i64" | "f64" => "number".into(),
        "bool" => "boolean".into(),
        "String" | "&'static str" => "string".into(),
        other => match WIRE.iter().find(|(_, rust, _)| *rust == other) {
            Some((_, _, ts)) => ts.to_string(),
            None => panic!("the Rust type `{other}` has no TypeScript type here: add it to WIRE or to ts_type"),
        },
    }
}

/// A Rust doc line as TypeScript reads it: a link to a Rust item becomes the item's JavaScript
/// name in code (`[`crate::AutoContextMemory::observe_usage`]` is `observeUsage`), and the
/// fields of the type named in code their names in JSON (`fields`: Rust name, JSON name).
fn js_doc(line: &str, fields: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find('`') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let Some(j) = after.find('`') else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        let code = &after[..j];
        let code = match code.rsplit_once("::") {
            Some((_, last)) => renamed(last, if last.contains('_') { Some("camelCase") } else { None }),
            None => code
                .split(' ')
                .map(|w| fields.iter().find(|(rust, _)| rust == w).map_or(w, |(_, json)| json.as_str()))
                .collect::<Vec<_>>()
                .join(" "),
        };
        out.push('`');
        out.push_str(&code);
        out.push('`');
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    out.replace("[`", "`").replace("`]", "`")
}

fn wire() -> String {
    let mut out = Vec::new();
    for (file, rust, ts) in WIRE {
        let (doc, serde, is_enum, members) = item(file, rust);
        let rule = serde_value(&serde, "rename_all");
        let json_name = |m: &Member| serde_value(&m.serde, "rename").map_or_else(|| renamed(&m.name, rule), str::to_string);
        let fields: Vec<(String, String)> =
            members.iter().filter(|m| !is_enum && m.name.contains('_')).map(|m| (m.name.clone(), json_name(m))).collect();
        let doc: Vec<String> = paragraphs(&doc.iter().map(|l| js_doc(l, &fields)).collect::<Vec<_>>().join("\n"));
        let mut text = jsdoc("", &doc);
        if is_enum {
            let values: Vec<String> = members.iter().map(|m| format!("'{}'", renamed(&m.name, rule))).collect();
            text.push_str(&format!("export type {ts} = {};\n", values.join(" | ")));
        } else {
            text.push_str(&format!("export interface {ts} {{\n"));
            for m in members.iter().filter(|m| !m.serde.contains("skip)") && !m.serde.contains("skip,")) {
                let name = json_name(m);
                let optional = m.serde.contains("skip_serializing_if") || m.serde.contains("default");
                let fdoc = paragraphs(&m.doc.iter().map(|l| js_doc(l, &fields)).collect::<Vec<_>>().join("\n"));
                text.push_str(&jsdoc("  ", &fdoc));
                text.push_str(&format!("  {name}{}: {};\n", if optional { "?" } else { "" }, ts_type(&m.ty)));
            }
            text.push_str("}\n");
        }
        out.push(text);
    }
    out.join("\n")
}

/// The file with each part between its markers replaced; `Err` names a missing marker.
fn render(text: &str, target: &Target) -> Result<String, String> {
    let mut out = text.to_string();
    for (name, body) in &target.parts {
        let (start, end) = if target.markdown {
            (format!("<!-- generated:{name} "), format!("<!-- end generated:{name} -->"))
        } else {
            (format!("// generated:{name} "), format!("// end generated:{name}"))
        };
        let a = out.find(&start).ok_or_else(|| format!("{} has no `{start}` line", target.file))?;
        let a = a + out[a..].find('\n').ok_or("no end of line")? + 1;
        let b = out[a..].find(&end).ok_or_else(|| format!("{} has no `{end}` line", target.file))? + a;
        let sep = if target.markdown { "\n" } else { "" };
        out = format!("{}{sep}{body}{sep}{}", &out[..a], &out[b..]);
    }
    Ok(out)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

#[test]
fn the_typescript_declarations_and_the_readme_table_are_generated_from_the_rust_declaration() {
    let write = std::env::var_os("AUTOCONTEXT_GENERATE").is_some();
    let mut stale = Vec::new();
    for target in targets() {
        let path = root().join(target.file);
        let text = std::fs::read_to_string(&path).unwrap();
        let fresh = render(&text, &target).unwrap_or_else(|e| panic!("{e}"));
        if fresh != text {
            if write {
                std::fs::write(&path, &fresh).unwrap();
            } else {
                stale.push(target.file);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{} stale: they are generated from src/ (the options, presets, tokenizers, error codes); \
         run `AUTOCONTEXT_GENERATE=1 cargo test --test generated` and commit the result",
        stale.join(", ")
    );
}

#[test]
fn every_option_has_its_documentation() {
    for o in options() {
        assert!(!paragraphs(o.doc).is_empty(), "{} has no doc", o.name);
        assert!(!o.default.is_empty(), "{} has no default", o.name);
        assert!(o.name.chars().all(|c| c.is_ascii_alphanumeric()), "{}", o.name);
    }
}
