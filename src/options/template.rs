//! The `summaryTemplate` option: how the prefix summary's five fields are rendered, its default
//! and its check.
//!
//! The prefix summary asks the summarizer for five fields ([`FIELDS`]); the template places them
//! in the text the model reads. A host may write its own, naming any of the fields as
//! `{task_overview}`; a template that names no field, or a field that does not exist, is refused
//! when the memory is built, since it would lose the summary.

use crate::error::{Error, Result};

/// The five fields, in order.
pub const FIELDS: [&str; 5] = ["task_overview", "current_state", "important_discoveries", "next_steps", "context_to_preserve"];

/// The default `summaryTemplate`.
pub const DEFAULT_TEMPLATE: &str = "<system-info>Summary of the earlier conversation (its messages were offloaded; reload them with the marker below when details are needed).\n\
## Task overview\n{task_overview}\n\
## Current state\n{current_state}\n\
## Important discoveries\n{important_discoveries}\n\
## Next steps\n{next_steps}\n\
## Context to preserve\n{context_to_preserve}\n\
</system-info>";

/// Renders the five fields with `template` (`{task_overview}` and the others are replaced; the
/// values are the summarizer's text, so braces in them are left alone).
pub fn render(template: &str, fields: &[String; 5]) -> String {
    let mut out = String::with_capacity(template.len() + fields.iter().map(String::len).sum::<usize>());
    let mut rest = template;
    while let Some(p) = rest.find('{') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        match after.find('}').and_then(|e| FIELDS.iter().position(|f| *f == &after[..e]).map(|i| (i, e))) {
            Some((i, e)) => {
                out.push_str(fields[i].trim());
                rest = &after[e + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Checks a `summaryTemplate`: it must name at least one field, and only known ones.
pub(crate) fn check_template(template: &str) -> Result<()> {
    let mut named = 0;
    let mut rest = template;
    while let Some(p) = rest.find('{') {
        let after = &rest[p + 1..];
        if let Some(e) = after.find('}') {
            let name = &after[..e];
            let looks_like_placeholder = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if looks_like_placeholder {
                if !FIELDS.contains(&name) {
                    return Err(Error::config(
                        "summaryTemplate",
                        format!("names {{{name}}}, which is not a field; the fields are {}", FIELDS.map(|f| format!("{{{f}}}")).join(", ")),
                    ));
                }
                named += 1;
            }
        }
        rest = after;
    }
    if named == 0 {
        return Err(Error::config(
            "summaryTemplate",
            format!("names no field, so the summary would be lost; use some of {}", FIELDS.map(|f| format!("{{{f}}}")).join(", ")),
        ));
    }
    if template.len() > 20_000 {
        return Err(Error::config("summaryTemplate", "is longer than 20000 bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_renders_and_is_checked() {
        let f = ["a".to_string(), "b".into(), "c".into(), "d".into(), "e".into()];
        assert_eq!(render("[{task_overview}|{next_steps}|{other}|{]", &f), "[a|d|{other}|{]");
        assert!(render(DEFAULT_TEMPLATE, &f).contains("## Next steps\nd\n"));
        check_template(DEFAULT_TEMPLATE).unwrap();
        assert_eq!(check_template("{goal}").unwrap_err().field(), Some("summaryTemplate"));
        assert!(check_template("no fields").unwrap_err().message().contains("names no field"));
        check_template("JSON-ish {\"a\": 1} {current_state}").unwrap();
    }
}
