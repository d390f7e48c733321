/**
 * A progress bar on a terminal (stderr), for runs over a directory of conversations. Off the
 * terminal it writes nothing, so logs and pipes stay clean.
 *
 * @module
 */

const WIDTH = 28;

/** A one-line progress bar redrawn in place. */
export class Progress {
  #last = 0;
  #shown = false;

  /**
   * @param stream - where to draw (stderr); nothing is drawn unless it is a terminal.
   * @param total - how many items the run has.
   */
  constructor(
    private readonly stream: { isTTY?: boolean; columns?: number; write(s: string): unknown },
    private readonly total: number,
  ) {}

  /** Whether anything is drawn at all. */
  get enabled(): boolean {
    return this.stream.isTTY === true && this.total > 0;
  }

  /**
   * Shows `done` items finished plus `fraction` of the current one, named `label`. Redraws at
   * most every 50 ms unless `force`.
   */
  update(done: number, fraction: number, label: string, force = false): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (!force && now - this.#last < 50) return;
    this.#last = now;
    const share = Math.min(1, Math.max(0, (done + Math.min(1, Math.max(0, fraction))) / this.total));
    const eighths = Math.round(share * WIDTH * 8);
    const full = Math.floor(eighths / 8);
    const part = eighths % 8;
    const bar = '█'.repeat(full) + (part > 0 ? ' ▏▎▍▌▋▊▉'[part] : '') + ' '.repeat(Math.max(0, WIDTH - full - (part > 0 ? 1 : 0)));
    const count = `${Math.min(done + 1, this.total)}/${this.total}`;
    const room = Math.max(10, (this.stream.columns ?? 80) - WIDTH - count.length - 12);
    const name = label.length > room ? `…${label.slice(label.length - room + 1)}` : label;
    this.stream.write(`\r\x1b[2K  ▕${bar}▏ ${String(Math.round(share * 100)).padStart(3)}%  ${count}  ${name}`);
    this.#shown = true;
  }

  /** Erases the bar. */
  clear(): void {
    if (this.#shown) this.stream.write('\r\x1b[2K');
    this.#shown = false;
  }
}
