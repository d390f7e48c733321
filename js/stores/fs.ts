/**
 * An offload store on the local file system, for Node: one file per key under a directory.
 *
 * ```js
 * import { AutoContextMemory } from 'autocontext';
 * import { FsStore } from 'autocontext/stores/fs';
 *
 * const memory = new AutoContextMemory({ maxToken: 128_000, store: new FsStore('.autocontext-store') });
 * ```
 *
 * A key such as `chat-1/4f0c…` (the engine's `<sessionId>/<uuid>`) becomes the file
 * `<directory>/chat-1/4f0c…`. Each `/`-separated segment of a key is one path segment;
 * characters other than ASCII letters, digits, `.`, `_` and `-` are percent-encoded, so any
 * key names exactly one file and no key can name a file outside the directory. Keys that try
 * (`..`, absolute paths, backslashes, NUL) are refused.
 *
 * Writes are atomic: the value goes to a temporary file in the same directory, is flushed to
 * disk, and is renamed over the key's file, so a reader sees the old value or the new one,
 * never a part of either, even if the process dies mid-write. A process killed mid-write leaves
 * its temporary file (`<key>~<random>.tmp`), which no key names: {@link FsStore.sweep} removes
 * those of a session (`memory.sweep()` calls it).
 *
 * {@link FsSessionStore} keeps saved sessions (`memory.save(sessions)`) in a directory of its
 * own, refusing a stale revision with `CONFLICT` under a lock file.
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

import { checkValue } from '../bytes.js';
import { AutoContextError, describe } from '../errors.js';
import { checkSaved, checkSessionId, conflict, storedRevision } from '../session-store.js';
import type { OffloadStore, SavedSession, SessionStore } from '../types.js';

/** Longest file name most file systems accept, in bytes. */
const MAX_NAME_BYTES = 255;

/** Characters kept as they are in file names; everything else is percent-encoded. */
const SAFE = /^[A-Za-z0-9._-]$/;

/** Marks temporary files; encoded key segments never contain it. */
const TEMP_MARK = '~';

/** A temporary file's name: an encoded segment, the mark, random hex, `.tmp`. */
const TEMP_NAME = /^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+~[0-9a-f]+\.tmp$/;

function invalid(message: string): AutoContextError {
  return new AutoContextError('INVALID_ARGUMENT', message, { field: 'key' });
}

/** Percent-encodes one key segment (UTF-8, upper-case hex), keeping only {@link SAFE} characters. */
function encodeSegment(segment: string): string {
  let out = '';
  for (const ch of segment) {
    if (SAFE.test(ch)) {
      out += ch;
    } else {
      for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

/** The inverse of {@link encodeSegment}; `null` for a name no key encodes to. */
function decodeSegment(name: string): string | null {
  if (!/^(?:[A-Za-z0-9._-]|%[0-9A-F]{2})+$/.test(name)) return null;
  try {
    const decoded = decodeURIComponent(name);
    if (/[/\\\0]/.test(decoded)) return null;
    return encodeSegment(decoded) === name ? decoded : null;
  } catch {
    return null;
  }
}

/**
 * Checks a key and returns its path segments, encoded.
 *
 * @throws {@link AutoContextError} `INVALID_ARGUMENT` for keys that are not strings, are empty,
 *   contain NUL or backslashes, are absolute, have empty, `.` or `..` segments, or have a
 *   segment too long for a file name.
 */
function segmentsOf(key: unknown): string[] {
  if (typeof key !== 'string') throw invalid(`a store key must be a string, got ${describe(key)}`);
  if (key.length === 0) throw invalid('a store key must not be empty');
  if (key.includes('\0')) throw invalid(`store key ${JSON.stringify(key)} contains a NUL character`);
  if (key.includes('\\')) throw invalid(`store key ${JSON.stringify(key)} contains a backslash`);
  if (key.startsWith('/') || isAbsolute(key)) throw invalid(`store key ${JSON.stringify(key)} is an absolute path`);
  const parts = key.split('/');
  for (const part of parts) {
    if (part === '' || part === '.' || part === '..') {
      throw invalid(`store key ${JSON.stringify(key)} has an empty, "." or ".." segment`);
    }
  }
  return parts.map((part) => {
    const name = encodeSegment(part);
    if (Buffer.byteLength(name) > MAX_NAME_BYTES - 24) {
      throw invalid(`store key ${JSON.stringify(key)} has a segment too long for a file name`);
    }
    return name;
  });
}

function errno(e: unknown): string | undefined {
  return e !== null && typeof e === 'object' ? (e as { code?: string }).code : undefined;
}

/** Writes `value` to `temp`, flushes it, and renames it over `path`; removes `temp` on failure. */
async function writeAtomically(temp: string, path: string, value: string | Uint8Array): Promise<void> {
  const file = await open(temp, 'wx', 0o644);
  try {
    try {
      await (typeof value === 'string' ? file.writeFile(value, 'utf8') : file.writeFile(value));
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } catch (e) {
    await rm(temp, { force: true }).catch(() => {});
    throw e;
  }
}

/**
 * An {@link OffloadStore} keeping each value in its own file under a directory.
 *
 * The directory is created on the first write. Two keys that differ only in letter case name
 * the same file on case-insensitive file systems (macOS and Windows by default); the engine's
 * keys are lower-case uuids under the session id, so they collide only if two session ids do.
 */
export class FsStore implements OffloadStore {
  /** The directory holding the files, as an absolute path. */
  readonly directory: string;
  /** Values come as UTF-8 bytes, written as they are; see {@link OffloadStore.acceptsBytes}. */
  readonly acceptsBytes = true;
  /** The temporary files of this store's writes in flight. */
  readonly #writing = new Set<string>();

  /**
   * @param directory - where the files go: a path (relative to the working directory) or a
   *   `file:` URL. Created on the first write if it does not exist.
   */
  constructor(directory: string | URL) {
    const dir = directory instanceof URL ? fileURLToPath(directory) : directory;
    if (typeof dir !== 'string' || dir.length === 0) {
      throw new AutoContextError('INVALID_ARGUMENT', `the store directory must be a non-empty path, got ${describe(directory)}`, {
        field: 'directory',
      });
    }
    this.directory = resolve(dir);
  }

  /**
   * The file that holds `key`.
   *
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` for a key that would escape the directory.
   */
  pathOf(key: string): string {
    const path = join(this.directory, ...segmentsOf(key));
    // Defence in depth: the segments above cannot leave the directory, and this proves it.
    const base = this.directory.endsWith(sep) ? this.directory : this.directory + sep;
    if (!path.startsWith(base)) throw invalid(`store key ${JSON.stringify(key)} leaves the store directory`);
    return path;
  }

  /** The value under `key`, or `null` when there is none. */
  async get(key: string): Promise<string | null> {
    const path = this.pathOf(key);
    try {
      return await readFile(path, 'utf8');
    } catch (e) {
      // ENOTDIR: a prefix of the key is a value, so the key itself cannot exist.
      if (errno(e) === 'ENOENT' || errno(e) === 'ENOTDIR') return null;
      throw e;
    }
  }

  /**
   * Stores `value` under `key`, atomically (temporary file, flush, rename): a string as UTF-8,
   * a `Uint8Array` as it is.
   */
  async put(key: string, value: string | Uint8Array): Promise<void> {
    const path = this.pathOf(key);
    checkValue(value);
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}${TEMP_MARK}${randomBytes(6).toString('hex')}.tmp`;
    this.#writing.add(temp);
    try {
      await writeAtomically(temp, path, value);
    } finally {
      this.#writing.delete(temp);
    }
  }

  /**
   * Removes the temporary files a write left behind under `prefix` (for example
   * `'<sessionId>/'`): those of a process killed mid-write, or of a write whose clean-up
   * failed. Writes of this store object still in flight keep theirs. Call it only where this
   * object is the session's one writer (`memory.sweep()` does); returns the files removed,
   * relative to the directory.
   */
  async sweep(prefix = ''): Promise<string[]> {
    if (typeof prefix !== 'string') throw invalid(`a key prefix must be a string, got ${describe(prefix)}`);
    const removed: string[] = [];
    const walk = async (dir: string, segments: string[]): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (errno(e) === 'ENOENT' || errno(e) === 'ENOTDIR') return;
        throw e;
      }
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.isFile() && TEMP_NAME.test(entry.name)) {
          const segment = decodeSegment(entry.name.slice(0, entry.name.indexOf(TEMP_MARK)));
          const key = [...segments, segment].join('/');
          if (segment === null || !key.startsWith(prefix) || this.#writing.has(path)) continue;
          await rm(path, { force: true });
          removed.push([...segments, entry.name].join('/'));
          continue;
        }
        if (!entry.isDirectory() || entry.name.includes(TEMP_MARK)) continue;
        const segment = decodeSegment(entry.name);
        if (segment === null) continue;
        const here = [...segments, segment].join('/');
        // Only directories on the way to the prefix, or inside it.
        if (here.startsWith(prefix) || prefix.startsWith(`${here}/`)) await walk(path, [...segments, segment]);
      }
    };
    await walk(this.directory, []);
    return removed.sort();
  }

  /** Removes `key`; removing a key that is not there is not an error. */
  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    try {
      await unlink(path);
    } catch (e) {
      if (errno(e) === 'ENOENT' || errno(e) === 'ENOTDIR') return;
      throw e;
    }
  }

  /**
   * Every key stored, sorted; with `prefix` (for example `'<sessionId>/'`), only the keys that
   * start with it. Files in the directory that no key maps to are ignored.
   */
  async keys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string, segments: string[]): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if (errno(e) === 'ENOENT' || errno(e) === 'ENOTDIR') return;
        throw e;
      }
      for (const entry of entries) {
        if (entry.name.includes(TEMP_MARK)) continue;
        const segment = decodeSegment(entry.name);
        if (segment === null || segment === '.' || segment === '..') continue;
        if (entry.isDirectory()) await walk(join(dir, entry.name), [...segments, segment]);
        else if (entry.isFile()) out.push([...segments, segment].join('/'));
      }
    };
    await walk(this.directory, []);
    return out.filter((k) => k.startsWith(prefix)).sort();
  }
}

/** Options of an {@link FsSessionStore}. */
export interface FsSessionStoreOptions {
  /**
   * How long a save waits for another save of the same session to release its lock, in
   * milliseconds, before it fails with `STORE_FAILED` (default 10000).
   */
  lockTimeoutMs?: number;
  /**
   * A lock file older than this, in milliseconds, is taken to be left by a process that died
   * while saving, and is broken (default 30000). A lock of a process of this machine that no
   * longer runs is broken at once.
   */
  staleLockMs?: number;
}

/** First line of a session file, before the state. */
interface SessionHeader {
  autocontextSession: 1;
  revision: number;
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/**
 * A {@link SessionStore} on the local file system, for Node: one file per session,
 * `<directory>/<sessionId>.session`, holding the revision on its first line and the state after
 * it.
 *
 * ```js
 * import { AutoContextMemory } from 'autocontext';
 * import { FsSessionStore, FsStore } from 'autocontext/stores/fs';
 *
 * const store = new FsStore('.autocontext/offloads');
 * const sessions = new FsSessionStore('.autocontext/sessions');
 * const memory = (await AutoContextMemory.load(sessions, 'chat-1', { store })) ?? new AutoContextMemory({ sessionId: 'chat-1', store });
 * // ... add, compressIfNeeded ...
 * await memory.save(sessions); // CONFLICT when another process saved chat-1 since the load
 * ```
 *
 * A save takes the session's lock file (`<sessionId>.lock`, created exclusively), checks the
 * stored revision, writes the new file atomically (temporary file, flush, rename), and releases
 * the lock: of two processes saving the same revision, one gets `CONFLICT`. A lock left by a
 * process that died is broken after `staleLockMs` (at once when it was a process of this
 * machine that no longer runs); temporary files a killed save left are removed by the next
 * save of that session. Give it a directory of its own, not the {@link FsStore}'s.
 */
export class FsSessionStore implements SessionStore {
  /** The directory holding the session files, as an absolute path. */
  readonly directory: string;
  readonly #lockTimeoutMs: number;
  readonly #staleLockMs: number;

  /**
   * @param directory - where the session files go: a path or a `file:` URL, created on the
   *   first save.
   * @param options - lock timing.
   * @throws {@link AutoContextError} `INVALID_ARGUMENT` for an empty directory or bad options.
   */
  constructor(directory: string | URL, options: FsSessionStoreOptions = {}) {
    this.directory = new FsStore(directory).directory;
    if (options === null || typeof options !== 'object') {
      throw new AutoContextError('INVALID_ARGUMENT', `FsSessionStore options must be an object, got ${describe(options)}`, { field: 'options' });
    }
    const { lockTimeoutMs = 10_000, staleLockMs = 30_000 } = options;
    for (const [field, value] of [['lockTimeoutMs', lockTimeoutMs], ['staleLockMs', staleLockMs]] as const) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new AutoContextError('INVALID_ARGUMENT', `option \`${field}\` must be a whole number of milliseconds, got ${String(value)}`, { field });
      }
    }
    this.#lockTimeoutMs = lockTimeoutMs;
    this.#staleLockMs = staleLockMs;
  }

  /** The file holding session `sessionId`. */
  pathOf(sessionId: string): string {
    return join(this.directory, `${checkSessionId(sessionId)}.session`);
  }

  /** The session's last saved state and revision, or `null`. */
  async load(sessionId: string): Promise<SavedSession | null> {
    const path = this.pathOf(sessionId);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      if (errno(e) === 'ENOENT') return null;
      throw new AutoContextError('STORE_FAILED', `could not read session ${JSON.stringify(sessionId)} from ${path}`, { cause: e });
    }
    const newline = text.indexOf('\n');
    const revision = newline < 0 ? undefined : readHeader(text.slice(0, newline));
    if (revision === undefined) throw new AutoContextError('STORE_FAILED', `${path} is not a session file this store wrote`);
    return { revision, state: text.slice(newline + 1) };
  }

  /**
   * Saves `session` if its revision follows the stored one.
   *
   * @throws `AutoContextError` `CONFLICT` otherwise; `STORE_FAILED` when the file system fails
   *   or another save holds the lock past `lockTimeoutMs`.
   */
  async save(sessionId: string, session: SavedSession): Promise<void> {
    const path = this.pathOf(sessionId);
    const next = checkSaved(session);
    await mkdir(this.directory, { recursive: true });
    const lock = `${path.slice(0, -'.session'.length)}.lock`;
    await this.#lock(lock, sessionId);
    try {
      // Temporary files of a save killed before its rename: the lock is ours, so none is live.
      // Those of a lock taken by a process killed in between, too: a live taker holds its own
      // for the moment between writing and linking it, so one older than a second is left over.
      for (const name of await readdir(this.directory)) {
        if (!name.endsWith('.tmp')) continue;
        const path = join(this.directory, name);
        if (name.startsWith(`${sessionId}.session${TEMP_MARK}`)) await rm(path, { force: true });
        else if (name.startsWith(`${sessionId}.lock${TEMP_MARK}`) && Date.now() - (await stat(path).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs > 1_000) {
          await rm(path, { force: true });
        }
      }
      const stored = (await this.load(sessionId))?.revision ?? 0;
      if (stored !== next.revision - 1) throw conflict(sessionId, next.revision, stored);
      const header: SessionHeader = { autocontextSession: 1, revision: next.revision };
      const temp = `${path}${TEMP_MARK}${randomBytes(6).toString('hex')}.tmp`;
      await writeAtomically(temp, path, `${JSON.stringify(header)}\n${next.state}`);
    } finally {
      await rm(lock, { force: true });
    }
  }

  /** Takes the lock file, breaking a stale one; fails after the lock timeout. */
  async #lock(lock: string, sessionId: string): Promise<void> {
    const deadline = Date.now() + this.#lockTimeoutMs;
    for (let wait = 2; ; wait = Math.min(wait * 2, 100)) {
      // The lock appears whole or not at all (its content written first, then linked into
      // place), so a process killed while taking it never leaves an empty lock behind.
      const temp = `${lock}${TEMP_MARK}${randomBytes(6).toString('hex')}.tmp`;
      try {
        await writeFile(temp, `${process.pid} ${hostname()} ${Date.now()}\n`, { flag: 'wx' });
        await link(temp, lock);
        return;
      } catch (e) {
        if (errno(e) !== 'EEXIST') throw new AutoContextError('STORE_FAILED', `could not take the lock ${lock}`, { cause: e });
      } finally {
        await rm(temp, { force: true });
      }
      if (await this.#stale(lock)) {
        await rm(lock, { force: true });
        continue;
      }
      if (Date.now() >= deadline) {
        throw new AutoContextError(
          'STORE_FAILED',
          `session ${JSON.stringify(sessionId)} stayed locked by another save for ${this.#lockTimeoutMs} ms (${lock}); remove the file if no process is saving it`,
        );
      }
      await sleep(wait);
    }
  }

  /** Whether a lock was left by a process that died: of this machine and gone, or too old. */
  async #stale(lock: string): Promise<boolean> {
    try {
      const [pid, host] = (await readFile(lock, 'utf8')).split(' ');
      if (host === hostname() && Number.isSafeInteger(Number(pid)) && Number(pid) > 0 && !alive(Number(pid))) return true;
      return Date.now() - (await stat(lock)).mtimeMs > this.#staleLockMs;
    } catch (e) {
      return errno(e) === 'ENOENT' ? false : Promise.reject(e);
    }
  }
}

/** The revision a session file's first line names, or `undefined`. */
function readHeader(line: string): number | undefined {
  try {
    const h = JSON.parse(line) as Partial<SessionHeader> | null;
    if (h?.autocontextSession !== 1) return undefined;
    return storedRevision('', h.revision) || undefined;
  } catch {
    return undefined;
  }
}

/** Whether process `pid` of this machine runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return errno(e) === 'EPERM';
  }
}
