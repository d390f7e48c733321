/**
 * Public types of autocontext: options, the host's summarize function and offload store,
 * results and events.
 *
 * @module
 */

import type { AutoContextError } from './errors.js';

import type { AnyMessage, FormatName, MessageFor } from './formats.js';

export type * from './formats.js';

/** A value, or a promise of it: host functions may answer either way. */
export type Awaitable<T> = T | Promise<T>;

/**
 * A message of any wire format, loosely typed: `{ role, content?, ...any other field }`. A
 * memory's own methods take and return its format's message type ({@link MessageFor}); this
 * one is for code that handles messages of every format alike.
 */
export interface WireMessage {
  /** `system`, `developer`, `user`, `assistant` or `tool`. */
  role: string;
  /** A string, `null`, or a list of content parts. */
  content?: unknown;
  /** Any other field of the wire format, passed through unchanged. */
  [field: string]: unknown;
}

/** What autocontext asks the host's summarizer model to do. */
export interface SummarizeRequest<M = AnyMessage> {
  /** Which strategy asks. */
  kind: SummarizeKind;
  /** Instructions for the summarizer model (a system prompt). */
  system: string;
  /** The span to compress, serialized as text inside tags, plus any hint. */
  prompt: string;
  /**
   * The same span in the memory's wire format, for hosts that prefer it: a valid request body
   * once you append your own instruction as a user message (every call answered, a partial
   * exchange rendered as text; for Anthropic, user first and alternating).
   */
  messages: M[];
  /** The length the summary should stay under, in characters. */
  targetChars?: number;
  /** How long the call may take; the signal aborts and the call counts as failed after it. */
  timeoutMs?: number;
  /** A JSON schema the answer should follow, for structured strategies. */
  schema?: object;
  /**
   * `messages` is your agent's own request, byte for byte, then one user message with the
   * instructions and the span to summarize (`summarizeFromCache`): send it to the agent's model
   * with the agent's system prompt and tools, and the provider reads the conversation from its
   * prompt cache. False: `messages` is the span alone (a request the option could not share,
   * one whose last call still waits for its result, is one of these).
   */
  fromCache: boolean;
  /** Aborted when autocontext no longer waits for this call (for example on timeout). */
  signal: AbortSignal;
}

/** Token usage the host's model reported for one summary. */
export interface SummarizeUsage {
  /** Tokens the model read. */
  inputTokens?: number;
  /** Tokens the model wrote. */
  outputTokens?: number;
}

/** What a summarize function returns: the summary text, or the text with its usage. */
export type SummarizeResult = string | { text: string; usage?: SummarizeUsage };

/**
 * The host's LLM call. It may answer synchronously or with a promise; whatever it throws is
 * recorded (a failed summary falls back to a non-LLM step). `SummarizeFn` alone takes the
 * messages of any format, so one function serves memories of every format;
 * `SummarizeFn<AnthropicMessage>` types `request.messages` for one.
 */
export type SummarizeFn<M = AnyMessage> = (request: SummarizeRequest<M>) => Awaitable<SummarizeResult>;

/**
 * Where originals of replaced spans are kept, under keys `<sessionId>/<uuid>`. Each method may
 * answer synchronously or with a promise. See `autocontext/stores/memory` for the simplest one.
 */
export interface OffloadStore {
  /**
   * `true` when `put` takes values as bytes: the engine then hands over each value as a
   * `Uint8Array` of its UTF-8 text (the store's own copy) instead of a string, and skips turning
   * megabytes of offloaded messages into JavaScript strings a store would only encode again
   * (a file, KV or IndexedDB write). `get` still answers with the text (a `Uint8Array` of it is
   * read too). Every store this package ships says `true`.
   */
  readonly acceptsBytes?: boolean;
  /** The value under `key`, or `null`/`undefined` when there is none. */
  get(key: string): Awaitable<string | null | undefined>;
  /**
   * Stores `value` under `key`: a string, or the UTF-8 bytes of one when the store says
   * {@link OffloadStore.acceptsBytes}.
   */
  put(key: string, value: string | Uint8Array): Awaitable<unknown>;
  /** Removes `key` (no error when absent). */
  delete(key: string): Awaitable<unknown>;
}

/** Options of `memory.sweep()`. */
export interface SweepOptions {
  /**
   * The session store this session is saved in. With it, the sweep also deletes what a killed or
   * refused writer left: it lists the session's keys (the offload store needs `keys(prefix)`),
   * saves this memory as the next revision (the fence: every writer that loaded an earlier
   * revision can no longer save), and deletes the listed keys the saved state does not reach.
   * Safe with other writers on the session as long as every writer saves through this session
   * store; `CONFLICT` when another writer saved since this memory loaded, and nothing is deleted.
   */
  sessions?: SessionStore;
}

/** A session as a {@link SessionStore} keeps it: the state `toJSON()` made, as JSON, and its revision. */
export interface SavedSession {
  /** The revision: 1 for a session's first save, one more for each save after it. */
  revision: number;
  /** The memory's state, `JSON.stringify(memory.toJSON())`. */
  state: string;
}

/**
 * Where a memory's state is saved between requests, with one writer per session enforced: a
 * save of revision `n` goes through only if the stored revision is `n - 1` (none stored, for
 * `n = 1`), checked and written in one atomic step, and is refused otherwise with a
 * `CONFLICT` error, leaving the stored session as it was. `memory.save(sessions)` and
 * `AutoContextMemory.load(sessions, sessionId, host)` use it. Each shipped store that can check
 * atomically has one: `MemorySessionStore` (autocontext/stores/memory), `FsSessionStore`
 * (autocontext/stores/fs), `IndexedDBSessionStore` (autocontext/stores/indexeddb),
 * `DenoKVSessionStore` (autocontext/stores/deno-kv) and `DurableObjectSessionStore`
 * (autocontext/stores/durable-object). Workers KV cannot check a write atomically, so it has
 * none (see the README).
 */
export interface SessionStore {
  /** The session's last saved state and revision, or `null` when it was never saved. */
  load(sessionId: string): Promise<SavedSession | null>;
  /**
   * Saves `session` unless its revision does not follow the stored one.
   *
   * @throws `AutoContextError` `CONFLICT` when another writer saved the session since the
   *   revision before `session.revision`; nothing is written then.
   */
  save(sessionId: string, session: SavedSession): Promise<void>;
}

// generated:names (tests/generated.rs writes this part from src/options; edit it there)
/** The named ladders. */
export type PresetName =
  | 'agentscope'
  | 'prefix-summary'
  | 'facts'
  | 'turns';

/** A strategy of the ladder, by its documented name or its event type. */
export type StrategyName =
  | 'tool-result-truncate'
  | 'tool-result-stub'
  | 'large-message-offload-protected'
  | 'large-message-offload'
  | 'history-rollup'
  | 'tool-run-compress'
  | 'previous-round-summary'
  | 'current-round-large-message'
  | 'current-round-compress'
  | 'emergency'
  | 'prefix-summary'
  | 'facts'
  | 'turn-trim'
  | 'turn-text-only'
  | 'provider-compaction'
  | 'TOOL_RESULT_TRUNCATE'
  | 'TOOL_RESULT_STUB'
  | 'LARGE_MESSAGE_OFFLOAD_WITH_PROTECTION'
  | 'LARGE_MESSAGE_OFFLOAD'
  | 'RECENT_FOCUS_WINDOW_COMPACT'
  | 'TOOL_INVOCATION_COMPRESS'
  | 'PREVIOUS_ROUND_CONVERSATION_SUMMARY'
  | 'CURRENT_ROUND_LARGE_MESSAGE_SUMMARY'
  | 'CURRENT_ROUND_MESSAGE_COMPRESS'
  | 'EMERGENCY_OFFLOAD'
  | 'PREFIX_SUMMARY'
  | 'FACT_RETRIEVAL'
  | 'TURN_TRIM'
  | 'TURN_TEXT_ONLY'
  | 'PROVIDER_COMPACTION_OFFLOAD';

/** Which strategy asks for a summary. */
export type SummarizeKind =
  | 'rollup'
  | 'tool_calls'
  | 'round'
  | 'large_message'
  | 'current_round'
  | 'prefix'
  | 'facts'
  | 'turns';

/**
 * A built-in tokenizer: exact `o200k_base` (in `autocontext` and `autocontext/full`) or
 * `cl100k_base` (in `autocontext/full`), or a fast estimate (in every build, and the default of
 * `autocontext/lite`).
 */
export type TokenizerName =
  | 'o200k_base'
  | 'cl100k_base'
  | 'estimate';
// end generated:names

/** The host's own synchronous token counter. */
export type TokenCounterFn = (text: string) => number;

/** Overrides of the instructions the LLM strategies send (blank means the default). */
export interface CustomPrompt {
  /** Compression of historical runs of tool exchanges. */
  previousRoundToolCompressPrompt?: string;
  /** Summary of a complete earlier round. */
  previousRoundSummaryPrompt?: string;
  /** Summary of one large message of the current round. */
  currentRoundLargeMessagePrompt?: string;
  /** Compression of the answered exchanges of the current round. */
  currentRoundCompressPrompt?: string;
  /** The rolling summary of rounds outside the focus window. */
  historyRollupPrompt?: string;
}

// generated:options (tests/generated.rs writes this part from src/options/mod.rs; edit it there)
/** The engine's options; every one is checked, and a wrong one fails with `INVALID_CONFIG`. */
export interface EngineOptions {
  /**
   * Wire format of the messages: OpenAI chat completions (`'openai'`), the Anthropic Messages
   * API (`'anthropic'`), the Vercel AI SDK's `ModelMessage` (`'ai-sdk'`), the OpenAI Responses
   * API's input items (`'openai-responses'`) or Gemini's `Content`s (`'gemini'`).
   *
   * The system prompt of Anthropic and Gemini stays your request's `system` parameter or
   * `config.systemInstruction`; the OpenAI Agents SDK's items are `'openai-responses'`.
   *
   * Default: `'openai'`.
   */
  format?: FormatName;
  /**
   * The model's context window in tokens.
   *
   * Default: 131072.
   */
  maxToken?: number;
  /**
   * Compress when tokens reach `maxToken × tokenRatio`.
   *
   * Default: 0.75.
   */
  tokenRatio?: number;
  /**
   * A pass that tokens trigger compacts down to `maxToken × targetRatio`, at most `tokenRatio`.
   *
   * Passes come rarely and each frees a lot: every pass makes the provider re-read the prompt
   * after its first edit at the cache-write price, so one deep pass costs less than many
   * shallow ones.
   *
   * Default: `tokenRatio / 4`.
   */
  targetRatio?: number;
  /**
   * Also compress when the working list has at least this many messages.
   *
   * Default: 100.
   */
  msgThreshold?: number;
  /**
   * The last messages the protected steps keep verbatim, widened to whole tool exchanges.
   *
   * Default: 50, at most half of `msgThreshold`.
   */
  lastKeep?: number;
  /**
   * A message whose text exceeds this many characters is "large".
   *
   * Default: 5120.
   */
  largePayloadThreshold?: number;
  /**
   * Characters of preview left in place of an offloaded message.
   *
   * Default: 200.
   */
  offloadSinglePreview?: number;
  /**
   * A tool result longer than this many characters keeps only its head and tail; the whole is
   * offloaded.
   *
   * A new one is cut before it is first sent, with the identifiers of the part cut, so it never
   * pays rent for what the model can reload. The default is measured: on the benchmark's
   * traces, from 10000 down to 2000 characters the bill falls by a tenth at every window while
   * the later-used identifiers in view stay (docs/benchmarks.md has the curve).
   *
   * Default: 2000.
   */
  toolResultLimit?: number;
  /**
   * Characters of one `context_reload` answer; longer reloads come in pages the model asks for
   * with the tool's `page` argument.
   *
   * A reload's answer is never truncated at arrival, whatever `toolResultLimit`.
   *
   * Default: 8000.
   */
  offloadReloadLimit?: number;
  /**
   * Historical runs of more tool messages than this are compressed together (step 5).
   *
   * Default: 6.
   */
  minConsecutiveToolMessages?: number;
  /**
   * Spans estimated below this many tokens are not worth an LLM summary.
   *
   * Default: 5000.
   */
  minCompressionTokenThreshold?: number;
  /**
   * Target length of the current round's compressions, as a share of the original.
   *
   * Default: 0.3.
   */
  currentRoundCompressionRatio?: number;
  /**
   * The focus-window rollup (step 4) keeps at least this many recent complete rounds.
   *
   * Default: 3.
   */
  historyRollupKeepRecentRounds?: number;
  /**
   * ... and at least this many recent tokens; both must hold.
   *
   * Default: 8000.
   */
  historyRollupKeepRecentTokens?: number;
  /**
   * Summarize calls of one pass that may run at once.
   *
   * Default: 4.
   */
  maxConcurrentSummaries?: number;
  /**
   * A summarize call still running after this many milliseconds is aborted.
   *
   * Default: 60000.
   */
  summarizeTimeoutMs?: number;
  /**
   * A store call (get, put, delete) still unanswered after this many milliseconds fails with
   * `STORE_FAILED`.
   *
   * The pass fails and changes nothing, a reload rejects: a store that never answers cannot
   * hold a pass or a reload forever. The JavaScript binding applies it; a native host's store
   * bounds its own calls.
   *
   * Default: 30000.
   */
  storeTimeoutMs?: number;
  /**
   * Tokens you send besides the messages (system prompt, tool schemas), counted against the
   * window.
   *
   * Default: 0.
   */
  reservedTokens?: number;
  /**
   * Namespace of this conversation's store keys (`<sessionId>/<uuid>`).
   *
   * 1–128 characters of `A–Z a–z 0–9 - _ . :`, neither beginning nor ending with `.` and
   * without `..`, so that every shipped store accepts it (the file system store makes it a
   * directory).
   *
   * Default: a new uuid.
   */
  sessionId?: string;
  /**
   * Your own instructions for the LLM steps, per step (a blank one keeps the default).
   *
   * Default: none.
   */
  customPrompt?: CustomPrompt;
  /**
   * A named ladder: `'agentscope'` (the progressive ladder), `'prefix-summary'` (one structured
   * summary of everything before a reserved recent tail), `'facts'` (facts per `concepts` in
   * place of the history) or `'turns'` (trim the oldest half of the turns).
   *
   * See docs/strategies.md for how they compare.
   *
   * Default: `'agentscope'`.
   */
  preset?: PresetName;
  /**
   * A ladder of your own, in order, instead of a preset: strategy names or event types
   * (`'tool-result-truncate'` or `'TOOL_RESULT_TRUNCATE'`).
   *
   * End it with `'emergency'` to keep the budget guaranteed.
   *
   * Default: none.
   */
  strategies?: readonly StrategyName[];
  /**
   * Share of the window the prefix summary and fact retrieval keep verbatim as recent messages,
   * besides what the protections keep.
   *
   * Default: 0.
   */
  reserveRatio?: number;
  /**
   * How the prefix summary's five fields are rendered: any text naming `{task_overview}`,
   * `{current_state}`, `{important_discoveries}`, `{next_steps}`, `{context_to_preserve}`.
   *
   * Default: five sections.
   */
  summaryTemplate?: string;
  /**
   * What fact retrieval extracts: `{ keyword, description, factType }`, one `facts` request per
   * concept.
   *
   * Default: `[]`.
   */
  concepts?: readonly Concept[];
  /**
   * The strategy fact retrieval falls back to when no concept yields a fact.
   *
   * Default: `'prefix-summary'`.
   */
  factsFallback?: StrategyName;
  /**
   * Turn trimming keeps at most this many turns besides the task.
   *
   * Default: 20.
   */
  maxContextTurns?: number;
  /**
   * `prepare()` works from this share of the window.
   *
   * Default: 4/5 of `tokenRatio` (0.6).
   */
  prepareRatio?: number;
  /**
   * Start `prepare()` in the background after `add` once usage passes `prepareRatio`.
   *
   * Native hosts call `prepare` themselves.
   *
   * Default: false.
   */
  prepareOnAdd?: boolean;
  /**
   * A pass triggered by tokens frees at least this many, so the provider's prompt cache is
   * invalidated only by compactions worth it.
   *
   * Default: 0.
   */
  minFreedTokens?: number;
  /**
   * What your provider bills per token, as multiples of the agent model's input price: `{
   * cacheRead, cacheWrite, cacheTtlMs, summarizeInput, summarizeOutput }`, each optional.
   *
   * A pass prices its edits with them: a token that stays pays `cacheRead` on every call, an
   * edit re-sends what follows it at `cacheWrite` once, a summary costs its input and output.
   * Defaults follow `format`: Anthropic (and the AI SDK) read 0.1, write 1.25 (give 2 with the
   * hour cache), output 5; OpenAI and Gemini read 0.1, write 1, output 6; the cache lives five
   * minutes (`cacheTtlMs` 300000).
   *
   * Default: per `format` (see docs/strategies.md).
   */
  prices?: Prices;
  /**
   * The model's latest final answer stays verbatim through every step: users ask about exactly
   * that answer.
   *
   * It yields only when the target cannot be reached otherwise, after the most recent round.
   *
   * Default: true.
   */
  protectLatestAnswer?: boolean;
  /**
   * The most recent completed round (the one the user's current question follows) stays
   * verbatim through every step.
   *
   * It yields only when the target cannot be reached otherwise, to the gentler steps before the
   * emergency one.
   *
   * Default: true.
   */
  protectLastRound?: boolean;
  /**
   * Tools whose exchanges no step replaces, not even truncation or the emergency step: their
   * calls and results stay verbatim (like Anthropic's `exclude_tools`).
   *
   * Default: `[]`.
   */
  pinnedTools?: readonly string[];
  /**
   * Characters of the identifier index every replacement that offloads carries: the exact
   * paths, names, ids and numbers it took out of view; 0 turns it off.
   *
   * They are ranked by how likely the agent needs them again (named by the user or a tool call,
   * repeated, recent), at most half of what the replacement frees and a twentieth of the
   * low-water mark.
   *
   * Default: 2000.
   */
  identifierIndexChars?: number;
  /**
   * The task, the first real user message, stays verbatim: no summary, rollup or trim takes it,
   * and `maxContextTurns` does not count it.
   *
   * Only when it alone keeps the request over the window does it keep its head and tail, the
   * whole one reload away.
   *
   * Default: true.
   */
  keepTask?: boolean;
  /**
   * Characters of one tool result a summary of history reads: a longer one goes to your
   * `summarize` as its head and tail; 0 sends every result whole.
   *
   * The whole stays one reload away, and the identifier index names what its middle held.
   *
   * Default: 2000.
   */
  summaryResultLimit?: number;
  /**
   * Summarize requests carry, as `messages`, your agent's own request byte for byte with the
   * instruction as its last user message (`request.fromCache` is true).
   *
   * Send them to the agent's model with its system prompt and tools, and the provider reads the
   * conversation from its prompt cache at the cached price instead of reading the span afresh.
   *
   * Default: false.
   */
  summarizeFromCache?: boolean;
}
// end generated:options

/**
 * What the provider bills per token, as multiples of the agent model's input price (option
 * `prices`). Each field is optional: the rest are the defaults of the memory's `format`
 * (Anthropic and the AI SDK: read 0.1, write 1.25, output 5; OpenAI and Gemini: read 0.1,
 * write 1, output 6; a five-minute cache).
 */
export interface Prices {
  /** A prompt token the provider's cache serves (0.1 for Anthropic, OpenAI's current models, Gemini). */
  cacheRead?: number;
  /** A prompt token after the cached prefix (Anthropic: 1.25 for the five-minute cache, 2 for the hour; OpenAI and Gemini: 1). */
  cacheWrite?: number;
  /** How long the cache lives after a call, in milliseconds (300000; 3600000 with Anthropic's hour cache). */
  cacheTtlMs?: number;
  /** An input token of a summarize call (1; less with a smaller summarizer model). */
  summarizeInput?: number;
  /** An output token of a summarize call (5 for Anthropic, 6 for OpenAI and Gemini). */
  summarizeOutput?: number;
}

/** A concept whose facts survive compression (fact retrieval). */
export interface Concept {
  /** Its name, as the restoration block shows it. */
  keyword: string;
  /** What it covers, for the summarizer. */
  description?: string;
  /** `'single'`: one current value; `'multiple'` (default): every fact found. */
  factType?: 'single' | 'multiple';
}

// generated:host-options (tests/generated.rs writes this part from src/options/mod.rs; edit it there)
/**
 * What the host supplies besides the engine's options: its functions, and where diagnostics go.
 * They never reach the engine.
 */
export interface HostOptions<M = AnyMessage> {
  /**
   * How tokens are counted: `'o200k_base'`, `'cl100k_base'` (in `autocontext/full`),
   * `'estimate'` (no vocabulary) or your own `(text) => number`.
   *
   * A built-in tokenizer the build lacks is an `INVALID_CONFIG` error naming the import that
   * has it.
   *
   * Default: `'o200k_base'` (`'estimate'` in `autocontext/lite`).
   */
  tokenizer?: TokenizerName | TokenCounterFn;
  /**
   * Your LLM call: `(request) => string | { text, usage? }`, sync or async; without it the LLM
   * steps are skipped.
   *
   * Default: none.
   */
  summarize?: SummarizeFn<M>;
  /**
   * Where the originals of replaced messages go.
   *
   * Default: a new `MemoryStore`.
   */
  store?: OffloadStore;
  /**
   * Called with every event as it happens: each pass and each change it made, every failed
   * summarize call and store call, refused usage reports, overflows (see Diagnostics).
   *
   * What it throws or rejects with is caught (and logged at `error`): it never breaks a pass.
   *
   * Default: none.
   */
  onEvent?: (event: AutoContextEvent) => unknown;
  /**
   * Where log lines go: `console`, or any object with `debug`, `info`, `warn` and `error`.
   *
   * Default: `console` once a level is set.
   */
  logger?: Logger;
  /**
   * How much is logged: `'debug'`, `'info'`, `'warn'`, `'error'` or `'off'`.
   *
   * Default: `AUTOCONTEXT_LOG`, else `'warn'` with a `logger`, else `'off'`.
   */
  logLevel?: LogLevel;
}
// end generated:host-options

/**
 * Options of {@link AutoContextMemory}: the engine's options plus the host's functions. `F` is
 * the `format` option and `M` its message type.
 */
export interface AutoContextOptions<F extends FormatName = FormatName, M = MessageFor<F>> extends EngineOptions, HostOptions<M> {
  /**
   * Wire format of the messages (default `'openai'`): OpenAI chat completions, the Anthropic
   * Messages API (`'anthropic'`; the system prompt stays your request's `system` parameter),
   * the Vercel AI SDK's `ModelMessage` (`'ai-sdk'`), the OpenAI Responses API's input items
   * (`'openai-responses'`), or Gemini's `Content`s (`'gemini'`). It types the memory's methods: `add`,
   * `messages()`, `reloadTool()`, `handleReloadCall` and the summarize requests take and give
   * this format's SDK types.
   */
  format?: F;
}

// generated:wire (tests/generated.rs writes this part from the serde types of src/; edit them there)
/** One change made by a compression pass (or one summarize call that failed). */
export interface CompressionEvent {
  /** The strategy's event type, e.g. `TOOL_RESULT_TRUNCATE`, or `SUMMARIZE_FAILED`. */
  type: string;
  /** When the pass committed, in milliseconds since the Unix epoch. */
  timestamp: number;
  /** Index in the working list (after the change) of the first message written. */
  index: number;
  /** Messages replaced. */
  messageCount: number;
  /** Messages written in their place. */
  replacementCount: number;
  /** Tokens of the replaced messages. */
  tokensBefore: number;
  /** Tokens of the messages written in their place. */
  tokensAfter: number;
  /** The offload holding the replaced originals. */
  offloadUuid?: string;
  /** Tokens the summarizer read, when it was called and reported them. */
  summarizeInputTokens?: number;
  /** Tokens the summarizer wrote, when it was called and reported them. */
  summarizeOutputTokens?: number;
  /** How long the summarizer took, in milliseconds, when it was called. */
  durationMs?: number;
  /** For `SUMMARIZE_FAILED`: which strategy's call failed and why. */
  error?: string;
}

/** What `compressIfNeeded` did. */
export interface CompressResult {
  /** Whether the working list changed. */
  compressed: boolean;
  /** Request tokens before the pass. */
  tokensBefore: number;
  /** Request tokens after the pass. */
  tokensAfter: number;
  /** Working messages before the pass. */
  messagesBefore: number;
  /** Working messages after the pass. */
  messagesAfter: number;
  /**
   * The target the pass had to get under: `maxToken × tokenRatio` in the estimate's units
   * (corrected by `observeUsage`); for `handleOverflow`, its own.
   */
  targetTokens: number;
  /**
   * Where the pass aimed: the low-water mark `maxToken × targetRatio` (calibrated the same
   * way), lowered so a token-triggered pass frees at least `minFreedTokens`. A pass stops above
   * it, still under the target, when what remains is protected. Equal to the target for a pass
   * of message-count pressure alone and for an overflow.
   */
  lowWaterTokens: number;
  /** Whether the request now fits under the target, in fewer than `msgThreshold` messages. */
  underTarget: boolean;
  /** Whether the pass stopped over the target because nothing more could be compressed. */
  exhausted: boolean;
  /**
   * Why a triggered pass could not reach the target (tokens, or the message count), if it could
   * not.
   */
  reason?: string;
  /** The changes made, in order. */
  events: CompressionEvent[];
  /** Summarize calls this pass made to the host. */
  summarizeCalls: number;
  /** Summaries this pass took from a preparation (`prepare`) instead of calling the host. */
  preparedUsed: number;
}

/** What `prepare` did. */
export interface PrepareResult {
  /** Whether a preparation ran (usage was past `prepareRatio` and none was running). */
  prepared: boolean;
  /** Summarize calls made to the host. */
  summarizeCalls: number;
  /** Requests already prepared by an earlier preparation (no call made). */
  reused: number;
  /** Prepared answers now waiting for the next pass. */
  ready: number;
  /** Request tokens when it ran (the estimate, before calibration). */
  tokens: number;
  /** The token count from which a preparation runs (`prepareRatio` of the window, calibrated). */
  prepareTokens: number;
  /** Why nothing was prepared, when nothing was. */
  reason?: string;
}

/** What `handleOverflow` did. */
export interface OverflowResult {
  /** Whether the error was recognized as "context too long". */
  overflow: boolean;
  /**
   * Whether sending the working list again can succeed (it is now shorter than what was
   * refused).
   */
  retry: boolean;
  /**
   * Who sent the error, as far as its shape tells: `'openai'`, `'anthropic'`, `'gemini'` or
   * `'openai-compatible'`.
   */
  provider?: string;
  /** The provider's input limit, when the error stated it. */
  limit?: number;
  /** What the provider counted, when the error stated it. */
  requested?: number;
  /** Request tokens (estimated) before the compaction. */
  tokensBefore: number;
  /** Request tokens (estimated) after the compaction. */
  tokensAfter: number;
  /** The target the compaction aimed for. */
  targetTokens: number;
  /** The changes made. */
  events: CompressionEvent[];
  /** Why no retry is advised, when it is not. */
  reason?: string;
}

/** What `observeUsage` reports. */
export interface UsageReport {
  /** The engine's estimate of the request. */
  estimatedTokens: number;
  /** What the provider counted. */
  promptTokens: number;
  /** What the provider served from its prompt cache, when reported. */
  cachedTokens?: number;
  /** `cachedTokens / promptTokens`, when reported. */
  cacheHitRatio?: number;
  /** `promptTokens − estimatedTokens`. */
  drift: number;
  /** `promptTokens / estimatedTokens − 1` (0.1: the provider counts 10% more). */
  driftRatio: number;
  /** The correction factor now in force (provider tokens per estimated token). */
  correction: number;
  /** Observations so far. */
  samples: number;
  /** The trigger (`maxToken × tokenRatio`) in the estimate's units, as passes now use it. */
  triggerTokens: number;
  /**
   * `accepted`; `clamped` when the report's ratio to the estimate was past what any tokenizer
   * or framing explains and only the plausible bound was folded in; `refused` when the provider
   * counted less than half the estimate (the usage of another call, output tokens, a cached
   * share) and nothing was folded in, the trigger left as it was.
   */
  status: UsageStatus;
  /** Why a report was clamped or refused, for people. */
  warning?: string;
}

/** What became of a usage report. */
export type UsageStatus = 'accepted' | 'clamped' | 'refused';

/** What a sweep deleted: the offloads this session wrote and abandoned. */
export interface SweepReport {
  /** The store keys deleted: offloads this session wrote and abandoned. */
  deleted: string[];
  /** Pending deletes that failed again; they stay pending (and in the state). */
  pending: string[];
}

/** An offload a session created, as its memory records it (and `compress()` returns it). */
export interface OffloadInfo {
  /** Its uuid. */
  uuid: string;
  /** How many messages it holds. */
  messageCount: number;
  /**
   * Digest of the payload written to the store: a reload whose store value differs fails with
   * `STORE_FAILED` instead of returning messages this session did not offload (absent in states
   * made before digests were kept).
   */
  digest?: string;
}

/** One reason a provider would reject a message list. */
export interface ValidationProblem {
  /** Index of the message at fault. */
  index: number;
  /**
   * Stable problem code: `ORPHAN_RESULT`, `MISSING_RESULT`, `DUPLICATE_RESULT` or
   * `DUPLICATE_CALL` (every format); `ROLES_NOT_ALTERNATING`, `TOOL_RESULT_NOT_FIRST`,
   * `THINKING_ONLY`, `EMPTY_CONTENT` or, for a request body, `FIRST_NOT_USER` (Anthropic);
   * `APPROVAL_WITHOUT_REQUEST` (AI SDK); `PART_TYPE_FOR_ROLE` or `REASONING_WITHOUT_FOLLOWER`
   * (Responses API); `CALL_NOT_AFTER_USER`, `THOUGHT_SIGNATURE_MISSING`, `EMPTY_CONTENT` or,
   * for a request body, `FIRST_NOT_USER` (Gemini); `INVALID_STATE` for a loaded memory whose
   * saved state holds a page that is not what its save wrote.
   */
  code: string;
  /** What is wrong, for people. */
  message: string;
}

/** The agent's current plan. */
export interface Plan {
  /** What the agent is trying to achieve. */
  goal: string;
  /** Its steps. */
  subtasks?: Subtask[];
  /** What done looks like. */
  expectedOutcome?: string;
}

/** One step of a `Plan`. */
export interface Subtask {
  /** The step. */
  name: string;
  /** Where the step stands. */
  state: SubtaskState;
}

/** The state of a `Subtask`. */
export type SubtaskState = 'todo' | 'in_progress' | 'done' | 'abandoned';
// end generated:wire

/** What JavaScript adds to a pass's result: the errors, as `Error` objects the engine's JSON cannot carry. */
export interface CompressResult {
  /**
   * One `SUMMARIZE_FAILED` error per summarize call of this pass that failed, in the order of
   * the `SUMMARIZE_FAILED` events. The pass went on without them (the span fell back to an
   * offload or stayed); `cause` is exactly what the summarize function threw or rejected with,
   * or the timeout error when it took longer than `summarizeTimeoutMs`. An empty or too long
   * summary has no `cause`.
   */
  errors: AutoContextError[];
}

/** What JavaScript adds to an overflow's answer. */
export interface OverflowResult {
  /** One `SUMMARIZE_FAILED` error per failed summarize call of the compaction. */
  errors: AutoContextError[];
}

/** What `memory.sweep()` does in JavaScript besides the engine's deletes. */
export interface SweepReport {
  /** Temporary files of killed writes the store removed (`FsStore.sweep`), relative to its directory. */
  temporary: string[];
  /**
   * Store keys deleted because no saved state reaches them: what a killed or refused writer of
   * the session left (a pass's offloads, a log chunk, a save's pages). Only with
   * `sweep({ sessions })`; empty otherwise.
   */
  orphans: string[];
  /** The revision the sweep saved as its fence (`sweep({ sessions })`); absent otherwise. */
  revision?: number;
}

/**
 * The provider's count of the last request: `{ promptTokens, cachedTokens? }`, or the usage
 * object of OpenAI (chat or responses), Anthropic, Gemini or the AI SDK as it comes.
 */
export type UsageInput =
  | { promptTokens: number; cachedTokens?: number | null }
  | OpenAIChatUsage
  | OpenAIResponsesUsage
  | AnthropicUsage
  | GeminiUsage
  | AiSdkUsage;

/** OpenAI chat completions' `completion.usage` (the fields read). */
export interface OpenAIChatUsage {
  prompt_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
}

/** OpenAI responses' `response.usage` (the fields read). */
export interface OpenAIResponsesUsage {
  input_tokens: number;
  input_tokens_details?: { cached_tokens?: number | null } | null;
}

/** Anthropic's `message.usage` (the fields read): the prompt is all three counts together. */
export interface AnthropicUsage {
  input_tokens: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** Gemini's `usageMetadata` (the fields read). */
export interface GeminiUsage {
  promptTokenCount?: number | null;
  cachedContentTokenCount?: number | null;
}

/** The AI SDK's `LanguageModelUsage` (the fields read). */
export interface AiSdkUsage {
  inputTokens: number | undefined;
  cachedInputTokens?: number | undefined;
  inputTokenDetails?: { cacheReadTokens?: number | undefined };
}

/** What the stateless {@link compress} returns. */
export interface CompressOutput<M = AnyMessage> extends CompressResult {
  /** The compressed list, ready to send. */
  messages: M[];
  /** The store holding the originals of what was replaced. */
  store: OffloadStore;
  /** The session id that prefixes the store keys. */
  sessionId: string;
  /** The offloads the pass wrote; give them to the standalone `reload` / `handleReloadCall` to have each payload checked against its digest. */
  offloads: OffloadInfo[];
}

/**
 * Options of the standalone `reload` and `handleReloadCall`: the options given to `compress()`
 * (`format` reads the call's shape and checks the payload's; `offloadReloadLimit` and
 * `toolResultLimit` size the pages; `storeTimeoutMs` bounds the store call), plus the offload
 * records it returned.
 */
export interface StandaloneReloadOptions<F extends FormatName = FormatName> extends EngineOptions, Omit<HostOptions<never>, 'summarize'> {
  /** The format of the offloaded messages and of the model's call (default: the one the payload names; `'openai'` for calls). */
  format?: F;
  /** What `compress()` returned as `offloads`: the uuid must be one of them and the payload must match its digest. */
  offloads?: readonly OffloadInfo[];
  /** Ignored here (the options given to `compress()` may carry it). */
  summarize?: unknown;
}

/** Options of {@link AutoContextMemory.add}. */
export interface AddOptions {
  /** Pin every message added: no step replaces it (default false). */
  pinned?: boolean;
}

/** Options of {@link validate}. */
export interface ValidateOptions {
  /**
   * Check the list as a complete request body: every tool call answered (the last exchange's
   * too) and, for Anthropic, the user's turn first. Default false: the last exchange's calls may
   * still wait for their results, as in a working list whose tools are running.
   */
  request?: boolean;
}

/** The versioned state {@link AutoContextMemory.toJSON} returns (plain JSON data). */
export interface MemoryState {
  /** State format version. */
  autocontext: number;
  /** The options in force. */
  config: Record<string, unknown>;
  /**
   * The version of the counting rules the token counts in `working` and `log` were made under:
   * a restore under the same rules (and a built-in tokenizer) reads them instead of counting
   * every message again.
   */
  counts?: number;
  /** The working list with the engine's marks and each message's token count. */
  working: unknown[];
  /**
   * Everything added: how many messages, the key of the newest chunk of them in the offload
   * store, and those not written there yet with their token counts.
   */
  log: { messages: number; head: string | null; tail: unknown[]; tokens?: number[] };
  /** The offloads created. */
  offloads: OffloadInfo[];
  /** The events so far. */
  events: CompressionEvent[];
  /**
   * The revision this state was last saved as (or loaded at) through a {@link SessionStore};
   * 0 or absent when never saved.
   */
  revision?: number;
  /** Offload uuids whose delete is pending (a failed pass's clean-up failed); see `sweep()`. */
  pending?: string[];
  /** Any further field a later version writes. */
  [field: string]: unknown;
}

/** How much the logger is told, from the most to nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'off';

/**
 * Where log lines go: `console`, or any object with some of its four methods (pino, winston
 * and most loggers fit). A missing method means that level is dropped.
 */
export interface Logger {
  /** Each pass's events one by one. */
  debug?(message: string, ...rest: unknown[]): void;
  /** A pass that changed the list. */
  info?(message: string, ...rest: unknown[]): void;
  /** A failed summary, a refused usage report, a pass over its target, an overflow. */
  warn?(message: string, ...rest: unknown[]): void;
  /** A failing store. */
  error?(message: string, ...rest: unknown[]): void;
}

/** What every event carries. */
interface EventBase {
  /** The memory's session id. */
  sessionId: string;
  /** The level the logger gets it at. */
  level: Exclude<LogLevel, 'off'>;
  /** One line for people (what the logger prints). */
  message: string;
}

/** A pass ran and changed the list, or could not reach its target. */
export interface PassEvent extends EventBase {
  /** Tells the events apart. */
  type: 'pass';
  /** Request tokens before the pass. */
  tokensBefore: number;
  /** Request tokens after it. */
  tokensAfter: number;
  /** The target it compressed towards. */
  targetTokens: number;
  /** Whether it reached the target (`level` is `'warn'` when not). */
  underTarget: boolean;
  /** The changes made, in order (each also comes as a `compression` event). */
  events: CompressionEvent[];
  /** Summarize calls the pass made. */
  summarizeCalls: number;
}

/** One change a pass committed. */
export interface CompressionNotice extends EventBase {
  /** Tells the events apart. */
  type: 'compression';
  /** The change, as `events()` lists it. */
  event: CompressionEvent;
}

/**
 * A summarize call failed: it threw or rejected (the host's error is `error.cause`), took
 * longer than `summarizeTimeoutMs`, or answered with nothing usable. Sent as it happens; the
 * pass goes on without that summary.
 */
export interface SummarizeFailedEvent extends EventBase {
  /** Tells the events apart. */
  type: 'summarize-failed';
  /** Which strategy asked, when known. */
  kind?: SummarizeKind;
  /** `SUMMARIZE_FAILED`, with what the summarize function threw as its `cause`. */
  error: AutoContextError;
}

/** A store call failed or timed out. The pass (or reload) that made it fails and changes nothing. */
export interface StoreFailedEvent extends EventBase {
  /** Tells the events apart. */
  type: 'store-failed';
  /** Which call. */
  operation: 'get' | 'put' | 'delete';
  /** Its key. */
  key: string;
  /** `STORE_FAILED`, with what the store threw as its `cause`. */
  error: AutoContextError;
}

/** `observeUsage` got a report it refused or clamped (see `UsageReport.status`). */
export interface UsageEvent extends EventBase {
  /** Tells the events apart. */
  type: 'usage-refused' | 'usage-clamped';
  /** The report `observeUsage` returned. */
  report: UsageReport;
}

/** `handleOverflow` read a "context too long" error and compacted. */
export interface OverflowEvent extends EventBase {
  /** Tells the events apart. */
  type: 'overflow';
  /** Whether sending again can succeed. */
  retry: boolean;
  /** Request tokens (estimated) before the compaction. */
  tokensBefore: number;
  /** Request tokens (estimated) after it. */
  tokensAfter: number;
}

/** Everything `onEvent` receives, told apart by `type`. */
export type AutoContextEvent = PassEvent | CompressionNotice | SummarizeFailedEvent | StoreFailedEvent | UsageEvent | OverflowEvent;

/** The diagnostics options, JavaScript only (they never reach the engine). */
export type DiagnosticsOptions = Pick<HostOptions, 'onEvent' | 'logger' | 'logLevel'>;
