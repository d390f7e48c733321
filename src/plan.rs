//! Plan awareness: the agent's current plan, appended last to every summarize request.
//!
//! A summary written without knowing what the agent is trying to do keeps the wrong details.
//! While the host has set a plan, every request ends with a hint naming the goal, the subtasks
//! in progress, how many are done and the expected outcome. It goes last because models weigh
//! the end of a prompt most.

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorCode, Result};
use crate::fields::{Fault, Fields, Record};

/// The agent's current plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// What the agent is trying to achieve.
    pub goal: String,
    /// Its steps.
    #[serde(default)]
    pub subtasks: Vec<Subtask>,
    /// What done looks like.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_outcome: Option<String>,
}

/// One step of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subtask {
    /// The step.
    pub name: String,
    /// Where the step stands.
    pub state: SubtaskState,
}

/// The state of a [`Subtask`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SubtaskState {
    /// Not started.
    Todo,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
    /// Given up.
    Abandoned,
}

impl Record for Plan {
    const FIELDS: &'static [&'static str] = &["goal", "subtasks", "expectedOutcome"];
    fn read(f: &Fields) -> std::result::Result<Plan, Fault> {
        Ok(Plan { goal: f.str("goal")?, subtasks: f.list("subtasks")?, expected_outcome: f.opt_str("expectedOutcome")? })
    }
}

impl Record for Subtask {
    const FIELDS: &'static [&'static str] = &["name", "state"];
    fn read(f: &Fields) -> std::result::Result<Subtask, Fault> {
        let state = match f.str("state")?.as_str() {
            "todo" => SubtaskState::Todo,
            "in_progress" => SubtaskState::InProgress,
            "done" => SubtaskState::Done,
            "abandoned" => SubtaskState::Abandoned,
            other => return Err(format!("{} is {other:?}, no subtask state", f.name("state"))),
        };
        Ok(Subtask { name: f.str("name")?, state })
    }
}

impl Plan {
    /// Reads a plan from JSON (`{ goal, subtasks: [{ name, state }], expectedOutcome }`).
    pub fn from_json(v: &Value) -> Result<Plan> {
        crate::fields::record::<Plan>(v, "").map_err(|e| {
            Error::new(ErrorCode::InvalidArgument, format!("plan: {e} (expected {{ goal, subtasks: [{{ name, state }}], expectedOutcome }}, state one of todo, in_progress, done, abandoned)")).at_field("plan")
        })
    }

    /// The hint appended to summarize requests.
    pub fn hint(&self) -> String {
        let mut out = String::from("<plan_aware_hint>\n");
        out.push_str(&format!("Goal: {}\n", self.goal));
        let active: Vec<&str> = self.subtasks.iter().filter(|s| s.state == SubtaskState::InProgress).map(|s| s.name.as_str()).collect();
        if !active.is_empty() {
            out.push_str(&format!("In progress: {}\n", active.join("; ")));
        }
        if !self.subtasks.is_empty() {
            let done = self.subtasks.iter().filter(|s| s.state == SubtaskState::Done).count();
            out.push_str(&format!("Progress: {done}/{} subtasks done\n", self.subtasks.len()));
        }
        if let Some(o) = &self.expected_outcome {
            out.push_str(&format!("Expected outcome: {o}\n"));
        }
        out.push_str("Keep what this plan still needs.\n</plan_aware_hint>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hint_lists_goal_progress_and_outcome() {
        let p = Plan::from_json(&json!({"goal": "fix the build", "subtasks": [
            {"name": "read log", "state": "done"}, {"name": "patch linker flags", "state": "in_progress"}, {"name": "rerun", "state": "todo"}
        ], "expectedOutcome": "green CI"})).unwrap();
        let h = p.hint();
        assert!(h.contains("Goal: fix the build"));
        assert!(h.contains("In progress: patch linker flags"));
        assert!(h.contains("Progress: 1/3"));
        assert!(h.contains("Expected outcome: green CI"));
        let e = Plan::from_json(&json!({"goal": "x", "subtasks": [{"name": "a", "state": "doing"}]})).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument);
    }
}
