// The README's usage example, executed as a user would paste it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const readme = process.env.AUTOCONTEXT_README;

test('the README example runs, compresses, and prints a smaller token count', { skip: !readme && 'AUTOCONTEXT_README is not set' }, () => {
  const source = readFileSync(readme, 'utf8');
  const block = source.match(/```js\n([\s\S]*?)```/);
  assert.ok(block, 'the README has a ```js block');
  // Next to the installed package, so `import 'autocontext'` resolves as in a user's app.
  const app = dirname(dirname(fileURLToPath(import.meta.url)));
  const file = join(app, 'readme-example.mjs');
  writeFileSync(file, block[1]);
  const out = execFileSync(process.execPath, [file], { cwd: app, encoding: 'utf8' });
  const m = out.match(/^(true|false) (\d+) -> (\d+)$/m);
  assert.ok(m, `unexpected output: ${out}`);
  assert.equal(m[1], 'true');
  assert.ok(Number(m[3]) < Number(m[2]), `tokens did not shrink: ${out}`);
});
