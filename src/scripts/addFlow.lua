-- addFlow: adds the part of a flow (a tree of jobs) that lives in this queue, in one call: a
-- flow whose jobs all share one queue is added atomically. A job with children enters
-- waiting-children with one pending entry per child in its deps hash; a leaf is added like
-- add.lua adds a job (ready, or delayed). The caller sends parents before (or with) their
-- children: a parent in another queue has been added by an earlier call.
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, delayed, failed, events, wake, wchildren, outbox, depsBase, laneBase, jobBase, lcfg, dedup, dedupx, reqBase
-- ARGV: [1] node count n, then per node 20 fields and its children's job keys:
--   id (never '': the caller names every node), name, data (JSON), opts (JSON),
--   priority (integer 0..2097151), lane, delay (ms), lifo ('1'/'0'), keepCompletedCount
--   ('' = keep all), keepCompletedAgeMs, keepFailedCount, keepFailedAgeMs,
--   parent id, parent job key, parent queue name, parent key prefix (all '' for a root),
--   policy ('f' failParentOnFailure, 'i' ignoreDependencyOnFailure, 'c'
--   continueParentOnFailure, 'd' removeDependencyOnFailure, '' none), timestamp (ms; '' =
--   now), register ('1': the parent is an existing job of this queue outside the flow, BullMQ's
--   `parent` on a root: it must exist and counts this job as a dependency), child count m,
--   then m child job keys; after the nodes, optionally the first node's deduplication (a
--   flow's root with children: BullMQ deduplicates a root): dedup id, ttl (ms; 0 = simple
--   mode, held while the job has not finished); last, optionally, the request id (lib/once.lua:
--   present when the arguments after the nodes are odd in number; '' = none): a rerun replies
--   the first run's {1, existing ids...} and writes nothing
-- A job whose id already exists is kept as it is (BullMQ's duplicated job). When the flow gives
-- it a parent it becomes that parent's child, unless it has another parent that still exists:
-- completed, it counts at once as a completed child (lib/flow.lua flowSettled); otherwise the
-- parent waits for it, as for a new child. The flow's children of an existing job are added
-- as its dependencies (they must be in this queue).
-- Returns: {1, existing ids...}; {2, holder} when a live job holds the root's dedup id (nothing
--   is written but the deduplicated event); or {-5, id} when an existing job has children in the flow in
--   another queue, or is a root attached to an outside parent, {-6, id} when the existing
--   parent job id names is missing, {-7, id} when an existing job has another parent that
--   still exists (nothing is written).
-- Errors: -5, -6, -7 as above; EMQ_EXPIRED (error reply, lib/once.lua).
-- Events: added per job, then waiting | delayed | waiting-children; deduplicated (jobId of the
--   holder, deduplicationId, deduplicatedJobId: the root's id) instead when deduplicated.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua
--!include lib/dedup.lua
--!include lib/once.lua

local n = tonumber(ARGV[1])
-- Where the nodes end: the optional dedup pair and request id follow them.
local tail = 2
for _ = 1, n do tail = tail + 20 + tonumber(ARGV[tail + 19]) end
local tailArgs = #ARGV - tail + 1
local rec, refused = onceBegin(tailArgs % 2 == 1 and ARGV[#ARGV] or nil)
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local nodes = {}
local b = 2
for i = 1, n do
  local m = tonumber(ARGV[b + 19])
  nodes[i] = { base = b, kids = m }
  local ejk = K.jobBase .. ARGV[b]
  if redis.call('EXISTS', ejk) == 1 then
    if ARGV[b + 18] == '1' then return {-5, ARGV[b]} end
    for c = 1, m do
      if string.sub(ARGV[b + 19 + c], 1, #K.jobBase) ~= K.jobBase then return {-5, ARGV[b]} end
    end
    if ARGV[b + 12] ~= '' then
      local old = redis.call('HGET', ejk, 'pk')
      if old and old ~= ARGV[b + 13] and redis.call('EXISTS', old) == 1 then return {-7, ARGV[b]} end
    end
    nodes[i].existing = true
  end
  if ARGV[b + 18] == '1' and redis.call('EXISTS', K.jobBase .. ARGV[b + 12]) == 0 then return {-6, ARGV[b]} end
  b = b + 20 + m
end

local now = nowMs()
local dd = tailArgs >= 2 and ARGV[b] or nil
if dd then
  dedupSweep(now)
  local holder = dedupHolder(dd, now)
  if holder then
    emit('deduplicated', 'jobId', holder, 'deduplicationId', dd, 'deduplicatedJobId', ARGV[2])
    return {2, holder}
  end
  -- Taken before the jobs are written: the root is new (an existing root was refused above or
  -- is kept as it is, and then it takes the id as BullMQ's duplicate does not: only when new).
  if not nodes[1].existing then dedupTake(dd, ARGV[2], tonumber(ARGV[b + 1]), now) end
end
local ready = false
local existing = {1}
local kept = {}
for i = 1, n do
  local a = nodes[i].base
  local id = ARGV[a]
  -- A parent of this call that already existed learns of its child here (a new parent lists
  -- its children when it is created).
  if ARGV[a + 12] ~= '' and kept[ARGV[a + 12]] and ARGV[a + 13] == K.jobBase .. ARGV[a + 12] then
    addDependency(ARGV[a + 12], K.jobBase .. id)
  end
  if nodes[i].existing then
    existing[#existing + 1] = id
    kept[id] = true
    if ARGV[a + 12] ~= '' then
      local jk = K.jobBase .. id
      redis.call('HSET', jk, 'pid', ARGV[a + 12], 'pk', ARGV[a + 13], 'pq', ARGV[a + 14], 'ppx', ARGV[a + 15])
      if ARGV[a + 16] ~= '' then redis.call('HSET', jk, 'pol', ARGV[a + 16]) else redis.call('HDEL', jk, 'pol') end
      local f = redis.call('HMGET', jk, 'st', 'rv')
      if f[1] == 'c' then flowSettled(jk, id, 'c', f[2] or 'null', now) end
    end
  else
    local extra = {}
    if ARGV[a + 12] ~= '' then
      extra = { 'pid', ARGV[a + 12], 'pk', ARGV[a + 13], 'pq', ARGV[a + 14], 'ppx', ARGV[a + 15] }
      if ARGV[a + 16] ~= '' then
        extra[#extra + 1] = 'pol'
        extra[#extra + 1] = ARGV[a + 16]
      end
    end
    local m = nodes[i].kids
    if m > 0 then
      local dk = K.depsBase .. id
      redis.call('DEL', dk)
      for c = 1, m do redis.call('HSET', dk, ARGV[a + 19 + c], 'p') end
      -- Child keys are distinct (the caller checks), so the count is the hash's size.
      m = redis.call('HLEN', dk)
    end
    local placed = createJob({ id = id, name = ARGV[a + 1], data = ARGV[a + 2], opts = ARGV[a + 3],
      prio = tonumber(ARGV[a + 4]), lane = ARGV[a + 5], delay = tonumber(ARGV[a + 6]),
      lifo = ARGV[a + 7], kc = ARGV[a + 8], ka = ARGV[a + 9], kfc = ARGV[a + 10], kfa = ARGV[a + 11],
      extra = extra, held = m, ts = ARGV[a + 17] ~= '' and ARGV[a + 17] or nil }, now)
    if placed == 'w' then ready = true end
    if ARGV[a + 18] == '1' then addDependency(ARGV[a + 12], K.jobBase .. id) end
  end
end
if ready then wake() end
onceRecord({ r = existing })
return existing
