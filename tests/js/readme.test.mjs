// The README: its usage example, executed as a user would paste it, and its first screen and
// links as npm shows them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
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

test('the README opens for users and its links resolve on npm, where only it is shown', { skip: !readme && 'AUTOCONTEXT_README is not set' }, () => {
  const source = readFileSync(readme, 'utf8');
  const pkg = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'autocontext', 'package.json'), 'utf8'));
  // The first screen: the install line, then the example the test above runs.
  const blocks = [...source.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)];
  assert.deepEqual([blocks[0][1], blocks[0][2].trim()], ['sh', `npm install ${pkg.name}`]);
  assert.equal(blocks[1][1], 'js', 'the usage example comes right after the install line');
  assert.ok(blocks[1].index < 1500, 'the usage example is on the first screen');
  // The repository named once: package.json's fields and the crate's agree.
  const repo = pkg.repository.url.replace(/^git\+/, '').replace(/\.git$/, '');
  const cargo = readFileSync(join(dirname(readme), 'Cargo.toml'), 'utf8').match(/^repository = "(.*)"$/m)?.[1];
  assert.equal(repo, cargo);
  assert.equal(pkg.homepage, `${repo}#readme`);
  assert.equal(pkg.bugs.url, `${repo}/issues`);
  // npm shows the README alone: a relative link or image would point nowhere.
  const targets = [...source.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)].map((m) => m[1]);
  assert.ok(targets.length > 0);
  for (const target of targets) {
    assert.ok(target.startsWith('#') || target.startsWith('https://'), `a relative link: ${target}`);
    const own = target.match(/^https:\/\/(?:github\.com|raw\.githubusercontent\.com)\/([^/]+\/[^/]+)\/(?:blob\/|tree\/)?main\/(.+)$/);
    if (own) {
      assert.equal(`https://github.com/${own[1]}`, repo, `a link into another repository: ${target}`);
      assert.ok(existsSync(join(dirname(readme), own[2])), `a link to a file the repository lacks: ${target}`);
    }
  }
});
