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
 * never a part of either, even if the process dies mid-write.
 *
 * @module
 */

import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

import { AutoContextError, describe } from '../errors.js';
import type { OffloadStore } from '../types.js';

/** Longest file name most file systems accept, in bytes. */
const MAX_NAME_BYTES = 255;

/** Characters kept as they are in file names; everything else is percent-encoded. */
const SAFE = /^[A-Za-z0-9._-]$/;

/** Marks temporary files; encoded key segments never contain it. */
const TEMP_MARK = '~';

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

  /** Stores `value` under `key`, atomically (temporary file, flush, rename). */
  async put(key: string, value: string): Promise<void> {
    const path = this.pathOf(key);
    if (typeof value !== 'string') {
      throw new AutoContextError('INVALID_ARGUMENT', `a store value must be a string, got ${describe(value)}`, { field: 'value' });
    }
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}${TEMP_MARK}${randomBytes(6).toString('hex')}.tmp`;
    const file = await open(temp, 'wx', 0o644);
    try {
      try {
        await file.writeFile(value, 'utf8');
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
