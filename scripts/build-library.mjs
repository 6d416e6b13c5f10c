// Emits the assembled Lua library as one JSON artifact that every client loads (the Python
// package ships it): the function library's source and name, and for each transition its
// EVAL source, SHA1, KEYS order and function name, and the status codes by name. Built from dist/ (run `npm run build` first).
//   node scripts/build-library.mjs           writes python/echomq/library.json
//   node scripts/build-library.mjs --check   exits 1 when the committed copy differs
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ARTIFACT = join(root, 'python', 'echomq', 'library.json');

/** The artifact's text from a loader module and the layout version (from dist/ or, in tests, src/). */
export function assemble(loader, layoutVersion, codes) {
  const names = readdirSync(join(root, 'src', 'scripts'))
    .filter((f) => f.endsWith('.lua'))
    .map((f) => f.slice(0, -4))
    .sort();
  const library = loader.loadLibrary();
  const scripts = {};
  for (const name of names) {
    const s = loader.loadScript(name);
    scripts[name] = { keys: [...s.keys], sha: s.sha, functionName: s.functionName ?? null, source: s.source };
  }
  // codes: the scripts' status codes by name (src/core/errors.ts), so clients map replies by name.
  const artifact = { libraryName: library.name, libraryTag: library.tag, layoutVersion, codes, library: library.source, scripts };
  return JSON.stringify(artifact, null, 1) + '\n';
}

async function buildArtifact() {
  const loader = await import(join(root, 'dist', 'scripts', 'loader.js'));
  const { LAYOUT_VERSION } = await import(join(root, 'dist', 'core', 'layout.js'));
  const { Code } = await import(join(root, 'dist', 'core', 'errors.js'));
  return assemble(loader, LAYOUT_VERSION, Code);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = await buildArtifact();
  if (process.argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(ARTIFACT, 'utf8');
    } catch {}
    if (committed !== text) {
      console.error(`${ARTIFACT} differs from what src/scripts builds: run npm run build && node scripts/build-library.mjs`);
      process.exit(1);
    }
  } else {
    writeFileSync(ARTIFACT, text);
    console.log(`wrote ${ARTIFACT}`);
  }
}
