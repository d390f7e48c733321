//! Options: each one declared once, in the table below, with its default, its documentation and
//! its checks.
//!
//! The names and defaults are the reference's (`msgThreshold`, `maxToken`, `tokenRatio`,
//! `lastKeep`, ...), so its users find them where they expect. Unlike the reference, every value
//! is checked: a wrong one fails construction with `INVALID_CONFIG` naming the option, instead
//! of misbehaving later.
//!
//! A row of the table is the whole of an option but its behaviour: the `options!` macro
//! (`declare`) makes of the rows the [`Config`] struct, its `Default`, the reading of JSON
//! options (an unknown name is refused with a hint; each type's reader, in [`read`], names the
//! option in its errors), their writing back into a saved state, and the validation. The
//! TypeScript declarations of the options and the README's options table are generated from the
//! same rows ([`options`]), and a test fails when either is stale. Adding an option is one row
//! here, plus what it does.
//!
//! The folder holds the values options take that have rules of their own: the strategy names and
//! presets ([`presets`]), the concepts of fact retrieval ([`concepts`]), the prompts
//! ([`prompts`]) and the summary template ([`template`]). The agent's plan is no option: a host
//! sets it at any time rather than at construction ([`crate::plan`]).

pub mod concepts;
mod declare;
pub mod presets;
pub mod prices;
pub mod prompts;
pub mod read;
pub mod template;

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode, Result};
use crate::format::Format;
use crate::json::{kind_of, Num};
use crate::tokens::Tokenizer;
use concepts::Concept;
pub use declare::OptionDoc;
use declare::{options, shown};
use presets::{Preset, Strategy, DEFAULT_LADDER};
use prices::{PriceOptions, Prices};
use prompts::PromptConfig;
use read::{positive, ratio, OptionValue};

options! {
    /// Wire format of the messages: one of [`Format::ALL`], by name.
    ///
    /// The system prompt of Anthropic and Gemini stays your request's `system` parameter or
    /// `config.systemInstruction`; the OpenAI Agents SDK's items are `'openai-responses'`.
    "format" format: Format = Format::OpenAi, saved always;

    /// The model's context window in tokens.
    "maxToken" max_token: u64 = 131_072, saved always,
        check |c| positive("maxToken", c.max_token, 1_000_000_000);

    /// Compress when tokens reach `maxToken × tokenRatio`.
    "tokenRatio" token_ratio: f64 = 0.75, saved always,
        check |c| ratio("tokenRatio", c.token_ratio);

    /// A pass that tokens trigger compacts down to `maxToken × targetRatio`, at most `tokenRatio`.
    ///
    /// Passes come rarely and each frees a lot: every pass makes the provider re-read the prompt
    /// after its first edit at the cache-write price, so one deep pass costs less than many
    /// shallow ones.
    "targetRatio" target_ratio: Option<f64> = None, shown "`tokenRatio / 4`",
        check |c| match c.target_ratio {
            Some(r) if !(r > 0.0 && r <= c.token_ratio) => Err(Error::config(
                "targetRatio",
                format!("must be above 0 and at most tokenRatio ({}): a pass compacts below where it starts; got {}", Num(c.token_ratio), Num(r)),
            )),
            _ => Ok(()),
        };

    /// Also compress when the working list has at least this many messages.
    "msgThreshold" msg_threshold: u32 = 100, saved always,
        check |c| positive("msgThreshold", c.msg_threshold as u64, 10_000_000);

    /// The last messages the protected steps keep verbatim, widened to whole tool exchanges.
    "lastKeep" last_keep: u32 = 50, shown "50, at most half of `msgThreshold`", saved always,
        unless_given |c| c.last_keep = c.last_keep.min(c.msg_threshold / 2),
        check |c| {
            if c.last_keep >= c.msg_threshold {
                return Err(Error::config(
                    "lastKeep",
                    format!(
                        "({}) must be smaller than msgThreshold ({}), or no count-triggered pass could ever compress",
                        c.last_keep, c.msg_threshold
                    ),
                ));
            }
            Ok(())
        };

    /// A message whose text exceeds this many characters is "large".
    "largePayloadThreshold" large_payload_threshold: u32 = 5120, saved always,
        check |c| positive("largePayloadThreshold", c.large_payload_threshold as u64, 1_000_000_000);

    /// Characters of preview left in place of an offloaded message.
    "offloadSinglePreview" offload_single_preview: u32 = 200, saved always,
        check |c| {
            if c.offload_single_preview >= c.large_payload_threshold {
                return Err(Error::config(
                    "offloadSinglePreview",
                    format!(
                        "({}) must be smaller than largePayloadThreshold ({}), or an offload would not shrink anything",
                        c.offload_single_preview, c.large_payload_threshold
                    ),
                ));
            }
            Ok(())
        };

    /// A tool result longer than this many characters keeps only its head and tail; the whole is
    /// offloaded.
    ///
    /// A new one is cut before it is first sent, with the identifiers of the part cut, so it
    /// never pays rent for what the model can reload. The default is measured: on the benchmark's
    /// traces, from 10000 down to 2000 characters the bill falls by a tenth at every window while
    /// the later-used identifiers in view stay (docs/benchmarks.md has the curve).
    "toolResultLimit" tool_result_limit: u32 = 2_000, saved always,
        check |c| {
            if c.tool_result_limit < 100 {
                return Err(Error::config("toolResultLimit", format!("must be at least 100 characters, got {}", c.tool_result_limit)));
            }
            Ok(())
        };

    /// Characters of one `context_reload` answer; longer reloads come in pages the model asks for
    /// with the tool's `page` argument.
    ///
    /// A reload's answer is never truncated at arrival, whatever `toolResultLimit`.
    "offloadReloadLimit" offload_reload_limit: u32 = 8_000, saved always,
        check |c| {
            if c.offload_reload_limit < MIN_RELOAD_LIMIT || c.offload_reload_limit > 100_000_000 {
                return Err(Error::config(
                    "offloadReloadLimit",
                    format!(
                        "must be from {MIN_RELOAD_LIMIT} to 100000000 characters (a page needs room for its note), got {}",
                        c.offload_reload_limit
                    ),
                ));
            }
            Ok(())
        };

    /// Historical runs of more tool messages than this are compressed together (step 5).
    "minConsecutiveToolMessages" min_consecutive_tool_messages: u32 = 6, saved always,
        check |c| positive("minConsecutiveToolMessages", c.min_consecutive_tool_messages as u64, 1_000_000);

    /// Spans estimated below this many tokens are not worth an LLM summary.
    "minCompressionTokenThreshold" min_compression_token_threshold: u32 = 5000, saved always,
        check |c| positive("minCompressionTokenThreshold", c.min_compression_token_threshold as u64, 1_000_000_000);

    /// Target length of the current round's compressions, as a share of the original.
    "currentRoundCompressionRatio" current_round_compression_ratio: f64 = 0.3, saved always,
        check |c| ratio("currentRoundCompressionRatio", c.current_round_compression_ratio);

    /// The focus-window rollup (step 4) keeps at least this many recent complete rounds.
    "historyRollupKeepRecentRounds" history_rollup_keep_recent_rounds: u32 = 3, saved always;

    /// ... and at least this many recent tokens; both must hold.
    "historyRollupKeepRecentTokens" history_rollup_keep_recent_tokens: u64 = 8000, saved always;

    /// Summarize calls of one pass that may run at once.
    "maxConcurrentSummaries" max_concurrent_summaries: u32 = 4, saved always,
        check |c| positive("maxConcurrentSummaries", c.max_concurrent_summaries as u64, 64);

    /// A summarize call still running after this many milliseconds is aborted.
    "summarizeTimeoutMs" summarize_timeout_ms: u64 = 60_000, saved always,
        check |c| positive("summarizeTimeoutMs", c.summarize_timeout_ms, 3_600_000);

    /// A store call (get, put, delete) still unanswered after this many milliseconds fails with
    /// `STORE_FAILED`.
    ///
    /// The pass fails and changes nothing, a reload rejects: a store that never answers cannot
    /// hold a pass or a reload forever. The JavaScript binding applies it; a native host's store
    /// bounds its own calls.
    "storeTimeoutMs" store_timeout_ms: u64 = 30_000, saved always,
        check |c| positive("storeTimeoutMs", c.store_timeout_ms, 3_600_000);

    /// Tokens you send besides the messages (system prompt, tool schemas), counted against the
    /// window.
    "reservedTokens" reserved_tokens: u64 = 0, saved always,
        check |c| {
            if c.reserved_tokens >= c.trigger_tokens() {
                return Err(Error::config(
                    "reservedTokens",
                    format!("({}) leaves no room for messages under maxToken × tokenRatio ({})", c.reserved_tokens, c.trigger_tokens()),
                ));
            }
            Ok(())
        };

    /// Namespace of this conversation's store keys (`<sessionId>/<uuid>`).
    ///
    /// 1–128 characters of `A–Z a–z 0–9 - _ . :`, neither beginning nor ending with `.` and
    /// without `..`, so that every shipped store accepts it (the file system store makes it a
    /// directory).
    "sessionId" session_id: String = crate::random::uuid_v4().to_string(), shown "a new uuid", saved always,
        check |c| check_session_id(&c.session_id);

    /// How tokens are counted: `'o200k_base'`, `'cl100k_base'` (in `autocontext/full`),
    /// `'estimate'` (no vocabulary) or your own `(text) => number`.
    ///
    /// A built-in tokenizer the build lacks is an `INVALID_CONFIG` error naming the import that
    /// has it.
    "tokenizer" tokenizer: Tokenizer = Tokenizer::DEFAULT, host "or the host's own counter, a function", shown "`'o200k_base'` (`'estimate'` in `autocontext/lite`)", saved always;

    /// Your own instructions for the LLM steps, per step (a blank one keeps the default).
    "customPrompt" custom_prompt: PromptConfig = PromptConfig::default(), shown "none", saved always;

    /// A named ladder: `'agentscope'` (the progressive ladder), `'prefix-summary'` (one
    /// structured summary of everything before a reserved recent tail), `'facts'` (facts per
    /// `concepts` in place of the history) or `'turns'` (trim the oldest half of the turns).
    ///
    /// See docs/strategies.md for how they compare.
    "preset" preset: Option<Preset> = None, shown "`'agentscope'`";

    /// A ladder of your own, in order, instead of a preset: strategy names or event types
    /// (`'tool-result-truncate'` or `'TOOL_RESULT_TRUNCATE'`).
    ///
    /// End it with `'emergency'` to keep the budget guaranteed.
    "strategies" strategies: Option<Vec<Strategy>> = None, shown "none",
        given |c| match c.preset {
            Some(_) => Err(Error::config("strategies", "cannot be given with `preset`; give one of them")),
            None => Ok(()),
        };

    /// Share of the window the prefix summary and fact retrieval keep verbatim as recent
    /// messages, besides what the protections keep.
    "reserveRatio" reserve_ratio: f64 = 0.0,
        used_by "prefix-summary or facts" if |c| c.has(Strategy::PrefixSummary) || c.has(Strategy::FactRetrieval),
        check |c| {
            if !(c.reserve_ratio >= 0.0 && c.reserve_ratio < c.token_ratio) {
                return Err(Error::config(
                    "reserveRatio",
                    format!(
                        "must be at least 0 and below tokenRatio ({}), or the kept tail alone would trigger a pass; got {}",
                        Num(c.token_ratio),
                        Num(c.reserve_ratio)
                    ),
                ));
            }
            Ok(())
        };

    /// How the prefix summary's five fields are rendered: any text naming `{task_overview}`,
    /// `{current_state}`, `{important_discoveries}`, `{next_steps}`, `{context_to_preserve}`.
    "summaryTemplate" summary_template: Option<String> = None, shown "five sections",
        used_by "prefix-summary" if |c| c.summarizes_prefix(),
        check |c| c.summary_template.as_deref().map_or(Ok(()), template::check_template);

    /// What fact retrieval extracts: `{ keyword, description, factType }`, one `facts` request per
    /// concept.
    "concepts" concepts: Vec<Concept> = Vec::new(),
        used_by "facts" if |c| c.has(Strategy::FactRetrieval),
        check |c| {
            if c.has(Strategy::FactRetrieval) && c.concepts.is_empty() {
                return Err(Error::config(
                    "concepts",
                    "must list at least one { keyword, description, factType }: the ladder has the facts step",
                ));
            }
            Ok(())
        };

    /// The strategy fact retrieval falls back to when no concept yields a fact.
    "factsFallback" facts_fallback: Strategy = Strategy::PrefixSummary,
        used_by "facts" if |c| c.has(Strategy::FactRetrieval),
        check |c| match c.facts_fallback {
            Strategy::FactRetrieval => Err(Error::config("factsFallback", "cannot be the facts strategy itself")),
            _ => Ok(()),
        };

    /// Turn trimming keeps at most this many turns besides the task.
    "maxContextTurns" max_context_turns: u32 = 20,
        used_by "turn-trim" if |c| c.has(Strategy::TurnTrim),
        check |c| {
            if c.max_context_turns == 0 || c.max_context_turns > 1_000_000 {
                return Err(Error::config(
                    "maxContextTurns",
                    format!("must be an integer from 1 to 1000000, got {}", c.max_context_turns),
                ));
            }
            Ok(())
        };

    /// `prepare()` works from this share of the window.
    "prepareRatio" prepare_ratio: Option<f64> = None, shown "4/5 of `tokenRatio` (0.6)",
        check |c| match c.prepare_ratio {
            Some(r) if !(r > 0.0 && r <= c.token_ratio) => Err(Error::config(
                "prepareRatio",
                format!("must be above 0 and at most tokenRatio ({}): preparing after the trigger is too late; got {}", Num(c.token_ratio), Num(r)),
            )),
            _ => Ok(()),
        };

    /// Start `prepare()` in the background after `add` once usage passes `prepareRatio`.
    ///
    /// Native hosts call `prepare` themselves.
    "prepareOnAdd" prepare_on_add: bool = false;

    /// A pass triggered by tokens frees at least this many, so the provider's prompt cache is
    /// invalidated only by compactions worth it.
    "minFreedTokens" min_freed_tokens: u64 = 0,
        check |c| {
            if c.min_freed_tokens >= c.trigger_tokens() {
                return Err(Error::config(
                    "minFreedTokens",
                    format!("({}) must be below maxToken × tokenRatio ({})", c.min_freed_tokens, c.trigger_tokens()),
                ));
            }
            Ok(())
        };

    /// What your provider bills per token, as multiples of the agent model's input price:
    /// `{ cacheRead, cacheWrite, cacheTtlMs, summarizeInput, summarizeOutput }`, each optional.
    ///
    /// A pass prices its edits with them: a token that stays pays `cacheRead` on every call, an
    /// edit re-sends what follows it at `cacheWrite` once, a summary costs its input and output.
    /// Defaults follow `format`: Anthropic (and the AI SDK) read 0.1, write 1.25 (give 2 with the
    /// hour cache), output 5; OpenAI and Gemini read 0.1, write 1, output 6; the cache lives five
    /// minutes (`cacheTtlMs` 300000).
    "prices" prices: PriceOptions = PriceOptions::default(), shown "per `format` (see docs/strategies.md)",
        check |c| c.prices.check(c.format);

    /// The model's latest final answer stays verbatim through every step: users ask about exactly
    /// that answer.
    ///
    /// It yields only when the target cannot be reached otherwise, after the most recent round.
    "protectLatestAnswer" protect_latest_answer: bool = true;

    /// The most recent completed round (the one the user's current question follows) stays
    /// verbatim through every step.
    ///
    /// It yields only when the target cannot be reached otherwise, to the gentler steps before
    /// the emergency one.
    "protectLastRound" protect_last_round: bool = true;

    /// Tools whose exchanges no step replaces, not even truncation or the emergency step: their
    /// calls and results stay verbatim (like Anthropic's `exclude_tools`).
    "pinnedTools" pinned_tools: Vec<String> = Vec::new();

    /// Characters of the identifier index every replacement that offloads carries: the exact
    /// paths, names, ids and numbers it took out of view; 0 turns it off.
    ///
    /// They are ranked by how likely the agent needs them again (named by the user or a tool
    /// call, repeated, recent), at most half of what the replacement frees and a twentieth of
    /// the low-water mark.
    "identifierIndexChars" identifier_index_chars: u32 = 2000,
        check |c| {
            if c.identifier_index_chars > 100_000 {
                return Err(Error::config(
                    "identifierIndexChars",
                    format!("must be from 0 (no index) to 100000 characters, got {}", c.identifier_index_chars),
                ));
            }
            Ok(())
        };

    /// The task, the first real user message, stays verbatim: no summary, rollup or trim takes
    /// it, and `maxContextTurns` does not count it.
    ///
    /// Only when it alone keeps the request over the window does it keep its head and tail, the
    /// whole one reload away.
    "keepTask" keep_task: bool = true;

    /// Characters of one tool result a summary of history reads: a longer one goes to your
    /// `summarize` as its head and tail; 0 sends every result whole.
    ///
    /// The whole stays one reload away, and the identifier index names what its middle held.
    "summaryResultLimit" summary_result_limit: u32 = 2000,
        check |c| {
            if c.summary_result_limit != 0 && !(300..=100_000_000).contains(&c.summary_result_limit) {
                return Err(Error::config(
                    "summaryResultLimit",
                    format!("must be 0 (results whole) or from 300 to 100000000 characters, got {}", c.summary_result_limit),
                ));
            }
            Ok(())
        };

    /// Summarize requests carry, as `messages`, your agent's own request byte for byte with the
    /// instruction as its last user message (`request.fromCache` is true).
    ///
    /// Send them to the agent's model with its system prompt and tools, and the provider reads
    /// the conversation from its prompt cache at the cached price instead of reading the span
    /// afresh.
    "summarizeFromCache" summarize_from_cache: bool = false;
}

/// The options the host supplies in JavaScript (functions and objects): declared here with the
/// engine's, so the documentation of every option comes from one table, but never read by the
/// engine (the binding takes them out before the options reach it).
pub const HOST_OPTIONS: &[OptionDoc] = &[
    OptionDoc {
        name: "summarize",
        ts: "SummarizeFn<M>",
        default: Cow::Borrowed("none"),
        doc: " Your LLM call: `(request) => string | { text, usage? }`, sync or async; without it the\n LLM steps are skipped.\n",
        host: true,
    },
    OptionDoc {
        name: "store",
        ts: "OffloadStore",
        default: Cow::Borrowed("a new `MemoryStore`"),
        doc: " Where the originals of replaced messages go.\n",
        host: true,
    },
    OptionDoc {
        name: "onEvent",
        ts: "(event: AutoContextEvent) => unknown",
        default: Cow::Borrowed("none"),
        doc: " Called with every event as it happens: each pass and each change it made, every failed\n summarize call and store call, refused usage reports, overflows (see Diagnostics).\n\n What it throws or rejects with is caught (and logged at `error`): it never breaks a pass.\n",
        host: true,
    },
    OptionDoc {
        name: "logger",
        ts: "Logger",
        default: Cow::Borrowed("`console` once a level is set"),
        doc: " Where log lines go: `console`, or any object with `debug`, `info`, `warn` and `error`.\n",
        host: true,
    },
    OptionDoc {
        name: "logLevel",
        ts: "LogLevel",
        default: Cow::Borrowed("`AUTOCONTEXT_LOG`, else `'warn'` with a `logger`, else `'off'`"),
        doc: " How much is logged: `'debug'`, `'info'`, `'warn'`, `'error'` or `'off'`.\n",
        host: true,
    },
];

/// Every option, the engine's then the host's, as the documentation shows them.
pub fn options() -> Vec<OptionDoc> {
    let mut all = engine_options();
    all.extend(HOST_OPTIONS.iter().cloned());
    all
}

/// `targetRatio`'s default, as a share of `tokenRatio`: a pass frees three quarters of the
/// trigger, so passes are rare (on the cost benchmark's 30 traces, a quarter cost less than a
/// half, 0.75 or a pass that stops at the trigger).
const DEFAULT_TARGET_SHARE: f64 = 0.25;

/// The smallest `offloadReloadLimit`: a page must hold some content besides its note.
const MIN_RELOAD_LIMIT: u32 = 200;

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

    /// The prices in force: those given in `prices`, the format's defaults for the rest.
    pub fn prices(&self) -> Prices {
        self.prices.resolve(self.format)
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

    /// Whether the ladder runs `strategy`.
    fn has(&self, strategy: Strategy) -> bool {
        self.ladder().contains(&strategy)
    }

    /// Whether the ladder writes a prefix summary (itself, or as fact retrieval's fallback).
    fn summarizes_prefix(&self) -> bool {
        self.has(Strategy::PrefixSummary) || (self.has(Strategy::FactRetrieval) && self.facts_fallback == Strategy::PrefixSummary)
    }

    /// Reads options from a JSON object (camelCase names), then validates them.
    pub fn from_json(v: &Value) -> Result<Config> {
        let obj = match v {
            Value::Object(o) => o,
            Value::Null => return Config::default().validated(),
            other => return Err(Error::new(ErrorCode::InvalidConfig, format!("options must be an object, got {}", kind_of(other)))),
        };
        for key in obj.keys() {
            if !NAMES.contains(&key.as_str()) {
                let hint =
                    NAMES.iter().find(|k| k.eq_ignore_ascii_case(key)).map(|k| format!(" (did you mean `{k}`?)")).unwrap_or_default();
                return Err(Error::config(key, format!("is not an option of autocontext{hint}")));
            }
        }
        let mut c = Config::default();
        c.read_given(obj)?;
        c.check_given(obj)?;
        c.validated()
    }

    fn validated(self) -> Result<Config> {
        self.validate()?;
        Ok(self)
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
    use serde_json::json;

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
        assert_eq!(c.tool_result_limit, 2_000, "ours, measured: a new result is cut before it is first sent");
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
    fn the_reload_limit_stands_alone() {
        // A reload's answer is never truncated at arrival, so its pages need not fit under
        // `toolResultLimit`.
        for limit in [100, 2_000, 20_000] {
            assert_eq!(Config::from_json(&json!({"toolResultLimit": limit})).unwrap().offload_reload_limit, 8_000);
        }
        assert_eq!(Config::from_json(&json!({"offloadReloadLimit": 9000})).unwrap().offload_reload_limit, 9000);
    }
}
