//! The package's vocabulary is declared once, in Rust, and the TypeScript declarations and the
//! README's options table are generated from that declaration: the options and their defaults
//! and docs (`src/options/mod.rs`), the strategy and preset names (`src/options/presets.rs`), the
//! built-in tokenizers and the error codes.
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
use autocontext::{ErrorCode, Preset, Strategy, Tokenizer};

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
        Target { file: "js/host.ts", markdown: false, parts: vec![("host-keys", host_keys(&host))] },
        Target { file: "README.md", markdown: true, parts: vec![("options", table(&all))] },
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

fn interface(name: &str, params: &str, doc: &str, options: &[&OptionDoc]) -> String {
    let mut out = jsdoc("", &[doc.to_string()]);
    out.push_str(&format!("export interface {name}{params} {{\n"));
    for o in options {
        let mut doc = paragraphs(o.doc);
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
    [
        union("PresetName", "The named ladders.", &presets),
        union("StrategyName", "A strategy of the ladder, by its documented name or its event type.", &strategies),
        union(
            "TokenizerName",
            "A built-in tokenizer: exact `o200k_base` (in `autocontext` and `autocontext/full`) or `cl100k_base` (in \
             `autocontext/full`), or a fast estimate (in every build, and the default of `autocontext/lite`).",
            &tokenizers,
        ),
    ]
    .join("\n")
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
        let meaning = paragraphs(o.doc).into_iter().next().unwrap_or_default();
        out.push_str(&format!("| `{}` | {} | {} |\n", o.name, cell(&o.default), cell(&meaning)));
    }
    out
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
