#!/usr/bin/env node
// Writes js/sdk/*.ts: structural copies of the provider SDKs' message, tool and usage types,
// taken from the SDK versions pinned in package.json (dev dependencies only). autocontext's
// public types are built on these copies, so `memory.messages()` is assignable to the SDK's
// own parameter type and the SDK's values to `memory.add()`, without the package importing
// any SDK at run time or in its declarations.
//
// Each root type is copied with every type it references inside its SDK (interfaces and type
// aliases, their doc comments kept, names prefixed; members of a namespace are flattened, so
// `ChatCompletionContentPart.File` becomes `OpenAIChatCompletionContentPartFile`). Global
// types stay (`Array`, `Record`, `Uint8Array`), except Node's `Buffer`, written as
// `Uint8Array` (which it extends), and `URL`, written as a type that is the runtime's `URL`
// where one is declared and `never` where none is (so the copies compile without DOM or Node
// declarations). A class with only fields (`@google/genai` declares its data types so) is
// copied as an interface of its fields. An enum becomes `any` under its own name, its values
// in its doc comment: a string enum is nominal in TypeScript, so no copy of it would accept
// the SDK's values and be accepted where the SDK wants its own.
//
//   node scripts/sdk-types.mjs          rewrites js/sdk/*.ts
//   node scripts/sdk-types.mjs --check  fails when they differ from what the pinned SDKs give
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** One generated file per SDK: where its types come from and which ones are copied. */
const MIRRORS = [
  {
    out: 'js/sdk/openai.ts',
    sdk: 'openai',
    prefix: 'OpenAI',
    what: 'OpenAI chat completions',
    imports: { 'openai/resources/chat/completions': ['ChatCompletionMessageParam', 'ChatCompletionMessageToolCall'] },
  },
  {
    out: 'js/sdk/openai-responses.ts',
    sdk: 'openai',
    prefix: 'OpenAIResponses',
    what: 'the OpenAI Responses API',
    imports: { 'openai/resources/responses/responses': ['ResponseInputItem', 'ResponseFunctionToolCall'] },
  },
  {
    out: 'js/sdk/anthropic.ts',
    sdk: '@anthropic-ai/sdk',
    prefix: 'Anthropic',
    what: 'the Anthropic Messages API',
    imports: { '@anthropic-ai/sdk/resources/messages': ['MessageParam', 'ToolUseBlockParam'] },
  },
  {
    out: 'js/sdk/ai-sdk.ts',
    sdk: 'ai',
    prefix: 'AiSdk',
    what: 'the Vercel AI SDK',
    imports: { ai: ['ModelMessage', 'ToolCallPart'] },
  },
  {
    out: 'js/sdk/gemini.ts',
    sdk: '@google/genai',
    prefix: 'Gemini',
    what: 'the Gemini API',
    imports: { '@google/genai': ['Content', 'Part', 'FunctionCall'] },
  },
];

/** Globals written otherwise: Node's `Buffer` is a `Uint8Array`; `URL` may not be declared at all. */
const globals = (prefix) => ({ Buffer: 'Uint8Array', URL: `${prefix}URL` });
const globalUrl = (prefix) => `/** The runtime's \`URL\` class where the program declares one (DOM or Node types), else \`never\`. */
export type ${prefix}URL = typeof globalThis extends { URL: { prototype: infer U } } ? U : never;
`;

/** The installed version of a package. */
function version(pkg) {
  return JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;
}

/** The package a declaration file belongs to, or null for lib and @types files. */
function packageOf(fileName) {
  const m = fileName.replace(/\\/g, '/').match(/\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*\/node_modules\/)/);
  if (!m || m[1].startsWith('@types/') || m[1] === 'typescript') return null;
  return m[1];
}

function generate(mirror) {
  const GLOBALS = globals(mirror.prefix);
  const probe = join(root, '__sdk_types_probe__.ts');
  const names = Object.values(mirror.imports).flat();
  const source = Object.entries(mirror.imports)
    .map(([from, list]) => `import type { ${list.join(', ')} } from '${from}';`)
    .join('\n');
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: ['node'],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) =>
    name === probe ? ts.createSourceFile(name, source, lang, true) : getSourceFile(name, lang, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === probe || fileExists(name);
  const program = ts.createProgram([probe], options, host);
  const checker = program.getTypeChecker();
  const problems = ts.getPreEmitDiagnostics(program).filter((d) => d.file?.fileName === probe);
  if (problems.length > 0) throw new Error(ts.flattenDiagnosticMessageText(problems[0].messageText, '\n'));

  /** Resolves an alias (an import or re-export) to the symbol it names. */
  const resolve = (symbol) => (symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);

  // Declarations to copy, in discovery order, with their new names.
  const decls = new Map(); // node -> new name
  const queue = [];
  const taken = new Map(); // new name -> qualified name
  const rename = (decl) => {
    const path = [decl.name.text];
    for (let p = decl.parent; p; p = p.parent) {
      if (ts.isModuleDeclaration(p) && !ts.isStringLiteral(p.name)) path.unshift(p.name.text);
    }
    const name = mirror.prefix + path.join('');
    const qualified = `${decl.getSourceFile().fileName}:${path.join('.')}`;
    if (taken.has(name) && taken.get(name) !== qualified) throw new Error(`${name} names both ${taken.get(name)} and ${qualified}`);
    taken.set(name, qualified);
    return name;
  };
  const copied = (d) => ts.isInterfaceDeclaration(d) || ts.isTypeAliasDeclaration(d) || ts.isClassDeclaration(d) || ts.isEnumDeclaration(d);
  const add = (symbol) => {
    for (const d of symbol?.declarations ?? []) {
      if (!copied(d)) continue;
      if (packageOf(d.getSourceFile().fileName) === null) continue;
      if (!decls.has(d)) {
        decls.set(d, rename(d));
        queue.push(d);
      }
    }
  };
  const probeFile = program.getSourceFile(probe);
  for (const stmt of probeFile.statements) {
    for (const el of stmt.importClause.namedBindings.elements) add(resolve(checker.getSymbolAtLocation(el.name)));
  }

  // Each declaration's text, with references to copied types renamed.
  const texts = [];
  while (queue.length > 0) {
    const decl = queue.shift();
    const sf = decl.getSourceFile();
    const edits = [];
    const visit = (node) => {
      const ref = ts.isTypeReferenceNode(node) ? node.typeName : ts.isExpressionWithTypeArguments(node) ? node.expression : null;
      if (ref) {
        const symbol = resolve(checker.getSymbolAtLocation(ts.isQualifiedName(ref) ? ref.right : ref));
        const target = symbol?.declarations?.find(copied);
        const text = ref.getText(sf);
        if (target && packageOf(target.getSourceFile().fileName) !== null) {
          add(symbol);
          edits.push([ref.getStart(sf), ref.end, decls.get(target)]);
        } else if (symbol?.flags & ts.SymbolFlags.TypeParameter) {
          // a type parameter of the declaration: kept
        } else if (Object.hasOwn(GLOBALS, text)) {
          edits.push([ref.getStart(sf), ref.end, GLOBALS[text]]);
        } else if (!target && !symbol) {
          throw new Error(`${decls.get(decl)}: cannot resolve ${text}`);
        }
      }
      if (ts.isImportTypeNode(node)) throw new Error(`${decls.get(decl)}: import types are not supported`);
      ts.forEachChild(node, visit);
    };
    const docs = ts.getJSDocCommentsAndTags(decl).filter((d) => d.parent === decl);
    const start = docs.length > 0 ? docs[0].getStart(sf) : decl.getStart(sf);
    if (ts.isEnumDeclaration(decl)) {
      const values = decl.members.map((m) => (m.initializer ? m.initializer.getText(sf) : `'${m.name.getText(sf)}'`));
      const doc = docs.length > 0 ? sf.text.slice(docs[0].getStart(sf), docs.at(-1).end).replace(/\s*\*\/$/, '') : '/**';
      texts.push(`${doc}\n * The SDK's enum of ${values.join(' | ')}.\n */\nexport type ${decls.get(decl)} = any;`);
      continue;
    }
    if (ts.isClassDeclaration(decl)) {
      const fields = decl.members.filter(ts.isPropertyDeclaration);
      if (fields.length !== decl.members.length) throw new Error(`${decls.get(decl)}: a class with more than fields`);
      for (const f of fields) ts.forEachChild(f, (child) => (child !== f.name ? visit(child) : undefined));
      edits.sort((a, b) => b[0] - a[0]);
      const body = fields
        .map((f) => {
          const from = (ts.getJSDocCommentsAndTags(f)[0] ?? f).getStart(sf);
          let text = sf.text.slice(from, f.end);
          for (const [a, b, by] of edits.filter(([a]) => a >= from && a < f.end)) text = text.slice(0, a - from) + by + text.slice(b - from);
          return '    ' + text.replace(/^\s+/gm, (m) => (m.includes('\n') ? m : '    '));
        })
        .join('\n');
      const head = sf.text.slice(start, decl.getStart(sf));
      texts.push(`${head}export interface ${decls.get(decl)} {\n${body}\n}`.replace(/[ \t]+$/gm, ''));
      continue;
    }
    // Header: `export interface|type <new name>`, whatever modifiers the original had.
    edits.push([decl.getStart(sf), decl.name.end, `export ${ts.isInterfaceDeclaration(decl) ? 'interface' : 'type'} ${decls.get(decl)}`]);
    ts.forEachChild(decl, (child) => {
      if (child !== decl.name && !ts.isModifier(child)) visit(child);
    });
    edits.sort((a, b) => b[0] - a[0]);
    let text = sf.text.slice(start, decl.end);
    for (const [from, to, by] of edits) text = text.slice(0, from - start) + by + text.slice(to - start);
    // Members of a namespace come indented: bring them to the left margin.
    const column = sf.getLineAndCharacterOfPosition(start).character;
    if (column > 0) text = text.replace(new RegExp(`^ {1,${column}}`, 'gm'), '');
    texts.push(text.replace(/[ \t]+$/gm, ''));
  }
  const usesUrl = texts.some((t) => new RegExp(`\\b${mirror.prefix}URL\\b`).test(t));
  const header = `// Generated by scripts/sdk-types.mjs from ${mirror.sdk} ${version(mirror.sdk)}: do not edit.
//
// Structural copies of the types of ${mirror.what} that autocontext's public types use
// (${names.join(', ')} and what they reference), so that values of the SDK's own types and
// values of these types are assignable to each other. Doc comments are the SDK's.

`;
  return header + (usesUrl ? globalUrl(mirror.prefix) + '\n' : '') + texts.join('\n\n') + '\n';
}

const check = process.argv.includes('--check');
let stale = 0;
for (const mirror of MIRRORS) {
  const text = generate(mirror);
  const file = join(root, mirror.out);
  let old = null;
  try {
    old = readFileSync(file, 'utf8');
  } catch {
    // not written yet
  }
  if (check) {
    if (old !== text) {
      console.error(`${mirror.out} is not what ${mirror.sdk} ${version(mirror.sdk)} gives: run node scripts/sdk-types.mjs`);
      stale++;
    }
  } else if (old !== text) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    console.log(`wrote ${mirror.out}`);
  }
}
if (stale > 0) process.exit(1);
