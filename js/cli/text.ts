/**
 * Small helpers for the command's text output: styles (colour on terminals only), numbers,
 * sizes, durations, aligned tables and wrapped notes.
 *
 * @module
 */

import { isAbsolute, relative } from 'node:path';

/** How text is styled: escape codes on a terminal, nothing otherwise. */
export interface Style {
  bold(s: string): string;
  dim(s: string): string;
  good(s: string): string;
  bad(s: string): string;
  accent(s: string): string;
}

/** A style; `enabled` false gives plain text. */
export function style(enabled: boolean): Style {
  const wrap = (open: number, close: number) => (s: string) => (enabled && s.trim() !== '' ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { bold: wrap(1, 22), dim: wrap(2, 22), good: wrap(32, 39), bad: wrap(31, 39), accent: wrap(36, 39) };
}

/** Whether a stream wants colour (a terminal, and neither NO_COLOR nor TERM=dumb). */
export function wantsColor(stream: { isTTY?: boolean }): boolean {
  return stream.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
}

/** A whole number with thousands separators. */
export const num = (n: number): string => n.toLocaleString('en-US');

/** A byte count for people. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** A duration for people. */
export function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** Rounds to a tenth. */
export function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

/** A share as a percentage with one decimal. */
export function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.round((1000 * part) / whole) / 10;
}

/**
 * Lines of a table. `align` says per column whether it is right-aligned (numbers); `paint`
 * styles a cell after padding, so escape codes never upset the widths.
 */
export function table(rows: string[][], align: boolean[], paint: (row: number, col: number, cell: string) => string = (_r, _c, cell) => cell): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => [...(r[c] ?? '')].length)));
  return rows.map((r, ri) =>
    r
      .map((cell, c) => paint(ri, c, align[c] ? cell.padStart(widths[c]!) : c === r.length - 1 ? cell : cell.padEnd(widths[c]!)))
      .join('   ')
      .trimEnd(),
  );
}

/** Splits text into lines of at most `width` characters, at spaces. */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** A path relative to the working directory when it is inside it. */
export function displayPath(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? p : rel;
}

/** Width of the labels of key-value lines. */
export const FACT_WIDTH = 'compressed messages'.length;

/** Key-value lines, labels dimmed and aligned. */
export function facts(out: string[], s: Style, pairs: [string, string][]): void {
  for (const [k, v] of pairs) out.push(`  ${s.dim(k.padEnd(FACT_WIDTH))}   ${v}`.trimEnd());
}
