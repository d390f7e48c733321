//! Options, their defaults and their validation.
//!
//! The names and defaults are the reference's (`msgThreshold`, `maxToken`, `tokenRatio`,
//! `lastKeep`, ...), so its users find them where they expect. Unlike the reference, every value
//! is checked: a wrong one fails construction with `INVALID_CONFIG` naming the option, instead
//! of misbehaving later. Options are read from JSON by hand rather than through serde so that
//! every error names its option.

pub mod concepts;
pub mod plan;
pub mod presets;
pub mod prompts;
pub mod template;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::format::openai::kind_of;
use crate::format::Format;
use crate::tokens::Tokenizer;
use concepts::Concept;
use presets::{Preset, Strategy, DEFAULT_LADDER};
use prompts::PromptConfig;

/// Engine options. Build with [`Config::default`] and change fields, or read from JSON with
/// [`Config::from_json`]; either way call [`Config::validate`] (the engine does).
///
/// ```
/// let mut c = autocontext::Config::default();
/// c.max_token = 32_000;
/// c.validate().unwrap();
/// assert_eq!(c.trigger_tokens(), 24_000);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Compress when the working list has at least this many messages (default 100).
    pub msg_threshold: u32,
    /// The model's context window in tokens (default 131072).
    pub max_token: u64,
    /// Compress when tokens reach `max_token × token_ratio` (default 0.75).
    pub token_ratio: f64,
    /// A pass that tokens trigger compacts down to `max_token × target_ratio`, at most
    /// `token_ratio` (default: a quarter of `token_ratio`). The deeper, the rarer the passes: every
    /// pass re-bills the prompt after its first edit, so one deep pass costs less than many
    /// shallow ones.
    pub target_ratio: Option<f64>,
    /// The last messages kept verbatim by the protected strategies, widened to whole tool
    /// exchanges (default 50, or half of `msg_threshold` when that is smaller).
    pub last_keep: u32,
    /// A message whose text exceeds this many characters is "large" (default 5120).
    pub large_payload_threshold: u32,
    /// Characters of preview left in place of an offloaded message (default 200).
    pub offload_single_preview: u32,
    /// Historical runs of more tool messages than this are compressed together (default 6).
    pub min_consecutive_tool_messages: u32,
    /// Target length of current-round compression, as a share of the original (default 0.3).
    pub current_round_compression_ratio: f64,
    /// Spans estimated below this many tokens are not worth an LLM summary (default 5000).
    pub min_compression_token_threshold: u32,
    /// A tool result longer than this many characters is truncated to head and tail, the whole
    /// of it offloaded (default 10000). A new one is truncated before it is first sent.
    pub tool_result_limit: u32,
    /// Tokens the host sends besides the messages (system prompt, tool schemas); counted
    /// against the window (default 0).
    pub reserved_tokens: u64,
    /// Characters of one answer of the `context_reload` tool; longer reloads come in pages
    /// (default 16000, or four fifths of `tool_result_limit` when that is smaller, so a reload
    /// is never truncated again).
    pub offload_reload_limit: u32,
    /// The rollup keeps at least this many recent complete rounds verbatim (default 3).
    pub history_rollup_keep_recent_rounds: u32,
    /// ... and at least this many recent tokens; both must hold (default 8000).
    pub history_rollup_keep_recent_tokens: u64,
    /// Summarize calls of one pass that may run at once (default 4).
    pub max_concurrent_summaries: u32,
    /// A summarize call still running after this many milliseconds is aborted (default 60000).
    pub summarize_timeout_ms: u64,
    /// A store call (get, put, delete) still running after this many milliseconds fails with
    /// `STORE_FAILED`, so a store that never answers cannot hold a pass or a reload forever
    /// (default 30000). The JavaScript binding applies it; a native host's store bounds its own
    /// calls.
    pub store_timeout_ms: u64,
    /// Namespace of this conversation's offload keys (`<sessionId>/<uuid>`); default a new uuid.
    pub session_id: String,
    /// Wire format of the messages (default `openai`).
    pub format: Format,
    /// How tokens are counted (default [`Tokenizer::DEFAULT`]: `o200k_base`, or `estimate` in a
    /// build without vocabularies).
    pub tokenizer: Tokenizer,
    /// Custom prompts for the LLM strategies.
    pub custom_prompt: PromptConfig,
    /// The named ladder (default: the reference's, `agentscope`); see [`Preset`].
    pub preset: Option<Preset>,
    /// A ladder of the host's own, in order (instead of a preset).
    pub strategies: Option<Vec<Strategy>>,
    /// Share of the window the prefix summary and fact retrieval keep as recent messages, besides
    /// what the protections keep (the last completed round, the latest answer, unread work)
    /// (default 0).
    pub reserve_ratio: f64,
    /// How the prefix summary's five fields are rendered (`{task_overview}`, `{current_state}`,
    /// `{important_discoveries}`, `{next_steps}`, `{context_to_preserve}`); default
    /// [`template::DEFAULT_TEMPLATE`].
    pub summary_template: Option<String>,
    /// The concepts fact retrieval extracts.
    pub concepts: Vec<Concept>,
    /// The strategy fact retrieval falls back to when no concept yields a fact (default the
    /// prefix summary).
    pub facts_fallback: Strategy,
    /// Turn trimming keeps at most this many turns besides the task (default 20).
    pub max_context_turns: u32,
    /// Summaries are prepared in the background from this share of the window (default four
    /// fifths of `token_ratio`).
    pub prepare_ratio: Option<f64>,
    /// Whether the JavaScript wrapper starts a preparation after `add` once usage passes
    /// `prepare_ratio` (default false; native hosts call `prepare` themselves).
    pub prepare_on_add: bool,
    /// A pass triggered by tokens frees at least this many, so the provider's prompt cache is
    /// invalidated only by compactions worth it (default 0).
    pub min_freed_tokens: u64,
    /// The model's latest final answer stays verbatim through every step but the emergency one
    /// (default true): users ask about exactly that answer.
    pub protect_latest_answer: bool,
    /// The most recent completed round stays verbatim through every step but the emergency one
    /// (default true).
    pub protect_last_round: bool,
    /// Tools whose exchanges no step replaces, not even truncation or the emergency step (their
    /// results stay verbatim, like Anthropic's `exclude_tools`); default none.
    pub pinned_tools: Vec<String>,
    /// Characters of the identifier index every replacement that offloads carries: the exact
    /// paths, names, ids and numbers of what it replaced, ranked by how likely the agent needs
    /// them again, at most an eighth of what the replacement frees and a twentieth of the
    /// low-water mark (default 1200; 0 turns it off).
    pub identifier_index_chars: u32,
    /// The task, the first real user message, stays verbatim (default true): no step replaces
    /// it, unless it alone keeps the request over the window (then it keeps its head and tail,
    /// the whole one reload away, as the current user message does).
    pub keep_task: bool,
    /// Characters of one tool result a summary of history reads: a longer one goes to the
    /// summarizer as its head and tail (the whole stays one reload away, and the identifier
    /// index names what the middle held); default 2000, 0 sends every result whole.
    pub summary_result_limit: u32,
    /// Summarize requests carry, as `messages`, the agent's own request byte for byte with the
    /// instruction as its last user message, for a host that summarizes with the agent's model
    /// (its system prompt and tools): the provider reads the span from its prompt cache (default
    /// false: `messages` is the span alone).
    pub summarize_from_cache: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            msg_threshold: 100,
            max_token: 131_072,
            token_ratio: 0.75,
            target_ratio: None,
            last_keep: 50,
            large_payload_threshold: 5120,
            offload_single_preview: 200,
            min_consecutive_tool_messages: 6,
            current_round_compression_ratio: 0.3,
            min_compression_token_threshold: 5000,
            tool_result_limit: 10_000,
            reserved_tokens: 0,
            offload_reload_limit: 16_000,
            history_rollup_keep_recent_rounds: 3,
            history_rollup_keep_recent_tokens: 8000,
            max_concurrent_summaries: 4,
            summarize_timeout_ms: 60_000,
            store_timeout_ms: 30_000,
            session_id: uuid::Uuid::new_v4().to_string(),
            format: Format::OpenAi,
            tokenizer: Tokenizer::DEFAULT,
            custom_prompt: PromptConfig::default(),
            preset: None,
            strategies: None,
            reserve_ratio: 0.0,
            summary_template: None,
            concepts: Vec::new(),
            facts_fallback: Strategy::PrefixSummary,
            max_context_turns: 20,
            prepare_ratio: None,
            prepare_on_add: false,
            min_freed_tokens: 0,
            protect_latest_answer: true,
            protect_last_round: true,
            pinned_tools: Vec::new(),
            identifier_index_chars: DEFAULT_INDEX_CHARS,
            keep_task: true,
            summary_result_limit: DEFAULT_SUMMARY_RESULT_LIMIT,
            summarize_from_cache: false,
        }
    }
}

/// `identifierIndexChars`' default.
const DEFAULT_INDEX_CHARS: u32 = 1200;

/// `summaryResultLimit`'s default.
const DEFAULT_SUMMARY_RESULT_LIMIT: u32 = 2000;

/// `targetRatio`'s default, as a share of `tokenRatio`: a pass frees three quarters of the
/// trigger, so passes are rare (on the cost benchmark's 30 traces, a quarter cost less than a
/// half, 0.75 or a pass that stops at the trigger).
const DEFAULT_TARGET_SHARE: f64 = 0.25;

/// The most tool names `pinnedTools` may list.
const MAX_PINNED_TOOLS: usize = 256;

/// The smallest `offloadReloadLimit`: a page must hold some content besides its note.
const MIN_RELOAD_LIMIT: u32 = 200;

const KNOWN: &[&str] = &[
    "msgThreshold",
    "maxToken",
    "tokenRatio",
    "targetRatio",
    "lastKeep",
    "largePayloadThreshold",
    "offloadSinglePreview",
    "minConsecutiveToolMessages",
    "currentRoundCompressionRatio",
    "minCompressionTokenThreshold",
    "toolResultLimit",
    "reservedTokens",
    "offloadReloadLimit",
    "historyRollupKeepRecentRounds",
    "historyRollupKeepRecentTokens",
    "maxConcurrentSummaries",
    "summarizeTimeoutMs",
    "storeTimeoutMs",
    "sessionId",
    "format",
    "tokenizer",
    "customPrompt",
    "preset",
    "strategies",
    "reserveRatio",
    "summaryTemplate",
    "concepts",
    "factsFallback",
    "maxContextTurns",
    "prepareRatio",
    "prepareOnAdd",
    "minFreedTokens",
    "protectLatestAnswer",
    "protectLastRound",
    "pinnedTools",
    "identifierIndexChars",
    "keepTask",
    "summaryResultLimit",
    "summarizeFromCache",
];

impl Config {
    /// Token count at which compression starts.
    pub fn trigger_tokens(&self) -> u64 {
        (self.max_token as f64 * self.token_ratio).floor() as u64
    }

    /// The share of the window a pass that tokens trigger compacts down to.
    pub fn target_ratio(&self) -> f64 {
        self.target_ratio.unwrap_or(self.token_ratio * DEFAULT_TARGET_SHARE)
    }

    /// Token count a pass that tokens trigger compacts below (the low-water mark): at least 1,
    /// at most [`Config::trigger_tokens`].
    pub fn target_tokens(&self) -> u64 {
        // The epsilon keeps a ratio computed in floating point on its round count.
        ((self.max_token as f64 * self.target_ratio() + 1e-6).floor() as u64).clamp(1, self.trigger_tokens().max(1))
    }

    /// Token count from which summaries are prepared in the background.
    pub fn prepare_tokens(&self) -> u64 {
        (self.max_token as f64 * self.prepare_ratio.unwrap_or(self.token_ratio * 0.8)).floor() as u64
    }

    /// The turns `maxContextTurns` counts among `turns` (real user messages): the task, kept
    /// verbatim with `keepTask`, is not one of them.
    pub fn counted_turns(&self, turns: usize) -> usize {
        if self.keep_task {
            turns.saturating_sub(1)
        } else {
            turns
        }
    }

    /// The strategies a pass runs, in order: `strategies`, else the preset's, else the default.
    pub fn ladder(&self) -> Vec<Strategy> {
        match (&self.strategies, self.preset) {
            (Some(s), _) => s.clone(),
            (None, Some(p)) => p.ladder().to_vec(),
            (None, None) => DEFAULT_LADDER.to_vec(),
        }
    }

    /// Reads options from a JSON object (camelCase names), then validates them.
    pub fn from_json(v: &Value) -> Result<Config> {
        let obj = match v {
            Value::Object(o) => o,
            Value::Null => return Config::default().validated(),
            other => return Err(Error::new(crate::ErrorCode::InvalidConfig, format!("options must be an object, got {}", kind_of(other)))),
        };
        for key in obj.keys() {
            if !KNOWN.contains(&key.as_str()) {
                let hint =
                    KNOWN.iter().find(|k| k.eq_ignore_ascii_case(key)).map(|k| format!(" (did you mean `{k}`?)")).unwrap_or_default();
                return Err(Error::config(key, format!("is not an option of autocontext{hint}")));
            }
        }
        let mut c = Config::default();
        let explicit_last_keep = obj.contains_key("lastKeep");
        read_int(obj, "msgThreshold", &mut c.msg_threshold)?;
        read_int(obj, "maxToken", &mut c.max_token)?;
        read_float(obj, "tokenRatio", &mut c.token_ratio)?;
        if obj.get("targetRatio").is_some_and(|v| !v.is_null()) {
            let mut r = 0.0;
            read_float(obj, "targetRatio", &mut r)?;
            c.target_ratio = Some(r);
        }
        read_int(obj, "lastKeep", &mut c.last_keep)?;
        read_int(obj, "largePayloadThreshold", &mut c.large_payload_threshold)?;
        read_int(obj, "offloadSinglePreview", &mut c.offload_single_preview)?;
        read_int(obj, "minConsecutiveToolMessages", &mut c.min_consecutive_tool_messages)?;
        read_float(obj, "currentRoundCompressionRatio", &mut c.current_round_compression_ratio)?;
        read_int(obj, "minCompressionTokenThreshold", &mut c.min_compression_token_threshold)?;
        read_int(obj, "toolResultLimit", &mut c.tool_result_limit)?;
        read_int(obj, "reservedTokens", &mut c.reserved_tokens)?;
        read_int(obj, "offloadReloadLimit", &mut c.offload_reload_limit)?;
        if !obj.contains_key("offloadReloadLimit") {
            c.offload_reload_limit = c.offload_reload_limit.min(c.tool_result_limit / 5 * 4).max(MIN_RELOAD_LIMIT);
        }
        read_int(obj, "historyRollupKeepRecentRounds", &mut c.history_rollup_keep_recent_rounds)?;
        read_int(obj, "historyRollupKeepRecentTokens", &mut c.history_rollup_keep_recent_tokens)?;
        read_int(obj, "maxConcurrentSummaries", &mut c.max_concurrent_summaries)?;
        read_int(obj, "summarizeTimeoutMs", &mut c.summarize_timeout_ms)?;
        read_int(obj, "storeTimeoutMs", &mut c.store_timeout_ms)?;
        read_int(obj, "identifierIndexChars", &mut c.identifier_index_chars)?;
        read_int(obj, "summaryResultLimit", &mut c.summary_result_limit)?;
        if !explicit_last_keep {
            c.last_keep = c.last_keep.min(c.msg_threshold / 2);
        }
        if let Some(v) = obj.get("sessionId") {
            c.session_id = match v {
                Value::String(s) => s.clone(),
                other => return Err(Error::config("sessionId", format!("must be a string, got {}", kind_of(other)))),
            };
        }
        if let Some(v) = obj.get("format") {
            c.format = match v.as_str().and_then(Format::from_name) {
                Some(f) => f,
                None => return Err(Error::config("format", format!("must be {}, got {v}", Format::names()))),
            };
        }
        if let Some(v) = obj.get("tokenizer") {
            c.tokenizer = match v.as_str().and_then(Tokenizer::from_name) {
                Some(t) => t,
                None => {
                    return Err(Error::config(
                        "tokenizer",
                        format!("must be \"o200k_base\", \"cl100k_base\", \"estimate\" or a function, got {v}"),
                    ))
                }
            };
        }
        if let Some(v) = obj.get("customPrompt") {
            c.custom_prompt = PromptConfig::from_json(v)?;
        }
        read_bool(obj, "protectLatestAnswer", &mut c.protect_latest_answer)?;
        read_bool(obj, "protectLastRound", &mut c.protect_last_round)?;
        read_bool(obj, "keepTask", &mut c.keep_task)?;
        read_bool(obj, "summarizeFromCache", &mut c.summarize_from_cache)?;
        if let Some(v) = obj.get("pinnedTools").filter(|v| !v.is_null()) {
            c.pinned_tools = read_names(v, "pinnedTools")?;
        }
        c.read_ladder_options(obj)?;
        c.validated()
    }

    /// Reads the options that choose and tune the ladder, and refuses those the chosen ladder
    /// would ignore (a likely mistake: `concepts` without fact retrieval).
    fn read_ladder_options(&mut self, obj: &Map<String, Value>) -> Result<()> {
        if let Some(v) = obj.get("preset").filter(|v| !v.is_null()) {
            self.preset = Some(presets::read_preset(v)?);
        }
        if let Some(v) = obj.get("strategies").filter(|v| !v.is_null()) {
            if self.preset.is_some() {
                return Err(Error::config("strategies", "cannot be given with `preset`; give one of them"));
            }
            self.strategies = Some(presets::read_strategies(v)?);
        }
        read_float(obj, "reserveRatio", &mut self.reserve_ratio)?;
        if let Some(v) = obj.get("summaryTemplate").filter(|v| !v.is_null()) {
            match v {
                Value::String(t) => self.summary_template = Some(t.clone()),
                other => return Err(Error::config("summaryTemplate", format!("must be a string, got {}", kind_of(other)))),
            }
        }
        if let Some(v) = obj.get("concepts").filter(|v| !v.is_null()) {
            self.concepts = concepts::read_concepts(v)?;
        }
        if let Some(v) = obj.get("factsFallback").filter(|v| !v.is_null()) {
            self.facts_fallback = presets::read_strategy(v, "factsFallback")?;
        }
        read_int(obj, "maxContextTurns", &mut self.max_context_turns)?;
        if obj.get("prepareRatio").is_some_and(|v| !v.is_null()) {
            let mut r = 0.0;
            read_float(obj, "prepareRatio", &mut r)?;
            self.prepare_ratio = Some(r);
        }
        read_bool(obj, "prepareOnAdd", &mut self.prepare_on_add)?;
        read_int(obj, "minFreedTokens", &mut self.min_freed_tokens)?;
        let ladder = self.ladder();
        let has = |s: Strategy| ladder.contains(&s);
        let summarizes_prefix =
            has(Strategy::PrefixSummary) || (has(Strategy::FactRetrieval) && self.facts_fallback == Strategy::PrefixSummary);
        let unused = [
            ("reserveRatio", has(Strategy::PrefixSummary) || has(Strategy::FactRetrieval), "prefix-summary or facts"),
            ("summaryTemplate", summarizes_prefix, "prefix-summary"),
            ("concepts", has(Strategy::FactRetrieval), "facts"),
            ("factsFallback", has(Strategy::FactRetrieval), "facts"),
            ("maxContextTurns", has(Strategy::TurnTrim), "turn-trim"),
        ];
        for (field, used, step) in unused {
            if obj.get(field).is_some_and(|v| !v.is_null()) && !used {
                return Err(Error::config(
                    field,
                    format!("has no effect: the ladder has no {step} step (choose a preset with it, or name it in `strategies`)"),
                ));
            }
        }
        Ok(())
    }

    fn validated(self) -> Result<Config> {
        self.validate()?;
        Ok(self)
    }

    /// Checks every value and the relations between them.
    pub fn validate(&self) -> Result<()> {
        positive("msgThreshold", self.msg_threshold as u64, 10_000_000)?;
        positive("maxToken", self.max_token, 1_000_000_000)?;
        ratio("tokenRatio", self.token_ratio)?;
        if let Some(r) = self.target_ratio {
            if !(r > 0.0 && r <= self.token_ratio) {
                return Err(Error::config(
                    "targetRatio",
                    format!(
                        "must be above 0 and at most tokenRatio ({}): a pass compacts below where it starts; got {r}",
                        self.token_ratio
                    ),
                ));
            }
        }
        ratio("currentRoundCompressionRatio", self.current_round_compression_ratio)?;
        positive("largePayloadThreshold", self.large_payload_threshold as u64, 1_000_000_000)?;
        positive("minConsecutiveToolMessages", self.min_consecutive_tool_messages as u64, 1_000_000)?;
        positive("minCompressionTokenThreshold", self.min_compression_token_threshold as u64, 1_000_000_000)?;
        positive("maxConcurrentSummaries", self.max_concurrent_summaries as u64, 64)?;
        positive("summarizeTimeoutMs", self.summarize_timeout_ms, 3_600_000)?;
        positive("storeTimeoutMs", self.store_timeout_ms, 3_600_000)?;
        self.validate_ladder_options()?;
        if self.last_keep >= self.msg_threshold {
            return Err(Error::config(
                "lastKeep",
                format!(
                    "({}) must be smaller than msgThreshold ({}), or no count-triggered pass could ever compress",
                    self.last_keep, self.msg_threshold
                ),
            ));
        }
        if self.offload_single_preview >= self.large_payload_threshold {
            return Err(Error::config(
                "offloadSinglePreview",
                format!(
                    "({}) must be smaller than largePayloadThreshold ({}), or an offload would not shrink anything",
                    self.offload_single_preview, self.large_payload_threshold
                ),
            ));
        }
        if self.offload_reload_limit < MIN_RELOAD_LIMIT || self.offload_reload_limit > 100_000_000 {
            return Err(Error::config(
                "offloadReloadLimit",
                format!(
                    "must be from {MIN_RELOAD_LIMIT} to 100000000 characters (a page needs room for its note), got {}",
                    self.offload_reload_limit
                ),
            ));
        }
        if self.identifier_index_chars > 100_000 {
            return Err(Error::config(
                "identifierIndexChars",
                format!("must be from 0 (no index) to 100000 characters, got {}", self.identifier_index_chars),
            ));
        }
        if self.summary_result_limit != 0 && !(300..=100_000_000).contains(&self.summary_result_limit) {
            return Err(Error::config(
                "summaryResultLimit",
                format!("must be 0 (results whole) or from 300 to 100000000 characters, got {}", self.summary_result_limit),
            ));
        }
        if self.tool_result_limit < 100 {
            return Err(Error::config("toolResultLimit", format!("must be at least 100 characters, got {}", self.tool_result_limit)));
        }
        if self.reserved_tokens >= self.trigger_tokens() {
            return Err(Error::config(
                "reservedTokens",
                format!("({}) leaves no room for messages under maxToken × tokenRatio ({})", self.reserved_tokens, self.trigger_tokens()),
            ));
        }
        check_session_id(&self.session_id)?;
        Ok(())
    }

    /// Checks the ladder options and their relations.
    fn validate_ladder_options(&self) -> Result<()> {
        if !(self.reserve_ratio >= 0.0 && self.reserve_ratio < self.token_ratio) {
            return Err(Error::config(
                "reserveRatio",
                format!(
                    "must be at least 0 and below tokenRatio ({}), or the kept tail alone would trigger a pass; got {}",
                    self.token_ratio, self.reserve_ratio
                ),
            ));
        }
        if let Some(r) = self.prepare_ratio {
            if !(r > 0.0 && r <= self.token_ratio) {
                return Err(Error::config(
                    "prepareRatio",
                    format!(
                        "must be above 0 and at most tokenRatio ({}): preparing after the trigger is too late; got {r}",
                        self.token_ratio
                    ),
                ));
            }
        }
        if self.max_context_turns == 0 || self.max_context_turns > 1_000_000 {
            return Err(Error::config("maxContextTurns", format!("must be an integer from 1 to 1000000, got {}", self.max_context_turns)));
        }
        if self.min_freed_tokens >= self.trigger_tokens() {
            return Err(Error::config(
                "minFreedTokens",
                format!("({}) must be below maxToken × tokenRatio ({})", self.min_freed_tokens, self.trigger_tokens()),
            ));
        }
        if let Some(t) = &self.summary_template {
            template::check_template(t)?;
        }
        if self.facts_fallback == Strategy::FactRetrieval {
            return Err(Error::config("factsFallback", "cannot be the facts strategy itself"));
        }
        if self.ladder().contains(&Strategy::FactRetrieval) && self.concepts.is_empty() {
            return Err(Error::config(
                "concepts",
                "must list at least one { keyword, description, factType }: the ladder has the facts step",
            ));
        }
        Ok(())
    }

    /// The options as JSON (camelCase), as [`Config::from_json`] reads them.
    pub fn to_json(&self) -> Value {
        let mut out = self.base_json();
        let o = out.as_object_mut().expect("an object");
        // Ladder options appear only when set, so a state restores under the same checks.
        if let Some(p) = self.preset {
            o.insert("preset".into(), json!(p.name()));
        }
        if let Some(s) = &self.strategies {
            o.insert("strategies".into(), json!(s.iter().map(|s| s.name()).collect::<Vec<_>>()));
        }
        let ladder = self.ladder();
        let has = |s: Strategy| ladder.contains(&s);
        let facts = has(Strategy::FactRetrieval);
        let defaults = Config::default();
        if self.reserve_ratio != defaults.reserve_ratio && (has(Strategy::PrefixSummary) || facts) {
            o.insert("reserveRatio".into(), json!(self.reserve_ratio));
        }
        match &self.summary_template {
            Some(t) if has(Strategy::PrefixSummary) || (facts && self.facts_fallback == Strategy::PrefixSummary) => {
                o.insert("summaryTemplate".into(), json!(t));
            }
            _ => {}
        }
        if !self.concepts.is_empty() && facts {
            o.insert("concepts".into(), Value::Array(self.concepts.iter().map(Concept::to_json).collect()));
        }
        if self.facts_fallback != defaults.facts_fallback && facts {
            o.insert("factsFallback".into(), json!(self.facts_fallback.name()));
        }
        if self.max_context_turns != defaults.max_context_turns && has(Strategy::TurnTrim) {
            o.insert("maxContextTurns".into(), json!(self.max_context_turns));
        }
        if let Some(r) = self.target_ratio {
            o.insert("targetRatio".into(), json!(r));
        }
        if let Some(r) = self.prepare_ratio {
            o.insert("prepareRatio".into(), json!(r));
        }
        if self.prepare_on_add {
            o.insert("prepareOnAdd".into(), json!(true));
        }
        if self.min_freed_tokens != 0 {
            o.insert("minFreedTokens".into(), json!(self.min_freed_tokens));
        }
        if !self.protect_latest_answer {
            o.insert("protectLatestAnswer".into(), json!(false));
        }
        if !self.protect_last_round {
            o.insert("protectLastRound".into(), json!(false));
        }
        if !self.pinned_tools.is_empty() {
            o.insert("pinnedTools".into(), json!(self.pinned_tools));
        }
        if !self.keep_task {
            o.insert("keepTask".into(), json!(false));
        }
        if self.summarize_from_cache {
            o.insert("summarizeFromCache".into(), json!(true));
        }
        if self.summary_result_limit != DEFAULT_SUMMARY_RESULT_LIMIT {
            o.insert("summaryResultLimit".into(), json!(self.summary_result_limit));
        }
        if self.identifier_index_chars != DEFAULT_INDEX_CHARS {
            o.insert("identifierIndexChars".into(), json!(self.identifier_index_chars));
        }
        out
    }

    fn base_json(&self) -> Value {
        json!({
            "msgThreshold": self.msg_threshold,
            "maxToken": self.max_token,
            "tokenRatio": self.token_ratio,
            "lastKeep": self.last_keep,
            "largePayloadThreshold": self.large_payload_threshold,
            "offloadSinglePreview": self.offload_single_preview,
            "minConsecutiveToolMessages": self.min_consecutive_tool_messages,
            "currentRoundCompressionRatio": self.current_round_compression_ratio,
            "minCompressionTokenThreshold": self.min_compression_token_threshold,
            "toolResultLimit": self.tool_result_limit,
            "reservedTokens": self.reserved_tokens,
            "offloadReloadLimit": self.offload_reload_limit,
            "historyRollupKeepRecentRounds": self.history_rollup_keep_recent_rounds,
            "historyRollupKeepRecentTokens": self.history_rollup_keep_recent_tokens,
            "maxConcurrentSummaries": self.max_concurrent_summaries,
            "summarizeTimeoutMs": self.summarize_timeout_ms,
            "storeTimeoutMs": self.store_timeout_ms,
            "sessionId": self.session_id,
            "format": self.format.name(),
            "tokenizer": self.tokenizer.name(),
            "customPrompt": self.custom_prompt.to_json(),
        })
    }
}

fn positive(field: &str, v: u64, max: u64) -> Result<()> {
    if v == 0 || v > max {
        return Err(Error::config(field, format!("must be an integer from 1 to {max}, got {v}")));
    }
    Ok(())
}

fn ratio(field: &str, v: f64) -> Result<()> {
    if !(v > 0.0 && v <= 1.0) {
        return Err(Error::config(field, format!("must be a number in (0, 1], got {v}")));
    }
    Ok(())
}

fn read_int<T: TryFrom<u64>>(obj: &Map<String, Value>, field: &str, out: &mut T) -> Result<()> {
    let Some(v) = obj.get(field) else {
        return Ok(());
    };
    let n = match v {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64)),
        _ => None,
    };
    let n = n.ok_or_else(|| Error::config(field, format!("must be a non-negative integer, got {}", show(v))))?;
    *out = T::try_from(n).map_err(|_| Error::config(field, format!("is too large: {n}")))?;
    Ok(())
}

fn read_bool(obj: &Map<String, Value>, field: &str, out: &mut bool) -> Result<()> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Bool(b)) => {
            *out = *b;
            Ok(())
        }
        Some(v) => Err(Error::config(field, format!("must be true or false, got {}", show(v)))),
    }
}

/// A list of distinct, non-blank names (tool names).
fn read_names(v: &Value, field: &str) -> Result<Vec<String>> {
    let Value::Array(items) = v else {
        return Err(Error::config(field, format!("must be an array of tool names, got {}", kind_of(v))));
    };
    if items.len() > MAX_PINNED_TOOLS {
        return Err(Error::config(field, format!("lists {} names; at most {MAX_PINNED_TOOLS}", items.len())));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        match item {
            Value::String(s) if !s.trim().is_empty() && s.len() <= 256 => {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
            Value::String(_) => return Err(Error::config(&format!("{field}[{k}]"), "must be a tool name of 1–256 bytes, not blank")),
            other => return Err(Error::config(&format!("{field}[{k}]"), format!("must be a string, got {}", kind_of(other)))),
        }
    }
    Ok(out)
}

fn read_float(obj: &Map<String, Value>, field: &str, out: &mut f64) -> Result<()> {
    let Some(v) = obj.get(field) else {
        return Ok(());
    };
    *out = v.as_f64().ok_or_else(|| Error::config(field, format!("must be a number, got {}", show(v))))?;
    Ok(())
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        other => kind_of(other).to_string(),
    }
}

/// Checks a session id against what every shipped store accepts as the first segment of its
/// keys (`<sessionId>/<uuid>`, `<sessionId>/log/<n>`): at most 128 of `A–Z a–z 0–9 - _ . :`
/// (the file system store maps each to one file name, the key-value stores fit their key
/// limits), neither beginning nor ending with `.` (so never `.` or `..`, which no directory
/// can be named, nor a name Windows would strip of its trailing dot), and no `..` inside.
pub fn check_session_id(sid: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':');
    if sid.is_empty() || sid.len() > 128 || !sid.chars().all(allowed) || sid.starts_with('.') || sid.ends_with('.') || sid.contains("..") {
        return Err(Error::config(
            "sessionId",
            format!(
                "must be 1–128 characters of A–Z, a–z, 0–9, '-', '_', '.', ':', neither begin nor end with '.' and hold no \"..\" \
                 (it is the first part of every store key, and a directory name in the file system store), got {sid:?}"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_references() {
        let c = Config::from_json(&json!({})).unwrap();
        assert_eq!(c.msg_threshold, 100);
        assert_eq!(c.max_token, 131_072);
        assert_eq!(c.token_ratio, 0.75);
        assert_eq!(c.last_keep, 50);
        assert_eq!(c.large_payload_threshold, 5120);
        assert_eq!(c.offload_single_preview, 200);
        assert_eq!(c.min_consecutive_tool_messages, 6);
        assert_eq!(c.current_round_compression_ratio, 0.3);
        assert_eq!(c.min_compression_token_threshold, 5000);
        assert_eq!(c.trigger_tokens(), 98_304);
        assert_eq!(c.target_tokens(), 24_576, "a quarter of the trigger");
        assert_eq!(c.tool_result_limit, 10_000);
        assert_eq!(c.reserve_ratio, 0.0);
    }

    #[test]
    fn target_ratio_follows_token_ratio_unless_given() {
        let c = Config::from_json(&json!({"maxToken": 32000, "tokenRatio": 0.6})).unwrap();
        assert_eq!((c.trigger_tokens(), c.target_tokens()), (19_200, 4_800));
        let c = Config::from_json(&json!({"maxToken": 32000, "targetRatio": 0.3})).unwrap();
        assert_eq!((c.trigger_tokens(), c.target_tokens()), (24_000, 9_600));
        assert_eq!(Config::from_json(&c.to_json()).unwrap(), c);
        let c = Config::from_json(&json!({"maxToken": 32000, "targetRatio": 0.75})).unwrap();
        assert_eq!(c.target_tokens(), c.trigger_tokens(), "no low-water mark");
        assert!(Config::from_json(&Config::default().to_json()).unwrap().target_ratio.is_none());
    }

    #[test]
    fn every_bad_value_names_its_option() {
        let cases = [
            (json!({"maxToken": -5}), "maxToken"),
            (json!({"maxToken": 0}), "maxToken"),
            (json!({"maxToken": 1.5}), "maxToken"),
            (json!({"maxToken": "NaN"}), "maxToken"),
            (json!({"maxToken": 1e300}), "maxToken"),
            (json!({"tokenRatio": 1.5}), "tokenRatio"),
            (json!({"tokenRatio": 0}), "tokenRatio"),
            (json!({"targetRatio": 0.8}), "targetRatio"),
            (json!({"tokenRatio": 0.5, "targetRatio": 0.6}), "targetRatio"),
            (json!({"targetRatio": 0}), "targetRatio"),
            (json!({"targetRatio": "half"}), "targetRatio"),
            (json!({"msgThreshold": 10, "lastKeep": 10}), "lastKeep"),
            (json!({"offloadSinglePreview": 6000}), "offloadSinglePreview"),
            (json!({"sessionId": "a/b"}), "sessionId"),
            (json!({"sessionId": ""}), "sessionId"),
            (json!({"sessionId": ".."}), "sessionId"),
            (json!({"sessionId": "."}), "sessionId"),
            (json!({"sessionId": "chat."}), "sessionId"),
            (json!({"sessionId": ".chat"}), "sessionId"),
            (json!({"sessionId": "a..b"}), "sessionId"),
            (json!({"sessionId": "a".repeat(129)}), "sessionId"),
            (json!({"format": "xml"}), "format"),
            (json!({"offloadReloadLimit": 10}), "offloadReloadLimit"),
            (json!({"tokenizer": "gpt2"}), "tokenizer"),
            (json!({"maxtoken": 5}), "maxtoken"),
            (json!({"reservedTokens": 99_000}), "reservedTokens"),
            (json!({"maxConcurrentSummaries": 0}), "maxConcurrentSummaries"),
            (json!({"summarizeTimeoutMs": 0}), "summarizeTimeoutMs"),
            (json!({"storeTimeoutMs": 0}), "storeTimeoutMs"),
            (json!({"storeTimeoutMs": 3_600_001}), "storeTimeoutMs"),
            (json!({"protectLatestAnswer": "yes"}), "protectLatestAnswer"),
            (json!({"protectLastRound": 0}), "protectLastRound"),
            (json!({"pinnedTools": "plan"}), "pinnedTools"),
            (json!({"pinnedTools": ["plan", " "]}), "pinnedTools[1]"),
            (json!({"pinnedTools": [3]}), "pinnedTools[0]"),
        ];
        for (opts, field) in cases {
            let e = Config::from_json(&opts).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidConfig, "{opts}");
            assert_eq!(e.field(), Some(field), "{opts}: {}", e.message());
            assert!(e.message().contains(field), "{}", e.message());
        }
        let e = Config::from_json(&json!({"maxtoken": 5})).unwrap_err();
        assert!(e.message().contains("did you mean `maxToken`"), "{}", e.message());
    }

    #[test]
    fn protections_and_pinned_tools_round_trip() {
        let c = Config::from_json(&json!({})).unwrap();
        assert!(c.protect_latest_answer && c.protect_last_round && c.pinned_tools.is_empty());
        let c =
            Config::from_json(&json!({"protectLatestAnswer": false, "protectLastRound": false, "pinnedTools": ["plan", "plan", "todo"]}))
                .unwrap();
        assert!(!c.protect_latest_answer && !c.protect_last_round);
        assert_eq!(c.pinned_tools, ["plan", "todo"], "names are kept once, in order");
        assert_eq!(Config::from_json(&c.to_json()).unwrap(), c);
    }

    #[test]
    fn last_keep_follows_a_small_msg_threshold() {
        let c = Config::from_json(&json!({"msgThreshold": 30})).unwrap();
        assert_eq!(c.last_keep, 15);
    }

    #[test]
    fn json_round_trip() {
        let c = Config::from_json(&json!({"maxToken": 32000, "sessionId": "s1", "tokenizer": "estimate"})).unwrap();
        assert_eq!(Config::from_json(&c.to_json()).unwrap(), c);
        for f in Format::ALL {
            let c = Config::from_json(&json!({"format": f.name(), "offloadReloadLimit": 5000})).unwrap();
            assert_eq!(c.format, f);
            assert_eq!(Config::from_json(&c.to_json()).unwrap(), c);
        }
    }

    #[test]
    fn reload_limit_follows_a_small_tool_result_limit() {
        assert_eq!(Config::from_json(&json!({})).unwrap().offload_reload_limit, 8_000, "four fifths of the default 10000");
        assert_eq!(Config::from_json(&json!({"toolResultLimit": 20000})).unwrap().offload_reload_limit, 16_000);
        assert_eq!(Config::from_json(&json!({"toolResultLimit": 5000})).unwrap().offload_reload_limit, 4000);
        assert_eq!(Config::from_json(&json!({"toolResultLimit": 100})).unwrap().offload_reload_limit, 200);
        assert_eq!(Config::from_json(&json!({"toolResultLimit": 5000, "offloadReloadLimit": 9000})).unwrap().offload_reload_limit, 9000);
    }
}
