// Later-use retention: what a context manager kept of what the agent went on to use. Cost is
// half of a session's bill; the other half is whether the agent can still do its work. A
// measure of that needs no model if it reads what the recorded agent did next: at every model
// turn, the distinctive identifiers the agent wrote in its next message (the assistant message
// the turn produced) that appeared earlier in the conversation are what it needed from its
// context at that turn. A system retains one when the request it sends contains it ("in view"),
// or when one reload of an offload marker that request names gives it back ("in view or one
// reload"). An identifier is "old" when it was last seen more than OLD_CHARS characters of
// conversation before the turn: where context managers differ.
//
// The extraction is this file's own, on purpose: it imports nothing of the package, so the
// measure cannot flatter the engine's own identifier index.
//
// Definitions (docs/benchmarks.md repeats them):
// - The text of a message is what a model reads of it: its content's text parts, then each tool
//   call's name and arguments string, joined by newlines. System (and developer) messages are
//   the system prompt: an identifier seen only there does not count as seen.
// - An identifier is a token of {@link identifiers}: a path, a file (or dotted module) name, a
//   snake_case, camelCase or PascalCase name, a number with 4 digits or more, a hex id; at least
//   MIN_CHARS (6) characters long.
// - The conversation text before a turn is the text of its messages before the turn, system
//   prompt left out, joined by newlines. An identifier of the next message counts at that turn
//   when that text contains it; it is old when more than OLD_CHARS (16,000) characters of that
//   text follow its last occurrence.
// - In view: the text of the request (every message it sends) contains it. One reload: the text
//   of the originals behind an offload marker (`<!-- CONTEXT_OFFLOAD: uuid=... -->`) found in
//   the request's text contains it; one hop only (a marker inside what was reloaded is not
//   followed), the whole offload counting (the reload tool answers in pages, but every page is
//   one reload's reach).
import { SUMMARY_PREFIX } from './summarizer.mjs';

/** The shortest identifier that counts, in characters. */
export const MIN_CHARS = 6;
/** An identifier is old when more than this many characters of conversation follow its last occurrence before the turn. */
export const OLD_CHARS = 16_000;

const MARKER = /CONTEXT_OFFLOAD: uuid=([0-9a-f-]{36})/g;

/** The uuids of the offload markers in a text, in order, each once. */
export function offloadMarkers(text) {
  return [...new Set(Array.from(text.matchAll(MARKER), (m) => m[1]))];
}

/** A backslash escape (`\n`, `\"`, `\\`, `\u00e9`): separates like a space, so JSON-encoded arguments read like their text. */
const ESCAPE = /\\(?:u[0-9a-fA-F]{4}|[\s\S])/g;
/** Maximal runs of path characters that hold a slash, with a URL's scheme. */
const PATH_RUN = /[A-Za-z][\w+.-]*:\/\/[\w.@+~/-]*|[\w.@+~/-]*\/[\w.@+~/-]*/g;
/** A file or dotted module name: a base, more dotted parts, then an extension of 1 to 8 letters and digits that starts with a letter. */
const FILE = /(?<![\w.@+-])[\w@+-]+(?:\.[\w@+-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}(?![\w@+-]|\.\w)/g;
const FILE_WHOLE = /^[\w@+-]+(?:\.[\w@+-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}$/;
/** Numbers joined by `.` `,` `:` or `-` (a date, a time, an amount, a version). */
const JOINED_NUMBER = /(?<![\w.,:-])\d+(?:[.,:-]\d+)+(?![\w]|[.,:-]\d)/g;
/** Hex groups joined by `-` (a uuid). */
const JOINED_HEX = /(?<![\w-])(?:[0-9a-f]+(?:-[0-9a-f]+)+|[0-9A-F]+(?:-[0-9A-F]+)+)(?![\w-])/g;
/** Maximal runs of word characters (ASCII letters, digits, `_`). */
const WORD = /\w+/g;

const digits = (s) => s.replace(/\D/g, '').length;
const hasHexLetter = (s) => /[a-fA-F]/.test(s.replace(/^0x/, ''));

/** The kind of one word (a run of letters, digits and `_`), or null for a plain word. */
function wordKind(w) {
  if (w.includes('_')) return /[A-Za-z0-9]/.test(w) ? 'snake' : null;
  if (/^\d+$/.test(w)) return w.length >= 4 ? 'number' : null;
  if ((/^[0-9a-f]+$/.test(w) || /^[0-9A-F]+$/.test(w) || /^0x[0-9a-fA-F]+$/.test(w)) && /\d/.test(w) && hasHexLetter(w)) return 'hex';
  if (/^[a-z][a-z0-9]*[A-Z]/.test(w)) return 'camel';
  if (/^[A-Z]/.test(w) && /[a-z]/.test(w) && (w.match(/[A-Z]/g) ?? []).length >= 2) return 'pascal';
  return null;
}

/** Whether a run of path characters is a path: it starts at a root (`/`, `~/`, `./`, `../`), has two slashes or more, or ends in a file name. */
function isPath(p) {
  if (!/[A-Za-z0-9]/.test(p)) return false;
  if (/^(?:\/|~\/|\.\.?\/)/.test(p)) return true;
  if ((p.match(/\//g) ?? []).length >= 2) return true;
  return FILE_WHOLE.test(p.slice(p.lastIndexOf('/') + 1));
}

/**
 * The distinctive identifiers of a text, each with its kind, in order of first occurrence:
 *
 * - `path`: a run of letters, digits and `_ . @ + ~ - /` holding a slash that starts at a root
 *   (`/`, `~/`, `./`, `../`), has two slashes or more, or ends in a file name
 *   (`/testbed/astroid/nodes.py`, `src/main.rs`; not `and/or`), or a URL (`https://...`);
 *   trailing `.` `-` `/` dropped;
 * - `file`: a file or dotted module name, a base and an extension of 1 to 8 letters and digits
 *   that starts with a letter (`nodes.py`, `package-lock.json`, `os.path.join`), also inside a path;
 * - `snake`, `camel`, `pascal`: a word (letters, digits, `_`) holding `_` (`brain_numpy`,
 *   `MAX_TOKENS`), starting lower case with an upper case letter later (`getName`), or starting
 *   upper case with another upper case letter and a lower case one (`AstroidBuilder`);
 * - `number`: a word of 4 digits or more, or digit groups joined by `.` `,` `:` `-` with 4
 *   digits or more in all (`2024-05-01`, `0.98765`);
 * - `hex`: a word of hex digits in one letter case (or `0x` and hex digits) holding a digit and
 *   a letter (`258c7280`), or such groups joined by `-` (a uuid).
 *
 * Each kind is found on its own, so a path also yields its file name and the names in it. Only
 * identifiers of {@link MIN_CHARS} characters or more count: plain words (no `_`, no inner capital),
 * short numbers and words of hex letters alone (`facade`) do not. A backslash escape separates like
 * a space, so tool-call arguments (JSON) yield what their text would. ASCII only.
 *
 * @param {string} text
 * @returns {Map<string, 'path' | 'file' | 'snake' | 'camel' | 'pascal' | 'number' | 'hex'>}
 */
export function identifiers(text) {
  const found = [];
  const s = text.replace(ESCAPE, ' ');
  for (const m of s.matchAll(PATH_RUN)) {
    const p = m[0].replace(/[.\-/]+$/, '');
    if (isPath(p)) found.push([m.index, p, 'path']);
  }
  for (const m of s.matchAll(FILE)) found.push([m.index, m[0], 'file']);
  // A joined number or hex id is one identifier: the words in it do not count apart.
  const joined = [];
  for (const m of s.matchAll(JOINED_NUMBER)) {
    joined.push([m.index, m.index + m[0].length]);
    if (digits(m[0]) >= 4) found.push([m.index, m[0], 'number']);
  }
  for (const m of s.matchAll(JOINED_HEX)) {
    joined.push([m.index, m.index + m[0].length]);
    if (/\d/.test(m[0]) && hasHexLetter(m[0])) found.push([m.index, m[0], 'hex']);
  }
  for (const m of s.matchAll(WORD)) {
    const kind = wordKind(m[0]);
    if (kind !== null && !joined.some(([a, b]) => m.index >= a && m.index < b)) found.push([m.index, m[0], kind]);
  }
  found.sort((a, b) => a[0] - b[0]);
  const out = new Map();
  for (const [, id, kind] of found) if (id.length >= MIN_CHARS && !out.has(id)) out.set(id, kind);
  return out;
}

/**
 * The text of an OpenAI chat message as a model reads it: its content's text parts, then each
 * tool call's name and arguments string, joined by newlines.
 * @param {Record<string, any>} m
 * @returns {string}
 */
export function messageText(m) {
  const parts = [];
  if (typeof m.content === 'string') parts.push(m.content);
  else if (Array.isArray(m.content)) for (const p of m.content) if (typeof p?.text === 'string') parts.push(p.text);
  for (const c of m.tool_calls ?? []) parts.push(c.function?.name ?? '', c.function?.arguments ?? '');
  return parts.join('\n');
}

const isSystem = (m) => m.role === 'system' || m.role === 'developer';

/**
 * What the agent used at each model turn of a trace: for each assistant message but the first
 * message, the identifiers of its text that the conversation text before it contains, each
 * with whether it is old. Keyed by the assistant message's index; the same for every system.
 * @param {Record<string, any>[]} messages
 * @returns {Map<number, { id: string, old: boolean }[]>}
 */
export function laterUse(messages, oldChars = OLD_CHARS) {
  const texts = messages.map((m) => (isSystem(m) ? null : messageText(m)));
  // The conversation text, system prompt left out; `end[i]` is its length before message i.
  const end = [];
  let length = 0;
  const pieces = [];
  for (const t of texts) {
    end.push(length);
    if (t === null) continue;
    if (pieces.length > 0) length += 1;
    pieces.push(t);
    length += t.length;
  }
  const conversation = pieces.join('\n');
  const out = new Map();
  for (const [i, m] of messages.entries()) {
    if (m.role !== 'assistant' || i === 0) continue;
    const before = end[i];
    const used = [];
    for (const id of identifiers(texts[i]).keys()) {
      if (id.length > before) continue;
      const at = conversation.lastIndexOf(id, before - id.length);
      if (at >= 0) used.push({ id, old: before - (at + id.length) > oldChars });
    }
    out.set(i, used);
  }
  return out;
}

/** The shortest later-used line that counts, in characters (trimmed). */
export const MIN_LINE_CHARS = 24;

/** The string leaves of a parsed JSON value, in order. */
function strings(v, out) {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v !== null && typeof v === 'object') for (const x of Object.values(v)) strings(x, out);
  return out;
}

/**
 * The text of an OpenAI chat message as lines of content: its content's text parts, then each
 * tool call's name and the string values of its arguments, decoded (a tool call that edits a
 * file carries the lines it replaces as a JSON string; decoded, they read as the file's lines).
 * @param {Record<string, any>} m
 */
export function readableText(m) {
  const parts = [];
  if (typeof m.content === 'string') parts.push(m.content);
  else if (Array.isArray(m.content)) for (const p of m.content) if (typeof p?.text === 'string') parts.push(p.text);
  for (const c of m.tool_calls ?? []) {
    parts.push(c.function?.name ?? '');
    const args = c.function?.arguments ?? '';
    try {
      parts.push(...strings(JSON.parse(args), []));
    } catch {
      parts.push(args);
    }
  }
  return parts.join('\n');
}

/** The distinct lines of a text that count: trimmed, at least {@link MIN_LINE_CHARS} characters, holding a letter or digit. */
export function contentLines(text) {
  const out = new Set();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.length >= MIN_LINE_CHARS && /[A-Za-z0-9]/.test(line)) out.add(line);
  }
  return [...out];
}

/**
 * Later-used lines: at each model turn, the lines of the agent's next message (its text and
 * its tool calls' decoded arguments: the code an edit replaces, a command it repeats, a line it
 * quotes) that the conversation before it, system prompt left out, holds verbatim. Identifiers
 * say whether the agent can still name what it saw; lines whether it can still quote it, which
 * an edit of a file it read needs. Keyed like {@link laterUse}; `old` as there.
 * @param {Record<string, any>[]} messages
 * @returns {Map<number, { line: string, old: boolean }[]>}
 */
export function laterLines(messages, oldChars = OLD_CHARS) {
  const texts = messages.map((m) => (isSystem(m) ? null : readableText(m)));
  const end = [];
  let length = 0;
  const pieces = [];
  for (const t of texts) {
    end.push(length);
    if (t === null) continue;
    if (pieces.length > 0) length += 1;
    pieces.push(t);
    length += t.length;
  }
  const conversation = pieces.join('\n');
  const out = new Map();
  for (const [i, m] of messages.entries()) {
    if (m.role !== 'assistant' || i === 0) continue;
    const before = end[i];
    const used = [];
    for (const line of contentLines(texts[i])) {
      if (line.length > before) continue;
      const at = conversation.lastIndexOf(line, before - line.length);
      if (at >= 0) used.push({ line, old: before - (at + line.length) > oldChars });
    }
    out.set(i, used);
  }
  return out;
}

/**
 * The kind of replacement a message holding an offload marker is, from its text: an emergency
 * notice, a truncated tool result, a summary (the benchmark's summarizer wrote it), or else an
 * offload notice or preview.
 */
export function replacementKind(text) {
  if (text.includes('[Context note: ')) return 'emergency';
  if (/\[Earlier tool output of \d+ characters, stubbed/.test(text)) return 'stub';
  if (/\[\.\.\. \d+ of \d+ characters omitted/.test(text) || text.startsWith('[Truncated: ')) return 'truncated';
  if (text.includes(SUMMARY_PREFIX) || text.includes('[Summarized together with the result of')) return 'summary';
  return 'notice';
}

/** The figures {@link Retention} sums, all 0 to start. */
export const RETENTION_KEYS = [
  'ids',
  'idsInView',
  'idsReach',
  'oldIds',
  'oldInView',
  'oldReach',
  'oldBehindSummary',
  'oldBehindTruncated',
  'oldBehindNotice',
  'oldBehindEmergency',
  'oldBehindStub',
  'oldUnreached',
  'oldDeeper',
  'lines',
  'linesInView',
  'linesReach',
  'oldLines',
  'oldLinesInView',
  'linesBehindSummary',
  'linesBehindTruncated',
  'linesBehindNotice',
  'linesBehindEmergency',
  'linesBehindStub',
];

/**
 * Scores each request of one system on one trace. `reloadOne(uuid)` (a system with offloads)
 * resolves to the original messages behind a marker, or rejects; without it the reach is the
 * view. Reloads are memoized by uuid and made only for identifiers not in view.
 *
 * Of the old identifiers not in view, each reached one is put behind the kind of replacement
 * (see {@link replacementKind}) whose marker is the first in the request to reach it; the others
 * are unreached, and `oldDeeper` counts those of them that two or more reloads reach.
 */
export class Retention {
  /**
   * @param {((uuid: string) => Promise<Record<string, any>[]>) | undefined} reloadOne
   * @param {(text: string) => string[]} [markersOf] the offload markers a text names (a system
   *   whose store is keyed otherwise than by autocontext's markers gives its own)
   */
  constructor(reloadOne, markersOf = offloadMarkers) {
    this.reloadOne = reloadOne;
    this.markersOf = markersOf;
    /** @type {Map<string, Promise<string>>} */
    this.texts = new Map();
    this.totals = Object.fromEntries(RETENTION_KEYS.map((key) => [key, 0]));
  }

  /** The text of an offload's originals ('' when it does not reload). */
  reloadText(uuid) {
    let t = this.texts.get(uuid);
    if (t === undefined) {
      t = this.reloadOne(uuid).then(
        (originals) => originals.map(messageText).join('\n'),
        () => '',
      );
      this.texts.set(uuid, t);
    }
    return t;
  }

  /**
   * Scores one request against what the agent used at that turn.
   * @param {{ id: string, old: boolean }[]} used
   * @param {Record<string, any>[]} request
   */
  async turn(used, request, lines = []) {
    const t = this.totals;
    if (lines.length > 0) await this.lines(lines, request);
    if (used.length === 0) return;
    const texts = request.map(messageText);
    const view = texts.join('\n');
    const missing = [];
    for (const u of used) {
      const seen = view.includes(u.id);
      t.ids++;
      if (u.old) t.oldIds++;
      if (seen) {
        t.idsInView++;
        t.idsReach++;
        if (u.old) {
          t.oldInView++;
          t.oldReach++;
        }
      } else missing.push(u);
    }
    if (missing.length === 0 || this.reloadOne === undefined) {
      for (const u of missing) if (u.old) t.oldUnreached++;
      return;
    }
    // Each marker the request names, with the kind of the first message that names it.
    const kinds = new Map();
    texts.forEach((text) => {
      for (const uuid of this.markersOf(text)) if (!kinds.has(uuid)) kinds.set(uuid, replacementKind(text));
    });
    const reloads = await Promise.all([...kinds.keys()].map(async (uuid) => [uuid, await this.reloadText(uuid)]));
    let deeper = null;
    for (const u of missing) {
      const hit = reloads.find(([, text]) => text.includes(u.id));
      if (hit !== undefined) {
        t.idsReach++;
        if (u.old) {
          t.oldReach++;
          const kind = kinds.get(hit[0]);
          t[`oldBehind${kind[0].toUpperCase()}${kind.slice(1)}`]++;
        }
      } else if (u.old) {
        t.oldUnreached++;
        deeper ??= await this.beyond(reloads);
        if (deeper.some((text) => text.includes(u.id))) t.oldDeeper++;
      }
    }
  }

  /**
   * Scores one request's later-used lines: in view when the request's readable text holds the
   * line, in reach when it or one reload of a marker it names does.
   * @param {{ line: string, old: boolean }[]} lines
   * @param {Record<string, any>[]} request
   */
  async lines(lines, request) {
    const t = this.totals;
    const view = request.map(readableText).join('\n');
    let reloaded = null;
    for (const u of lines) {
      t.lines++;
      if (u.old) t.oldLines++;
      if (view.includes(u.line)) {
        t.linesInView++;
        t.linesReach++;
        if (u.old) t.oldLinesInView++;
        continue;
      }
      if (this.reloadOne === undefined) continue;
      if (reloaded === null) {
        const kinds = new Map();
        for (const m of request) {
          const text = messageText(m);
          for (const uuid of this.markersOf(text)) if (!kinds.has(uuid)) kinds.set(uuid, replacementKind(text));
        }
        reloaded = await Promise.all(
          [...kinds].map(([uuid, kind]) =>
            this.reloadOne(uuid).then(
              (originals) => [kind, originals.map(readableText).join('\n')],
              () => [kind, ''],
            ),
          ),
        );
      }
      const hit = reloaded.find(([, text]) => text.includes(u.line));
      if (hit !== undefined) {
        t.linesReach++;
        t[`linesBehind${hit[0][0].toUpperCase()}${hit[0].slice(1)}`]++;
      }
    }
  }

  /** The texts two or more reloads away: markers inside reloaded texts, followed transitively. */
  async beyond(reloads) {
    const seen = new Set(reloads.map(([uuid]) => uuid));
    const queue = reloads.map(([, text]) => text);
    const out = [];
    while (queue.length > 0) {
      for (const uuid of this.markersOf(queue.shift())) {
        if (seen.has(uuid)) continue;
        seen.add(uuid);
        const text = await this.reloadText(uuid);
        out.push(text);
        queue.push(text);
      }
    }
    return out;
  }
}
