#!/usr/bin/env node
// Cluster benchmark: one logical queue on a local 3-master Redis Cluster, processed as a plain
// queue (1 shard, one hash slot, so one node does all the work) and as a sharded queue
// (3 shards placed on the 3 masters). Measures processing throughput of noop jobs and the
// Redis CPU each node spent (INFO cpu: used_cpu_sys + used_cpu_user, before/after).
//
//   npm run build && node bench/cluster.mjs                     # 20,000 jobs, concurrency 50
//   node bench/cluster.mjs --jobs 5000 --runs 1 --workers 2     # several worker processes
//   CLUSTER_NODES=127.0.0.1:7000,127.0.0.1:7001 node bench/cluster.mjs   # an existing cluster
//
// Workers run in child processes (forked from this file), each one Worker with the given
// concurrency, so the parent only prefills, samples INFO and counts. Jobs are removed at
// completion (removeOnComplete: true), as in the core suite. echomq is the repository's
// dist/ build, or BENCH_ECHOMQ=<path to index.js>. Results are markdown on stdout.
import { fork } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Cluster } from 'ioredis';

const MODULE = process.env.BENCH_ECHOMQ
  ? pathToFileURL(resolve(process.env.BENCH_ECHOMQ)).href
  : new URL('../dist/index.js', import.meta.url).href;
const { Queue, Worker, laneShard, shardQueueName } = await import(MODULE);

const noop = async () => {};

// ---------------------------------------------------------------- child: one worker process
if (process.env.EMQ_BENCH_CHILD) {
  const { nodes, name, shards, concurrency } = JSON.parse(process.env.EMQ_BENCH_CHILD);
  const worker = new Worker(name, noop, {
    connection: { cluster: { nodes } }, concurrency, autorun: false, ...(shards > 1 ? { shards } : {}),
  });
  let done = 0;
  let reported = 0;
  worker.on('completed', () => void done++);
  worker.on('failed', (_job, err) => process.send({ error: String(err?.message ?? err) }));
  worker.on('error', (err) => process.send({ error: String(err?.message ?? err) }));
  const tick = setInterval(() => {
    if (done !== reported) process.send({ done: done - reported });
    reported = done;
  }, 20);
  process.on('message', async (m) => {
    if (m === 'start') void worker.run();
    if (m === 'stop') {
      clearInterval(tick);
      if (done !== reported) process.send({ done: done - reported });
      await worker.close();
      process.exit(0);
    }
  });
  process.send({ ready: true });
} else {
  await main();
}

// ---------------------------------------------------------------- parent
async function main() {
  const { values: o } = parseArgs({
    options: {
      jobs: { type: 'string', default: process.env.BENCH_JOBS ?? '20000' },
      concurrency: { type: 'string', default: process.env.BENCH_CONCURRENCY ?? '50' },
      workers: { type: 'string', default: process.env.BENCH_WORKERS ?? '1' },
      runs: { type: 'string', default: process.env.BENCH_RUNS ?? '3' },
      shards: { type: 'string', default: process.env.BENCH_SHARDS ?? '1,3' },
      lanes: { type: 'string', default: process.env.BENCH_LANES ?? '30' },
      help: { type: 'boolean', default: false },
    },
  });
  if (o.help) {
    console.log('usage: node bench/cluster.mjs [--jobs 20000] [--concurrency 50] [--workers 1] [--runs 3] [--shards 1,3] [--lanes 30]');
    return;
  }
  const jobs = Number(o.jobs);
  const concurrency = Number(o.concurrency);
  const workers = Number(o.workers);
  const runs = Number(o.runs);
  const shardCounts = o.shards.split(',').map(Number);
  const laneCount = Number(o.lanes);

  let stopCluster = async () => {};
  let nodes;
  if (process.env.CLUSTER_NODES) {
    nodes = process.env.CLUSTER_NODES.split(',').map((hp) => ({ host: hp.split(':')[0], port: Number(hp.split(':')[1]) }));
  } else {
    const { startRedisCluster } = await import('../scripts/redis-cluster.mjs');
    log('starting a local 3-master cluster…');
    const c = await startRedisCluster({ masters: 3 });
    nodes = c.nodes;
    stopCluster = c.stop;
  }
  const admin = new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: null } });
  try {
    await admin.ping();
    const masters = admin.nodes('master');
    const results = [];
    for (const shards of shardCounts) {
      for (let run = 1; run <= runs; run++) {
        const name = await placedName(admin, shards, masters.length);
        const lanes = balancedLanes(laneCount, shards);
        const r = await oneRun({ admin, masters, nodes, name, shards, lanes, jobs, concurrency, workers });
        log(`shards=${shards} run ${run}: ${Math.round(r.rate)} jobs/s, cpu ${r.cpu.map((c) => c.toFixed(2)).join('/')} s`);
        results.push({ shards, ...r });
      }
    }
    print(results, { jobs, concurrency, workers, runs, laneCount, masters: masters.map((n) => `${n.options.host}:${n.options.port}`) });
  } finally {
    admin.disconnect();
    await stopCluster();
  }
}

function log(msg) {
  process.stderr.write(`[cluster-bench] ${msg}\n`);
}

/** Port of the master serving a key. */
async function portOf(admin, key) {
  const slot = Number(await admin.call('CLUSTER', 'KEYSLOT', key));
  const ranges = await admin.call('CLUSTER', 'SLOTS');
  return Number(ranges.find(([lo, hi]) => slot >= lo && slot <= hi)[2][1]);
}

/** A fresh queue name whose shards sit on min(shards, masters) different masters. */
async function placedName(admin, shards, masters) {
  for (let i = 0; ; i++) {
    const name = `bench-${process.pid}-${Date.now().toString(36)}-${i}`;
    const metas = shards === 1 ? [`emq:{${name}}:meta`] : Array.from({ length: shards }, (_, s) => `emq:{${shardQueueName(name, s)}}:meta`);
    const ports = new Set(await Promise.all(metas.map((k) => portOf(admin, k))));
    if (ports.size === Math.min(shards, masters)) return name;
  }
}

/** `count` lane names spread evenly over the shards (the same names serve every shard count ≤ it). */
function balancedLanes(count, shards) {
  const per = Array.from({ length: shards }, () => []);
  for (let i = 0; per.some((p) => p.length < count / shards); i++) {
    const lane = `tenant-${i}`;
    const s = laneShard(lane, shards);
    if (per[s].length < count / shards) per[s].push(lane);
  }
  return per.flat().slice(0, count);
}

async function cpuOf(node) {
  const info = await node.info('cpu');
  const get = (k) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return get('used_cpu_sys') + get('used_cpu_user');
}

async function oneRun({ admin, masters, nodes, name, shards, lanes, jobs, concurrency, workers }) {
  const q = new Queue(name, { connection: admin, ...(shards > 1 ? { shards } : {}) });
  for (let i = 0; i < jobs; i += 5000) {
    const n = Math.min(5000, jobs - i);
    await q.addBulk(Array.from({ length: n }, (_, k) => ({
      name: 'bench', data: { i: i + k }, opts: { lane: lanes[(i + k) % lanes.length], removeOnComplete: true },
    })));
  }
  const children = [];
  for (let i = 0; i < workers; i++) {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, EMQ_BENCH_CHILD: JSON.stringify({ nodes, name, shards, concurrency }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(child);
  }
  await Promise.all(children.map((c) => new Promise((res, rej) => {
    c.once('message', (m) => (m.ready ? res() : rej(new Error(m.error))));
    c.once('exit', (code) => rej(new Error(`worker exited with ${code}`)));
  })));
  let done = 0;
  const finished = new Promise((res, rej) => {
    for (const c of children) {
      c.on('message', (m) => {
        if (m.error) rej(new Error(m.error));
        if (m.done) done += m.done;
        if (done >= jobs) res();
      });
    }
  });
  const cpu0 = await Promise.all(masters.map(cpuOf));
  const t0 = performance.now();
  for (const c of children) c.send('start');
  const timeout = setTimeout(() => log(`still running: ${done}/${jobs}`), 60_000);
  await finished;
  const secs = (performance.now() - t0) / 1000;
  clearTimeout(timeout);
  const cpu1 = await Promise.all(masters.map(cpuOf));
  await Promise.all(children.map((c) => new Promise((res) => {
    c.once('exit', res);
    c.send('stop');
  })));
  await q.obliterate({ force: true });
  await q.close();
  return { rate: jobs / secs, secs, cpu: cpu1.map((c, i) => c - cpu0[i]) };
}

function median(xs) {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

function print(results, o) {
  const out = [];
  out.push(`## echomq on a local Redis Cluster (${o.masters.length} masters)`);
  out.push('');
  out.push(`${o.jobs} noop jobs over ${o.laneCount} lanes, ${o.workers} worker process(es) × concurrency ${o.concurrency}, ` +
    `median of ${o.runs} run(s). Machine: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()[0].toFixed(2)}. ` +
    'Redis CPU = used_cpu_sys + used_cpu_user delta per master over the processing window.');
  out.push('');
  out.push('| shards | jobs/s | time (s) | Redis CPU s per master, busiest first | CPU s total | Redis CPU µs / job |');
  out.push('| ---: | ---: | ---: | --- | ---: | ---: |');
  for (const shards of [...new Set(results.map((r) => r.shards))]) {
    const rs = results.filter((r) => r.shards === shards);
    const rate = median(rs.map((r) => r.rate));
    const secs = median(rs.map((r) => r.secs));
    // Which master a queue lands on changes from run to run: compare by rank, not by address.
    const ranked = rs.map((r) => [...r.cpu].sort((a, b) => b - a));
    const cpu = o.masters.map((_, i) => median(ranked.map((c) => c[i])));
    const total = median(rs.map((r) => r.cpu.reduce((a, b) => a + b, 0)));
    out.push(`| ${shards} | ${Math.round(rate)} | ${secs.toFixed(2)} | ${cpu.map((c) => c.toFixed(2)).join(' / ')} | ${total.toFixed(2)} | ${((total * 1e6) / o.jobs).toFixed(1)} |`);
  }
  console.log(out.join('\n'));
}
