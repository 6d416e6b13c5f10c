// Lists BullMQ's public surface from the type definitions of the `bullmq` devDependency: the
// public members of its main classes (own and inherited) and the runtime names its root exports.
// Used by test/compat/surface.test.ts (the migration table must cover every one) and by
// `node scripts/bullmq-surface.mjs` to print the list when updating docs/migrating-from-bullmq.md.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const ts = require('typescript');
const classesDir = join(dirname(require.resolve('bullmq/package.json')), 'dist', 'esm', 'classes');

/** Class name → file (without .d.ts) in bullmq/dist/esm/classes. */
export const CLASS_FILES = {
  QueueBase: 'queue-base', QueueGetters: 'queue-getters', Queue: 'queue', Worker: 'worker', Job: 'job',
  QueueEvents: 'queue-events', QueueEventsProducer: 'queue-events-producer', FlowProducer: 'flow-producer',
};
/** The classes a BullMQ user meets, with the bases whose members they inherit. */
export const SURFACE = {
  Queue: ['QueueBase', 'QueueGetters', 'Queue'],
  Worker: ['QueueBase', 'Worker'],
  Job: ['Job'],
  QueueEvents: ['QueueBase', 'QueueEvents'],
  QueueEventsProducer: ['QueueBase', 'QueueEventsProducer'],
  FlowProducer: ['FlowProducer'],
};

function membersOf(className) {
  const file = join(classesDir, `${CLASS_FILES[className]}.d.ts`);
  const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out = new Map();
  src.forEachChild((node) => {
    if (!ts.isClassDeclaration(node) || node.name?.text !== className) return;
    for (const m of node.members) {
      const mods = ts.getCombinedModifierFlags(m);
      if (mods & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue;
      if (m.name && ts.isPrivateIdentifier(m.name)) continue;
      let name;
      if (ts.isConstructorDeclaration(m)) name = 'constructor';
      else if (m.name) name = m.name.getText(src);
      if (!name) continue;
      const isStatic = (mods & ts.ModifierFlags.Static) !== 0;
      out.set((isStatic ? 'static ' : '') + name, { static: isStatic });
    }
  });
  return out;
}

/** { Queue: ['add', 'addBulk', …, 'static …'], … } sorted, duplicates across bases removed. */
export function publicMembers() {
  const result = {};
  for (const [cls, bases] of Object.entries(SURFACE)) {
    const names = new Set();
    for (const b of bases) for (const n of membersOf(b).keys()) names.add(n);
    result[cls] = [...names].sort();
  }
  return result;
}

/** Runtime names exported by bullmq's root (what `import { X } from 'bullmq'` can get). */
export async function rootExports() {
  const mod = await import('bullmq');
  return Object.keys(mod).filter((k) => k !== 'default').sort();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const m = publicMembers();
  for (const [cls, names] of Object.entries(m)) console.log(`${cls} (${names.length}): ${names.join(', ')}`);
  const roots = await rootExports();
  console.log(`root exports (${roots.length}): ${roots.join(', ')}`);
}
