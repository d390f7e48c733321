// CPU time of the management calls alone: each adapter wraps the calls a host makes to its
// context manager (and nothing of the benchmark's own conversions or accounting) in `time`.

/** Sums this process's CPU time (user + system) spent inside `time()` calls. */
export class CpuClock {
  constructor() {
    this.us = 0;
  }

  /** Runs `fn` (sync or async) and adds the CPU time it took. */
  async time(fn) {
    const start = process.cpuUsage();
    try {
      return await fn();
    } finally {
      const d = process.cpuUsage(start);
      this.us += d.user + d.system;
    }
  }

  /** Runs a synchronous `fn` and adds the CPU time it took. */
  timeSync(fn) {
    const start = process.cpuUsage();
    try {
      return fn();
    } finally {
      const d = process.cpuUsage(start);
      this.us += d.user + d.system;
    }
  }

  get ms() {
    return this.us / 1000;
  }
}
