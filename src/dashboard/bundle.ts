/**
 * The page's script, /app.js: the Preact views of ./page bundled by esbuild into one file.
 *
 * - A build (`npm run build`) writes dist/dashboard/app.js with `writeBundle()`; the published
 *   package serves that file and needs neither esbuild nor the page sources.
 * - Run from source (tests, `node --experimental-strip-types`), the same bundle is made in memory
 *   on first use with esbuild (a dev dependency, which source checkouts have).
 * Either way the file is served from the dashboard itself: no CDN, so the page works offline and
 * under its CSP (`script-src 'self'`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** The built bundle, next to this module once compiled (dist/dashboard/app.js). */
const BUILT = join(here, 'app.js');

/** The page's entry: ./page/main.tsx in source, ../../src/dashboard/page/main.tsx from dist. */
function entry(): string {
  const candidates = [join(here, 'page', 'main.tsx'), join(here, '..', '..', 'src', 'dashboard', 'page', 'main.tsx')];
  const hit = candidates.find((c) => existsSync(c));
  if (!hit) throw new Error(`dashboard page sources not found (looked for ${candidates.join(', ')})`);
  return hit;
}

/** One esbuild configuration for the build and the in-memory bundle, so both give the same file. */
async function bundle(outfile?: string): Promise<string> {
  const esbuild = await import('esbuild');
  const r = await esbuild.build({
    entryPoints: [entry()],
    bundle: true,
    format: 'iife',
    target: 'es2020',
    minify: true,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    charset: 'utf8',
    write: false,
    outfile: outfile ?? 'app.js',
    logLevel: 'silent',
  });
  return r.outputFiles[0].text;
}

let cached: Promise<string> | undefined;

/** The script the dashboard serves: the built file when there is one, else bundled now (once per process). */
export function pageScript(): Promise<string> {
  cached ??= existsSync(BUILT) ? Promise.resolve(readFileSync(BUILT, 'utf8')) : bundle();
  return cached;
}

/** Writes the bundle next to this module (run by `npm run build` on dist/dashboard/bundle.js). */
export async function writeBundle(): Promise<{ path: string; bytes: number }> {
  const { writeFileSync } = await import('node:fs');
  const text = await bundle(BUILT);
  writeFileSync(BUILT, text);
  return { path: BUILT, bytes: Buffer.byteLength(text) };
}
