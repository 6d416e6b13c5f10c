// Copies the Lua transition scripts next to the compiled JavaScript so that
// dist/scripts/loader.js finds them at the same relative path as in src/; and the sandbox's
// plain-JavaScript child side (src/sandbox/*.mjs with their .d.mts types), which tsc does not
// emit, so dist/sandbox/child.js finds child-main.mjs next to it.
import { cpSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
mkdirSync(join(root, 'dist', 'scripts'), { recursive: true });
cpSync(join(root, 'src', 'scripts'), join(root, 'dist', 'scripts'), {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});

mkdirSync(join(root, 'dist', 'sandbox'), { recursive: true });
cpSync(join(root, 'src', 'sandbox'), join(root, 'dist', 'sandbox'), {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'), // keeps .mjs and .d.mts
});
