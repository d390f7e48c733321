/**
 * The command's own errors and the exit status each one means.
 *
 * @module
 */

/** The command line is wrong (exit 2). */
export class UsageError extends Error {}

/** The input, a file or the summarizer could not be used (exit 1). */
export class InputError extends Error {}

/** Exit status: done. */
export const EXIT_OK = 0;
/** Exit status: the input, the engine or the summarizer failed. */
export const EXIT_FAILED = 1;
/** Exit status: the command line is wrong. */
export const EXIT_USAGE = 2;

/** Why a file operation failed, in words. */
export function fsReason(e: unknown): string {
  const code = (e as { code?: string }).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EISDIR':
      return 'it is a directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'a parent is not a directory';
    default:
      return e instanceof Error ? e.message : String(e);
  }
}

/** Text on one line, for one-line error messages. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
