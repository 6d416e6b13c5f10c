/**
 * The dashboard's own reads, each bounded (the bound is in its comment and checked by
 * test/dashboard-reads.test.ts): queue health for the overview, workers from CLIENT LIST,
 * job schedulers by page, jobs in every state paged by cursor, and a job's full detail.
 */
import type { Redis } from 'ioredis';
import type { RedisClient } from '../core/connection.js';
import type { Queue } from '../queue/queue.js';
import { clientName, jobKey, laneKey, parseJobKey, parseLogicalJobName, parseQualifiedName, queueKeys, type QueueKeys } from '../core/keys.js';
import { JobField, MetaField } from '../core/fields.js';
import { JOB_STATES, getJobCounts, laneInfos, listQueues, rangeIds, type JobCounts, type JobStateName, type LaneInfo, type ListKind } from '../ops/inspect.js';
import { loadJobs } from '../job/load-jobs.js';
import { DEFAULT_MAX_PAYLOAD } from '../core/options.js';
import { parseClientList } from '../queue/workers-list.js';
import { setWindow } from '../ops/active-set.js';
import { laneHeads } from './lane-share.js';
import { jobDetail, jobsInState, row as jobRow, type JobRow } from '../operator/operations.js';
import type { Target } from '../operator/target.js';
import * as v from '../core/validate.js';
import type { Throughput } from './throughput.js';

/** Lanes examined per queue for the health flags (paused lanes holding work, oldest waiting job). */
export const HEALTH_LANES = 200;
/** Queues the overview lists. */
export const OVERVIEW_QUEUES = 500;

export interface Worker {
  /** The worker's name (Worker option `name`), or '' when it has none. */
  name: string;
  addr: string;
  /** Seconds since the connection opened. */
  age: number;
  /** Seconds since its last command. */
  idle: number;
}

/**
 * One CLIENT LIST per server, split into the workers of each queue (no per-queue call). On a
 * Cluster a worker has a named connection on each master it talks to, so each queue takes the
 * master with the most (as Queue.getWorkers and BullMQ do): one entry per worker.
 */
export async function workersByQueue(client: RedisClient, prefix: string, queues: readonly string[]): Promise<Map<string, Worker[]>> {
  const out = new Map<string, Worker[]>(queues.map((q) => [q, []]));
  let lists: string[];
  try {
    const cl = client as RedisClient & { nodes?: (role: string) => Redis[] };
    const nodes = (typeof cl.nodes === 'function' ? cl.nodes('master') : [client]) as Redis[];
    lists = await Promise.all(nodes.map((n) => n.client('LIST') as Promise<string>));
  } catch (err) {
    if (/unknown command|not allowed|NOPERM/i.test((err as Error).message)) return out; // managed Redis without CLIENT
    throw err;
  }
  const owners = new Map(queues.map((q) => [clientName(queueKeys(q, prefix)), q]));
  for (const list of lists) {
    const onNode = new Map<string, Worker[]>();
    for (const c of parseClientList(list, '', (n) => n.includes(':'))) {
      const raw = c.rawname;
      const w = raw.indexOf(':w:');
      const base = w >= 0 ? raw.slice(0, w) : raw;
      const q = owners.get(base);
      if (q === undefined) continue;
      if (!onNode.has(q)) onNode.set(q, []);
      onNode.get(q)!.push({ name: w >= 0 ? raw.slice(w + 3) : '', addr: c.addr ?? '', age: Number(c.age ?? 0), idle: Number(c.idle ?? 0) });
    }
    for (const [q, ws] of onNode) if (ws.length > out.get(q)!.length) out.set(q, ws);
  }
  for (const ws of out.values()) ws.sort((a, b) => a.name.localeCompare(b.name) || a.addr.localeCompare(b.addr));
  return out;
}

/** Active jobs read for the workers view (the first by lease deadline). */
export const ACTIVE_SHOWN = 500;

export interface HeldJob {
  id: string;
  name: string;
  lane: string;
  /** When the current attempt started (processedOn), ms; null if not recorded. */
  since: number | null;
}

/**
 * The active jobs each worker holds, by the worker's name (the job's processedBy; '' for a
 * worker without a name or manual processing): the first ACTIVE_SHOWN jobs of the active set
 * by lease deadline (one ZRANGEBYSCORE … LIMIT) and one HMGET per job, in one pipeline.
 */
export async function activeByWorker(client: RedisClient, keys: QueueKeys): Promise<{ held: Record<string, HeldJob[]>; active: number; truncated: boolean }> {
  const ids = await setWindow(client, keys, keys.active, 0, ACTIVE_SHOWN, true);
  const shown = ids.slice(0, ACTIVE_SHOWN);
  const p = client.pipeline();
  for (const id of shown) p.hmget(jobKey(keys, id), JobField.processedBy, JobField.name, JobField.lane, JobField.processedOn);
  const rows = shown.length ? (await p.exec())! : [];
  const held: Record<string, HeldJob[]> = {};
  shown.forEach((id, i) => {
    const [err, val] = rows[i];
    if (err) throw err;
    const [by, name, lane, on] = val as Array<string | null>;
    if (name === null) return; // removed between the two reads
    (held[by ?? ''] ??= []).push({ id, name, lane: lane ?? 'default', since: on === null ? null : Number(on) });
  });
  return { held, active: shown.length, truncated: ids.length > ACTIVE_SHOWN };
}

export interface Health {
  /** Ready work (waiting or prioritized) and no worker connected. */
  noWorker: boolean;
  /** The queue is paused and holds ready jobs. */
  pausedWithWork: boolean;
  /** Paused lanes, and how many of those examined hold jobs (HEALTH_LANES at most examined). */
  pausedLanes: number;
  pausedLanesWithWork: number;
  /** Creation time of the oldest job at the head of the lanes examined; null when none waits. */
  oldestWaiting: number | null;
  /** Completed and failed over the window (the events stream, see throughput.ts). */
  completed: number;
  failed: number;
  failureRate: number;
}

export interface QueueHealth {
  name: string;
  paused: boolean;
  counts: JobCounts;
  workers: number;
  health: Health;
  /** A sharded queue (src/cluster/sharded.ts): one row, summed, with its shards (`<name>#i`) here. */
  shards?: QueueHealth[];
}

/**
 * Folds the shards `<name>#0…#n-1` of each sharded queue into one row named `<name>` (the
 * shard count is in shard 0's meta hash); one HGET per `#0` name.
 */
async function foldShards(client: RedisClient, prefix: string, rows: QueueHealth[]): Promise<QueueHealth[]> {
  const byName = new Map(rows.map((r) => [r.name, r]));
  const firsts = rows.filter((r) => r.name.endsWith('#0'));
  const counts = await Promise.all(firsts.map((r) => client.hget(queueKeys(r.name, prefix).meta, MetaField.shardCount)));
  const folded = new Set<string>();
  const out: QueueHealth[] = [];
  firsts.forEach((first, i) => {
    const n = Number(counts[i] ?? 0);
    const base = first.name.slice(0, -2);
    const shards = Array.from({ length: n }, (_, k) => byName.get(`${base}#${k}`)).filter((x): x is QueueHealth => x !== undefined);
    if (n < 2 || shards.length === 0) return;
    shards.forEach((x) => folded.add(x.name));
    const sum = (f: (x: QueueHealth) => number) => shards.reduce((a, x) => a + f(x), 0);
    const c = Object.fromEntries(Object.keys(first.counts).map((k) => [k, sum((x) => x.counts[k as keyof JobCounts])])) as JobCounts;
    const completed = sum((x) => x.health.completed);
    const failed = sum((x) => x.health.failed);
    const oldest = shards.map((x) => x.health.oldestWaiting).filter((t): t is number => t !== null);
    out.push({
      name: base, paused: shards.some((x) => x.paused), counts: c, workers: Math.max(...shards.map((x) => x.workers)), shards,
      health: {
        noWorker: shards.some((x) => x.health.noWorker), pausedWithWork: shards.some((x) => x.health.pausedWithWork),
        pausedLanes: sum((x) => x.health.pausedLanes), pausedLanesWithWork: sum((x) => x.health.pausedLanesWithWork),
        oldestWaiting: oldest.length ? Math.min(...oldest) : null, completed, failed,
        failureRate: completed + failed === 0 ? 0 : failed / (completed + failed),
      },
    });
  });
  return [...rows.filter((r) => !folded.has(r.name)), ...out].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Paused lanes holding work and the oldest job at the head of a lane: SCARD and up to
 * HEALTH_LANES members of the paused-lanes set, and the heads of up to HEALTH_LANES lanes (by
 * name), one pipeline each; then one HGET per head found.
 */
async function laneHealth(client: RedisClient, keys: QueueKeys): Promise<Pick<Health, 'pausedLanes' | 'pausedLanesWithWork' | 'oldestWaiting'>> {
  const pausedLanes = await client.scard(keys.lpaused);
  let pausedLanesWithWork = 0;
  if (pausedLanes > 0) {
    const [, names] = await client.sscan(keys.lpaused, 0, 'COUNT', HEALTH_LANES);
    const p = client.pipeline();
    for (const lane of names.slice(0, HEALTH_LANES)) {
      p.zcard(laneKey(keys, lane));
      p.hexists(keys.lone, lane);
    }
    const r = (await p.exec())!.map(([, x]) => Number(x));
    for (let i = 0; i < r.length; i += 2) if (r[i] + r[i + 1] > 0) pausedLanesWithWork++;
  }
  const lanes = await client.zrangebylex(keys.lanes, '-', '+', 'LIMIT', 0, HEALTH_LANES);
  let oldestWaiting: number | null = null;
  for (const ts of (await laneHeads(client, keys, lanes)).values()) {
    if (ts !== null && (oldestWaiting === null || ts < oldestWaiting)) oldestWaiting = ts;
  }
  return { pausedLanes, pausedLanesWithWork, oldestWaiting };
}

/**
 * Every queue (OVERVIEW_QUEUES at most) with counts, workers and health. Reads per queue: one
 * MULTI of counts, the paused flag, laneHealth; once: one CLIENT LIST; and the throughput
 * rings (incremental reads of each queue's events stream, throughput.ts).
 */
export async function overviewHealth(t: Target, tp: Throughput, windowSec: number): Promise<{ queues: QueueHealth[]; truncated: boolean; windowSec: number }> {
  const all = await listQueues(t.client, t.prefix);
  const names = all.slice(0, OVERVIEW_QUEUES);
  const workers = await workersByQueue(t.client, t.prefix, names);
  const queues: QueueHealth[] = [];
  for (const name of names) {
    const keys = queueKeys(name, t.prefix);
    const [counts, paused, lanes, rate] = await Promise.all([
      getJobCounts(t.client, keys) as Promise<JobCounts>,
      t.client.hget(keys.meta, MetaField.paused).then((p) => p === '1'),
      laneHealth(t.client, keys),
      tp.totals(name, windowSec),
    ]);
    const ready = counts.waiting + counts.prioritized + counts.paused;
    const n = workers.get(name)!.length;
    const finished = rate.completed + rate.failed;
    queues.push({
      name, paused, counts, workers: n,
      health: {
        noWorker: !paused && counts.waiting + counts.prioritized > 0 && n === 0,
        pausedWithWork: paused && ready > 0,
        ...lanes,
        oldestWaiting: ready > 0 ? lanes.oldestWaiting : null,
        completed: rate.completed,
        failed: rate.failed,
        failureRate: finished === 0 ? 0 : rate.failed / finished,
      },
    });
  }
  return { queues: await foldShards(t.client, t.prefix, queues), truncated: all.length > names.length, windowSec };
}

/** Schedulers by next run, `limit` (≤ 100) from `offset`, and how many there are. */
export async function schedulersPage(q: Queue, offset: number, limit: number) {
  v.nonNegativeInt('offset', offset);
  v.integerIn('limit', limit, 1, 100);
  const [total, list] = await Promise.all([q.getJobSchedulersCount(), q.getJobSchedulers(offset, offset + limit - 1, true)]);
  return { total, schedulers: list };
}

/** The order jobs are listed in with state "all". */
export const ALL_ORDER: JobStateName[] = ['active', 'waiting', 'paused', 'prioritized', 'waiting-children', 'delayed', 'failed', 'completed'];

/** The states a page reads: one named state, or all of them in ALL_ORDER. */
function stateList(state: string | undefined): readonly JobStateName[] {
  const all = state === undefined || state === '' || state === 'all';
  if (!all && !(JOB_STATES as readonly string[]).includes(state)) v.fail('state', `all or one of ${JOB_STATES.join(', ')}`, state);
  return all ? ALL_ORDER : [state as JobStateName];
}

/** Where a page starts: the `<state index>:<offset>` cursor a previous page returned, or the start. */
function cursorAt(cursor: string | undefined, states: number): { si: number; offset: number } {
  if (cursor === undefined || cursor === '') return { si: 0, offset: 0 };
  const m = /^(\d+):(\d+)$/.exec(cursor);
  if (!m || Number(m[1]) >= states) v.fail('cursor', '"<state index>:<offset>" from a previous page', cursor);
  return { si: Number(m[1]), offset: Number(m[2]) };
}

/**
 * Jobs in one state or in all of them, `limit` (≤ 200) at a time. The cursor is
 * `<state index>:<offset in that state>`, so "all" pages on through every state; each page reads
 * at most limit+1 ids per state it touches (a lane filter over a non-ready state examines at
 * most 20,000 ids, operations.ts).
 */
export async function jobsPage(q: Queue, query: { state?: string; lane?: string; cursor?: string; limit?: number }) {
  const limit = query.limit === undefined ? 50 : v.integerIn('limit', query.limit, 1, 200);
  const lane = query.lane === undefined || query.lane === '' ? undefined : v.laneName(query.lane);
  const states = stateList(query.state);
  let { si, offset } = cursorAt(query.cursor, states.length);
  const jobs: JobRow[] = [];
  let next: string | null = null;
  while (si < states.length) {
    const want = limit - jobs.length;
    const page = await jobsInState(q, states[si], lane, offset, want + 1);
    for (const j of page.slice(0, want)) jobs.push(jobRow(j, states[si]));
    if (page.length > want) {
      next = `${si}:${offset + want}`;
      break;
    }
    si++;
    offset = 0;
    if (jobs.length === limit) {
      // Full page that ended a state: more only if a later state has jobs; the next page finds out.
      if (si < states.length) next = `${si}:0`;
      break;
    }
  }
  return { jobs, next };
}

/** A job by its exact id, as a list row: [] when there is none. Two reads. */
export async function findById(q: Queue, id: string): Promise<{ jobs: JobRow[]; next: null }> {
  v.nonEmptyString('id', id);
  const job = await q.getJob(id);
  if (!job) return { jobs: [], next: null };
  return { jobs: [jobRow(job, await job.getState())], next: null };
}

export interface JobRef {
  queue: string;
  id: string;
  /** The queue is under this dashboard's prefix, so the page can link to it. */
  local: boolean;
}

/** A dependency or parent key (a job key or BullMQ's `<prefix>:<queue>:<id>`) as queue and id. */
function ref(key: string, prefix: string): JobRef | null {
  const k = parseJobKey(key);
  if (k) return { queue: k.queue, id: k.id, local: k.prefix === prefix };
  const l = parseLogicalJobName(key);
  const qn = l && parseQualifiedName(l.queue, prefix);
  return l && qn ? { queue: qn.queue, id: l.id, local: qn.prefix === prefix } : null;
}

/** Children listed per kind in a job's detail. */
export const CHILDREN_SHOWN = 50;

/**
 * A job with everything the panel shows: fields, logs, its due time when delayed, its parent
 * and its children (up to CHILDREN_SHOWN of each kind, with the totals).
 */
export async function jobFull(q: Queue, id: string) {
  const d = await jobDetail(q, id);
  const job = (await q.getJob(id))!;
  const due = d.state === 'delayed' ? await q.client.zscore(q.keys.delayed, id).then((s) => (s === null ? null : Number(s))) : null;
  const page = { count: CHILDREN_SHOWN };
  const [deps, counts] = await Promise.all([
    job.getDependencies({ processed: page, unprocessed: page, failed: page, ignored: page }),
    job.getDependenciesCount(),
  ]);
  // The count is a hint to the scans behind getDependencies: cut each kind to the bound here.
  const keys = (x: Record<string, unknown> | string[] | undefined) => (Array.isArray(x) ? x : Object.keys(x ?? {})).slice(0, CHILDREN_SHOWN);
  const children = [
    ...keys(deps.unprocessed).map((k) => ({ ref: ref(k, q.keys.prefix), status: 'pending' })),
    ...keys(deps.processed).map((k) => ({ ref: ref(k, q.keys.prefix), status: 'processed' })),
    ...keys(deps.failed).map((k) => ({ ref: ref(k, q.keys.prefix), status: 'failed' })),
    ...keys(deps.ignored).map((k) => ({ ref: ref(k, q.keys.prefix), status: 'ignored' })),
  ].filter((c) => c.ref !== null) as Array<{ ref: JobRef; status: string }>;
  const parent = job.parentKey ? ref(job.parentKey, q.keys.prefix) : null;
  return { ...d, queue: q.name, due, parent, children, childCounts: counts };
}

/**
 * One page of lanes in name order, `limit` (≤ 1,000) after the name `after`, only those whose
 * name starts with `prefix`: one ZRANGEBYLEX and one pipeline of 8 reads per lane, so a queue
 * with 20,000 lanes is paged, never read whole.
 */
export async function lanesPage(q: Queue, query: { after?: string; prefix?: string; limit?: number }): Promise<{ lanes: LaneInfo[]; next: string | null }> {
  const limit = query.limit === undefined ? 200 : v.integerIn('limit', query.limit, 1, 1000);
  const prefix = query.prefix ?? '';
  const after = query.after ?? '';
  // Lex bounds as bytes: everything starting with the prefix sorts below prefix + 0xff.
  const lo = after !== '' && after >= prefix ? Buffer.from('(' + after) : Buffer.from('[' + prefix);
  const hi = prefix === '' ? '+' : Buffer.concat([Buffer.from('[' + prefix), Buffer.from([0xff])]);
  const names = await q.client.zrangebylex(q.keys.lanes, lo, hi, 'LIMIT', 0, limit + 1);
  const page = names.slice(0, limit);
  return { lanes: await laneInfos(q.client, q.keys, page), next: names.length > limit ? page[page.length - 1] : null };
}

/** A queue's counts and paused flag without its lanes (the queue view polls this; lanes page apart). */
export async function queueSummary(q: Queue): Promise<{ name: string; paused: boolean; counts: JobCounts }> {
  const [counts, paused] = await Promise.all([getJobCounts(q.client, q.keys) as Promise<JobCounts>, q.isPaused()]);
  return { name: q.name, paused, counts };
}

/** Most jobs one name search examines before it answers with where to go on. */
export const NAME_SCAN = 2000;
const KIND: Record<JobStateName, ListKind> = {
  waiting: 'ready', paused: 'ready', prioritized: 'readyP', active: 'active', delayed: 'delayed',
  completed: 'completed', failed: 'failed', 'waiting-children': 'wchildren',
};

/**
 * Jobs whose name contains `name`, in one state or all, as a bounded, resumable scan: each call
 * examines at most NAME_SCAN jobs (ids in pages of 500, one HGET of the name each) and returns
 * the matches found (≤ limit) with the cursor to go on from, in the jobsPage cursor form.
 */
export async function searchByName(q: Queue, query: { name: string; state?: string; cursor?: string; limit?: number }) {
  const name = v.nonEmptyString('name', query.name);
  const limit = query.limit === undefined ? 50 : v.integerIn('limit', query.limit, 1, 200);
  const states = stateList(query.state);
  let { si, offset } = cursorAt(query.cursor, states.length);
  const paused = await q.isPaused();
  const found: Array<{ id: string; state: JobStateName }> = [];
  let scanned = 0;
  while (si < states.length && scanned < NAME_SCAN && found.length < limit) {
    const state = states[si];
    // Ready jobs of a paused queue are "paused", of a running one "waiting".
    if ((state === 'waiting' && paused) || (state === 'paused' && !paused)) {
      si++;
      offset = 0;
      continue;
    }
    const want = Math.min(500, NAME_SCAN - scanned);
    const asc = state !== 'completed' && state !== 'failed';
    const ids = await rangeIds(q.client, q.keys, KIND[state], offset, offset + want - 1, asc);
    const p = q.client.pipeline();
    for (const id of ids) p.hget(jobKey(q.keys, id), JobField.name);
    const names = ids.length ? (await p.exec())! : [];
    let used = 0;
    for (; used < ids.length && found.length < limit; used++) {
      const n = names[used][1] as string | null;
      if (n !== null && n.includes(name)) found.push({ id: ids[used], state });
    }
    scanned += used;
    offset += used;
    if (used === ids.length && ids.length < want) {
      si++;
      offset = 0;
    }
  }
  const ctx = { client: q.client, keys: q.keys, maxPayloadBytes: DEFAULT_MAX_PAYLOAD, keepLogs: 0 };
  const jobs = await loadJobs(ctx as never, found.map((f) => f.id));
  const stateOf = new Map(found.map((f) => [f.id, f.state]));
  return { jobs: jobs.map((j) => jobRow(j, stateOf.get(j.id)!)), next: si < states.length ? `${si}:${offset}` : null, scanned };
}
