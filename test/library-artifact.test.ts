// The Python package ships the assembled Lua library (python/echomq/library.json); this fails
// when the committed copy differs from what src/scripts builds, so both runtimes run one library.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as loader from '../src/scripts/loader.js';
import { LAYOUT_VERSION } from '../src/core/layout.js';
import { Code } from '../src/core/errors.js';
// @ts-expect-error plain ESM helper without types
import { assemble, ARTIFACT } from '../scripts/build-library.mjs';

describe('the library artifact', () => {
  it('equals what src/scripts builds (regenerate: npm run build && node scripts/build-library.mjs)', () => {
    const built = assemble(loader, LAYOUT_VERSION, Code) as string;
    const committed = readFileSync(ARTIFACT as string, 'utf8');
    const a = JSON.parse(built);
    const b = JSON.parse(committed);
    expect(Object.keys(b.scripts).sort()).toEqual(Object.keys(a.scripts).sort());
    expect(b.libraryTag).toBe(a.libraryTag);
    expect(committed === built).toBe(true);
  });
});
