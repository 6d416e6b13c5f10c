// What the tests of both directions of the move share: the test Redis with what a test opened
// closed after the file, the CLI run in process, its per-state report checked, and a move
// SIGKILLed at a seeded random point.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { afterAll, expect } from 'vitest';
import { client, redisUrl, waitFor } from '../helpers.js';
import { seeded } from '../fault-proxy.js';

const REGISTER = fileURLToPath(new URL('../fixtures/register-ts.mjs', import.meta.url));

/** The file's client, a list of what tests open (closed after the file, newest first) and a fresh connection. */
export function testRedis(): { redis: Redis; opened: Array<{ close(): Promise<unknown> }>; conn: () => Redis } {
  const redis = client();
  const opened: Array<{ close(): Promise<unknown> }> = [];
  afterAll(async () => {
    for (const o of opened.reverse()) await o.close().catch(() => {});
    await redis.quit();
  });
  return { redis, opened, conn: () => redis.duplicate() };
}

/** The CLI run in this process against the test Redis. */
export async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const { runCli } = await import('../../src/cli/program.js');
  let out = '';
  let err = '';
  const code = await runCli(['--redis', redisUrl(), ...args], { out: (s) => (out += s), err: (s) => (err += s), env: {} });
  return { code, out, err };
}

/**
 * A migrate command on a queue holding one ready job (`readyState` in the source's words) and
 * one delayed, under BullMQ's prefix `legacy`: the dry run's text, then the move's JSON, then a
 * batch size out of range. `afterDry` and `afterMove` check the keys on each side.
 */
export async function checkCliReport(command: string, name: string, readyState: string, afterDry: () => Promise<void>, afterMove: () => Promise<void>): Promise<void> {
  const dry = await cli([command, name, '--bullmq-prefix', 'legacy', '--dry-run']);
  expect(dry.code).toBe(0);
  expect(dry.out).toContain('[dry run: nothing changed]');
  expect(dry.out).toMatch(new RegExp(`${readyState}\\s+would move 1`));
  expect(dry.out).toMatch(/delayed\s+would move 1/);
  await afterDry();
  const real = await cli([command, name, '--bullmq-prefix', 'legacy', '--json']);
  expect(real.code).toBe(0);
  const report = JSON.parse(real.out);
  expect(report.jobs).toBe(2);
  expect(report.queues[0].states.delayed.moved).toBe(1);
  await afterMove();
  const bad = await cli([command, name, '--batch', '5000']);
  expect(bad.code).toBe(1);
  expect(bad.err).toMatch(/batchSize/);
}

/**
 * Runs `fixture` (a move of `name` in batches of 3) and SIGKILLs it once `moved()` reaches a
 * seeded random point below `room` jobs; returns the jobs moved before the kill.
 */
export async function killMidway(fixture: string, name: string, seed: number, total: number, room: number, moved: () => Promise<number>): Promise<number> {
  const random = seeded(seed);
  const child = spawn(process.execPath, ['--import', REGISTER, fixture, redisUrl(), '3', name], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await waitFor(() => out.includes('READY') || child.exitCode !== null, 20_000, 'the move to start');
  // Kill inside the move, once a random number of jobs has moved (each batch is one call).
  const target = 1 + Math.floor(random() * room);
  await waitFor(async () => (await moved()) >= target || out.includes('DONE'), 20_000, 'the move to reach the kill point');
  child.kill('SIGKILL');
  await exited;
  const movedBefore = await moved();
  console.log(`seed ${seed}: killed at ${movedBefore} of ${total} jobs moved (aimed at ${target})`);
  expect(out).not.toContain('DONE');
  expect(movedBefore).toBeLessThan(total);
  return movedBefore;
}
