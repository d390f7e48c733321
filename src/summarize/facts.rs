//! Offline answers to `facts` requests (fact retrieval by concept): the lines of the span that
//! mention the concept, as `{"facts": [...]}`, latest first (a single-valued concept takes the
//! first, which is the latest the conversation states), repeated lines once, within the target.

use std::collections::HashMap;

use serde_json::Value;

use super::transcript::{clean, cut, Block, Kind};

/// Longest fact kept, in characters.
const FACT_CHARS: usize = 200;

/// The concept a facts request asks about: the quoted name after the word `concept` in its
/// instruction (`Extract the facts about the concept "deploy target" ...`).
pub(super) fn concept(instruction: &str) -> Option<String> {
    let at = instruction.find("concept \"")? + "concept \"".len();
    let name = instruction[at..].split('"').next()?.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The facts about `keyword` in the span, as the JSON answer the engine reads.
pub(super) fn answer(blocks: &[Block], keyword: &str, budget: usize) -> String {
    let needle = keyword.to_lowercase();
    // (position of the latest mention, the fact); a repeated line counts where it was last said.
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut order = 0;
    for block in blocks {
        let lines: Vec<String> = match &block.kind {
            Kind::Thinking => continue,
            // A call is one fact: the tool and its arguments.
            Kind::Call { name, .. } => vec![clean(&format!("{name}({})", block.text.replace('\n', " ")))],
            _ => block.text.lines().map(clean).collect(),
        };
        for line in lines {
            order += 1;
            let lower = line.to_lowercase();
            if line.is_empty() || !lower.contains(&needle) {
                continue;
            }
            match seen.get(&lower) {
                Some(&i) => found[i].0 = order,
                None => {
                    seen.insert(lower, found.len());
                    found.push((order, cut(&line, FACT_CHARS)));
                }
            }
        }
    }
    // Latest first.
    crate::sort::by_key(&mut found, |f| !(f.0 as u128));
    let mut facts: Vec<Value> = Vec::new();
    let empty = r#"{"facts":[]}"#.len();
    let mut used = empty;
    for (_, fact) in found {
        let cost = Value::String(fact.clone()).to_string().chars().count() + usize::from(!facts.is_empty());
        if used + cost > budget {
            continue;
        }
        used += cost;
        facts.push(Value::String(fact));
    }
    serde_json::json!({ "facts": facts }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(kind: Kind, text: &str) -> Block {
        Block { kind, text: text.to_string() }
    }

    #[test]
    fn finds_the_concept_in_the_instruction() {
        assert_eq!(
            concept("\n\nExtract the facts about the concept \"deploy target\": where it runs\nGive ...").as_deref(),
            Some("deploy target")
        );
        assert_eq!(concept("Summarize."), None);
        assert_eq!(concept("the concept \"\" is empty"), None);
    }

    #[test]
    fn answers_the_lines_that_mention_it_latest_first_once_each() {
        let blocks = [
            block(Kind::User, "Deploy to staging first.\nThe database is postgres 15 at db.internal:5432."),
            block(Kind::Result { id: "a".into(), error: false }, "nothing here\nDatabase migrations: 44 applied"),
            block(Kind::Assistant, "Moved the DATABASE to db2.internal:5432.\nThe database is postgres 15 at db.internal:5432."),
            block(Kind::Thinking, "maybe the database is down"),
            block(Kind::Call { id: "c".into(), name: "psql".into() }, "{\"database\":\"billing\",\n\"query\":\"select 1\"}"),
        ];
        let out: Value = serde_json::from_str(&answer(&blocks, "database", 10_000)).unwrap();
        let facts: Vec<&str> = out["facts"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(
            facts,
            [
                r#"psql({"database":"billing", "query":"select 1"})"#,
                "The database is postgres 15 at db.internal:5432.",
                "Moved the DATABASE to db2.internal:5432.",
                "Database migrations: 44 applied"
            ]
        );
        // Within the budget; nothing known is an empty list.
        let small = answer(&blocks, "database", 70);
        assert!(small.chars().count() <= 70, "{small}");
        assert_eq!(serde_json::from_str::<Value>(&small).unwrap()["facts"].as_array().unwrap().len(), 1);
        assert_eq!(answer(&blocks, "kubernetes", 1000), r#"{"facts":[]}"#);
    }
}
