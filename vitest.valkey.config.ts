// The Valkey run (`npm run test:valkey`, an explicit step of .ci/run): the same harness on a
// valkey-server (ECHOMQ_SERVER_BIN, see scripts/valkey-test.sh), with the files where a server
// difference would show: every transition and its replies (core, lanes, vectors), the recovery
// and once-only guarantees (reliability), script loading (functions vs EVAL, layout), the
// documented ACL, what the server reports about itself, and Python sharing a queue with Node.
// Left to the Redis run: the BullMQ side-by-side, sandbox, CLI, dashboard and cluster files
// (client-side behaviour, the same on either server), the input fuzzer (it tests the clients'
// validation, and each of its steps SCANs a keyspace the other files fill: 5 s alone, 70 s
// here) and the two long load tests (reliability-crash, reliability-bounded: 1.5 min each), so
// the run stays near 2 minutes.
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// Spread, not mergeConfig: that would append these lists to the base's include-everything.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/core-*.test.ts',
      'test/lanes-*.test.ts',
      'test/reliability-*.test.ts',
      'test/**/*vector*.test.ts',
      'test/vectors/**/*.test.ts',
      'test/python-interop.test.ts',
      'test/scripts-mode.test.ts',
      'test/layout-version.test.ts',
      'test/add-paths.test.ts',
      'test/events.test.ts',
      'test/flows.test.ts',
      'test/compat/worker-backend.test.ts',
    ],
    exclude: ['test/reliability-crash.test.ts', 'test/reliability-bounded.test.ts', 'test/reliability-fuzz.test.ts', '**/node_modules/**'],
  },
});
