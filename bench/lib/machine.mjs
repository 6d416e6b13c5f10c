// Other work on the machine. The benchmark shares a small machine with Redis, and anything
// else running at the same time (a test suite, a build) shows up as noise in the timings.
// /proc/stat gives the CPU time of the whole machine; what Redis and this process used is known,
// so the rest is what everyone else used. Linux only; elsewhere these report nothing.
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

// Kernel clock ticks per second for /proc/stat (USER_HZ): 100 on every mainstream Linux.
const USER_HZ = 100;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Busy CPU seconds of the whole machine since boot (all cores), or undefined off Linux. */
export function machineBusySeconds() {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    return (total - fields[3] - (fields[4] ?? 0)) / USER_HZ;
  } catch {
    return undefined;
  }
}

/** CPU seconds this process has used. */
export function ownCpuSeconds() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * Waits until the rest of the machine (everything but this process and Redis) uses less than
 * `maxCores` cores over a `sampleMs` window, for at most `maxWaitMs`. `redisCpu()` returns
 * Redis' CPU seconds. Resolves to true if the machine was quiet, false if it gave up.
 */
export async function waitForQuiet({ redisCpu, maxWaitMs, log, maxCores = 0.2, sampleMs = 500 }) {
  if (machineBusySeconds() === undefined || maxWaitMs <= 0) return true;
  const deadline = Date.now() + maxWaitMs;
  let told = false;
  for (;;) {
    const m0 = machineBusySeconds();
    const o0 = ownCpuSeconds();
    const r0 = await redisCpu();
    const t0 = performance.now();
    await sleep(sampleMs);
    const others = machineBusySeconds() - m0 - (ownCpuSeconds() - o0) - ((await redisCpu()) - r0);
    const cores = others / ((performance.now() - t0) / 1000);
    if (cores < maxCores) {
      if (told) log?.(`[bench] machine quiet again, going on`);
      return true;
    }
    if (Date.now() > deadline) {
      log?.(`[bench] other processes still use ${cores.toFixed(2)} cores; going on anyway`);
      return false;
    }
    if (!told) log?.(`[bench] other processes use ${cores.toFixed(2)} of ${cpus().length} cores; waiting up to ${Math.round(maxWaitMs / 1000)} s`);
    told = true;
    await sleep(1500);
  }
}
