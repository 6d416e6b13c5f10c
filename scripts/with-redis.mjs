#!/usr/bin/env node
// Runs a command with REDIS_URL pointing at a Redis: the one in REDIS_URL if set, otherwise a
// throwaway local server (see redis-server.mjs) that is stopped when the command exits.
// Usage: node scripts/with-redis.mjs <command> [args...]
import { spawn } from 'node:child_process';
import { ensureRedis } from './redis-server.mjs';

const [cmd, ...args] = process.argv.slice(2);
if (!cmd) {
  console.error('usage: with-redis.mjs <command> [args...]');
  process.exit(2);
}
let redis;
try {
  redis = await ensureRedis();
} catch (err) {
  console.error(`[echomq] ${err.message}`);
  process.exit(1);
}
const child = spawn(cmd, args, { stdio: 'inherit', env: { ...process.env, REDIS_URL: redis.url } });
const forward = (sig) => child.kill(sig);
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
child.on('exit', async (code, signal) => {
  await redis.stop();
  process.exit(code ?? (signal ? 1 : 0));
});
