// What a workerd process that miniflare started uses, read from /proc (Linux): which process it
// is, its resident memory, and its threads' CPU time. Inside a Worker the clocks stand still
// between I/O (workerd's timing-attack mitigation), so CPU time per request is read from outside.
import { readFileSync, readdirSync } from 'node:fs';

/** The workerd process miniflare started: the one descendant of this process named workerd. */
export function workerdPid() {
  const parents = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      parents.set(Number(name), { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(stat.slice(close + 2).split(' ')[1]) });
    } catch {
      // gone already
    }
  }
  const ours = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 10; p = parents.get(p)?.ppid ?? 0, hops++) if (p === process.pid) return true;
    return false;
  };
  const found = [...parents].filter(([pid, p]) => p.comm.startsWith('workerd') && pid !== process.pid && ours(pid));
  if (found.length !== 1) throw new Error(`expected one workerd process under ${process.pid}, found ${found.length}`);
  return found[0][0];
}

/** VmRSS and VmHWM of a process, MB. */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))[1]);
  return { rssMB: (kb('VmRSS') * 1024) / 1e6, hwmMB: (kb('VmHWM') * 1024) / 1e6 };
}

/**
 * CPU time of each thread of a process so far, nanoseconds, by thread id: the scheduler's own
 * account (/proc/<pid>/task/<tid>/schedstat), exact to the nanosecond where the tick-based
 * utime/stime count in 10 ms steps.
 */
export function threadCpuNs(pid) {
  const out = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]));
    } catch {
      // the thread ended
    }
  }
  return out;
}

/**
 * CPU ms spent between two {@link threadCpuNs} readings: in all threads, and in the busiest
 * one (the thread that ran the request's JavaScript, when nothing else ran).
 */
export function cpuBetween(before, after) {
  let total = 0;
  let busiest = 0;
  for (const [tid, ns] of after) {
    const d = (ns - (before.get(tid) ?? 0)) / 1e6;
    total += d;
    busiest = Math.max(busiest, d);
  }
  return { totalMs: total, threadMs: busiest };
}
