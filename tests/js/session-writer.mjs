// A long-running session for the kill test in sessions.test.mjs: loads session `s` from an
// FsSessionStore (or starts it), then forever adds a round, compresses, saves, and prints the
// revision saved and the number of messages it holds. The parent kills it at random points.
import { AutoContextMemory, offlineSummarize } from 'autocontext';
import { FsSessionStore, FsStore } from 'autocontext/stores/fs';
import { round } from './helpers.mjs';

const [dir] = process.argv.slice(2);
const store = new FsStore(`${dir}/offloads`);
const sessions = new FsSessionStore(`${dir}/sessions`);
const host = { store, summarize: offlineSummarize };
const memory = (await AutoContextMemory.load(sessions, 's', host)) ?? new AutoContextMemory({ sessionId: 's', maxToken: 6_000, ...host });
// Rounds of each run get ids of their own (a restart must never reuse a call id of the history).
for (let n = Date.now() * 1_000; ; n += 1) {
  memory.add(round(n, { calls: 2, resultChars: 1_500 + (n % 7) * 300 }));
  await memory.compressIfNeeded();
  const revision = await memory.save(sessions);
  process.stdout.write(`${revision} ${(await memory.originalMessages()).length}\n`);
}
