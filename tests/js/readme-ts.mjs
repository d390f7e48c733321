// Writes every ```ts block of the README to its own module (readme-<n>.ts in the given directory)
// for the TypeScript consumer test to compile, strict and against the providers' SDKs, as a user
// would paste it. Prints the files written.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [readme, outDir] = process.argv.slice(2);
const blocks = [...readFileSync(readme, 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
if (blocks.length === 0) throw new Error(`${readme} has no \`\`\`ts block`);
for (const [n, code] of blocks.entries()) {
  const file = join(outDir, `readme-${n + 1}.ts`);
  // `export {}` makes a block without imports a module too, so the blocks' names never clash.
  writeFileSync(file, `${code}export {};\n`);
  console.log(file);
}
