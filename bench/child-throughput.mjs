// One counter, one encoding, in a fresh process: counts every measured text, group by group
// (size bucket × kind), several rounds. The first round is the counter's first sight of those
// texts (a counter with a cache, like gpt-tokenizer's merge cache, has not seen them); the later
// rounds are its best case. Prints JSON: per-group bytes and, per round, seconds of wall-clock
// time and of this process's CPU time (user + system: what the counter itself consumed, which a
// shared machine's load does not inflate the way it inflates wall-clock time), every count of
// the first round (for the exactness check), and the process's peak RSS.
//
//   node bench/child-throughput.mjs <counter> <encoding> <texts.json> <rounds>
import { readFileSync } from 'node:fs';
import { load } from './counters.mjs';
import { KB_TEXT, longWord } from './texts.mjs';

const [counter, encoding, file, roundsArg] = process.argv.slice(2);
const texts = JSON.parse(readFileSync(file, 'utf8'));
const rounds = Number(roundsArg);

const count = await load(counter, encoding);
// Warm-up on text that is not measured: compiles the hot paths and indexes vocabularies.
for (let i = 0; i < 50; i++) count(KB_TEXT + i);
count(readFileSync(new URL(import.meta.url), 'utf8'));
count(longWord(2000));

const groups = new Map();
texts.forEach((t, i) => {
  const key = `${t.bucket}\u0000${t.kind}`;
  if (!groups.has(key)) groups.set(key, { bucket: t.bucket, kind: t.kind, bytes: 0, indexes: [], seconds: [], cpuSeconds: [] });
  const g = groups.get(key);
  g.bytes += t.bytes;
  g.indexes.push(i);
});

const counts = new Array(texts.length).fill(0);
for (let round = 0; round < rounds; round++) {
  for (const g of groups.values()) {
    let tokens = 0;
    const cpu = process.cpuUsage();
    const start = performance.now();
    for (const i of g.indexes) {
      const n = count(texts[i].text);
      tokens += n;
      if (round === 0) counts[i] = n;
    }
    g.seconds.push((performance.now() - start) / 1000);
    const used = process.cpuUsage(cpu);
    g.cpuSeconds.push((used.user + used.system) / 1e6);
    g.tokens = tokens;
  }
}

const out = {
  counter,
  encoding,
  groups: [...groups.values()].map(({ indexes, ...g }) => ({ ...g, texts: indexes.length })),
  counts,
  maxRssKb: process.resourceUsage().maxRSS,
};
process.stdout.write(JSON.stringify(out));
