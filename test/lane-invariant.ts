/**
 * Checks the lane bookkeeping of one queue against what Redis actually holds, so any test can
 * assert, after any sequence of operations, that the claim will see a consistent world:
 *
 *  - the ring list holds every serviceable lane exactly once and nothing else, and the inring
 *    set holds the same lanes but the one-job lanes of the lone hash, which it never holds
 *    (a one-job lane has no sorted set: its job is in its lone field; serviceable = has ready jobs, not paused, under its concurrency
 *    limit — its own, else the Worker's group default for lanes but the default lane — and not
 *    waiting in rlwait for its rate window);
 *  - lactive[lane] equals the number of that lane's jobs in `active` (absent = 0, never <= 0);
 *  - meta `ready` equals the sum of the lane zset sizes and `readyP` the members with score > 0;
 *  - every ready member points at a job hash that agrees (st w, same lane, prio = score,
 *    member = sq + id), and every active id at a hash with st a;
 *  - the active set, once it exists, ends with its sentinel member at +inf (layout 2);
 *  - the lane registry holds every lane that has ready or active jobs or any setting (it is what
 *    lanes.list and drain walk); with `registry: 'exact'` it holds nothing else either.
 *
 * The state is read by one read-only Lua snapshot, so the check is consistent even while
 * workers run. Lanes are found from every lane-bearing key plus a SCAN of the lane zsets, so a
 * lane with jobs that the registry forgot is still seen.
 */
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../src/core/keys.js';
import { ACTIVE_SENTINEL } from '../src/core/layout.js';

// Read-only snapshot. KEYS: meta, ring, inring, lanes, lweight, llimit, lactive, lpaused, lrate,
// rlwait, active. ARGV: laneBase, jobBase, then extra lane names found by SCAN.
const SNAPSHOT = `
local laneBase, jobBase = ARGV[1], ARGV[2]
local ring = redis.call('LRANGE', KEYS[2], 0, -1)
local inring = redis.call('SMEMBERS', KEYS[3])
local registry = redis.call('ZRANGE', KEYS[4], 0, -1)
local lweight = redis.call('HGETALL', KEYS[5])
local llimit = redis.call('HGETALL', KEYS[6])
local lactive = redis.call('HGETALL', KEYS[7])
local lpaused = redis.call('SMEMBERS', KEYS[8])
local lrate = redis.call('HGETALL', KEYS[9])
local rlwait = redis.call('ZRANGE', KEYS[10], 0, -1, 'WITHSCORES')
local meta = redis.call('HMGET', KEYS[1], 'ready', 'readyP', 'gconc')
local loneFlat = redis.call('HGETALL', KEYS[12])
local lone = {}
for i = 1, #loneFlat, 2 do if loneFlat[i] ~= '' then lone[loneFlat[i]] = loneFlat[i + 1] end end
local seen, names = {}, {}
local function add(l) if l and not seen[l] then seen[l] = true; names[#names + 1] = l end end
for _, l in ipairs(ring) do add(l) end
for _, l in ipairs(inring) do add(l) end
for _, l in ipairs(registry) do add(l) end
for _, h in ipairs({lweight, llimit, lactive, lrate, rlwait}) do
  -- lactive's field '' is not a lane (lib/lanes.lua WIDE_FIELD).
  for i = 1, #h, 2 do if h[i] ~= '' then add(h[i]) end end
end
for _, l in ipairs(lpaused) do add(l) end
for l in pairs(lone) do add(l) end
for i = 3, #ARGV do add(ARGV[i]) end
local active = {}
-- Jobs only: the sentinel member sits at +inf (layout 2), and is read on its own below.
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[11], '-inf', '(+inf')) do
  local f = redis.call('HMGET', jobBase .. id, 'lane', 'st')
  active[#active + 1] = {id, f[1], f[2]}
  add(f[1])
end
local lanes = {}
for _, l in ipairs(names) do
  local members = redis.call('ZRANGE', laneBase .. l, 0, -1, 'WITHSCORES')
  local v = lone[l]
  if v then
    -- A one-job lane's field "<prio>:<member>" reads as a member; with a sorted set as well it
    -- shows up as an extra member, which the checks below report.
    local p, m = string.match(v, '^(%d+):(.*)$')
    members[#members + 1] = m
    members[#members + 1] = p
  end
  local jobs = {}
  for i = 1, #members, 2 do
    local f = redis.call('HMGET', jobBase .. string.sub(members[i], 15), 'st', 'lane', 'prio', 'sq')
    jobs[#jobs + 1] = {f[1], f[2], f[3], f[4]}
  end
  lanes[#lanes + 1] = {l, members, jobs}
end
local loneNames, loneWithSet = {}, {}
for l in pairs(lone) do
  loneNames[#loneNames + 1] = l
  if redis.call('EXISTS', laneBase .. l) == 1 then loneWithSet[#loneWithSet + 1] = l end
end
local activeTop = redis.call('ZRANGE', KEYS[11], -1, -1, 'WITHSCORES')
return {ring, inring, registry, lweight, llimit, lactive, lpaused, lrate, rlwait, meta, active, lanes, loneNames, loneWithSet, activeTop}
`;

type Nullable = string | null;

export interface LaneSnapshot {
  ring: string[];
  inring: string[];
  /** Lanes of the lone hash (one-job lanes). */
  lone: string[];
  /** One-job lanes that also have a sorted set (must be none). */
  loneWithSet: string[];
  registry: string[];
  weight: Map<string, number>;
  limit: Map<string, number>;
  lactive: Map<string, number>;
  paused: Set<string>;
  rate: Map<string, string>;
  rlwait: Map<string, number>;
  /** groupLimit: the Worker option group.concurrency (meta gconc), the limit of lanes without their own but the default lane. */
  meta: { ready: number; readyP: number; groupLimit?: number };
  /** Every id in `active` with its job hash's lane and state (null when the hash is gone). */
  active: Array<{ id: string; lane: Nullable; st: Nullable }>;
  /** The highest member of `active` and its score (null: no key): the sentinel once the key exists. */
  activeTop: { member: string; score: string } | null;
  /** Ready jobs per lane, in service order: member, score and what the job hash says. */
  lanes: Map<string, Array<{ member: string; id: string; score: number; st: Nullable; lane: Nullable; prio: Nullable; sq: Nullable }>>;
}

const pairs = (flat: string[]): Map<string, string> => {
  const m = new Map<string, string>();
  for (let i = 0; i < flat.length; i += 2) m.set(flat[i], flat[i + 1]);
  return m;
};
/** lactive without its field '' (lib/lanes.lua WIDE_FIELD: keeps the hash a hashtable, names no lane). */
const withoutWideField = (m: Map<string, number>): Map<string, number> => {
  m.delete('');
  return m;
};
const numbers = (m: Map<string, string>): Map<string, number> => new Map([...m].map(([k, v]) => [k, Number(v)]));

/** Names of lanes that have a ready-job zset, found by SCAN (independent of the registry). */
async function scanLaneNames(c: Redis, keys: QueueKeys): Promise<string[]> {
  const pattern = keys.laneBase.replace(/[*?[\]\\]/g, '\\$&') + '*';
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    for (const k of batch) out.push(k.slice(keys.laneBase.length));
  } while (cursor !== '0');
  return out;
}

/** Reads the queue's lane state in one atomic snapshot. */
export async function readLaneState(c: Redis, keys: QueueKeys): Promise<LaneSnapshot> {
  const extra = await scanLaneNames(c, keys);
  const k = [keys.meta, keys.ring, keys.inring, keys.lanes, keys.lweight, keys.llimit, keys.lactive, keys.lpaused,
    keys.lrate, keys.rlwait, keys.active, keys.lone];
  const r = (await c.eval(SNAPSHOT, k.length, ...k, keys.laneBase, keys.jobBase, ...extra)) as unknown[];
  const [ring, inring, registry, lweight, llimit, lactive, lpaused, lrate, rlwait, meta, active, lanes, lone, loneWithSet, activeTop] = r as [
    string[], string[], string[], string[], string[], string[], string[], string[], string[], Nullable[],
    Nullable[][], Array<[string, string[], Nullable[][]]>, string[], string[], string[],
  ];
  const laneMap: LaneSnapshot['lanes'] = new Map();
  for (const [name, members, jobs] of lanes) {
    const list = [];
    for (let i = 0; i < members.length; i += 2) {
      const [st, lane, prio, sq] = jobs[i / 2];
      // A job hash leaves out the default lane and priority 0 (lib/newjob.lua).
      list.push({ member: members[i], id: members[i].slice(14), score: Number(members[i + 1]), st,
        lane: st === null ? lane : (lane ?? 'default'), prio: st === null ? prio : (prio ?? '0'), sq });
    }
    laneMap.set(name, list);
  }
  return {
    ring,
    inring,
    lone,
    loneWithSet,
    registry,
    weight: numbers(pairs(lweight)),
    limit: numbers(pairs(llimit)),
    lactive: withoutWideField(numbers(pairs(lactive))),
    paused: new Set(lpaused),
    rate: pairs(lrate),
    rlwait: numbers(pairs(rlwait)),
    meta: { ready: Number(meta[0] ?? 0), readyP: Number(meta[1] ?? 0), groupLimit: meta[2] === null ? undefined : Number(meta[2]) },
    active: active.map(([id, lane, st]) => ({ id: id as string, lane: st === null ? lane : (lane ?? 'default'), st })),
    activeTop: activeTop.length === 0 ? null : { member: activeTop[0], score: activeTop[1] },
    lanes: laneMap,
  };
}

/** The lanes that must be in the ring, computed from the snapshot alone. */
export function serviceableLanes(s: LaneSnapshot): Set<string> {
  const out = new Set<string>();
  for (const [lane, jobs] of s.lanes) {
    if (jobs.length === 0 || s.paused.has(lane) || s.rlwait.has(lane)) continue;
    const lim = s.limit.get(lane) ?? (lane === 'default' ? undefined : s.meta.groupLimit);
    if (lim !== undefined && (s.lactive.get(lane) ?? 0) >= lim) continue;
    out.add(lane);
  }
  return out;
}

const show = (xs: Iterable<string>) => JSON.stringify([...xs].sort());

/** Returns every violated rule as a readable line; empty when the bookkeeping is right. */
export function laneViolations(s: LaneSnapshot, opts: { registry?: 'superset' | 'exact' } = {}): string[] {
  const bad: string[] = [];
  const ringSet = new Set(s.ring);
  if (ringSet.size !== s.ring.length) bad.push(`ring has duplicates: ${JSON.stringify(s.ring)}`);
  const inring = new Set(s.inring);
  const lone = new Set(s.lone);
  const both = s.lone.filter((l) => inring.has(l));
  if (both.length > 0) bad.push(`one-job lanes ${show(both)} are in inring`);
  if (s.loneWithSet.length > 0) bad.push(`one-job lanes ${show(s.loneWithSet)} have a sorted set too`);
  if (show(ringSet) !== show(new Set([...inring, ...lone]))) bad.push(`ring ${show(ringSet)} != inring ${show(inring)} + lone ${show(lone)}`);
  const want = serviceableLanes(s);
  if (show(ringSet) !== show(want)) bad.push(`ring ${show(ringSet)} != serviceable ${show(want)}`);

  if (s.activeTop && (s.activeTop.member !== ACTIVE_SENTINEL || s.activeTop.score !== 'inf')) {
    bad.push(`active's last member is ${s.activeTop.member}@${s.activeTop.score}, not the sentinel at +inf`);
  }
  const counted = new Map<string, number>();
  for (const a of s.active) {
    if (a.st !== 'a' || a.lane === null) bad.push(`active id ${a.id} has job st=${a.st} lane=${a.lane}`);
    if (a.lane !== null) counted.set(a.lane, (counted.get(a.lane) ?? 0) + 1);
  }
  for (const lane of new Set([...counted.keys(), ...s.lactive.keys()])) {
    const have = s.lactive.get(lane);
    if (have !== undefined && have <= 0) bad.push(`lactive[${lane}] = ${have} (should be absent)`);
    if ((have ?? 0) !== (counted.get(lane) ?? 0)) bad.push(`lactive[${lane}] = ${have ?? 'absent'} but ${counted.get(lane) ?? 0} active`);
  }

  let depth = 0;
  let prio = 0;
  for (const [lane, jobs] of s.lanes) {
    depth += jobs.length;
    for (const j of jobs) {
      if (j.score > 0) prio++;
      if (j.st !== 'w' || j.lane !== lane || Number(j.prio) !== j.score || (j.sq ?? '') + j.id !== j.member) {
        bad.push(`lane ${lane} member ${j.member}@${j.score}: job st=${j.st} lane=${j.lane} prio=${j.prio} sq=${j.sq}`);
      }
    }
  }
  if (s.meta.ready !== depth) bad.push(`meta ready ${s.meta.ready} != ${depth} ready jobs in lanes`);
  if (s.meta.readyP !== prio) bad.push(`meta readyP ${s.meta.readyP} != ${prio} prioritized ready jobs`);

  const needed = new Set<string>();
  for (const [lane, jobs] of s.lanes) if (jobs.length > 0) needed.add(lane);
  for (const m of [s.lactive, s.weight, s.limit, s.rate]) for (const lane of m.keys()) needed.add(lane);
  for (const lane of s.paused) needed.add(lane);
  const registry = new Set(s.registry);
  const missing = [...needed].filter((l) => !registry.has(l));
  if (missing.length > 0) bad.push(`registry lacks lanes ${show(missing)}`);
  if (opts.registry === 'exact') {
    const idle = s.registry.filter((l) => !needed.has(l));
    if (idle.length > 0) bad.push(`registry keeps idle lanes ${show(idle)}`);
  }
  return bad;
}

/** Reads and checks; returns the violations (empty = all good). */
export async function checkLaneInvariant(c: Redis, keys: QueueKeys, opts: { registry?: 'superset' | 'exact' } = {}): Promise<string[]> {
  return laneViolations(await readLaneState(c, keys), opts);
}

/** Throws an Error listing every violation, for use inside tests. */
export async function assertLaneInvariant(c: Redis, keys: QueueKeys, opts: { registry?: 'superset' | 'exact' } = {}): Promise<void> {
  const bad = await checkLaneInvariant(c, keys, opts);
  if (bad.length > 0) throw new Error(`lane invariant of queue ${JSON.stringify(keys.queue)} broken:\n  ${bad.join('\n  ')}`);
}
