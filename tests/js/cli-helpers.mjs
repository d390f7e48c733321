// Running the installed `autocontext` command the way a user does, for the CLI tests.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
export const pkgDir = dirname(require.resolve('autocontext/package.json'));
export const pkg = JSON.parse(await readFile(join(pkgDir, 'package.json'), 'utf8'));
export const CLI = join(pkgDir, pkg.bin.autocontext);

/** The bundled example: named by the harness, or found beside the README or the sources. */
export const EXAMPLE = [
  process.env.AUTOCONTEXT_EXAMPLE,
  process.env.AUTOCONTEXT_README && join(dirname(process.env.AUTOCONTEXT_README), 'examples', 'long-conversation.json'),
  fileURLToPath(new URL('../../examples/long-conversation.json', import.meta.url)),
].find((p) => p && existsSync(p));

/**
 * Runs the CLI with `args`; resolves to { code, stdout, stderr } whatever the exit status.
 * `env` is added to a copy of the environment without OPENAI_* variables, so nothing the
 * developer has set reaches a test (and no test ever reaches the real network).
 */
export function cli(args, { input, cwd, env = {} } = {}) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OPENAI_')));
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [CLI, ...args], { cwd, maxBuffer: 64 << 20, env: { ...base, NO_COLOR: '1', ...env } }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
    if (input !== undefined) child.stdin.end(input);
  });
}

export function tempDir() {
  return mkdtemp(join(tmpdir(), 'autocontext-cli-'));
}

/** A number printed with thousands separators. */
export const n = (s) => Number(String(s).replaceAll(',', ''));

/** `actual` is within `share` (default 1%) of `expected`, or within `floor` tokens. */
export function near(actual, expected, share = 0.01, floor = 10) {
  return Math.abs(actual - expected) <= Math.max(floor, expected * share);
}
