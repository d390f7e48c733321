//! Wire formats: one file each, chosen by the `format` option.
//!
//! A format reads its provider's messages into canonical [`Message`]s, rebuilds a message a
//! strategy rewrote, writes the engine's own messages, describes the `context_reload` tool and
//! checks a list the way its provider would before accepting it. The strategies only ever see
//! canonical blocks; everything a provider requires beyond them (Anthropic's signed thinking
//! blocks, its tool results first in a user turn, the AI SDK's typed tool outputs) is kept by
//! the format when it rebuilds a message, so no strategy can break it.
//!
//! Formats differ in two structural rules. Anthropic wants user and assistant turns to
//! alternate ([`Format::needs_alternation`]). The engine's own messages are fitted to that rule
//! before a pass commits (see `strategy::turns`), with [`Format::merge`] when a note has to
//! join a neighbouring message of its side. And the Responses API sends one model response as
//! several items (reasoning, a message, one item per function call), which the engine keeps
//! together as one turn ([`Format::continues_turn`]): pairing, exchanges and every span the
//! strategies replace treat them as the one assistant message they stand for. Gemini turns
//! alternate too, for another reason: a function-call turn must come right after a user turn.
//!
//! Gemini function calls may come without ids. The engine still gives each call an id unique in
//! the conversation and each response the id of its call ([`Format::link`], when messages join a
//! list); the validators of the other formats pair by id, Gemini's pairs turns as its API does.

pub mod depth;

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::message::{Block, Message, Role, Synthetic};

/// Name of the reload tool, as in the reference, so prompts written for it keep working.
pub const RELOAD_TOOL_NAME: &str = "context_reload";
/// The reload tool's required argument.
pub const RELOAD_TOOL_PARAM: &str = "working_context_offload_uuid";
/// The reload tool's optional argument: which page of a long reload to return (from 1).
pub const RELOAD_PAGE_PARAM: &str = "page";

const RELOAD_DESCRIPTION: &str = "Reload the original messages of a part of this conversation that was compressed. \
Compressed parts carry a marker <!-- CONTEXT_OFFLOAD: uuid=... -->; call this tool with that uuid when you need \
the exact original content (full tool output, file contents, earlier details). Long content comes in pages; \
the answer says how to ask for the next one. The uuids and markers are internal: never mention or quote them \
to the user.";
const RELOAD_PARAM_DESCRIPTION: &str = "The uuid from a <!-- CONTEXT_OFFLOAD: uuid=... --> marker.";
const RELOAD_PAGE_DESCRIPTION: &str = "Which page of the content to return, from 1 (the default).";

/// The JSON schema of the reload tool's arguments, shared by every format's tool definition.
fn reload_parameters() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            RELOAD_TOOL_PARAM: {"type": "string", "description": RELOAD_PARAM_DESCRIPTION},
            RELOAD_PAGE_PARAM: {"type": "integer", "minimum": 1, "description": RELOAD_PAGE_DESCRIPTION}
        },
        "required": [RELOAD_TOOL_PARAM],
        "additionalProperties": false
    })
}

/// What each format's file implements, once: how it reads, rebuilds and writes its messages,
/// its reload tool, its words, and its rules. [`Format`] dispatches to it through the table of
/// [`formats!`]; what a format does not override is what most formats do.
pub(crate) trait WireFormat: Sync {
    /// Reads one wire message's role and content (its depth already checked); `index` is used
    /// in error messages. [`Format::parse`] makes the message, keeping the value as its wire.
    fn read(&self, index: usize, v: &Value) -> Result<(Role, Vec<Block>)>;
    /// Rebuilds `original` with new content blocks, keeping what the blocks do not describe.
    fn rebuild(&self, original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message;
    /// A message written by the engine (a summary or a notice).
    fn synthesize(&self, role: Role, text: String, synthetic: Synthetic) -> Message;
    /// The `context_reload` tool in this format, from its description and argument schema.
    fn reload_tool(&self, description: &str, parameters: Value) -> Value;
    /// The arguments of a `context_reload` call in this format's shape (not yet checked to be
    /// an object).
    fn reload_call_args(&self, call: &Value) -> Option<Value>;
    /// What the format calls the pieces its pairing rules speak of.
    fn words(&self) -> Words;
    /// The wire field of `m` holding call id `id` (of a result when `result`).
    fn id_field(&self, m: &Message, id: &str, result: bool) -> String;
    /// The provider whose prices the format's requests pay by default.
    fn price_list(&self) -> PriceList;

    /// The problems of [`Format::validate`] before the alternation check: tool pairing (the
    /// last exchange answered too when `request`), then the format's own rules.
    fn validate(&self, messages: &[&Message], request: bool) -> Vec<Problem> {
        pairing(self, messages, request)
    }
    /// The problems of [`validate_tool_pairing`].
    fn tool_pairing(&self, messages: &[&Message]) -> Vec<Problem> {
        pairing(self, messages, false)
    }
    /// See [`Format::continues_turn`]; a response is one message.
    fn continues_turn(&self, _prev: &Message, _next: &Message) -> bool {
        false
    }
    /// See [`Format::needs_alternation`].
    fn needs_alternation(&self) -> bool {
        false
    }
    /// See [`Format::link`]; ids are read from the wire.
    fn link(&self, _open: &[&Message], _new: &mut [Message], _claim: &mut dyn FnMut(&str) -> bool) {}
    /// See [`Format::link_all`]; ids are read from the wire.
    fn link_all(&self, _messages: &mut [Message]) {}
    /// See [`Format::links`].
    fn links(&self) -> bool {
        false
    }
    /// See [`Format::provider_compaction`].
    fn provider_compaction(&self, _m: &Message) -> bool {
        false
    }
    /// See [`Format::signed`].
    fn signed(&self, _m: &Message) -> bool {
        false
    }
    /// `neighbor` with `text` joined (see [`Format::merge`]). A format whose turns need not
    /// alternate never needs a merge; joining the blocks keeps it valid anyway.
    fn merge(&self, neighbor: &Message, text: String, note_first: bool, mark: Synthetic) -> Message {
        let mut blocks = neighbor.blocks.clone();
        if note_first {
            let at = blocks.iter().take_while(|b| matches!(b, Block::Thinking(_) | Block::ToolResult { .. })).count();
            blocks.insert(at, Block::Text(text));
        } else {
            blocks.push(Block::Text(text));
        }
        self.rebuild(neighbor, blocks, mark)
    }
    /// `first` and `second` as one message (see [`Format::join`]): `second` with `first`'s
    /// blocks in front.
    fn join(&self, first: &Message, second: &Message, mark: Synthetic) -> Message {
        let blocks = first.blocks.iter().chain(&second.blocks).cloned().collect();
        self.rebuild(second, blocks, mark)
    }
    /// See [`Format::call_label`]: the id, quoted.
    fn call_label(&self, _m: &Message, id: &str, _result: bool) -> String {
        format!("{id:?}")
    }
}

/// The provider whose default prices a format's requests pay (see `options::prices`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceList {
    /// Anthropic's: a cache write at 1.25× the input price.
    Anthropic,
    /// OpenAI's: a cache write at the input price.
    OpenAi,
}

/// Writes [`Format`] from the one table of formats below, so that a format is its file and its
/// row: the declaration of its file's module, the enum (its serde names), `ALL`, `name()`, `title()`, `doc()` and the dispatch to each
/// format's [`WireFormat`]. A row is the format's documentation (the README's paragraph on it and
/// the `format` option's docs are generated from `doc()` and `title()` by `tests/generated.rs`),
/// its option value, its variant, its file (the module) and the type there that implements
/// [`WireFormat`], and its title; `default` marks the default format.
///
/// ```text
/// /// What the README says of it.
/// "option-value" Variant = file::Implementation, titled "its name in a sentence", default;
/// ```
macro_rules! formats {
    ($(
        $(#[doc = $doc:literal])*
        $name:literal $variant:ident = $module:ident :: $wire:ident, titled $title:literal $(, $default:ident)?;
    )*) => {
        $( pub mod $module; )*

        /// A provider's message shape.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
        pub enum Format {
            $( $(#[doc = $doc])* $(#[$default])? #[serde(rename = $name)] $variant, )*
        }

        impl Format {
            /// Every format, in the table's order.
            pub const ALL: [Format; [$($name),*].len()] = [$(Format::$variant),*];

            /// The name used in options and state.
            pub fn name(self) -> &'static str {
                match self {
                    $( Format::$variant => $name, )*
                }
            }

            /// What the format is called in a sentence: `OpenAI chat completions`, `the
            /// Anthropic Messages API`.
            pub fn title(self) -> &'static str {
                match self {
                    $( Format::$variant => $title, )*
                }
            }

            /// What the format reads, for people: its row's doc comment, the README's paragraph
            /// on it (Markdown, one line per line of the comment, each with its leading space).
            pub fn doc(self) -> &'static str {
                match self {
                    $( Format::$variant => concat!($($doc, "\n"),*), )*
                }
            }

            /// The implementation in the format's file.
            fn wire(self) -> &'static dyn WireFormat {
                match self {
                    $( Format::$variant => &$module::$wire, )*
                }
            }
        }
    };
}

formats! {
    /// chat-completions messages (`system`, `developer`, `user`, `assistant` with
    /// `tool_calls`, `tool`). `reloadTool()` is a function tool.
    "openai" OpenAi = openai::OpenAi, titled "OpenAI chat completions", default;
    /// Messages API messages. The system prompt stays your request's `system` parameter
    /// (count it in `reservedTokens`). A user turn may carry several `tool_result` blocks. Thinking and
    /// redacted thinking are never edited: a rewritten assistant message keeps them byte-exact, signature
    /// included, and first; they go only when a whole earlier turn becomes a summary, as Anthropic allows.
    /// The engine keeps user and assistant turns alternating: a note it writes takes the role that fits
    /// or joins the neighbouring message of its side. A `compaction` block (Anthropic's server-side
    /// compaction) is kept byte-exact and never summarized, and what comes before it is offloaded
    /// first (step 0). `reloadTool()` has an `input_schema`.
    "anthropic" Anthropic = anthropic::Anthropic, titled "the Anthropic Messages API";
    /// the Vercel AI SDK's `ModelMessage` (`reasoning`, `tool-call`, `tool-result` with its
    /// `output`, approvals, `providerOptions`). Bytes travel as base64 text. `reloadTool()` has a JSON-schema
    /// `inputSchema`.
    "ai-sdk" AiSdk = ai_sdk::AiSdk, titled "the Vercel AI SDK's `ModelMessage`";
    /// Responses API input items: messages (with or without `type`), one
    /// `function_call` per call, one `function_call_output` per result, `reasoning`, and items the engine
    /// does not read (hosted tool calls travel with their response). The Agents SDK's spelling
    /// (`callId`, `function_call_result`) is read too, and a rewritten
    /// item keeps its spelling. The items of one response (reasoning, message, parallel calls) are one
    /// turn: no step separates them, so a reasoning item always keeps what follows it. `msgThreshold`
    /// counts items. A `compaction` item, like Anthropic's `compaction` block, is the start of what
    /// the provider condensed: kept byte-exact, never summarized, and what comes before it is
    /// offloaded first (step 0). `reloadTool()` is a function tool with `strict: false`.
    "openai-responses" OpenAiResponses = openai_responses::OpenAiResponses, titled "the OpenAI Responses API's input items";
    /// `@google/genai`'s `Content` (roles `user` and `model`, a content without a role is
    /// the user's): text and thought parts, `functionCall`, `functionResponse` (the response's one
    /// string field, such as `output`, ADK's `result` or `error`, is its text; anything else its JSON),
    /// and media, `executableCode`, `codeExecutionResult`, server-side tool parts and parts this
    /// version does not know, kept byte-exact. The system prompt stays your request's
    /// `config.systemInstruction` (count it in `reservedTokens`). A function call needs no id: a turn
    /// of calls is answered by the user content right after it, response by response with the calls
    /// of the same name in order (ids match where given); `add` refuses responses anywhere else, as the
    /// API does, and the engine's own ids never reach the wire. A part with a `thoughtSignature` is
    /// never rewritten: a model turn of the current round that carries one is left whole by every
    /// step but the ones that take whole turns (the prefix summary, the emergency step), and a
    /// rewritten earlier turn keeps its signed calls and its thoughts byte-exact (a shortened text
    /// part loses its signature, which the API allows outside the current turn). The engine's notes
    /// are a user or model content of one text part, alternating with their neighbours, so a
    /// function-call turn always follows a user turn. `reloadTool()` is a `FunctionDeclaration`
    /// (`parametersJsonSchema`); `handleReloadCall` takes `response.functionCalls[i]` or the part;
    /// `observeUsage(response.usageMetadata)` reads `promptTokenCount` (cached tokens included).
    "gemini" Gemini = gemini::Gemini, titled "Gemini's `Content`s";
}

/// The side of the conversation a message is on, as a provider that wants alternating turns
/// counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// The user's side (Anthropic tool results included).
    User,
    /// The model's side.
    Assistant,
}

impl Format {
    /// The format an option value names (`openai`, `anthropic`, `ai-sdk`, `openai-responses`,
    /// `gemini`).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Every format's name, quoted, for error messages: `"openai", "anthropic", ... or "..."`.
    pub fn names() -> String {
        let quoted: Vec<String> = Format::ALL.iter().map(|f| format!("{:?}", f.name())).collect();
        let (last, rest) = quoted.split_last().expect("there are formats");
        format!("{} or {last}", rest.join(", "))
    }

    /// Reads one wire message, a copy of `v` its wire value; `index` is used in error messages.
    pub fn parse(self, index: usize, v: &Value) -> Result<Message> {
        let (role, blocks) = self.read(index, v)?;
        Ok(Message { role, blocks, wire: v.clone().into(), synthetic: None })
    }

    /// [`Format::parse`] of a value the caller gives up, which becomes the message's wire value
    /// as it is: no copy (a restore reads every working message this way).
    pub fn parse_owned(self, index: usize, v: Value) -> Result<Message> {
        depth::check(index, &v)?;
        self.parse_owned_shallow(index, v)
    }

    /// [`Format::parse_owned`] of a message whose depth is already known to be within
    /// [`depth::MAX_DEPTH`] (a restore walks the whole state once).
    pub(crate) fn parse_owned_shallow(self, index: usize, v: Value) -> Result<Message> {
        let (role, blocks) = self.wire().read(index, &v)?;
        Ok(Message { role, blocks, wire: v.into(), synthetic: None })
    }

    fn read(self, index: usize, v: &Value) -> Result<(Role, Vec<Block>)> {
        depth::check(index, v)?;
        self.wire().read(index, v)
    }

    /// Rebuilds `original` with new content blocks, keeping what the blocks do not describe.
    pub fn rebuild(self, original: &Message, blocks: Vec<Block>, synthetic: Synthetic) -> Message {
        self.wire().rebuild(original, blocks, synthetic)
    }

    /// A message written by the engine (a summary or a notice).
    pub fn synthesize(self, role: Role, text: String, synthetic: Synthetic) -> Message {
        self.wire().synthesize(role, text, synthetic)
    }

    /// Whether `next` belongs to the same model response as `prev`, the message just before it.
    /// Only the Responses API splits a response into several items; in the other formats a
    /// response is one message.
    pub fn continues_turn(self, prev: &Message, next: &Message) -> bool {
        self.wire().continues_turn(prev, next)
    }

    /// Whether the engine keeps user and assistant turns alternating around its own messages:
    /// Anthropic wants turns to alternate, and Gemini a function-call turn right after a user
    /// turn, which a model note before it would break.
    pub fn needs_alternation(self) -> bool {
        self.wire().needs_alternation()
    }

    /// Links messages just read (`new`, in order) to the list they join, whose open turn is
    /// `open` (its last call turn and the results after it; empty when the list does not end in
    /// one). Only Gemini needs it: a call without an id gets one unique in the conversation
    /// (`claim(id)` takes an id and says whether it was free) and a response without one the id
    /// of its call (see [`gemini::link`]). Every other format reads its ids from the wire.
    pub fn link(self, open: &[&Message], new: &mut [Message], claim: &mut dyn FnMut(&str) -> bool) {
        self.wire().link(open, new, claim);
    }

    /// Links a whole list read message by message, as [`Format::link`] does for messages added
    /// to a list (the ids in use are the list's own).
    pub fn link_all(self, messages: &mut [Message]) {
        self.wire().link_all(messages);
    }

    /// Whether [`Format::link_all`] can change a message read on its own (a Gemini call without
    /// an id takes one that depends on the list around it): a message of this format is only
    /// what its wire value says once the whole list is read.
    pub(crate) fn links(self) -> bool {
        self.wire().links()
    }

    /// The provider whose prices this format's requests pay by default.
    pub fn price_list(self) -> PriceList {
        self.wire().price_list()
    }

    /// The start of the open turn at the end of `messages`: its last message that makes calls,
    /// when only results follow it (the items of a Responses API response before it included);
    /// `messages.len()` when the list does not end in one.
    pub fn open_turn<M: AsRef<Message>>(self, messages: &[M]) -> usize {
        let n = messages.len();
        let mut end = n;
        while end > 0 && {
            let m = messages[end - 1].as_ref();
            m.has_results() || m.role == Role::Tool
        } {
            end -= 1;
        }
        if end == 0 || !messages[end - 1].as_ref().has_calls() {
            return n;
        }
        let mut start = end - 1;
        while start > 0 && self.continues_turn(messages[start - 1].as_ref(), messages[start].as_ref()) {
            start -= 1;
        }
        start
    }

    /// Whether message `m` holds the provider's own compaction of what came before it:
    /// Anthropic's `compaction` block (the API drops what precedes it) or the Responses API's
    /// `compaction` item (it carries what precedes it). Both are kept byte-exact and never
    /// replaced; the messages before the latest one are already condensed (see
    /// `strategy::provider`).
    pub fn provider_compaction(self, m: &Message) -> bool {
        self.wire().provider_compaction(m)
    }

    /// Whether message `m` carries a signature the provider checks for the current tool loop
    /// and that no rewrite may touch there: a Gemini model content with a thought signature.
    /// (Anthropic's signed thinking is kept by its format in every rewrite instead.)
    pub fn signed(self, m: &Message) -> bool {
        self.wire().signed(m)
    }

    /// The side a message of `role` is on when turns are counted.
    pub fn turn(self, role: Role) -> Turn {
        match role {
            Role::Assistant => Turn::Assistant,
            _ => Turn::User,
        }
    }

    /// `neighbor` with the text of the engine's `note` joined to it: before its content when
    /// `note_first` (after the blocks a provider wants first: signed thinking, tool results),
    /// after it otherwise. The result keeps the neighbour's role and part in the conversation
    /// and carries the note's mark as shrunk in place.
    pub fn merge(self, neighbor: &Message, note: &Message, note_first: bool) -> Message {
        let mut mark = note.synthetic.clone().unwrap_or_else(|| Synthetic::new("MERGE", None));
        mark.in_place = true;
        self.wire().merge(neighbor, note.payload_text(), note_first, mark)
    }

    /// Two messages of one side (`first` just before `second`) as one message carrying `mark`
    /// (as shrunk in place), for formats whose turns alternate; the other formats never need
    /// it and get `second` with `first`'s blocks in front.
    pub fn join(self, first: &Message, second: &Message, mut mark: Synthetic) -> Message {
        mark.in_place = true;
        self.wire().join(first, second, mark)
    }

    /// The `context_reload` tool definition in this format: an OpenAI function tool, an
    /// Anthropic tool (`input_schema`), an AI SDK tool definition (`inputSchema` as a JSON
    /// schema; `autocontext/ai-sdk` turns it into a ready tool), a Responses API function
    /// tool (`autocontext/openai-agents` has it as an Agents SDK tool), or a Gemini
    /// `FunctionDeclaration` (`parametersJsonSchema`).
    pub fn reload_tool(self) -> Value {
        self.wire().reload_tool(RELOAD_DESCRIPTION, reload_parameters())
    }

    /// The parsed arguments of a `context_reload` call, given in this format's shape: an
    /// OpenAI tool call (`function.arguments`, a JSON string) or its arguments; an Anthropic
    /// `tool_use` block or the AI SDK's `tool-call` part (both carry `input`); a Responses
    /// `function_call` item (`arguments`); a Gemini part or its `functionCall` (`args`); or the
    /// parsed arguments themselves.
    pub fn reload_call_args(self, call: &Value) -> Option<Value> {
        let args = self.wire().reload_call_args(call)?;
        args.is_object().then_some(args)
    }

    /// Extracts the uuid argument from a `context_reload` call in this format's shape.
    pub fn reload_call_uuid(self, call: &Value) -> Option<String> {
        self.reload_call_args(call)?.get(RELOAD_TOOL_PARAM)?.as_str().map(str::to_string)
    }

    /// What this format calls the pieces its pairing rules speak of, so that an error says it
    /// in the words of the provider's own API and documentation.
    pub fn words(self) -> Words {
        self.wire().words()
    }

    /// How an error names the call `id` that message `m` makes (or answers, when `result`): its
    /// id, quoted; a Gemini call by its function's name, with the id the wire gave it, if any
    /// (the ids the engine gives calls that come without one are its own, never shown).
    pub fn call_label(self, m: &Message, id: &str, result: bool) -> String {
        self.wire().call_label(m, id, result)
    }

    /// The wire field of message `m` that holds the call id `id`, for error messages: of a
    /// result when `result`, else of a call (`tool_call_id` / `tool_calls` for OpenAI,
    /// `content[k].tool_use_id` / `content[k].id` for Anthropic, `content[k].toolCallId` for
    /// the AI SDK, `call_id` or `callId` for the Responses API, `parts[k].functionCall` or
    /// `parts[k].functionResponse` for Gemini).
    pub fn id_field(self, m: &Message, id: &str, result: bool) -> String {
        self.wire().id_field(m, id, result)
    }

    /// Problems a provider would reject the list for (empty when valid): tool pairing for
    /// every format, then the format's own rules (each format's `validate` lists them). The
    /// calls of the last exchange may still wait for their results (a working list whose tools
    /// are running); [`Format::validate_request`] checks a complete request body.
    pub fn validate<M: AsRef<Message>>(self, messages: &[M]) -> Vec<Problem> {
        self.problems(&crate::message::refs(messages), false)
    }

    /// Problems a provider would reject the list for as a complete request body: the rules of
    /// [`Format::validate`], and every call answered, the last exchange's too (`MISSING_RESULT`),
    /// and, where turns alternate, the user's turn first (`FIRST_NOT_USER`).
    pub fn validate_request<M: AsRef<Message>>(self, messages: &[M]) -> Vec<Problem> {
        self.problems(&crate::message::refs(messages), true)
    }

    /// The checks of [`Format::validate`] over plain references: the checks are compiled once
    /// for every kind of list.
    fn problems(self, messages: &[&Message], request: bool) -> Vec<Problem> {
        let mut problems = self.wire().validate(messages, request);
        if request && self.needs_alternation() {
            if let Some(first) = messages.first().map(AsRef::as_ref).filter(|m| self.turn(m.role) != Turn::User) {
                problems.push(Problem {
                    index: 0,
                    code: "FIRST_NOT_USER",
                    message: format!(
                        "the request starts with a{} message; the first turn must be the user's",
                        match first.role {
                            Role::Assistant => "n assistant",
                            _ => " non-user",
                        }
                    ),
                });
            }
        }
        crate::sort::by_key(&mut problems, |p| p.index as u128);
        problems
    }
}

/// The wire field of a call or result carried as a part of `content` (Anthropic, the AI SDK):
/// `content[k].<key>` of the part of type `kind` whose `key` is `id`, else `content`.
pub(crate) fn content_id_field(m: &Message, id: &str, kind: &str, key: &str) -> String {
    let items = m.wire.get("content").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    match items.iter().position(|b| b.get("type").and_then(Value::as_str) == Some(kind) && b.get(key).and_then(Value::as_str) == Some(id)) {
        Some(k) => format!("content[{k}].{key}"),
        None => "content".into(),
    }
}

/// Reads tool-call arguments carried as `input` (Anthropic `tool_use`, AI SDK `tool-call`), as
/// a JSON string, or given directly.
pub(crate) fn input_args(v: &Value) -> Option<Value> {
    match v {
        Value::String(s) => serde_json::from_str(s).ok(),
        Value::Object(o) if !o.contains_key(RELOAD_TOOL_PARAM) => match o.get("input").or_else(|| o.get("args")) {
            Some(inner) => input_args(inner),
            None => Some(v.clone()),
        },
        Value::Object(_) => Some(v.clone()),
        _ => None,
    }
}

/// The wire part of a rewritten tool call in the formats that carry its arguments as an `input`
/// object (Anthropic `tool_use`, AI SDK `tool-call`): the original part untouched when name and
/// input are unchanged, else the original with `name_key` and `input` replaced (its other fields
/// kept), else `fresh(input)`. Arguments that are not JSON become `{}`.
pub(crate) fn write_input_call(
    orig: Option<&Value>,
    name_key: &str,
    name: &str,
    arguments: &str,
    fresh: impl FnOnce(Value) -> Value,
) -> Value {
    let input: Value = serde_json::from_str(arguments).unwrap_or_else(|_| serde_json::json!({}));
    match orig {
        Some(p) if p.get(name_key).and_then(Value::as_str) == Some(name) && p.get("input") == Some(&input) => p.clone(),
        Some(p) => {
            let mut p = p.clone();
            p[name_key] = Value::String(name.to_string());
            p["input"] = input;
            p
        }
        None => fresh(input),
    }
}

/// Estimated tokens of a part kept as it came (a block no format reads into text): its JSON
/// text. Anthropic, the AI SDK, the Responses API and Gemini price such parts so.
pub(crate) fn json_tokens(v: &Value) -> u32 {
    crate::tokens::estimate(&v.to_string(), &crate::tokens::O200K_WEIGHTS)
}

/// The non-text parts of a tool result that a strategy kept: the opaque blocks right after
/// block `i` that were among the original result's `parts`, each marked `consumed`.
pub(crate) fn kept_result_parts(new: &[Block], i: usize, parts: &[Value], consumed: &mut [bool]) -> Vec<Value> {
    let mut nested = Vec::new();
    for (j, next) in new.iter().enumerate().skip(i + 1) {
        match next {
            Block::Opaque { raw, .. } if parts.contains(raw) => {
                nested.push(raw.clone());
                consumed[j] = true;
            }
            _ => break,
        }
    }
    nested
}

/// A format's reader of one wire message's role and content (see [`WireFormat::read`]).
pub(crate) type Reader = fn(usize, &Value) -> Result<(Role, Vec<Block>)>;

/// The canonical message of a wire value a format wrote, read back with its `read`, so its
/// blocks are exactly what a restore would read; it carries `synthetic`. Not inlined: every
/// format's rebuilding steps end here, and one copy serves them all.
#[inline(never)]
pub(crate) fn reread(read: Reader, wire: Value, role: Role, synthetic: Synthetic) -> Message {
    // An error is unreachable for the values the formats write; keep the role and carry no blocks.
    let (role, blocks) = read(0, &wire).unwrap_or((role, Vec::new()));
    Message { role, blocks, wire: wire.into(), synthetic: Some(synthetic) }
}

/// What a format calls a tool call, the results that answer calls, and the model's message,
/// in its errors ([`Format::words`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Words {
    /// A call: `tool call`, `tool_use`, `function_call`, `functionCall`.
    pub call: &'static str,
    /// What answers calls, plural: `results`, `tool_result blocks`, `functionResponse parts`.
    pub results: &'static str,
    /// The message a model call produced: `assistant message`, `model response`, `model turn`.
    pub model: &'static str,
}

/// One reason a provider would reject a message list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Index of the message at fault.
    pub index: usize,
    /// Stable problem code: `ORPHAN_RESULT`, `MISSING_RESULT`, `DUPLICATE_RESULT` or
    /// `DUPLICATE_CALL` (every format); `ROLES_NOT_ALTERNATING`, `TOOL_RESULT_NOT_FIRST`,
    /// `THINKING_ONLY`, `EMPTY_CONTENT` or, for a request body, `FIRST_NOT_USER` (Anthropic);
    /// `APPROVAL_WITHOUT_REQUEST` (AI SDK); `PART_TYPE_FOR_ROLE` or `REASONING_WITHOUT_FOLLOWER`
    /// (Responses API); `CALL_NOT_AFTER_USER`, `THOUGHT_SIGNATURE_MISSING`, `EMPTY_CONTENT` or,
    /// for a request body, `FIRST_NOT_USER` (Gemini); `INVALID_STATE` for a loaded memory whose
    /// saved state holds a page that is not what its save wrote.
    pub code: &'static str,
    /// What is wrong, for people.
    pub message: String,
}

/// Tool pairing, the rule every provider enforces: each result answers a call of the assistant
/// message that opened its exchange (only results between them), each call is answered before
/// the conversation moves on, and no id is used twice. Calls of the last exchange may still be
/// waiting for results (the host is about to run the tools). A message may carry several
/// results (Anthropic, the AI SDK); a tool message without results (an AI SDK approval
/// response) stays inside the exchange; the items of one response (the Responses API, see
/// [`Format::continues_turn`]) open one exchange together.
pub fn validate_tool_pairing<M: AsRef<Message>>(format: Format, messages: &[M]) -> Vec<Problem> {
    format.wire().tool_pairing(&crate::message::refs(messages))
}

/// Tool pairing; with `complete`, the last exchange must be answered too.
pub(crate) fn pairing<F: WireFormat + ?Sized>(format: &F, messages: &[&Message], complete: bool) -> Vec<Problem> {
    let w = format.words();
    let mut problems = Vec::new();
    // The open exchange's calls: the message making each, its id, whether it is answered. The
    // ids are the messages' own (a restore checks every message of the working list here).
    let mut open: Vec<(usize, &str, bool)> = Vec::new();
    let mut seen_calls = std::collections::HashSet::with_capacity(messages.len());
    let close = |open: &mut Vec<(usize, &str, bool)>, problems: &mut Vec<Problem>| {
        for (at, id, ok) in open.drain(..) {
            if !ok {
                problems.push(Problem {
                    index: at,
                    code: "MISSING_RESULT",
                    message: format!("{} {id:?} of message {at} has no result before the conversation moves on", w.call),
                });
            }
        }
    };
    for (i, &m) in messages.iter().enumerate() {
        if m.has_results() || m.role == Role::Tool {
            for id in m.result_ids() {
                match open.iter_mut().find(|(_, c, _)| *c == id) {
                    Some((_, _, answered)) if !*answered => *answered = true,
                    Some(_) => problems.push(Problem {
                        index: i,
                        code: "DUPLICATE_RESULT",
                        message: format!("message {i} answers {} {id:?} a second time", w.call),
                    }),
                    None => problems.push(Problem {
                        index: i,
                        code: "ORPHAN_RESULT",
                        message: format!("message {i} answers {} {id:?}, which the {} before it did not make", w.call, w.model),
                    }),
                }
            }
            // A message may carry results and other content (Anthropic); it still belongs to the exchange.
            continue;
        }
        if !(i > 0 && format.continues_turn(messages[i - 1], m)) {
            close(&mut open, &mut problems);
        }
        for id in m.call_ids() {
            if !seen_calls.insert(id) {
                problems.push(Problem { index: i, code: "DUPLICATE_CALL", message: format!("message {i} reuses {} id {id:?}", w.call) });
            }
            open.push((i, id, false));
        }
    }
    // The last exchange may be in flight: its missing results are not a problem yet, unless
    // the list is a complete request.
    if complete {
        close(&mut open, &mut problems);
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: Value) -> Vec<Message> {
        v.as_array().unwrap().iter().enumerate().map(|(i, m)| Format::OpenAi.parse(i, m).unwrap()).collect()
    }

    #[test]
    fn pairing_rules() {
        let ok = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}, {"id": "b", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
            {"role": "assistant", "content": "done"},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}
        ]));
        assert!(Format::OpenAi.validate(&ok).is_empty());
        let bad = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "user", "content": "again"},
            {"role": "tool", "tool_call_id": "a", "content": "late"}
        ]));
        let codes: Vec<_> = Format::OpenAi.validate(&bad).iter().map(|p| p.code).collect();
        assert_eq!(codes, vec!["MISSING_RESULT", "ORPHAN_RESULT"]);
    }

    #[test]
    fn a_request_body_answers_every_call_and_opens_with_the_user() {
        let open = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}
        ]));
        assert!(Format::OpenAi.validate(&open).is_empty(), "a working list may wait for results");
        let codes: Vec<_> = Format::OpenAi.validate_request(&open).iter().map(|p| (p.index, p.code)).collect();
        assert_eq!(codes, vec![(1, "MISSING_RESULT")]);
        let anthropic: Vec<Message> = [json!({"role": "assistant", "content": "hi"}), json!({"role": "user", "content": "go"})]
            .iter()
            .enumerate()
            .map(|(i, m)| Format::Anthropic.parse(i, m).unwrap())
            .collect();
        assert!(Format::Anthropic.validate(&anthropic).is_empty());
        let codes: Vec<_> = Format::Anthropic.validate_request(&anthropic).iter().map(|p| p.code).collect();
        assert_eq!(codes, vec!["FIRST_NOT_USER"]);
        assert!(Format::OpenAi.validate_request(&msgs(json!([{"role": "assistant", "content": "hi"}]))).is_empty());
    }

    #[test]
    fn the_reload_tool_tells_the_model_to_keep_its_markers_to_itself() {
        for f in Format::ALL {
            let tool = f.reload_tool().to_string();
            assert!(tool.contains("never mention or quote them to the user"), "{}: {tool}", f.name());
        }
    }

    #[test]
    fn reload_call_shapes() {
        let f = Format::OpenAi;
        let want = Some("u-1".to_string());
        assert_eq!(f.reload_call_uuid(&json!({"working_context_offload_uuid": "u-1"})), want);
        assert_eq!(f.reload_call_uuid(&json!("{\"working_context_offload_uuid\":\"u-1\"}")), want);
        assert_eq!(
            f.reload_call_uuid(
                &json!({"id": "c", "function": {"name": "context_reload", "arguments": "{\"working_context_offload_uuid\":\"u-1\"}"}})
            ),
            want
        );
        assert_eq!(f.reload_call_uuid(&json!(3)), None);
    }
}
