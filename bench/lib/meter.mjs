// Measures one timed window of a benchmark case: wall time, Node CPU, Redis CPU, and Redis
// commands (all commands Redis executed, including the ones run inside Lua scripts, from
// INFO commandstats; plus the commands the libraries' ioredis clients sent, counted here by
// wrapping ioredis, because commandstats cannot tell a script's inner calls from round trips).
import { Redis } from 'ioredis';
import { machineBusySeconds, ownCpuSeconds, waitForQuiet } from './machine.mjs';

// Every library under test (echomq, BullMQ, groupmq) resolves the same ioredis copy, so one
// wrapper on the prototype sees every command they send. The meter's own client is skipped.
let sent = 0;
const STATS_CLIENT = Symbol('bench stats client');
const originalSend = Redis.prototype.sendCommand;
// Only commands sent on a ready connection count: ioredis passes commands issued before
// 'ready' through sendCommand twice (queued offline, then replayed).
Redis.prototype.sendCommand = function countedSend(...args) {
  if (this.status === 'ready' && !this[STATS_CLIENT]) sent++;
  return originalSend.apply(this, args);
};

/**
 * Counts one command sent by a client that is not ioredis (bee-queue's node_redis, wrapped in
 * libs.mjs), so `sent cmds/job` covers every library the same way.
 */
export function noteSent() {
  sent++;
}

const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);
// Our own INFO calls land in commandstats too; they are not the libraries' work.
const IGNORED_COMMANDS = new Set(['info']);

function parseInfo(text) {
  const calls = new Map();
  let cpu = 0;
  for (const line of text.split('\r\n')) {
    if (line.startsWith('cmdstat_')) {
      const name = line.slice(8, line.indexOf(':'));
      const m = /calls=(\d+),usec=(\d+)/.exec(line);
      if (m) calls.set(name, { calls: Number(m[1]), usec: Number(m[2]) });
    } else if (line.startsWith('used_cpu_sys:') || line.startsWith('used_cpu_user:')) {
      cpu += Number(line.slice(line.indexOf(':') + 1));
    }
  }
  return { calls, cpu };
}

/**
 * quietWaitMs: before each case, wait up to this long for other processes on the machine to go
 * idle (0: do not wait). log: where to say so.
 */
export async function createMeter(url, { quietWaitMs = 0, log } = {}) {
  const client = new Redis(url, { maxRetriesPerRequest: null });
  client[STATS_CLIENT] = true;

  async function snapshot() {
    // commandstats and cpu in one reply so both describe the same instant.
    const text = await client.info('all');
    return parseInfo(text);
  }
  const redisCpu = async () => parseInfo(await client.info('cpu')).cpu;

  return {
    client,
    /**
     * Empties Redis between cases so no case pays for another's leftovers, after waiting (up to
     * quietWaitMs) for other processes on the machine to go quiet.
     */
    async flush() {
      await waitForQuiet({ redisCpu, maxWaitMs: quietWaitMs, log });
      await client.flushall();
    },
    /** Version string of the server, for the report header. */
    async serverVersion() {
      const text = await client.info('server');
      return /redis_version:(\S+)/.exec(text)?.[1] ?? '?';
    },
    /**
     * Opens a measured window. Call mark() synchronously at the moment the window ends (the
     * last completion), then await end(jobs) to read Redis' counters.
     */
    async begin() {
      const before = await snapshot();
      const sentBefore = sent;
      const cpuBefore = process.cpuUsage();
      const machineBefore = machineBusySeconds();
      const ownBefore = ownCpuSeconds();
      const t0 = performance.now();
      let t1;
      let cpuAfter;
      let sentAfter;
      return {
        mark() {
          if (t1 !== undefined) return;
          t1 = performance.now();
          cpuAfter = process.cpuUsage(cpuBefore);
          sentAfter = sent;
        },
        async end(jobs) {
          this.mark();
          const after = await snapshot();
          // Cores the rest of the machine kept busy during the window (read a little after it
          // closes, like the Redis counters): noise from outside the benchmark.
          const machineAfter = machineBusySeconds();
          const others = machineBefore === undefined ? undefined
            : (machineAfter - machineBefore - (ownCpuSeconds() - ownBefore) - (after.cpu - before.cpu)) /
              ((performance.now() - t0) / 1000);
          let cmds = 0;
          let scripts = 0;
          const commands = {};
          for (const [name, now] of after.calls) {
            if (IGNORED_COMMANDS.has(name)) continue;
            const was = before.calls.get(name) ?? { calls: 0, usec: 0 };
            const d = now.calls - was.calls;
            if (d === 0) continue;
            cmds += d;
            if (SCRIPT_COMMANDS.has(name)) scripts += d;
            commands[name] = { calls: d / jobs, usec: (now.usec - was.usec) / jobs };
          }
          const seconds = (t1 - t0) / 1000;
          return {
            jobs,
            seconds,
            rate: jobs / seconds,
            cmdsPerJob: cmds / jobs,
            scriptsPerJob: scripts / jobs,
            sentPerJob: (sentAfter - sentBefore) / jobs,
            redisCpuUsPerJob: ((after.cpu - before.cpu) * 1e6) / jobs,
            nodeCpuUsPerJob: (cpuAfter.user + cpuAfter.system) / jobs,
            otherCores: others === undefined ? undefined : Math.max(0, others),
            // /proc/stat counts in 10 ms ticks: a short window's share is coarse.
            otherCpuSeconds: others === undefined ? undefined : Math.max(0, others) * ((performance.now() - t0) / 1000),
            // Per command: calls and Redis-measured µs per job (a script's time includes its inner calls).
            commands,
          };
        },
      };
    },
    async close() {
      client.disconnect();
    },
  };
}

/** Runs `fn` over `total` items with at most `inFlight` promises pending at once. */
export async function inParallel(total, inFlight, fn) {
  let next = 0;
  const lane = async () => {
    while (next < total) {
      const i = next++;
      await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, lane));
}

/** Gives the collector a chance between cases when node runs with --expose-gc. */
export function collectGarbage() {
  if (typeof globalThis.gc === 'function') globalThis.gc();
}

/** A promise plus the function that resolves it. */
export function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Rejects if `promise` takes longer than `ms`, so a stuck case fails loudly instead of hanging. */
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000}s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A note for the progress log when other processes were busy during a measured window. */
export function noise(m) {
  return disturbed(m) ? ` [other processes busy: ${m.otherCores.toFixed(2)} cores]` : '';
}

/**
 * Whether other processes kept more than 0.2 of a core busy during a window, and for more than
 * 50 ms of CPU in all (a few 10 ms ticks in a short window are not a disturbance).
 */
export function disturbed(m) {
  return m?.otherCores > 0.2 && m.otherCpuSeconds > 0.05;
}
