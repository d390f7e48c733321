// Adversarial input in a fresh process: one long "word" of pseudo-random letters, which the
// split patterns keep as one piece, so its cost is all byte-pair merging. Counters with a
// quadratic merge slow down sharply; sizes stop growing once one call takes over `limitMs` of
// CPU time.
//
//   node bench/child-adversarial.mjs <counter> <encoding> <limitMs> <size>...
import { load } from './counters.mjs';
import { longWord } from './texts.mjs';

const [counter, encoding, limitArg, ...sizes] = process.argv.slice(2);
const count = await load(counter, encoding);
count(longWord(100));
const rows = [];
for (const n of sizes.map(Number)) {
  const word = longWord(n);
  const cpu = process.cpuUsage();
  const start = performance.now();
  const tokens = count(word);
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  const ms = (used.user + used.system) / 1000;
  rows.push({ letters: n, ms, wallMs, tokens });
  if (ms > Number(limitArg)) break;
}
process.stdout.write(JSON.stringify({ counter, encoding, rows }));
