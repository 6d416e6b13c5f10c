// Copies the Lua transition scripts next to the compiled JavaScript so that
// dist/scripts/loader.js finds them at the same relative path as in src/.
import { cpSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
mkdirSync(join(root, 'dist', 'scripts'), { recursive: true });
cpSync(join(root, 'src', 'scripts'), join(root, 'dist', 'scripts'), {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
