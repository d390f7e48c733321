// A long-running session for the kill test in sessions.test.mjs: loads session `s` from an
// FsSessionStore (or starts it), then forever adds a round, compresses, saves, and prints the
// revision saved and the number of messages it holds. The parent kills it at random points.
// With `hold`, once it has saved, it stops after the first pass that put offloads in the store
// and before saving again, prints `held`, and waits there to be killed: a kill that certainly
// leaves keys no saved state names.
import { AutoContextMemory, offlineSummarize } from 'autocontext';
import { FsSessionStore, FsStore } from 'autocontext/stores/fs';
import { round } from './helpers.mjs';

const [dir, mode] = process.argv.slice(2);
const store = new FsStore(`${dir}/offloads`);
const sessions = new FsSessionStore(`${dir}/sessions`);
const host = { store, summarize: offlineSummarize };
const memory = (await AutoContextMemory.load(sessions, 's', host)) ?? new AutoContextMemory({ sessionId: 's', maxToken: 6_000, ...host });
// Rounds of each run get ids of their own (a restart must never reuse a call id of the history).
let saved = false;
for (let n = Date.now() * 1_000; ; n += 1) {
  memory.add(round(n, { calls: 2, resultChars: 1_500 + (n % 7) * 300 }));
  const keys = mode === 'hold' && saved ? (await store.keys('s/')).length : 0;
  await memory.compressIfNeeded();
  if (mode === 'hold' && saved && (await store.keys('s/')).length > keys) {
    process.stdout.write('held\n');
    await new Promise(() => setInterval(() => {}, 1_000));
  }
  const revision = await memory.save(sessions);
  process.stdout.write(`${revision} ${(await memory.originalMessages()).length}\n`);
  saved = true;
}
