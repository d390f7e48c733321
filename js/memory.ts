/**
 * `AutoContextMemory`: the context memory of one conversation, a class over the WebAssembly
 * engine. It holds the engine's memory and the host's pieces, shares one running pass between
 * callers, and saves and loads the state through a session store.
 *
 * @module
 */

import { WasmMemory } from './wasm/autocontext.js';
import { assemble, notAPage, paginate, writerName, type PageIndex } from './saved-pages.js';
import { AutoContextError, call, callAsync, describe, fromWasm, invalidArgument, isAutoContextError } from './errors.js';
import { checkDiagnostics, count, Diagnostics } from './diagnostics.js';
import { configError, errorJson, makeHost, splitOptions, toJson } from './host.js';
import { findLoneSurrogate } from './lone-surrogate.js';
import { checkSaved, checkSessionId } from './session-store.js';
import { DEFAULT_STORE_TIMEOUT_MS } from './timed-store.js';
import { wireReplacer } from './wire.js';
import type {
  AddOptions,
  Awaitable,
  AutoContextOptions,
  CompressResult,
  CompressionEvent,
  FormatName,
  HostOptions,
  MemoryState,
  MessageFor,
  OffloadInfo,
  OffloadStore,
  OverflowResult,
  Plan,
  PrepareResult,
  ReloadCallFor,
  ReloadToolFor,
  SessionStore,
  SweepOptions,
  SweepReport,
  UsageInput,
  UsageReport,
  ValidationProblem,
} from './types.js';

/** Whether `add` pins what it adds: `{ pinned?: boolean }`, checked. */
function readAddOptions(options: unknown): boolean {
  if (options === undefined) return false;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new AutoContextError('INVALID_ARGUMENT', `add's options must be an object like { pinned: true }, got ${describe(options)}`, {
      field: 'options',
    });
  }
  const { pinned } = options as { pinned?: unknown };
  if (pinned !== undefined && typeof pinned !== 'boolean') {
    throw new AutoContextError('INVALID_ARGUMENT', `option \`pinned\` must be true or false, got ${describe(pinned)}`, { field: 'pinned' });
  }
  return pinned === true;
}

/** A working-list index, checked. */
function workingIndex(index: unknown): number {
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > 0xffff_ffff) {
    throw new AutoContextError('INVALID_ARGUMENT', `index must be a non-negative integer, got ${describe(index)}`, { field: 'index' });
  }
  return index;
}

let restoring: { wasm: WasmMemory; store: OffloadStore; diag: Diagnostics; revision: number; made: MadeLater } | null = null;

/** What the host's pieces read of the engine they serve (see {@link madeLater}). */
type MadeLater = ReturnType<typeof madeLater>;

/**
 * What the host's pieces read of the engine they serve, its session id (for events) and its
 * store timeout: the defaults until it is made, then its own. The engine holds those pieces, so
 * they hold its wrapper weakly: a strong reference would make the wrapper reachable from the
 * engine itself, and it would never be collected, nor the engine freed by the wrapper's
 * finalizer (a Worker restoring its session on every request grew its WebAssembly memory by the
 * state's size at each one, and paid for growing it). The values are read once when it is made,
 * for a call that comes after the wrapper was collected (from a pass still running).
 */
function madeLater(): { sessionId: () => string; storeTimeoutMs: () => number; is: (wasm: WasmMemory) => WasmMemory; forget: () => void } {
  let ref: { deref(): WasmMemory | undefined } | undefined;
  let sessionId = '';
  let storeTimeoutMs = DEFAULT_STORE_TIMEOUT_MS;
  return {
    sessionId: () => ref?.deref()?.sessionId() ?? sessionId,
    storeTimeoutMs: () => ref?.deref()?.storeTimeoutMs() ?? storeTimeoutMs,
    is: (wasm) => {
      sessionId = wasm.sessionId();
      storeTimeoutMs = wasm.storeTimeoutMs();
      ref = typeof WeakRef === 'function' ? new WeakRef(wasm) : { deref: () => wasm };
      return wasm;
    },
    // Disposed: the values read last stand (a pass still running may report after it).
    forget: () => {
      ref = undefined;
    },
  };
}

/**
 * The engine of a disposed memory: any use of it throws, in the package's own words, where
 * the freed engine would throw wasm-bindgen's.
 */
const DISPOSED = new Proxy({} as WasmMemory, {
  get() {
    throw new AutoContextError('INVALID_STATE', 'this memory was disposed (dispose()); load the session again or make a new memory');
  },
});

/** Disposes of a memory (for `compress()`, whose memory nobody else sees). */
export let release: (memory: AutoContextMemory<FormatName, never>) => void;
/** Marks a memory as living for one pass (for `compress()`): nobody reads its log back, so none is written. */
export let oneShot: (memory: AutoContextMemory<FormatName, never>) => void;

/**
 * The context memory of one conversation: the working list the model sees, the append-only log
 * of everything added, and the offloaded originals in the host's store.
 *
 * `F` is the `format` option, which TypeScript infers from the options: it types the messages
 * the memory takes and gives (`new AutoContextMemory({ format: 'anthropic' })` takes and gives
 * Anthropic `MessageParam`s), its reload tool and the calls {@link handleReloadCall} takes.
 * `M` overrides the message type, for hosts that keep messages in a type of their own.
 */
export class AutoContextMemory<F extends FormatName = 'openai', M extends object = MessageFor<F>> {
  #wasm: WasmMemory;
  readonly #store: OffloadStore;
  readonly #diag: Diagnostics;
  readonly #made: MadeLater;
  #pending: Promise<CompressResult> | null = null;
  #preparing: Promise<PrepareResult> | null = null;
  #revision = 0;
  /**
   * The working list as last read from the engine, and the engine's version of it; after the
   * first read, the text it was parsed from (the parsed list went to the caller).
   */
  #view: { version: number; list: M[] | string } | null = null;
  #saving = false;
  /** The sweep running (`sweep({ sessions })`): passes and flushes wait for it. */
  #sweeping: Promise<unknown> | null = null;
  /** The pages of the last save or load (a page's text → its key), and this writer's name for new ones. */
  #pages: PageIndex = new Map();
  /**
   * The pages' texts the engine knows this memory holds, in its order: those the memory was
   * loaded from, then those of the last cut for a save (`toJsonPages` names one of them by its
   * place instead of sending its text again).
   */
  #held: string[] = [];
  #writer: string | undefined;
  #pageCount = 0;

  static {
    release = (memory) => memory.dispose();
    oneShot = (memory) => memory.#wasm.oneShot();
  }

  /**
   * A memory for one conversation.
   *
   * @param options - the engine's options plus `summarize` (the host's LLM call), `store`
   *   (where originals go; default a new {@link MemoryStore}) and `tokenizer`.
   * @throws {@link AutoContextError} `INVALID_CONFIG` naming the option at fault.
   */
  constructor(options: AutoContextOptions<F, NoInfer<M>> = {}) {
    if (restoring !== null) {
      ({ wasm: this.#wasm, store: this.#store, diag: this.#diag, revision: this.#revision, made: this.#made } = restoring);
      restoring = null;
      return;
    }
    const { json, host } = splitOptions(options);
    const made = madeLater();
    const diag = new Diagnostics(host, made.sessionId);
    const { wasm, store } = makeHost(host, made.storeTimeoutMs, diag);
    this.#store = store;
    this.#diag = diag;
    this.#made = made;
    this.#wasm = made.is(call(() => new WasmMemory(json, wasm)));
  }

  /**
   * Restores a memory from {@link AutoContextMemory.toJSON} output. The store must be the one
   * holding this session's offloads for reloads to work; pass the same tokenizer function if
   * the memory was made with one.
   *
   * @throws {@link AutoContextError} `INVALID_STATE` when the state is not a valid one.
   */
  static fromJSON<F extends FormatName = 'openai', M extends object = MessageFor<F>>(
    state: MemoryState | string,
    host: HostOptions<NoInfer<M>> = {},
  ): AutoContextMemory<F, M> {
    const text = typeof state === 'string' ? state : toJson(state, 'INVALID_STATE', 'state');
    return AutoContextMemory.#restore<F, M>(
      host,
      () => {
        try {
          return (JSON.parse(text) as MemoryState)?.config?.tokenizer;
        } catch {
          return undefined; // the engine reports the bad state
        }
      },
      (wasmHost) => WasmMemory.fromJson(text, wasmHost),
      () => revisionOf(text),
    );
  }

  /**
   * A memory restored by `make` with the host's pieces. `tokenizer` reads the tokenizer the
   * state was made with (only when the host names one, to compare), `revision` the state's
   * revision once the engine took the state.
   */
  static #restore<F extends FormatName, M extends object>(
    host: HostOptions<NoInfer<M>>,
    tokenizer: () => unknown,
    make: (wasmHost: ReturnType<typeof makeHost>['wasm']) => WasmMemory,
    revision: () => number,
  ): AutoContextMemory<F, M> {
    if (host === null || typeof host !== 'object') {
      throw new AutoContextError('INVALID_CONFIG', `fromJSON's second argument must be an object, got ${describe(host)}`);
    }
    if (typeof host.tokenizer === 'string') {
      const made = tokenizer();
      if (typeof made === 'string' && made !== host.tokenizer) {
        throw configError('tokenizer', `is ${JSON.stringify(host.tokenizer)}, but the state was made with ${JSON.stringify(made)}`);
      }
    }
    checkDiagnostics(host, configError);
    const made = madeLater();
    const diag = new Diagnostics(host, made.sessionId);
    const { wasm: wasmHost, store } = makeHost(host as HostOptions<never>, made.storeTimeoutMs, diag);
    const wasm = made.is(call(() => make(wasmHost)));
    try {
      restoring = { wasm, store, diag, revision: revision(), made };
    } catch (e) {
      wasm.free();
      throw e;
    }
    return new AutoContextMemory<F, M>();
  }

  /**
   * Restores the session `sessionId` from where {@link AutoContextMemory.save} put it, or
   * returns `null` when it was never saved. The memory keeps the revision it loaded, so its next
   * save is refused with `CONFLICT` if another writer saved the session in between.
   *
   * ```js
   * const memory = (await AutoContextMemory.load(sessions, 'chat-1', { store, summarize }))
   *   ?? new AutoContextMemory({ sessionId: 'chat-1', store, summarize });
   * memory.add(turn);
   * await memory.compressIfNeeded();
   * await memory.save(sessions); // CONFLICT if another writer saved chat-1 since the load
   * ```
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` for a malformed session id or a
   *   session store without `load` and `save`; `INVALID_STATE` when the saved state is not a
   *   valid one or belongs to another session id; `STORE_FAILED` when the session store fails.
   */
  static async load<F extends FormatName = 'openai', M extends object = MessageFor<F>>(
    sessions: SessionStore,
    sessionId: string,
    host: HostOptions<NoInfer<M>> = {},
  ): Promise<AutoContextMemory<F, M> | null> {
    checkSessionStore(sessions);
    checkSessionId(sessionId);
    const saved = await sessions.load(sessionId);
    if (saved === null || saved === undefined) return null;
    const { revision, state: text } = checkSaved(saved);
    const store = host?.store;
    const paged = await assemble(text, sessionId, async (key) => (store === undefined ? undefined : store.get(key)));
    let memory: AutoContextMemory<F, M>;
    if (paged === null) {
      memory = AutoContextMemory.fromJSON<F, M>(text, host);
    } else {
      // The engine parses the head and each page where it restores them: the state is never
      // assembled into one text, nor parsed here but for its head, which goes to the engine as
      // it was saved (the engine drops the page names and fills the paged lists from the pages).
      const { head, counts, pages, keys } = paged;
      memory = AutoContextMemory.#restore<F, M>(
        host,
        () => (head.config as MemoryState['config'] | undefined)?.tokenizer,
        (wasmHost) => {
          try {
            return WasmMemory.fromPages(text, new Uint32Array(counts), pages, wasmHost);
          } catch (e) {
            const { code, field, index: at } = e as { code?: unknown; field?: unknown; index?: unknown };
            if (code === 'STORE_FAILED' && field === 'page' && typeof at === 'number') throw notAPage(keys[at] as string, pages[at]);
            throw e;
          }
        },
        () => checkRevision(head.revision),
      );
      memory.#pages = paged.index;
      memory.#held = paged.pages;
    }
    const id = memory.sessionId;
    if (id !== sessionId) {
      release(memory as never);
      throw new AutoContextError('INVALID_STATE', `the state saved as session ${JSON.stringify(sessionId)} is session ${JSON.stringify(id)}'s`);
    }
    memory.#revision = revision;
    return memory;
  }

  /**
   * Saves this memory's state to `sessions` as the next revision, and returns it. The save is
   * refused, and nothing written, when another writer saved the session since this memory was
   * loaded or last saved: one writer per session. Wait for a running pass first (a save during
   * one would store the state from before it).
   *
   * Saves are incremental. The session store gets the state's head (a few kilobytes); the
   * working list, the offload index and the events go to the offload store in pages of 32
   * (`<sessionId>/state-<writer>-<n>`), and a page an earlier save wrote is named again, not
   * written again, so a save after a turn writes what the turn changed. The log's tail is flushed
   * first. Pages only the previous save named are deleted once this one commits; a refused save
   * deletes the pages it wrote. {@link AutoContextMemory.load} reads them back.
   *
   * @throws {@link AutoContextError} `CONFLICT` for a stale revision (load the session again
   *   and redo the turn on it); `LIMIT_EXCEEDED` while a pass or another save of this memory
   *   runs; `STORE_FAILED` (or the session store's own error) when the session store or the
   *   offload store fails.
   */
  async save(sessions: SessionStore): Promise<number> {
    checkSessionStore(sessions);
    if (this.#sweeping !== null) throw new AutoContextError('LIMIT_EXCEEDED', 'a sweep of this memory is running (it saves); await it first');
    return this.#save(sessions);
  }

  async #save(sessions: SessionStore): Promise<number> {
    if (this.#pending !== null) throw new AutoContextError('LIMIT_EXCEEDED', 'a compression pass is running on this memory; await it, then save');
    if (this.#saving) throw new AutoContextError('LIMIT_EXCEEDED', 'a save of this memory is running; await it first');
    this.#saving = true;
    try {
      // The log's tail goes to the offload store first, so the saved state is the size of the
      // working list; if that fails, the tail is saved in the state instead (nothing is lost).
      await callAsync(() => this.#wasm.flush(true)).catch(() => 0);
      const revision = this.#revision + 1;
      // The head goes to the session store; the pages of the long lists to the offload store,
      // only those no earlier save wrote (see saved-pages.ts).
      this.#writer ??= writerName();
      const prefix = `${this.sessionId}/state-${this.#writer}-`;
      const { head, fresh, index } = paginate(this.#cut(), revision, this.#pages, () => `${prefix}${this.#pageCount++}`);
      const written: string[] = [];
      try {
        for (const page of fresh) {
          written.push(page.key);
          await this.#store.put(page.key, page.text);
        }
      } catch (e) {
        await this.#removeQuietly(written);
        throw new AutoContextError('STORE_FAILED', 'the offload store failed to put a page of the saved state; nothing was saved', { cause: e });
      }
      try {
        await sessions.save(this.sessionId, { revision, state: head });
      } catch (e) {
        await this.#removeQuietly(written);
        throw e;
      }
      const named = new Set(index.values());
      const superseded = [...this.#pages.values()].filter((k) => !named.has(k));
      this.#pages = index;
      this.#revision = revision;
      await this.#removeQuietly(superseded);
      return revision;
    } finally {
      this.#saving = false;
    }
  }

  /** The state cut for a save (`[head, counts, pages...]`, see `toJsonPages`), every page as text. */
  #cut(): string[] {
    const cut = this.#wasm.toJsonPages();
    const held = this.#held;
    for (let i = 2; i < cut.length; i++) {
      const page = cut[i];
      if (typeof page === 'number') cut[i] = held[page] as string;
    }
    this.#held = cut.slice(2) as string[];
    return cut as string[];
  }

  /** Deletes store keys one after another: those deleted, and what each failed delete threw. */
  async #remove(keys: readonly string[]): Promise<{ deleted: string[]; failed: unknown[] }> {
    const deleted: string[] = [];
    const failed: unknown[] = [];
    for (const key of keys) {
      try {
        await this.#store.delete(key);
        deleted.push(key);
      } catch (e) {
        failed.push(e);
      }
    }
    return { deleted, failed };
  }

  /** Deletes store keys, ignoring failures (a page left behind is never read again). */
  async #removeQuietly(keys: readonly string[]): Promise<void> {
    await this.#remove(keys);
  }

  /** Resolves once no sweep of this memory runs (passes and flushes wait for one). */
  async #afterSweep(): Promise<void> {
    while (this.#sweeping !== null) await this.#sweeping.catch(() => undefined);
  }

  /**
   * Deletes what this session wrote and abandoned, and nothing else: the offloads of passes that
   * failed or were dropped and whose own clean-up failed (pending deletes, kept in the state so a
   * restored memory still knows them; the next pass retries them too), and the temporary files a
   * killed write left in the store when it can tell them (`FsStore.sweep`).
   *
   * With `{ sessions }` (the session store this session is saved in) it also deletes what a
   * killed or refused writer left, which no state names: a pass's offloads, a log chunk, a save's
   * pages. It lists the session's keys (the offload store needs `keys(prefix)`), saves this
   * memory as the next revision, and deletes the listed keys that the saved state does not
   * reach. The save is a fence: a writer that loaded an earlier revision can no longer save
   * (`CONFLICT`), so what it wrote is abandoned, and a writer that loads the new revision writes
   * keys the listing did not hold (uuids are random; chunk and page keys name their writer). It
   * never deletes a key of a state that can still be saved, so it is safe with other writers on
   * the session as long as all of them save through `sessions`. Passes and flushes of this memory
   * wait for it.
   *
   * @throws {@link AutoContextError} `CONFLICT` when another writer saved the session since this
   *   memory loaded (nothing more is deleted; load it again); `INVALID_ARGUMENT` when `sessions`
   *   is given and the offload store cannot list its keys; `LIMIT_EXCEEDED` while a save or
   *   another sweep of this memory runs; `STORE_FAILED` when a store fails.
   */
  async sweep(options: SweepOptions = {}): Promise<SweepReport> {
    if (options === null || typeof options !== 'object') throw invalidArgument('options', `sweep options must be an object { sessions? }, got ${describe(options)}`);
    const { sessions } = options;
    if (sessions !== undefined) {
      checkSessionStore(sessions);
      if (typeof (this.#store as { keys?: unknown }).keys !== 'function') {
        throw invalidArgument(
          'store',
          "the offload store has no keys(prefix), so the sweep cannot list what a killed writer left; every store of 'autocontext/stores/*' has it",
        );
      }
      if (this.#sweeping !== null) throw new AutoContextError('LIMIT_EXCEEDED', 'a sweep of this memory is running; await it first');
      if (this.#saving) throw new AutoContextError('LIMIT_EXCEEDED', 'a save of this memory is running; await it, then sweep');
    }
    const run = this.#sweep(sessions);
    if (sessions !== undefined) {
      this.#sweeping = run;
      const done = () => {
        if (this.#sweeping === run) this.#sweeping = null;
      };
      run.then(done, done);
    }
    return run;
  }

  async #sweep(sessions: SessionStore | undefined): Promise<SweepReport> {
    if (sessions !== undefined && this.#pending !== null) await this.#pending.catch(() => undefined);
    const report = JSON.parse(await callAsync(() => this.#wasm.sweepPending())) as Pick<SweepReport, 'deleted' | 'pending'>;
    const store = this.#store as OffloadStore & { sweep?: (prefix: string) => Promise<string[]>; keys?: (prefix: string) => Awaitable<string[]> };
    let temporary: string[] = [];
    if (typeof store.sweep === 'function') {
      try {
        temporary = await store.sweep(`${this.sessionId}/`);
      } catch (e) {
        throw new AutoContextError('STORE_FAILED', 'the offload store failed to sweep its temporary files', { cause: e });
      }
    }
    if (sessions === undefined) return { ...report, temporary, orphans: [] };
    // 1. What the store holds of this session now. Keys written after this are never candidates.
    let listed: unknown;
    try {
      listed = await (store.keys as (prefix: string) => Awaitable<unknown>)(`${this.sessionId}/`);
    } catch (e) {
      throw new AutoContextError('STORE_FAILED', "the offload store failed to list the session's keys", { cause: e });
    }
    if (!Array.isArray(listed) || !listed.every((k) => typeof k === 'string')) {
      throw new AutoContextError('STORE_FAILED', `the offload store's keys(prefix) must resolve to an array of strings, got ${describe(listed)}; nothing was deleted`);
    }
    const keys = listed as string[];
    // 2. The fence: once this revision is saved, no writer that loaded an earlier one can save.
    const revision = await this.#save(sessions);
    // 3. What the saved state reaches, and the listed keys it does not: the engine's shapes only.
    const reached = new Set(JSON.parse(await callAsync(() => this.#wasm.reachableKeys(JSON.stringify(keys)))) as string[]);
    for (const page of this.#pages.values()) reached.add(page);
    const stillPending = new Set(report.pending);
    const shape = orphanShape(this.sessionId);
    const orphans = keys.filter((k) => shape.test(k) && !reached.has(k) && !stillPending.has(k));
    const { deleted, failed } = await this.#remove(orphans);
    if (failed.length > 0) {
      throw new AutoContextError('STORE_FAILED', `the offload store failed to delete ${failed.length} of ${orphans.length} keys no saved state reaches; sweep again to retry`, {
        cause: failed[0],
      });
    }
    return { ...report, temporary, orphans: deleted, revision };
  }

  /**
   * The revision this memory was last saved as or loaded at ({@link AutoContextMemory.save});
   * 0 when it never was.
   */
  get revision(): number {
    return this.#revision;
  }

  /**
   * Adds one message or an array of them, in the memory's wire format. All or nothing: if any
   * message is invalid (bad shape, a tool result that answers no call, a reused call id),
   * nothing is added. With `{ pinned: true }` every message added is pinned (see
   * {@link AutoContextMemory.pin}).
   *
   * @throws {@link AutoContextError} `INVALID_MESSAGE` with the message's `index` and `field`;
   *   `INVALID_ARGUMENT` for malformed options.
   */
  add(message: M | readonly M[], options?: AddOptions): void {
    const pinned = readAddOptions(options);
    const json = toJson(message, 'INVALID_MESSAGE', 'messages', wireReplacer);
    try {
      call(() => this.#wasm.add(json, pinned));
    } catch (e) {
      // JSON.stringify writes valid JSON except for lone surrogates, which the engine's strings
      // cannot hold; it cannot tell where one was, so name the message here.
      const lone = isAutoContextError(e, 'INVALID_MESSAGE') && /not valid JSON/.test(e.message) ? findLoneSurrogate(message) : null;
      if (lone === null) throw e;
      const index = this.#wasm.historyLength() + lone.position;
      throw new AutoContextError(
        'INVALID_MESSAGE',
        `message ${index}, field \`${lone.field}\`: holds a lone UTF-16 surrogate (half of a character), which no wire format can carry; nothing was added`,
        { index, field: lone.field },
      );
    }
    // With `prepareOnAdd`, the summaries the next pass needs are prepared in the background;
    // a failure there only means the pass summarizes for itself.
    if (this.#wasm.shouldPrepare()) this.prepare().catch(() => undefined);
  }

  /**
   * Pins working message `index` (an index of {@link AutoContextMemory.messages}): no step
   * replaces it, not even the emergency one, so it stays exactly as you added it. The pin is kept
   * in {@link AutoContextMemory.toJSON}'s state, never in the message. Indices move when a pass
   * replaces earlier messages; {@link AutoContextMemory.pinned} says where pinned messages are.
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` for an index outside the working list;
   *   `LIMIT_EXCEEDED` while a pass runs (pin after it).
   */
  pin(index: number): void {
    const at = workingIndex(index);
    call(() => this.#wasm.pin(at));
  }

  /**
   * Unpins working message `index`.
   *
   * @throws {@link AutoContextError} like {@link AutoContextMemory.pin}.
   */
  unpin(index: number): void {
    const at = workingIndex(index);
    call(() => this.#wasm.unpin(at));
  }

  /** The indices of the pinned working messages, in order. */
  pinned(): number[] {
    return JSON.parse(this.#wasm.pinned()) as number[];
  }

  /**
   * Prepares, off the request path, the summaries the next pass will need: once usage passes
   * `prepareRatio` of the window, the ladder runs on a snapshot as the pass will, without
   * changing anything, and the host's answers are kept. The next
   * {@link AutoContextMemory.compressIfNeeded} uses them for every span that is unchanged, so
   * it does not wait for the host, and summarizes afresh what changed. Call it right after
   * sending a request, while the model thinks (or set `prepareOnAdd`). A call made while a
   * preparation runs returns that same preparation.
   */
  prepare(): Promise<PrepareResult> {
    if (this.#preparing !== null) return this.#preparing;
    const run = callAsync(() => this.#wasm.prepare()).then((text) => JSON.parse(text) as PrepareResult);
    this.#preparing = run;
    const done = () => {
      if (this.#preparing === run) this.#preparing = null;
    };
    run.then(done, done);
    return run;
  }

  /**
   * Handles an error the provider returned for the working list. When it is a "context too
   * long" error (OpenAI's `context_length_exceeded`, Anthropic's "prompt is too long",
   * Gemini's "input token count ... exceeds", OpenAI-compatible servers' wordings), the
   * provider's numbers calibrate the estimate, the list is compacted well below the target,
   * and `retry` says whether sending it again can succeed. Any other error is left alone
   * (`overflow: false`). Pass the error as caught: an SDK error object, a response body, or
   * its message.
   */
  async handleOverflow(error: unknown): Promise<OverflowResult> {
    await this.#afterSweep();
    if (this.#pending !== null) await this.#pending.catch(() => undefined);
    const json = errorJson(error);
    const { result, errors } = await callAsync(() => this.#wasm.handleOverflow(json));
    const out = JSON.parse(result) as OverflowResult;
    out.errors = errors.map((e) => fromWasm(e) as AutoContextError);
    if (out.overflow && this.#diag.active) {
      this.#reportPass(out.events, out.errors);
      const message =
        `the provider refused the request as too long (${out.provider ?? 'unknown provider'}); compacted ` +
        `${count(out.tokensBefore)} -> ${count(out.tokensAfter)} tokens; ${out.retry ? 'retry' : `no retry: ${out.reason ?? ''}`}`;
      this.#diag.emit({ type: 'overflow', level: 'warn', retry: out.retry, tokensBefore: out.tokensBefore, tokensAfter: out.tokensAfter, message });
    }
    return out;
  }

  /**
   * Reports what the provider counted for the last request (call it after the model call,
   * before adding the reply): `{ promptTokens, cachedTokens }`, or the provider's usage
   * object as it comes (OpenAI, Anthropic, Gemini, AI SDK). The ratio to the engine's
   * estimate, smoothed over calls, corrects the trigger; the report gives the drift and the
   * share of the prompt served from the provider's cache. A response without usage
   * (`completion.usage` is optional in the OpenAI SDK) observes nothing: `undefined` or `null`
   * returns `undefined`.
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` naming the field.
   */
  observeUsage(usage: UsageInput): UsageReport;
  observeUsage(usage: UsageInput | null | undefined): UsageReport | undefined;
  observeUsage(usage: UsageInput | null | undefined): UsageReport | undefined {
    if (usage === undefined || usage === null) return undefined;
    const json = toJson(usage, 'INVALID_ARGUMENT', 'usage');
    const report = JSON.parse(call(() => this.#wasm.observeUsage(json))) as UsageReport;
    if (report.status !== 'accepted') {
      this.#diag.emit({ type: report.status === 'refused' ? 'usage-refused' : 'usage-clamped', level: 'warn', report, message: report.warning ?? report.status });
    }
    return report;
  }

  /**
   * Runs a compression pass if the working list is over `msgThreshold` messages or
   * `maxToken × tokenRatio` tokens. A call made while a pass runs returns that same pass.
   * A failing summarize function does not reject the pass: its span falls back to an offload,
   * and `result.errors` holds one `SUMMARIZE_FAILED` error per failed call, whose `cause` is
   * what the function threw.
   */
  compressIfNeeded(): Promise<CompressResult> {
    if (this.#pending !== null) return this.#pending;
    if (this.#sweeping !== null) return this.#afterSweep().then(() => this.compressIfNeeded());
    const pass = callAsync(() => this.#wasm.compressIfNeeded()).then(({ result, errors }) => {
      const out = JSON.parse(result) as CompressResult;
      out.errors = errors.map((e) => fromWasm(e) as AutoContextError);
      if (this.#diag.active && (out.events.length > 0 || !out.underTarget)) {
        this.#reportPass(out.events, out.errors);
        const what = out.underTarget ? '' : `; over the target: ${out.reason ?? ''}`;
        const changes = out.events.filter((e) => e.type !== 'SUMMARIZE_FAILED').length;
        this.#diag.emit({
          type: 'pass',
          level: out.underTarget ? 'info' : 'warn',
          tokensBefore: out.tokensBefore,
          tokensAfter: out.tokensAfter,
          targetTokens: out.targetTokens,
          underTarget: out.underTarget,
          events: out.events,
          summarizeCalls: out.summarizeCalls,
          message:
            `pass: ${count(out.tokensBefore)} -> ${count(out.tokensAfter)} tokens (target ${count(out.targetTokens)}), ` +
            `${changes} change${changes === 1 ? '' : 's'}, ${out.summarizeCalls} summarize call${out.summarizeCalls === 1 ? '' : 's'}${what}`,
        });
      }
      return out;
    });
    this.#pending = pass;
    const done = () => {
      if (this.#pending === pass) this.#pending = null;
    };
    pass.then(done, done);
    return pass;
  }

  /**
   * Sends a committed pass's changes as `compression` events, and its failed summaries that
   * threw nothing (an empty or too long answer: those that threw were sent as they happened).
   */
  #reportPass(events: readonly CompressionEvent[], errors: readonly AutoContextError[]): void {
    let failure = 0;
    for (const event of events) {
      if (event.type === 'SUMMARIZE_FAILED') {
        const error = errors[failure++];
        if (error !== undefined && error.cause === undefined) {
          this.#diag.emit({ type: 'summarize-failed', level: 'warn', error, message: error.message });
        }
        continue;
      }
      const offload = event.offloadUuid === undefined ? '' : `, offload ${event.offloadUuid}`;
      this.#diag.emit({
        type: 'compression',
        level: 'debug',
        event,
        message: `${event.type}: ${event.messageCount} message${event.messageCount === 1 ? '' : 's'} at ${event.index}, ${count(event.tokensBefore)} -> ${count(event.tokensAfter)} tokens${offload}`,
      });
    }
  }

  /** The working list, ready to send (a fresh copy each call). */
  messages(): M[] {
    // The list is kept here as last read; the engine sends only what changed since (a turn's
    // new messages, or a pass's rewrite from its first edit on), never the unchanged rest.
    // The first read (a restored memory's turn reads the list once) parses the engine's text
    // for the caller and keeps the text, not a copy; a later read parses the text again for
    // itself, and copies from then on.
    type Delta = { version: number; from: number; messages: M[] };
    let view = this.#view;
    if (view === null) {
      const text = this.#wasm.messagesSince(-1);
      const delta = JSON.parse(text) as Delta;
      this.#view = { version: delta.version, list: text };
      return delta.messages;
    }
    if (typeof view.list === 'string') {
      const delta = JSON.parse(view.list) as Delta;
      view = this.#view = { version: delta.version, list: delta.messages };
    }
    if (view.version !== this.#wasm.listVersion()) {
      let list = view.list as M[];
      let delta = JSON.parse(this.#wasm.messagesSince(view.version)) as Delta;
      if (delta.from > list.length) {
        list = [];
        delta = JSON.parse(this.#wasm.messagesSince(-1)) as Delta;
      }
      list.length = delta.from;
      for (const m of delta.messages) list.push(m);
      view = this.#view = { version: delta.version, list };
    }
    return structuredClone(view.list as M[]);
  }

  /**
   * Everything ever added, in order, exactly as added. The log lives in the store in chunks
   * (see {@link AutoContextMemory.flush}), read back here one chunk at a time, each checked.
   *
   * @throws {@link AutoContextError} `STORE_FAILED` when the store fails, or holds a chunk that is
   *   missing or not the one written (never a shorter history).
   */
  async originalMessages(): Promise<M[]> {
    const { head, tail } = JSON.parse(this.#wasm.logHead()) as { head: string | null; tail: M[] };
    const chunks: M[][] = [];
    for (let key = head; key !== null; ) {
      const chunk = JSON.parse(await callAsync(() => this.#wasm.logChunk(key as string))) as { messages: M[]; prev: string | null };
      chunks.push(chunk.messages);
      key = chunk.prev;
    }
    return [...chunks.reverse().flat(), ...tail];
  }

  /** How many messages were added in all (the length of {@link AutoContextMemory.originalMessages}). */
  get historyLength(): number {
    return this.#wasm.historyLength();
  }

  /**
   * Writes the messages added since the last flush to the store, as one chunk of the log of
   * everything added (all but the newest message while the working list holds it as added, so
   * {@link AutoContextMemory.pop} can take it back), so neither the engine's memory nor
   * {@link AutoContextMemory.toJSON} holds them any more. A pass does it once 64 messages or 32k
   * tokens wait, and {@link AutoContextMemory.save} before it saves; call it before `toJSON()`
   * when you persist the state yourself, to keep it the size of the working list. Chunks are
   * never rewritten, and their keys (`<sessionId>/log-<first index>-<digest>`) name their
   * content: keep them as long as a state that names them may be restored. Resolves to how many
   * messages were written.
   *
   * @throws {@link AutoContextError} `STORE_FAILED` when a put fails; what it did not write stays
   *   in the state, and the next flush writes it.
   */
  async flush(): Promise<number> {
    await this.#afterSweep();
    return callAsync(() => this.#wasm.flush(true));
  }

  /**
   * Takes back the newest message added, when the working list still holds it as added;
   * `undefined` when nothing was added.
   *
   * @throws {@link AutoContextError} `INVALID_STATE` when a pass replaced it; `LIMIT_EXCEEDED`
   *   while a pass runs.
   */
  pop(): M | undefined {
    const text = call(() => this.#wasm.pop());
    return text === 'null' ? undefined : (JSON.parse(text) as M);
  }

  /** Tokens of the request the working list makes (messages, request overhead, `reservedTokens`). */
  tokenCount(): number {
    return this.#wasm.tokenCount();
  }

  /** Whether {@link AutoContextMemory.compressIfNeeded} would run a pass now. */
  needsCompression(): boolean {
    return this.#wasm.needsCompression();
  }

  /**
   * The original messages of an offloaded span, byte-exact, by the uuid of its
   * `<!-- CONTEXT_OFFLOAD: uuid=... -->` marker.
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT`, `NOT_FOUND` or `STORE_FAILED`.
   */
  async reload(uuid: string): Promise<M[]> {
    if (typeof uuid !== 'string') {
      throw new AutoContextError('INVALID_ARGUMENT', `uuid must be a string, got ${describe(uuid)}`, { field: 'uuid' });
    }
    const text = await callAsync(() => this.#wasm.reload(uuid));
    return JSON.parse(text) as M[];
  }

  /**
   * The `context_reload` tool definition in the memory's format (an OpenAI function tool, an
   * Anthropic tool with `input_schema`, or an AI SDK definition with a JSON-schema
   * `inputSchema`); give it to the model with your other tools. For the AI SDK,
   * `autocontext/ai-sdk` has it as a ready tool.
   */
  reloadTool(): ReloadToolFor<F> {
    return JSON.parse(this.#wasm.reloadTool()) as ReloadToolFor<F>;
  }

  /**
   * Executes a `context_reload` call of the model and returns the text to send back as the
   * tool's result: the offloaded messages as a readable transcript of at most
   * `offloadReloadLimit` characters, in pages when longer (the text says how to ask for the
   * next). Accepts the format's call shape (OpenAI's tool call, its `arguments` JSON string;
   * Anthropic's `tool_use` block; the AI SDK's `tool-call` part) or the parsed arguments
   * `{ working_context_offload_uuid, page? }`. An unknown uuid is answered in the text, for
   * the model to read.
   *
   * @throws {@link AutoContextError} `STORE_FAILED` when the store fails.
   */
  async handleReloadCall(toolCall: ReloadCallFor<F>): Promise<string> {
    const json = toJson(toolCall, 'INVALID_ARGUMENT', 'the reload call');
    return callAsync(() => this.#wasm.handleReloadCall(json));
  }

  /**
   * The most recent compression events, at most 256: the state keeps no more, so it does not
   * grow with the history. Every event also comes back in its pass's result and reaches
   * `onEvent` as it happens.
   */
  events(): CompressionEvent[] {
    return JSON.parse(this.#wasm.events()) as CompressionEvent[];
  }

  /**
   * The offloads the state holds: every one the working list names, and the most recent 256.
   * Older records are retired to the store (`<sessionId>/index-…` chunks), so the state does not
   * grow with the history; their offloads still reload.
   */
  offloads(): OffloadInfo[] {
    return JSON.parse(this.#wasm.offloads()) as OffloadInfo[];
  }

  /** Problems a provider would reject the working list for (empty when valid). */
  validate(): ValidationProblem[] {
    return JSON.parse(this.#wasm.validate()) as ValidationProblem[];
  }

  /**
   * Sets the agent's plan, or clears it with `null`; while set, every summarize request ends
   * with a hint about it.
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` for a malformed plan.
   */
  setPlan(plan: Plan | null): void {
    const json = toJson(plan, 'INVALID_ARGUMENT', 'plan');
    call(() => this.#wasm.setPlan(json));
  }

  /** The plan set with {@link AutoContextMemory.setPlan}, or `null`. */
  plan(): Plan | null {
    return JSON.parse(this.#wasm.plan()) as Plan | null;
  }

  /** The whole memory as versioned, JSON-safe state (offloaded originals stay in the store). */
  toJSON(): MemoryState {
    return JSON.parse(this.#stateText(this.#revision)) as MemoryState;
  }

  /** The state as JSON text, carrying `revision`. */
  #stateText(revision: number): string {
    const text = this.#wasm.toJson();
    // The engine's state is a JSON object: the revision goes in as its last field.
    return revision === 0 ? text : `${text.slice(0, text.lastIndexOf('}'))},"revision":${revision}}`;
  }

  /** The session id that prefixes this memory's store keys (`<sessionId>/<uuid>`). */
  get sessionId(): string {
    return this.#wasm.sessionId();
  }

  /** The store holding this memory's offloaded originals. */
  get store(): OffloadStore {
    return this.#store;
  }

  /**
   * Frees the engine's memory now, for a memory used once and dropped: a request handler that
   * loads its session on every request disposes of the memory before it answers.
   *
   * ```js
   * const memory = await AutoContextMemory.load(sessions, sessionId, { store });
   * try {
   *   memory.add(message);
   *   await memory.compressIfNeeded();
   *   const reply = await callModel(memory.messages());
   *   await memory.save(sessions);
   * } finally {
   *   memory.dispose();
   * }
   * ```
   *
   * A memory nobody holds is freed anyway, once the garbage collector gets to it; until then
   * each request adds a state's worth to the WebAssembly memory, which never shrinks, and pays
   * for growing it. In JavaScript, where the runtime has `Symbol.dispose`, `using memory = ...`
   * disposes of it at the end of the block (the declarations leave the symbol out: a TypeScript
   * lib without it would reject them). What runs on the memory (a pass) ends as it would;
   * afterwards every method throws `INVALID_STATE`. Calling it again does nothing.
   *
   * @throws {@link AutoContextError} `LIMIT_EXCEEDED` while a save or a sweep of this memory
   *   runs (it would fail half-way); await it first.
   */
  dispose(): void {
    if (this.#wasm === DISPOSED) return;
    if (this.#saving) throw new AutoContextError('LIMIT_EXCEEDED', 'a save of this memory is running; await it, then dispose');
    if (this.#sweeping !== null) throw new AutoContextError('LIMIT_EXCEEDED', 'a sweep of this memory is running; await it, then dispose');
    const wasm = this.#wasm;
    this.#wasm = DISPOSED;
    this.#made.forget();
    this.#view = null;
    this.#held = [];
    this.#pages = new Map();
    // Freed once the call that disposed returns: a host callback (a tokenizer, a synchronous
    // store) may dispose from inside a call of the engine, which holds it until it returns. A
    // free that throws (a module that trapped) leaves the memory to the garbage collector: it
    // must not become an uncaught error in a microtask, which ends a Node process.
    queueMicrotask(() => {
      try {
        wasm.free();
      } catch {
        // nothing more to free
      }
    });
  }
}

// `using memory = ...` where the runtime knows it (declared for no TypeScript lib, which may lack the symbol).
const disposeSymbol = (Symbol as { dispose?: symbol }).dispose;
if (typeof disposeSymbol === 'symbol') {
  Object.defineProperty(AutoContextMemory.prototype, disposeSymbol, {
    value: function dispose(this: AutoContextMemory<FormatName, never>) {
      this.dispose();
    },
    writable: true,
    configurable: true,
  });
}

/**
 * The revision a state's JSON text carries (0 when none or malformed: the engine reports a bad
 * state). A state {@link AutoContextMemory.toJSON} wrote ends with it (`,"revision":N}`), read
 * there; any other text is parsed for it.
 */
function revisionOf(text: string): number {
  // The text is a JSON object (the engine took it). A quote after a comma opens a string, so a
  // tail `,"revision":N}` is the object's last member: the revision JSON.parse would read.
  const tail = /,\s*"revision"\s*:\s*(\d{1,16})\s*}\s*$/.exec(text.length > 64 ? text.slice(-64) : text);
  if (tail !== null) {
    const r = Number(tail[1]);
    if (Number.isSafeInteger(r)) return r;
  }
  let r: unknown;
  try {
    r = (JSON.parse(text) as { revision?: unknown } | null)?.revision;
  } catch {
    return 0;
  }
  return checkRevision(r);
}

/** A state's `revision`, checked: 0 when it has none. */
function checkRevision(r: unknown): number {
  if (r === undefined || r === null) return 0;
  if (!Number.isSafeInteger(r) || (r as number) < 0) throw new AutoContextError('INVALID_STATE', `state.revision must be a whole number from 0, got ${String(r)}`, { field: 'revision' });
  return r as number;
}

/**
 * The keys the engine writes under a session, which a sweep may delete when no saved state
 * reaches them: offloads (`<uuid>`), chunks of the log and of the retired index
 * (`log-<first>-<digest>`, `index-<first>-<digest>`) and pages of saved states
 * (`state-<writer>-<n>`). Any other key under the session is left alone.
 */
function orphanShape(sessionId: string): RegExp {
  const id = sessionId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${id}/(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(?:log|index)-[0-9]+-[0-9a-f]+|state-[0-9a-f]+-[0-9]+)$`);
}

/** `INVALID_ARGUMENT` unless `sessions` has `load` and `save`. */
function checkSessionStore(sessions: unknown): asserts sessions is SessionStore {
  const o = sessions as Record<string, unknown> | null;
  if (o === null || typeof o !== 'object' || typeof o.load !== 'function' || typeof o.save !== 'function') {
    throw new AutoContextError('INVALID_ARGUMENT', `a session store needs load and save methods, got ${describe(sessions)}`, { field: 'sessions' });
  }
}
