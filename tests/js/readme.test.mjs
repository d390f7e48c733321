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
      const [path, fragment] = own[2].split('#');
      const file = join(dirname(readme), path);
      assert.ok(existsSync(file), `a link to a file the repository lacks: ${target}`);
      if (fragment !== undefined && path.endsWith('.md')) {
        // GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
        const anchors = [...readFileSync(file, 'utf8').matchAll(/^#+ (.*)$/gm)].map((h) =>
          h[1].trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-'));
        assert.ok(anchors.includes(fragment), `a link to a heading ${path} lacks: ${target}`);
      }
    }
  }
});

test('the README puts the versions that install together beside each framework it names', { skip: !readme && 'AUTOCONTEXT_README is not set' }, () => {
  const source = readFileSync(readme, 'utf8');
  const repo = JSON.parse(readFileSync(join(dirname(readme), 'package.json'), 'utf8'));
  const installed = (name) => JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', name, 'package.json'), 'utf8'));
  const section = (start, end) => source.slice(source.indexOf(start), source.indexOf(end, source.indexOf(start)));
  /** The ranges an `npm install` line of a ```sh block of `text` gives each package. */
  const ranges = (text) => {
    const line = [...text.matchAll(/^```sh\n(npm install [^\n]*)\n```$/gm)].map((m) => m[1])[0];
    assert.ok(line, `no npm install line in:\n${text.slice(0, 300)}`);
    return Object.fromEntries(line.split(' ').slice(2).map((spec) => [spec.replace(/@[^@/]*$/, '') || spec, spec.includes('@', 1) ? spec.slice(spec.lastIndexOf('@') + 1) : '*']));
  };
  /** Whether version `v` (x.y.z) is in caret range `r` (^x.y.z). */
  const inCaret = (v, r) => {
    const [a, b] = [v, r.replace(/^\^/, '')].map((x) => x.split('.').map(Number));
    return a[0] === b[0] && (a[1] > b[1] || (a[1] === b[1] && a[2] >= b[2]));
  };

  // ADK: the @google/genai ADK depends on, the version tested, the adapter's peer range.
  const adk = ranges(section('With Google ADK', 'ADK sends function calls'));
  const adkPkg = installed('@google/adk');
  assert.ok(inCaret(adkPkg.version, adk['@google/adk']), `@google/adk ${adkPkg.version} in ${adk['@google/adk']}`);
  assert.equal(adk['@google/genai'], adkPkg.dependencies['@google/genai'].replace(/^\^(\d+\.\d+)$/, '^$1.0'), "the @google/genai range ADK depends on");
  assert.ok(inCaret(repo.devDependencies['@google/genai'], adk['@google/genai']), 'the @google/genai this repository tests with is in it');

  // Strands: its Node note, and the overrides snippet that lets it sit beside openai 7.
  const strands = section('With AWS Strands Agents', 'With the OpenAI Agents SDK');
  const strandsPkg = installed('@strands-agents/sdk');
  assert.ok(inCaret(strandsPkg.version, ranges(strands)['@strands-agents/sdk']));
  const node = /^>=(\d+)/.exec(strandsPkg.engines.node)[1];
  assert.match(strands, new RegExp(`declares Node ${node} or later \\(\`engines\`: npm warns \`EBADENGINE\` on Node 20`));
  assert.match(strandsPkg.peerDependencies.openai, /^\^6/, 'Strands still names openai 6: the overrides are needed');
  const snippet = /^```json\n([\s\S]*?)^```$/m.exec(strands);
  assert.ok(snippet, 'the overrides snippet is in the Strands section');
  assert.deepEqual(JSON.parse(snippet[1]).overrides, repo.overrides, 'the overrides this repository installs with');
  assert.ok(!inCaret(repo.devDependencies.openai, strandsPkg.peerDependencies.openai), 'the openai tested with is outside Strands\' range');

  // Mastra's Node note.
  const mastra = installed('@mastra/core');
  const mastraNode = /^>=(\d+\.\d+)/.exec(mastra.engines.node)[1];
  assert.match(section('With Mastra', 'With Google ADK'), new RegExp(`declares Node ${mastraNode.replace('.', '\\.')} or later`));
});
