// Redis settings and access:
//  - a warning at connect when `maxmemory-policy` is not `noeviction` (dedicated server), none
//    when it is;
//  - TLS options reach the ioredis client unchanged (Queue, Worker, the worker's duplicated
//    blocking connection, a rediss:// URL); no TLS server needed;
//  - an ACL user with exactly the commands and key pattern that docs/reliability.md lists (the
//    test reads the ACL line from the doc, so the two cannot drift apart) runs a full workload:
//    add, addBulk, process with retries, delays, lease renewal and the stall sweep, QueueEvents,
//    a flow, a job scheduler, getJobCounts, getJobs, lanes, clean, drain, obliterate.
// ACL_DISCOVER=1 prints the commands the workload sends (run as a user with +@all).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FlowProducer, Queue, QueueEvents, Worker, UnrecoverableError, type Job } from '../src/index.js';
import { openConnection, closeConnection } from '../src/core/connection.js';
import { qname, sleep, waitFor } from './helpers.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer, freePort } from '../scripts/redis-server.mjs';

interface Server {
  url: string;
  port: number;
  stop: () => Promise<void>;
}

const DOC = fileURLToPath(new URL('../docs/reliability.md', import.meta.url));

/**
 * The ACL rules documented in docs/reliability.md between the <marker>:begin/end markers: `acl`
 * for every server, `acl-setinfo` for the servers that have CLIENT SETINFO (Redis ≥ 7.2, Valkey).
 */
function documentedAcl(marker = 'acl'): { user: string; rules: string[] } {
  const text = readFileSync(DOC, 'utf8');
  const m = new RegExp(`<!-- ${marker}:begin -->[\\s\\S]*?\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\`[\\s\\S]*?<!-- ${marker}:end -->`).exec(text);
  if (!m) throw new Error(`docs/reliability.md has no ACL block between <!-- ${marker}:begin --> and <!-- ${marker}:end -->`);
  const words = m[1].replace(/\\\n/g, ' ').trim().split(/\s+/);
  if (words[0] !== 'ACL' || words[1] !== 'SETUSER') throw new Error(`ACL block must be one ACL SETUSER line, got ${words.slice(0, 3).join(' ')}`);
  return { user: words[2], rules: words.slice(3) };
}

/** Everything an application does through Queue, Worker, QueueEvents and lanes. */
async function workload(url: string, name: string): Promise<Record<string, unknown>> {
  const queue = new Queue(name, { connection: url });
  const events = new QueueEvents(name, { connection: url });
  await events.waitUntilReady();
  const seen: string[] = [];
  events.on('completed', ({ jobId }) => seen.push(jobId));
  const processed: string[] = [];
  const worker = new Worker(
    name,
    async (job: Job) => {
      processed.push(job.id);
      await job.updateProgress(50);
      await job.log(`attempt ${job.attemptsMade + 1}`);
      if (job.data.slow) await sleep(250); // longer than lockDuration / 2: the lease is renewed
      if (job.data.unrecoverable) throw new UnrecoverableError('no');
      if (job.data.failOnce && job.attemptsMade === 0) throw new Error('first attempt fails');
      return { ok: job.id };
    },
    { connection: url, concurrency: 4, lockDuration: 200, stalledInterval: 100, drainDelay: 1 },
  );
  const workerErrors: Error[] = [];
  worker.on('error', (e) => workerErrors.push(e));
  try {
    await queue.lanes.setWeight('t1', 3);
    await queue.lanes.setLimit('t2', 5);
    await queue.lanes.setRateLimit('t3', { max: 100, duration: 1000 });
    await queue.lanes.pause('t4');
    await queue.lanes.resume('t4');
    await queue.add('one', { x: 1 }, { lane: 't1', priority: 3, jobId: 'custom-1' });
    await queue.addBulk([
      ...Array.from({ length: 12 }, (_, i) => ({ name: 'bulk', data: { i }, opts: { lane: `t${(i % 3) + 1}` } })),
      { name: 'later', data: {}, opts: { delay: 50 } },
      { name: 'retry', data: { failOnce: true }, opts: { attempts: 2, backoff: 20 } },
      { name: 'slow', data: { slow: true } },
      { name: 'bad', data: { unrecoverable: true }, opts: { removeOnFail: false } },
    ]);
    const total = 17;
    await waitFor(async () => {
      const c = await queue.getJobCounts('completed', 'failed');
      return c.completed! + c.failed! === total;
    }, 20_000, 'workload jobs to finish');
    await waitFor(() => seen.length === total - 1, 10_000, 'completed events');
    const counts = await queue.getJobCounts();
    const [failed] = await queue.getJobs(['failed']);
    expect(failed.failedReason).toBe('no');
    await failed.retry();
    await waitFor(async () => (await queue.getJobCounts('failed')).failed === 1, 10_000, 'the retried job to fail again');
    const done = await queue.getJobs(['completed'], 0, 4);
    expect(await done[0].getLogs()).toHaveLength(1);
    expect(await (await queue.getJob('custom-1'))!.getState()).toBe('completed');

    // A flow (parent waits for its child) and a job scheduler.
    const flows = new FlowProducer({ connection: url });
    try {
      const tree = await flows.add({ name: 'parent', queueName: name, data: {}, children: [{ name: 'child', queueName: name, data: {} }] });
      await waitFor(async () => (await tree.job.getState()) === 'completed', 10_000, 'the flow parent to complete');
    } finally {
      await flows.close();
    }
    await queue.upsertJobScheduler('tick', { every: 50, limit: 2 }, { name: 'tick', data: {} });
    await waitFor(async () => (await queue.getJobs(['completed'])).filter((j) => j.name === 'tick').length >= 1, 10_000, 'a scheduled job');
    await queue.removeJobScheduler('tick');
    await waitFor(async () => (await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized')).active === 0, 10_000, 'the worker to go idle');

    // Admin paths on waiting and delayed jobs, with no worker running.
    await worker.close();
    await queue.pause();
    expect(await queue.isPaused()).toBe(true);
    const w = await queue.add('w', { a: 1 }, { lane: 't5' });
    const d = await queue.add('d', {}, { delay: 60_000 });
    await queue.changePriority(w.id, 7);
    await queue.moveToLane(w.id, 't6');
    await w.updateData({ a: 2 });
    await d.promote();
    await queue.remove(d.id);
    const lanes = await queue.lanes.list();
    expect(lanes.lanes.length).toBeGreaterThan(0);
    expect((await queue.lanes.get('t6')).depth).toBe(1);
    expect(await queue.lanes.drain('t6')).toBe(1);
    await queue.add('x', {}, { delay: 60_000 });
    expect(await queue.drain(true)).toBe(1);
    await queue.resume();
    const completed = (await queue.getJobCounts('completed')).completed!;
    expect(completed).toBeGreaterThanOrEqual(total - 1 + 3);
    expect((await queue.clean(0, 0, 'completed')).length).toBe(completed);
    await queue.obliterate({ force: true });
    return { counts, workerErrors: workerErrors.map((e) => e.message) };
  } finally {
    await worker.close(true);
    await events.close();
    await queue.close();
  }
}

describe('reliability: Redis settings and access', () => {
  const servers: Server[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    for (const s of servers) await s.stop();
  });

  it('warns at connect unless maxmemory-policy is noeviction', async () => {
    const lru: Server = await startRedisServer(['--maxmemory-policy', 'allkeys-lru']);
    servers.push(lru);
    const plain: Server = await startRedisServer([]);
    servers.push(plain);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const q1 = new Queue(qname('acl-lru'), { connection: lru.url });
      closers.push(() => q1.close());
      await waitFor(() => warn.mock.calls.length > 0, 5000, 'the eviction warning');
      expect(String(warn.mock.calls[0][0])).toMatch(/maxmemory-policy is "allkeys-lru".*noeviction/);
      const w1 = new Worker(q1.name, async () => 1, { connection: lru.url, drainDelay: 1 });
      closers.push(() => w1.close(true));
      await waitFor(() => warn.mock.calls.length > 1, 5000, 'the worker\'s eviction warning');

      warn.mockClear();
      const q2 = new Queue(qname('acl-noev'), { connection: plain.url });
      closers.push(() => q2.close());
      await q2.getJobCounts();
      await sleep(100);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it('passes TLS options through to ioredis', async () => {
    const port: number = await freePort(); // nothing listens there: no connection is made
    const tls = { servername: 'redis.internal', rejectUnauthorized: false, ca: 'CA PEM', minVersion: 'TLSv1.2' as const };
    const options = { host: '127.0.0.1', port, tls, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null };
    const queue = new Queue(qname('acl-tls'), { connection: options });
    queue.on('error', () => {});
    expect((queue.client as Redis).options.tls).toEqual(tls);
    const worker = new Worker(qname('acl-tls'), async () => 1, { connection: options, autorun: false });
    worker.on('error', () => {});
    const workerClient = (worker as unknown as { conn: { client: Redis } }).conn.client;
    expect(workerClient.options.tls).toEqual(tls);
    expect(workerClient.options.maxRetriesPerRequest).toBe(null); // workers wait through reconnects
    const blocking = openConnection(workerClient, { blocking: true }); // what the idle worker blocks on
    expect((blocking.client as Redis).options.tls).toEqual(tls);
    await closeConnection(blocking, true);
    await worker.close(true);
    await queue.close();

    const viaUrl = new Queue(qname('acl-tls'), { connection: `rediss://127.0.0.1:${port}` });
    viaUrl.on('error', () => {});
    expect((viaUrl.client as Redis).options.tls).toBeTruthy();
    viaUrl.client.disconnect();
    await viaUrl.close();
  });

  it('runs add, processing, counts and lanes as the documented least-privilege ACL user', async () => {
    const server: Server = await startRedisServer([]);
    servers.push(server);
    const admin = new Redis(server.url);
    closers.push(() => admin.quit());
    const { user, rules } = documentedAcl();
    const password = 'pw-' + Math.random().toString(36).slice(2);
    const discover = process.env.ACL_DISCOVER === '1';
    const applied = rules.map((r) => (r.startsWith('>') ? `>${password}` : r));
    if (discover) await admin.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~emq:*', '+@all');
    else await admin.call('ACL', 'SETUSER', user, ...applied);
    // The CLIENT SETINFO line: granted where the server has the command (ioredis sends it on
    // every connect), refused by a server without it, as the doc says.
    const setinfo = documentedAcl('acl-setinfo');
    expect(setinfo.user).toBe(user);
    const hasSetinfo = ((await admin.call('COMMAND', 'INFO', 'client|setinfo')) as unknown[])[0] != null;
    const addSetinfo = admin.call('ACL', 'SETUSER', user, ...setinfo.rules);
    if (hasSetinfo) await addSetinfo;
    else await expect(addSetinfo).rejects.toThrow(/Unknown command/);
    await admin.config('RESETSTAT');
    await admin.call('ACL', 'LOG', 'RESET');

    const url = `redis://${user}:${password}@127.0.0.1:${server.port}`;
    const result = await workload(url, qname('acl'));

    const denied = (await admin.call('ACL', 'LOG')) as unknown[][];
    const stats = await admin.info('commandstats');
    const used = [...stats.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)].map((m) => m[1]).filter((c) => !['acl|log', 'acl|setuser', 'config|resetstat'].includes(c));
    if (discover) console.log(`[reliability-acl] commands used by the workload: ${used.sort().join(' ')}`);
    // The one expected denial: the eviction-policy check (CONFIG GET) is not granted, because
    // CONFIG GET would also reveal secrets; echomq then skips the check without failing.
    const deniedOther = denied.map((entry) => entry.map(String)).filter((e) => e[e.indexOf('object') + 1] !== 'config|get');
    expect(deniedOther.map((e) => e.join(' '))).toEqual([]);
    expect(result.workerErrors).toEqual([]);
    // A user without the key pattern cannot touch the queue's keys (the rules do restrict).
    await admin.call('ACL', 'SETUSER', 'stranger', 'on', `>${password}`, '~other:*', ...applied.filter((r) => !r.startsWith('~') && !r.startsWith('>') && r !== 'on' && r !== 'resetkeys'));
    const stranger = new Queue(qname('acl-denied'), { connection: { host: '127.0.0.1', port: server.port, username: 'stranger', password, maxRetriesPerRequest: 1 } });
    stranger.on('error', () => {});
    await expect(stranger.add('x', {})).rejects.toThrow(/NOPERM|No permissions/);
    await stranger.close();
    console.log(`[reliability-acl] documented ACL for ${JSON.stringify(user)}: ${rules.length} rules; workload ran with no ACL denials (${used.length} distinct commands)`);
  }, 60_000);
});
