// Cold start in a fresh process: from before the module is imported to after its first count of
// a ~1 KB message. The import includes reading, compiling and instantiating the WebAssembly
// module (ours, tiktoken) or parsing the vocabulary's JavaScript (gpt-tokenizer, js-tiktoken);
// the first count includes whatever the counter does lazily (decoding our vocabulary). The
// modules loaded before the clock starts import no built-in (texts.mjs), so a counter that
// imports one pays for it as in a fresh process (ours takes node:fs from
// process.getBuiltinModule, which costs nothing). Both in
// wall-clock time and in this process's CPU time (which includes the engine's background
// compiler threads).
//
//   node bench/child-cold.mjs <counter> <encoding>
import { load } from './counters.mjs';
import { KB_TEXT } from './texts.mjs';

const [counter, encoding] = process.argv.slice(2);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const c0 = cpuMs();
const t0 = performance.now();
const count = await load(counter, encoding);
const t1 = performance.now();
const c1 = cpuMs();
const tokens = count(KB_TEXT);
const t2 = performance.now();
const c2 = cpuMs();
process.stdout.write(JSON.stringify({ counter, encoding, loadMs: t1 - t0, firstCountMs: t2 - t1, loadCpuMs: c1 - c0, firstCountCpuMs: c2 - c1, tokens }));
