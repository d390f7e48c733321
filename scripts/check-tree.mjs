// The source tree's rules, checked by `npm test`:
//
// 1. Imports form a tree: no file of src/ or js/ imports, directly or through others, a file
//    that imports it back, and no folder does so with a sibling file or folder. A cycle means
//    two pieces can only be understood together.
// 2. The Layout section of README.md is the map, and the map is the tree as it is: every file
//    of src/ and js/ belongs to one of its entries (named itself, or inside a folder it names),
//    every entry names files that exist, and a file imports only files of its own entry or of
//    entries above it in the list. A reader can then read the list from the top, each layer
//    understood from those before it; what everything uses sits above what uses it.
//
// Rust: the edges are the paths a file names (`use crate::…`, `use super::…`, `crate::x::f()`
// in code, a child module's path in its parent), each resolved to the file of the deepest
// module it names; tests inside a file count too. A `mod x;` declaration is no edge, so a
// folder's mod.rs may declare its children, but a child never imports its mod.rs: what the
// children share lives in a sibling file. TypeScript: every relative `import`/`export … from`
// and `import()` of js/, and imports of the package by its own name (`'autocontext'`,
// `'autocontext/stores/memory'`: the adapters import the package as their users do), resolved
// through package.json's `exports` to the source file that becomes what they name.
//
//   node scripts/check-tree.mjs            checks both; exit 1 with each fault named
//   node scripts/check-tree.mjs --edges    also prints every import, file -> file
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const printEdges = process.argv.includes('--edges');

function walk(dir, ext) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p, ext));
    else if (ext.some((e) => name.endsWith(e))) out.push(p);
  }
  return out;
}

const rel = (p) => relative(root, p).split(sep).join('/');

// ---------------------------------------------------------------- Rust

/** The source with comments, strings and char literals blanked (lengths kept). */
function stripRust(src) {
  let out = '';
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    const d = src[i + 1];
    if (c === '/' && d === '/') {
      while (i < n && src[i] !== '\n') i++;
    } else if (c === '/' && d === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (src[i] === '/' && src[i + 1] === '*') (depth++, (i += 2));
        else if (src[i] === '*' && src[i + 1] === '/') (depth--, (i += 2));
        else i++;
      }
      out += ' ';
    } else if ((c === 'r' || (c === 'b' && d === 'r')) && /^b?r#*"/.test(src.slice(i, i + 40)) && !/[A-Za-z0-9_]/.test(src[i - 1] ?? '')) {
      const m = /^b?r(#*)"/.exec(src.slice(i));
      const close = `"${m[1]}`;
      const end = src.indexOf(close, i + m[0].length);
      i = end < 0 ? n : end + close.length;
      out += '""';
    } else if (c === '"') {
      i++;
      while (i < n && src[i] !== '"') i += src[i] === '\\' ? 2 : 1;
      i++;
      out += '""';
    } else if (c === "'") {
      // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a): a literal closes within a few characters.
      const m = /^'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'/u.exec(src.slice(i, i + 12));
      if (m) {
        i += m[0].length;
        out += "' '";
      } else {
        out += c;
        i++;
      }
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Expands a `use` tree (`a::{b, c::{d, self}}`) into paths (arrays of segments). */
function expandUse(tree) {
  tree = tree.replace(/\s+as\s+[A-Za-z_]\w*/g, '').replace(/\s+/g, '');
  const out = [];
  const go = (prefix, t) => {
    for (const part of splitTop(t)) {
      if (!part) continue;
      const brace = part.indexOf('{');
      if (brace >= 0) {
        const head = part.slice(0, brace).replace(/::$/, '');
        const inner = part.slice(brace + 1, part.lastIndexOf('}'));
        go(head ? [...prefix, ...head.split('::')] : prefix, inner);
      } else {
        const segs = part.split('::').filter(Boolean);
        out.push(segs[segs.length - 1] === 'self' ? [...prefix, ...segs.slice(0, -1)] : [...prefix, ...segs]);
      }
    }
  };
  go([], tree);
  return out;
}

function splitTop(s) {
  const parts = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '{') depth++;
    if (ch === '}') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts;
}

function rustGraph() {
  const src = join(root, 'src');
  const files = walk(src, ['.rs']);
  // Module path of each file, and the file of each module path.
  const modOf = new Map();
  const fileOf = new Map();
  for (const f of files) {
    const r = rel(f).replace(/^src\//, '').replace(/\.rs$/, '');
    const segs = r.split('/');
    if (segs[segs.length - 1] === 'mod' || r === 'lib') segs.pop();
    modOf.set(f, segs);
    fileOf.set(segs.join('::'), f);
  }
  const isModule = (segs) => fileOf.has(segs.join('::'));

  // What each file says: its text, inline modules, child modules, `use` trees.
  const info = new Map();
  for (const f of files) {
    const text = stripRust(readFileSync(f, 'utf8'));
    const self = modOf.get(f);
    // Inline modules (`mod tests { … }`): the module path at each offset.
    const inline = [];
    const stack = [];
    let depth = 0;
    const opens = new Map();
    for (const m of text.matchAll(/\bmod\s+([A-Za-z_]\w*)\s*\{/g)) opens.set(m.index + m[0].length - 1, m[1]);
    for (let i = 0; i < text.length; i++) {
      if (text[i] === '{') {
        depth++;
        if (opens.has(i)) stack.push({ name: opens.get(i), depth, start: i });
      } else if (text[i] === '}') {
        if (stack.length && stack[stack.length - 1].depth === depth) {
          const s = stack.pop();
          inline.push({ start: s.start, end: i, path: [...stack.map((x) => x.name), s.name] });
        }
        depth--;
      }
    }
    const modAt = (pos) => {
      let best = [];
      for (const m of inline) if (m.start <= pos && pos <= m.end && m.path.length > best.length) best = m.path;
      return [...self, ...best];
    };
    // Child modules this file declares (`mod x;`), for 2018-style relative paths (`use x::Y`).
    const children = new Set([...text.matchAll(/\bmod\s+([A-Za-z_]\w*)\s*;/g)].map((m) => m[1]));
    const uses = [];
    const reexports = new Map();
    for (const m of text.matchAll(/\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);/g)) {
      for (const segs of expandUse(m[2])) {
        uses.push({ segs, pos: m.index, end: m.index + m[0].length });
        if (m[1] && modAt(m.index).length === self.length) reexports.set(segs[segs.length - 1], { segs, pos: m.index });
      }
    }
    info.set(f, { text, self, modAt, children, uses, reexports });
  }

  /** The file that defines what `segs` names, seen from `f` at offset `pos` (re-exports followed). */
  const resolvePath = (f, segs, pos, seen = 0) => {
    const { self, modAt, children } = info.get(f);
    let base;
    let rest;
    if (segs[0] === 'crate') (base = []), (rest = segs.slice(1));
    else if (segs[0] === 'self') (base = modAt(pos)), (rest = segs.slice(1));
    else if (segs[0] === 'super') {
      base = modAt(pos);
      rest = segs;
      while (rest[0] === 'super') (base = base.slice(0, -1)), (rest = rest.slice(1));
    } else if (children.has(segs[0]) && modAt(pos).length === self.length) (base = self), (rest = segs);
    else return null;
    let full = [...base, ...rest];
    while (full.length > 0 && !isModule(full)) full = full.slice(0, -1);
    const target = fileOf.get(full.join('::'));
    // A name the module only re-exports (`pub use x::Name`) is defined where it comes from.
    const next = [...base, ...rest][full.length];
    const re = next !== undefined && info.get(target).reexports.get(next);
    if (re && seen < 8) return resolvePath(target, re.segs, re.pos, seen + 1) ?? target;
    return target;
  };

  const edges = new Map(files.map((f) => [f, new Map()]));
  for (const f of files) {
    const { text, uses, children } = info.get(f);
    // A folder's mod.rs (and the crate's lib.rs) is the folder itself: declaring, re-exporting
    // or listing its own children is containment, not an import.
    const face = /(^|\/)(mod|lib)\.rs$/.test(f) ? `${dirname(f)}${sep}` : null;
    const add = (target, name) => {
      if (!target || target === f || (face && target.startsWith(face))) return;
      const e = edges.get(f);
      if (!e.has(target)) e.set(target, new Set());
      e.get(target).add(name);
    };
    for (const u of uses) add(resolvePath(f, u.segs, u.pos), u.segs[u.segs.length - 1]);
    // Paths in code: crate::a::b, super::a, self::a, child::a.
    const heads = ['crate', 'super', 'self', ...children].join('|');
    for (const m of text.matchAll(new RegExp(`\\b(?:${heads})(?:\\s*::\\s*[A-Za-z_]\\w*)+`, 'g'))) {
      if (uses.some((u) => m.index >= u.pos && m.index < u.end) || text[m.index - 1] === ':') continue;
      const segs = m[0].split('::').map((s) => s.trim());
      add(resolvePath(f, segs, m.index), segs[segs.length - 1]);
    }
  }
  return { edges, unit: (f) => rel(f) };
}

// ---------------------------------------------------------------- TypeScript

function tsGraph() {
  const dir = join(root, 'js');
  const files = walk(dir, ['.ts', '.mts', '.js', '.mjs']).filter((f) => !f.endsWith('.d.ts') || existsSync(f));
  const known = new Set(files);
  const edges = new Map(files.map((f) => [f, new Map()]));
  const importRe = /(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]((?:\.|autocontext(?=[\/'"]))[^'"]*)['"]|\bimport\(\s*['"]((?:\.|autocontext(?=[\/'"]))[^'"]*)['"]\s*\)/g;
  const exportsMap = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).exports;
  /** The source file of js/ behind a specifier of the package's own name, through `exports`. */
  const selfImport = (spec) => {
    const entry = exportsMap[spec === 'autocontext' ? '.' : `.${spec.slice('autocontext'.length)}`];
    const types = typeof entry === 'string' ? entry : entry?.types;
    if (!types) return null;
    return join(root, types.replace(/^\.\/dist\//, 'js/').replace(/\.d\.ts$/, '.ts'));
  };
  for (const f of files) {
    const text = readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/^\s*\/\/.*$/gm, '');
    for (let m; (m = importRe.exec(text)); ) {
      const spec = m[1] ?? m[2];
      const base = spec.startsWith('.') ? resolve(dirname(f), spec) : selfImport(spec);
      if (!base) continue;
      const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base.replace(/\.js$/, '.d.ts'), `${base}.ts`, join(base, 'index.ts')];
      const target = candidates.find((c) => known.has(c));
      // Imports of build output (./wasm/…, generated at build time) are not files of js/.
      if (!target || target === f) continue;
      const e = edges.get(f);
      if (!e.has(target)) e.set(target, new Set());
      e.get(target).add(spec);
    }
  }
  return { edges, unit: (f) => rel(f), folderOf: (f) => rel(dirname(f)) };
}

// ---------------------------------------------------------------- cycles

/** Strongly connected components of more than one node (Tarjan). */
function cycles(nodes, next) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const onStack = new Set();
  const stack = [];
  const out = [];
  const strong = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!idx.has(w)) {
        strong(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of nodes) if (!idx.has(v)) strong(v);
  return out;
}

function check(name, { edges, unit }, top) {
  const problems = [];
  const files = [...edges.keys()];
  if (printEdges) {
    for (const f of files) for (const [t, names] of edges.get(f)) console.log(`${unit(f)} -> ${unit(t)}: ${[...names].join(', ')}`);
  }
  // Files.
  for (const comp of cycles(files, (f) => edges.get(f).keys())) {
    const set = new Set(comp);
    const ties = comp.flatMap((f) => [...edges.get(f)].filter(([t]) => set.has(t)).map(([t, n]) => `    ${unit(f)} -> ${unit(t)} (${[...n].join(', ')})`));
    problems.push(`${name}: files import each other in a cycle: ${comp.map(unit).join(', ')}\n${ties.join('\n')}`);
  }
  // Folders: within each folder, its files and subfolders as nodes.
  const folders = new Set(files.map((f) => rel(dirname(f))));
  for (const folder of folders) {
    if (!folder.startsWith(top)) continue;
    const member = (f) => {
      const r = rel(f);
      if (!r.startsWith(`${folder}/`)) return null;
      const rest = r.slice(folder.length + 1).split('/');
      return rest.length === 1 ? rest[0] : `${rest[0]}/`;
    };
    const graph = new Map();
    const why = new Map();
    for (const f of files) {
      const a = member(f);
      if (!a) continue;
      if (!graph.has(a)) graph.set(a, new Set());
      for (const t of edges.get(f).keys()) {
        const b = member(t);
        if (!b || b === a) continue;
        graph.get(a).add(b);
        const k = `${a} -> ${b}`;
        if (!why.has(k)) why.set(k, `${unit(f)} -> ${unit(t)}`);
      }
    }
    for (const comp of cycles([...graph.keys()], (a) => graph.get(a) ?? [])) {
      if (comp.every((c) => !c.endsWith('/'))) continue; // a file-level cycle, reported above
      const set = new Set(comp);
      const ties = [...why].filter(([k]) => {
        const [a, b] = k.split(' -> ');
        return set.has(a) && set.has(b);
      });
      problems.push(`${name}: in ${folder}/, these import each other in a cycle: ${comp.join(', ')}\n${ties.map(([k, v]) => `    ${k}  (${v})`).join('\n')}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------- the Layout section

/** The Layout section of README.md. */
function layoutSection() {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Layout\n');
  if (start < 0) return null;
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/**
 * The entries of the Layout's list under `src/` and `js/`, in order: each a line indented by two
 * spaces under its top folder, opening with its names (`tokens.rs`, `types.ts, errors.ts, sdk/`:
 * files, and folders ending in `/`, separated by commas), then what they hold. Returns each entry's paths (relative to the root; a folder
 * ends with `/`) and its position in the list.
 */
function layoutEntries(section) {
  const block = /```text\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  const entries = [];
  let top = null;
  for (const line of block.split('\n')) {
    const topMatch = /^(\S+\/)/.exec(line);
    if (topMatch) {
      top = ['src/', 'js/'].includes(topMatch[1]) ? topMatch[1] : null;
      continue;
    }
    const m = /^ {2}([\w.-]+\/?(?:, [\w.-]+\/?)*)(?:\s|,?$)/.exec(line);
    if (!top || !m) continue;
    const names = m[1].split(',').map((n) => n.trim()).filter(Boolean);
    entries.push({ line: line.trim(), paths: names.map((n) => `${top}${n}`), rank: entries.length });
  }
  return entries;
}

/**
 * Files of src/ and js/ no entry names, entries that name nothing, and imports that go down the
 * list (to a file of an entry below the importing file's).
 */
function layoutProblems(graphs) {
  const section = layoutSection();
  if (section === null) return ['README.md has no "## Layout" section'];
  const problems = [];
  // Folders, as before: the map names every folder.
  const folders = (dir) =>
    readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .flatMap((d) => [join(dir, d.name), ...folders(join(dir, d.name))]);
  for (const f of [join(root, 'src'), join(root, 'js')].flatMap(folders)) {
    if (!section.includes(`${f.split(sep).pop()}/`)) problems.push(`the Layout section of README.md does not name ${rel(f)}/`);
  }
  const entries = layoutEntries(section);
  for (const e of entries) {
    for (const p of e.paths) if (!existsSync(join(root, p))) problems.push(`the Layout section of README.md names ${p}, which does not exist`);
  }
  /** The entry a file belongs to: the one naming it, else the one naming its deepest folder. */
  const entryOf = (file) => {
    let best = null;
    let depth = -1;
    for (const e of entries) {
      for (const p of e.paths) {
        const hit = p.endsWith('/') ? file.startsWith(p) : file === p;
        const d = p.endsWith('/') ? p.length : Infinity;
        if (hit && d > depth) (best = e), (depth = d);
      }
    }
    return best;
  };
  for (const { edges, unit } of graphs) {
    for (const [f, targets] of edges) {
      const from = entryOf(unit(f));
      if (!from) {
        problems.push(`the Layout section of README.md names no entry for ${unit(f)}: add it to the entry of its layer`);
        continue;
      }
      for (const [t, names] of targets) {
        const to = entryOf(unit(t));
        if (to && to.rank > from.rank) {
          problems.push(`${unit(f)} imports ${unit(t)} (${[...names].join(', ')}), which is below it in the Layout list ("${from.paths.join(', ')}" is above "${to.paths.join(', ')}"): move what it needs up, or the importer down`);
        }
      }
    }
  }
  return problems;
}

const rust = rustGraph();
const typescript = tsGraph();
const cyclesFound = [...check('Rust', rust, 'src'), ...check('TypeScript', typescript, 'js')];
const layout = layoutProblems([rust, typescript]);
if (cyclesFound.length) {
  console.error(cyclesFound.join('\n'));
  console.error(`\n${cyclesFound.length} import cycle(s): move what both sides need into a file both import, above both in the Layout list of README.md.`);
}
if (layout.length) console.error(layout.join('\n'));
if (cyclesFound.length || layout.length) process.exit(1);
console.log('the tree: no import cycle among the files or folders of src/ and js/; every file is in an entry of the Layout list, and imports only its own entry or those above it');
