// Cold start per runtime, median of fresh processes: module load (import of 'autocontext') and
// the first token count, plus the whole process. A measurement, printed, never asserted.
//
//   node cold-start-report.mjs <app dir> [deno binary]
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const [app, deno] = process.argv.slice(2);
const script = join(app, 'tests/runtimes/cold-start.mjs');
const runs = 3;
const runtimes = [['node', [process.execPath, script]]];
if (deno) runtimes.push(['deno', [deno, 'run', '--allow-read', '--node-modules-dir=manual', '--no-lock', script]]);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, [cmd, ...args]] of runtimes) {
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const run = spawnSync(cmd, args, { cwd: app, encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' } });
    const wall = performance.now() - started;
    if (run.status !== 0) throw new Error(`${name} cold start failed: ${run.stderr}`);
    samples.push({ ...JSON.parse(run.stdout.trim().split('\n').at(-1)), wall });
  }
  const s = samples[0];
  console.log(
    `cold start ${s.runtime} (${s.entry.replace(/^.*node_modules\//, '')}), median of ${runs}: ` +
      `import ${median(samples.map((x) => x.importMs)).toFixed(0)} ms, first count ${median(samples.map((x) => x.firstCountMs)).toFixed(0)} ms, ` +
      `whole process ${median(samples.map((x) => x.wall)).toFixed(0)} ms`,
  );
}
