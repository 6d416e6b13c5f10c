/**
 * The page's script, /app.js: the browser modules in ./page (TypeScript, type-checked with the
 * rest of the tree against the DOM and the API's reply types), compiled to JavaScript and joined
 * into one classic script, because the page loads one plain `<script src="/app.js" defer>`.
 *
 * Where the JavaScript comes from:
 * - A build (`npm run build`, or any `tsc -p tsconfig.build.json`) emits ./page/*.js next to
 *   this file; those are read as they are.
 * - Run from source (tests, or node with type stripping) there is no ./page/*.js, so each
 *   ./page/*.ts is compiled here with the TypeScript compiler (a dev dependency, which source
 *   checkouts have).
 *
 * Joining is deliberately small, not a general bundler. The page modules follow three rules,
 * checked here (a broken rule fails startDashboard, and test/dashboard-script.test.ts):
 * value imports only as `import { a, b as c } from './x.js'` from a sibling page module (type
 * imports are erased by the compiler, so they may come from anywhere), exports only as
 * `export function|const|class name`, and no import cycles. Each module becomes a function
 * scope returning its exports, called once in dependency order, so top-level names never clash.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The page module the page runs; the others are included as far as it imports them. */
const ENTRY = 'app';
const IMPORT = /^import\s*\{([^}]*)\}\s*from\s*(['"])\.\/([a-z][a-z0-9-]*)\.js\2;?[ \t]*$/gm;
const EXPORT = /^export\s+(?:async\s+)?(function\*?|const|class)\s+([A-Za-z_$][\w$]*)/gm;

interface Module {
  name: string;
  body: string;
  exports: string[];
  imports: { from: string; names: [imported: string, local: string][] }[];
}

/** Compiled JavaScript of one page module → its imports, exports and body without them. */
function parse(name: string, js: string): Module {
  const imports: Module['imports'] = [];
  let body = js.replace(IMPORT, (_all, list: string, _q, from: string) => {
    const names = list
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map((s): [string, string] => {
        const m = /^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$/.exec(s);
        if (!m) throw new Error(`dashboard page module ${name}: cannot read the import "${s}"`);
        return [m[1], m[2] ?? m[1]];
      });
    imports.push({ from, names });
    return '';
  });
  const exports: string[] = [];
  body = body.replace(EXPORT, (_all, kind: string, id: string) => {
    exports.push(id);
    return `${kind} ${id}`;
  });
  body = body
    .replace(/^export\s*\{\s*\};?[ \t]*$/gm, '') // what the compiler leaves when only types were exported
    .replace(/^\/\/# sourceMappingURL=.*$/gm, '')
    .trim();
  const left = /^(import|export)\b.*$/m.exec(body);
  if (left) throw new Error(`dashboard page module ${name}: unsupported form "${left[0]}" (see src/dashboard/script.ts)`);
  return { name, body, exports, imports };
}

/** Joins compiled page modules (name → JavaScript) into one classic script running ENTRY. */
export function joinPageModules(js: ReadonlyMap<string, string>): string {
  const done = new Map<string, Module>();
  const order: Module[] = [];
  const visit = (name: string, path: string[]): void => {
    if (done.has(name)) return;
    if (path.includes(name)) throw new Error(`dashboard page modules import in a cycle: ${[...path, name].join(' → ')}`);
    const src = js.get(name);
    if (src === undefined) throw new Error(`dashboard page module ${path.at(-1)} imports ./${name}.js, which does not exist`);
    const m = parse(name, src);
    for (const imp of m.imports) visit(imp.from, [...path, name]);
    for (const imp of m.imports) {
      const from = done.get(imp.from)!;
      for (const [imported] of imp.names) {
        if (!from.exports.includes(imported)) {
          throw new Error(`dashboard page module ${name} imports ${imported}, which ./${imp.from}.js does not export`);
        }
      }
    }
    done.set(name, m);
    order.push(m);
  };
  visit(ENTRY, []);

  const scope = (name: string) => `page_${name.replace(/-/g, '_')}`;
  const parts = order.map((m) => {
    const head = m.imports.map((imp) => `const { ${imp.names.map(([a, b]) => (a === b ? a : `${a}: ${b}`)).join(', ')} } = ${scope(imp.from)};\n`).join('');
    const tail = m.name === ENTRY ? '' : `\nreturn { ${m.exports.join(', ')} };`;
    const open = m.name === ENTRY ? '(function () {' : `const ${scope(m.name)} = (function () {`;
    return `// ---- page/${m.name}.ts\n${open}\n${head}${m.body}${tail}\n})();\n`;
  });
  return `'use strict';\n// echomq dashboard: src/dashboard/page/*.ts, compiled and joined by src/dashboard/script.ts\n(function () {\n${parts.join('')}})();\n`;
}

/** The page modules' JavaScript from a folder: built *.js if there are any, else compiled *.ts. */
export async function readPageModules(dir: string): Promise<Map<string, string>> {
  const files = readdirSync(dir);
  const out = new Map<string, string>();
  if (existsSync(join(dir, `${ENTRY}.js`))) {
    for (const f of files) if (f.endsWith('.js')) out.set(f.slice(0, -3), readFileSync(join(dir, f), 'utf8'));
    return out;
  }
  let ts: typeof import('typescript');
  try {
    ts = (await import('typescript')).default;
  } catch {
    throw new Error(`the dashboard script is not built: no ${ENTRY}.js in ${dir} (run npm run build)`);
  }
  for (const f of files) {
    if (!f.endsWith('.ts') || f.endsWith('.d.ts')) continue;
    const r = ts.transpileModule(readFileSync(join(dir, f), 'utf8'), {
      fileName: f,
      // As tsconfig.json compiles them for a build: ES2022, ES module syntax.
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, sourceMap: false },
    });
    out.set(f.slice(0, -3), r.outputText);
  }
  return out;
}

let cached: Promise<string> | undefined;

/** /app.js, built once per process from ./page next to this module. */
export function pageScript(): Promise<string> {
  cached ??= readPageModules(fileURLToPath(new URL('./page/', import.meta.url))).then(joinPageModules);
  // A failed build is not kept, so a later start can report it again (or succeed once fixed).
  cached.catch(() => (cached = undefined));
  return cached;
}
