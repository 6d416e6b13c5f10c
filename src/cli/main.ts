#!/usr/bin/env node
/** Entry point of the `echomq` binary: runs one command and exits with its code. */
import { runCli } from './program.js';

const code = await runCli(process.argv.slice(2), {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  env: process.env,
  progress: Boolean(process.stderr.isTTY),
});
// Let pending writes to a pipe drain before leaving.
process.exitCode = code;
// A handle left open by accident must not keep a finished command alive.
setTimeout(() => process.exit(code), 2000).unref();
