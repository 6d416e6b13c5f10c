// Suite `ceiling`: how many claims per second can one Redis on this machine do at all, and how
// close does echomq get?
//
// The ceiling is `redis-benchmark` (from redis-tools) sending EVALSHA of a minimal claim script
// (ZPOPMIN the waiting set, ZADD the id to an active set, HSET the job's state) against a set
// pre-filled with one job per request, pipelined (-P, many clients). Nothing a queue library can
// do per job in Redis is cheaper than this, so it bounds any Lua-based queue on one Redis.
// The same run times echomq's worker (process c=N, as in `core`) and prints its throughput as a
// share of the ceiling.
//
// Calibration rows split the cost of a script call in Redis (µs per call from commandstats,
// which times each script and, separately, each command it runs):
//   empty script                 EVALSHA of `return 0`: the fixed cost of any script call
//   empty, echomq's arguments    `return 0` with complete.lua's KEYS and ARGV count
//   complete.lua prelude         echomq's complete.lua with its libraries but no body: what
//                                defining the included functions costs on every EVAL call
//   FCALL, echomq's arguments    an empty function of a library (FUNCTION LOAD, Redis 7+) with
//                                the same KEYS and ARGV: the fixed cost when echomq runs its
//                                hot path as a function library instead of EVALSHA
//   20 × <command>               (µs − empty) / 20 = one redis.call of that command; minus the
//                                command's own time = the Lua ⇄ Redis overhead of the call
//                                (argument objects in, reply converted to Lua values out)
// With those, the echomq rows are split into fixed cost, commands' own time, estimated
// redis.call overhead and the rest (the script's own Lua work).
// Each redis-benchmark run starts from FLUSHALL and a reset of the counters.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { prefill, timeProcessing } from './lib/steps.mjs';
import { noise } from './lib/meter.mjs';
import { fmt, markdownTable, median, spread } from './lib/table.mjs';
import { echomq, ECHOMQ_MODULE } from './lib/libs.mjs';

const CLAIM_LUA = `
local popped = redis.call('ZPOPMIN', KEYS[1])
local id = popped[1]
if not id then return 0 end
redis.call('ZADD', KEYS[2], ARGV[1], id)
redis.call('HSET', KEYS[3] .. id, 'st', 'a')
return 1`;

// Fills the waiting set and the job hashes for ids ARGV[1]..ARGV[2] (run in chunks).
const FILL_LUA = `
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  local id = tostring(i)
  redis.call('ZADD', KEYS[1], 0, id)
  redis.call('HSET', KEYS[2] .. id, 'name', 'bench', 'data', '{"i":' .. id .. '}', 'st', 'w')
end
return 1`;

// An empty function, for the fixed cost of an FCALL (functions survive FLUSHALL).
const NOOP_LIBRARY = "#!lua name=bench_ceiling\nredis.register_function('bench_ceiling_noop', function(keys, args) return 0 end)";
const SCRIPT_CALLS = ['evalsha', 'eval', 'fcall'];
const CALLS = 20;
// Commands timed 20 times inside one script, shaped like the calls echomq's scripts make. KEYS[1]
// is a 10-field hash (a job's size), KEYS[2] a stream capped like echomq's events.
const CALIBRATED = [
  ['hget', "redis.call('HGET', KEYS[1], 'f1')"],
  ['hmget', "redis.call('HMGET', KEYS[1], 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7', 'f8', 'f9', 'f10')"],
  ['hgetall', "redis.call('HGETALL', KEYS[1])"],
  ['hset', "redis.call('HSET', KEYS[1], 'f1', '1', 'f2', '2', 'f3', '3')"],
  ['xadd', "redis.call('XADD', KEYS[2], 'MAXLEN', '~', '10000', '*', 'event', 'active', 'jobId', '123', 'prev', 'waiting')"],
  ['time', "redis.call('TIME')"],
  ['zcard', "redis.call('ZCARD', KEYS[2])"],
];
// A reply shaped like a claim's: count, next wake-up, then the job id and its hash as a flat
// list of 24 strings (12 fields). Constants, so only the conversion to RESP is timed.
const REPLY_LUA = `return {1, -1, '123', {${Array.from({ length: 12 }, (_, i) => `'field${i + 1}', 'value${i + 1}'`).join(', ')}}}`;
// 24 new strings made from numbers, the way scripts build ids, members and timestamps.
const STRINGS = 24;
const STRINGS_LUA = `local t = {} for i = 1, ${STRINGS} do t[i] = 'v' .. i end return 0`;
const KEYS = ['ceil:{q}:wait', 'ceil:{q}:active', 'ceil:{q}:job:'];
const CAL_KEYS = ['ceil:h', 'ceil:s'];

/**
 * echomq's complete.lua as Redis sees it (includes resolved, keys rewritten) and the same text
 * cut where the script's own body begins, plus how many KEYS and ARGV a call passes. Read
 * through the library's own loader, next to the build under test.
 */
async function echomqComplete() {
  const { loadScript } = await import(new URL('./scripts/loader.js', ECHOMQ_MODULE).href);
  const script = loadScript('complete');
  const raw = readFileSync(fileURLToPath(new URL('./scripts/complete.lua', ECHOMQ_MODULE)), 'utf8');
  // The loader runs the body as a function after the shared code (`local function __main()`);
  // builds before that inlined it: cut at its first line of code.
  const wrapped = script.source.lastIndexOf('\nlocal function __main()');
  const first = raw.split('\n').find((l) => l.trim() !== '' && !l.startsWith('--'));
  const cut = wrapped >= 0 ? wrapped : script.source.lastIndexOf(first);
  // The header's ARGV list, "[1] … [6] …", may span lines: the highest index is the count.
  const header = raw.slice(raw.indexOf('-- ARGV:'), raw.indexOf('-- Returns:'));
  const argv = Math.max(...[...header.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])));
  return { prelude: `${script.source.slice(0, cut)}\nreturn 0`, keys: script.keys.length, argv };
}

function benchArgs(url) {
  const u = new URL(url);
  const args = ['-h', u.hostname || '127.0.0.1', '-p', u.port || '6379'];
  if (u.password) args.push('-a', decodeURIComponent(u.password));
  if (u.username) args.push('--user', decodeURIComponent(u.username));
  const db = Number(u.pathname.slice(1));
  if (db) args.push('--dbnum', String(db));
  return args;
}

/** Runs redis-benchmark with --csv and returns its requests per second. */
function redisBenchmark(url, args) {
  return new Promise((resolve, reject) => {
    const child = spawn('redis-benchmark', [...benchArgs(url), '--csv', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e) => reject(new Error(`cannot run redis-benchmark (install redis-tools): ${e.message}`)));
    child.on('close', (code) => {
      const line = out.trim().split('\n').find((l) => /^"[^"]*","[\d.]+"/.test(l) && !l.startsWith('"test"'));
      const rps = line ? Number(line.split(',')[1].replace(/"/g, '')) : NaN;
      if (code !== 0 || !Number.isFinite(rps)) reject(new Error(`redis-benchmark failed (${code}): ${err || out}`));
      else resolve(rps);
    });
  });
}

/** Script µs and calls, per-command µs, and Redis CPU from one INFO reply. */
async function redisCounters(client) {
  const text = await client.info('all');
  const stats = {};
  let cpu = 0;
  for (const line of text.split('\r\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) stats[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
    else if (line.startsWith('used_cpu_sys:') || line.startsWith('used_cpu_user:')) cpu += Number(line.split(':')[1]);
  }
  return { stats, cpu };
}

/** One redis-benchmark row: ops/s, Redis µs per script call, per inner command, CPU µs per op. */
async function benchRow(ctx, { sha, fcall, keys, args, requests, clients, pipeline }) {
  const client = ctx.meter.client;
  await client.config('RESETSTAT');
  const before = await redisCounters(client);
  const call = fcall ? ['FCALL', fcall] : ['EVALSHA', sha];
  const rps = await redisBenchmark(ctx.url, ['-n', String(requests), '-c', String(clients), '-P', String(pipeline),
    ...call, String(keys.length), ...keys, ...args]);
  const after = await redisCounters(client);
  const ev = after.stats[fcall ? 'fcall' : 'evalsha'] ?? { calls: 0, usec: 0 };
  // Every command but the script itself and redis-benchmark's own CONFIG calls ran inside it.
  const innerUs = Object.entries(after.stats)
    .filter(([name]) => !SCRIPT_CALLS.includes(name) && !name.startsWith('config'))
    .reduce((sum, [, st]) => sum + st.usec, 0);
  return {
    rate: rps,
    scriptUs: ev.usec / Math.max(1, ev.calls),
    innerUs: innerUs / Math.max(1, ev.calls),
    redisCpuUsPerOp: ((after.cpu - before.cpu) * 1e6) / Math.max(1, ev.calls),
  };
}

async function fillClaimSet(client, n) {
  const sha = await client.script('LOAD', FILL_LUA);
  const chunk = 10_000;
  for (let lo = 1; lo <= n; lo += chunk) await client.evalsha(sha, 2, KEYS[0], KEYS[2], lo, Math.min(n, lo + chunk - 1));
}

function rowsOf(o, echo) {
  const req = o.ceilingRequests;
  const many = (n) => Array.from({ length: n }, (_, i) => `k${i + 1}`);
  const calib = { requests: Math.min(req, 200_000), clients: o.ceilingClients, pipeline: o.ceilingPipeline };
  return [
    { name: `claim script, pipelined (-P ${o.ceilingPipeline}, ${o.ceilingClients} clients)`, lua: CLAIM_LUA, keys: KEYS, args: ['1'],
      requests: req, clients: o.ceilingClients, pipeline: o.ceilingPipeline, fill: true, ceiling: true },
    { name: `claim script, one per round trip (${o.ceilingClients} clients)`, lua: CLAIM_LUA, keys: KEYS, args: ['1'],
      requests: Math.min(req, 400_000), clients: o.ceilingClients, pipeline: 1, fill: true },
    { name: 'calibration: empty script', lua: 'return 0', keys: [], args: [], ...calib, role: 'empty' },
    { name: `calibration: empty, ${echo.keys} KEYS + ${echo.argv} ARGV`, lua: 'return 0', keys: many(echo.keys), args: many(echo.argv),
      ...calib, role: 'args' },
    { name: 'calibration: complete.lua prelude, no body', lua: echo.prelude, keys: many(echo.keys), args: many(echo.argv),
      ...calib, role: 'prelude' },
    { name: `calibration: FCALL empty function, ${echo.keys} KEYS + ${echo.argv} ARGV`, fcall: 'bench_ceiling_noop', keys: many(echo.keys),
      args: many(echo.argv), ...calib, role: 'fcall' },
    { name: 'calibration: return a claim-shaped reply (27 values)', lua: REPLY_LUA, keys: [], args: [], ...calib, role: 'reply' },
    { name: `calibration: ${STRINGS} strings made from numbers`, lua: STRINGS_LUA, keys: [], args: [], ...calib, role: 'strings' },
    ...CALIBRATED.map(([cmd, call]) => ({
      name: `calibration: ${CALLS} × ${cmd.toUpperCase()}`, lua: `for i = 1, ${CALLS} do ${call} end return 0`, keys: CAL_KEYS,
      args: [], ...calib, requests: Math.min(req, 100_000), role: 'command', cmd, hash: true,
    })),
  ];
}

async function onceBench(ctx, row) {
  const client = ctx.meter.client;
  await ctx.meter.flush();
  if (row.fcall) {
    // Redis < 7 has no functions: the row is skipped (undefined) rather than failing the suite.
    try {
      await client.function('LOAD', 'REPLACE', NOOP_LIBRARY);
    } catch {
      return undefined;
    }
  }
  const sha = row.lua ? await client.script('LOAD', row.lua) : undefined;
  if (row.fill) await fillClaimSet(client, row.requests);
  if (row.hash) await client.hset(CAL_KEYS[0], Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`f${i + 1}`, `value${i}`])));
  return benchRow(ctx, { sha, ...row });
}

async function onceEchomq(ctx, concurrency, tag) {
  await ctx.meter.flush();
  ctx.gc();
  const h = await echomq.open(ctx.url, `bench-ceiling-${tag}`);
  try {
    await prefill(h, Array.from({ length: ctx.opts.jobs }, (_, i) => ({ data: { i } })));
    return await timeProcessing(ctx.meter, h, { concurrency, target: ctx.opts.jobs });
  } finally {
    await h.close();
  }
}

export async function runCeiling(ctx) {
  const o = ctx.opts;
  const echo = await echomqComplete();
  const rows = rowsOf(o, echo);
  ctx.log('[ceiling] warm-up');
  await onceEchomq(ctx, 10, 'warmup');
  for (let rep = 1; rep <= o.runs; rep++) {
    for (const row of rows) {
      const m = await onceBench(ctx, row);
      if (!m) continue;
      ctx.results.add(row.name, 'redis', m);
      ctx.log(`[ceiling] run ${rep}/${o.runs} ${row.name}: ${Math.round(m.rate)} ops/s, ${m.scriptUs.toFixed(2)} µs/script`);
    }
    for (const c of o.concurrency) {
      const m = await onceEchomq(ctx, c, `${rep}`);
      ctx.results.add(`process c=${c}`, 'echomq', m);
      ctx.log(`[ceiling] run ${rep}/${o.runs} echomq process c=${c}: ${Math.round(m.rate)} jobs/s${noise(m)}`);
    }
  }
  await ctx.meter.flush();
  return report(ctx, rows);
}

/** Lua ⇄ Redis overhead of one redis.call of each calibrated command, and the fixed costs. */
function calibration(rows, med) {
  const byRole = (role) => rows.find((r) => r.role === role).name;
  const empty = med(byRole('empty'), 'scriptUs');
  const perCommand = {};
  for (const r of rows.filter((x) => x.role === 'command')) {
    const total = (med(r.name, 'scriptUs') - empty) / CALLS;
    const own = med(r.name, 'innerUs') / CALLS;
    perCommand[r.cmd] = { total, own, overhead: total - own };
  }
  return {
    empty,
    args: med(byRole('args'), 'scriptUs') - empty,
    prelude: med(byRole('prelude'), 'scriptUs') - med(byRole('args'), 'scriptUs'),
    fcall: med(byRole('fcall'), 'scriptUs'),
    reply: med(byRole('reply'), 'scriptUs') - empty,
    string: (med(byRole('strings'), 'scriptUs') - empty) / STRINGS,
    perCommand,
  };
}

/**
 * Splits echomq's Redis time per job (its script calls, from commandstats) into the fixed cost
 * of a call, its commands' own time, the estimated overhead of each redis.call (the calibrated
 * value for that command, HGET's for the others, which is the smallest) and what is left: the
 * script's own Lua work (branches, string building, tables, the reply).
 */
function breakdown(commands, cal) {
  const evals = ['evalsha', 'eval'].reduce((s, n) => s + (commands[n]?.calls ?? 0), 0);
  const fcalls = commands.fcall?.calls ?? 0;
  const scriptUs = SCRIPT_CALLS.reduce((s, n) => s + (commands[n]?.usec ?? 0), 0);
  let own = 0;
  let overhead = 0;
  let calls = 0;
  for (const [name, c] of Object.entries(commands)) {
    if (SCRIPT_CALLS.includes(name)) continue;
    own += c.usec;
    calls += c.calls;
    overhead += c.calls * (cal.perCommand[name]?.overhead ?? cal.perCommand.hget.overhead);
  }
  const fixed = evals * (cal.empty + cal.args + cal.prelude) + fcalls * (cal.fcall ?? NaN);
  return { scriptUs, calls, fixed, own, overhead, rest: scriptUs - fixed - own - overhead, mode: fcalls > evals ? 'FCALL' : 'EVALSHA' };
}

function report(ctx, rows) {
  const o = ctx.opts;
  const v = (name, lib, metric) => ctx.results.values(name, lib, metric);
  const med = (name, metric) => median(v(name, 'redis', metric));
  const ceilingRow = rows.find((r) => r.ceiling);
  const ceiling = med(ceilingRow.name, 'rate');
  const benchTable = markdownTable(
    ['row', 'ops/s', 'Redis µs per script call', 'of it, commands\' own time', 'Redis CPU µs/op'],
    rows.map((r) => [r.name, spread(v(r.name, 'redis', 'rate')), fmt(med(r.name, 'scriptUs'), true),
      fmt(med(r.name, 'innerUs'), true), fmt(med(r.name, 'redisCpuUsPerOp'), true)]),
  );
  const cal = calibration(rows, med);
  const lastCommands = (n) => v(n, 'echomq', 'commands').at(-1) ?? {};
  const echoRows = o.concurrency.map((c) => {
    const n = `process c=${c}`;
    const rate = v(n, 'echomq', 'rate');
    const script = median(v(n, 'echomq', 'commands').map((cmds) => SCRIPT_CALLS.reduce((sum, c) => sum + (cmds[c]?.usec ?? 0), 0)));
    return [`${c}`, spread(rate), `${((median(rate) / ceiling) * 100).toFixed(1)}%`, fmt(script, true),
      fmt(median(v(n, 'echomq', 'redisCpuUsPerJob')), true), fmt(median(v(n, 'echomq', 'nodeCpuUsPerJob')), true)];
  });
  const calTable = markdownTable(['quantity', 'µs of Redis time'], [
    ['fixed cost of a script call (empty script)', fmt(cal.empty, true)],
    [`passing complete.lua's ${rows.find((r) => r.role === 'args').keys.length} KEYS + ${rows.find((r) => r.role === 'args').args.length} ARGV`, fmt(cal.args, true)],
    ['complete.lua\'s libraries, defined on every EVAL call', fmt(cal.prelude, true)],
    ['an FCALL of an empty function with the same arguments (whole call)', fmt(cal.fcall, true)],
    ['returning a claim-shaped reply (27 values, converted to RESP)', fmt(cal.reply, true)],
    ['one new string made from a number in Lua (`\'v\' .. i`)', fmt(cal.string, true)],
  ]);
  const cmdTable = markdownTable(['command in a script', 'µs per redis.call', 'command\'s own µs', 'Lua ⇄ Redis overhead µs'],
    Object.entries(cal.perCommand).map(([cmd, x]) => [CALIBRATED.find(([c]) => c === cmd)[1].replace(/^redis\.call\(|\)$/g, ''),
      fmt(x.total, true), fmt(x.own, true), fmt(x.overhead, true)]));
  const split = o.concurrency.map((c) => {
    const b = breakdown(lastCommands(`process c=${c}`), cal);
    return [`${c}`, b.mode, fmt(b.scriptUs, true), fmt(b.calls, true), fmt(b.fixed, true), fmt(b.own, true), fmt(b.overhead, true), fmt(b.rest, true)];
  });
  return [
    `### ceiling: one Redis on this machine, redis-benchmark EVALSHA; median (min–max) of ${o.runs} run(s)`,
    '',
    `Claim rows: ${fmt(ceilingRow.requests)} requests against a set pre-filled with as many jobs. Per-op columns are medians.`,
    '',
    benchTable,
    '',
    `### ceiling: echomq process throughput as a share of the ceiling (${fmt(ceiling)} claims/s); ${o.jobs} jobs`,
    '',
    markdownTable(['concurrency', 'echomq jobs/s', 'share of ceiling', 'Redis µs per job in scripts', 'Redis CPU µs/job', 'Node CPU µs/job'], echoRows),
    '',
    '### ceiling: what a script call costs inside Redis (medians, from the calibration rows)',
    '',
    calTable,
    '',
    cmdTable,
    '',
    '### ceiling: where echomq\'s script time per job goes (µs of Redis time per job; last run)',
    '',
    markdownTable(['concurrency', 'called as', 'in scripts', 'redis.calls', 'fixed cost of the calls', 'commands\' own time',
      'redis.call overhead (estimated)', 'rest: Lua work in the script'], split),
  ].join('\n');
}
