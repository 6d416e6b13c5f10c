-- addFlow: adds the part of a flow (a tree of jobs) that lives in this queue, in one call: a
-- flow whose jobs all share one queue is added atomically. A job with children enters
-- waiting-children with one pending entry per child in its deps hash; a leaf is added like
-- add.lua adds a job (ready, or delayed). The caller sends parents before (or with) their
-- children: a parent in another queue has been added by an earlier call.
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, delayed, failed, events, wake, wchildren, outbox, depsBase, laneBase, jobBase, lcfg, reqBase
-- ARGV: [1] node count n, then n nodes, node i at b (b = 2 for the first node, then the
--   previous node's b + 20 + its child count):
--   [b] id (never '': the caller names every node),
--   [b + 1] name,
--   [b + 2] data (JSON),
--   [b + 3] opts (JSON object; '' = none),
--   [b + 4] priority (integer 0..2097151),
--   [b + 5] lane (raw name, 'default' for the default lane),
--   [b + 6] delay (ms),
--   [b + 7] lifo ('1'/'0'),
--   [b + 8] keepCompletedCount ('' = keep all),
--   [b + 9] keepCompletedAgeMs,
--   [b + 10] keepFailedCount,
--   [b + 11] keepFailedAgeMs,
--   [b + 12] parent id ('' for a root),
--   [b + 13] parent job key ('' for a root),
--   [b + 14] parent queue name ('' for a root),
--   [b + 15] parent key prefix ('' for a root),
--   [b + 16] policy ('f' failParentOnFailure, 'i' ignoreDependencyOnFailure, 'c'
--   continueParentOnFailure, 'd' removeDependencyOnFailure, '' none),
--   [b + 17] timestamp (ms; '' = now),
--   [b + 18] register ('1': the parent is an existing job of this queue outside the flow,
--   BullMQ's `parent` on a root: it must exist and counts this job as a dependency),
--   [b + 19] child count m,
--   [b + 20 ..] m child job keys;
--   after the nodes, at e, optionally:
--   [e] request id (lib/once.lua; '' or absent = none): a rerun replies the first run's
--   {1, existing ids...} and writes nothing.
--   (A flow with deduplication is one job, added by add.lua: BullMQ refuses deduplication on a
--   job with children.)
-- A job whose id already exists is kept as it is (BullMQ's duplicated job). When the flow gives
-- it a parent it becomes that parent's child, unless it has another parent that still exists:
-- completed, it counts at once as a completed child (lib/flow.lua flowSettled); otherwise the
-- parent waits for it, as for a new child. The flow's children of an existing job are added
-- as its dependencies (they must be in this queue).
-- Returns: {1, existing ids...}; or {-12, id} when an existing job has children in the flow in
--   another queue, or is a root attached to an outside parent, {-5, id} when the existing
--   parent job id names is missing, {-7, id} when an existing job has another parent that
--   still exists (nothing is written).
--   A call refused by its guards (lib/guard.lua) replies {code, position}, position being the
--   refused argument's ARGV index, and writes nothing.
-- Errors: -5, -7, -12 as above; EMQ_EXPIRED (error reply, lib/once.lua). Guards, as add.lua's:
--   -14 an id '' or one add refuses; -15 a lane add refuses; -16 any other argument not in its
--   form above.
-- Events: added per job, then waiting | delayed | waiting-children.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua
--!include lib/once.lua
--!include lib/guard.lua

if not isUint(ARGV[1]) then return { BAD_ARGUMENT, 1 } end
local n = tonumber(ARGV[1])
-- Guards (lib/guard.lua), before the first write: every node's arguments. Where the nodes end:
-- the optional request id follows them.
local tail = 2
do
  local given -- the highest id the counter gave out (read once, when an integer id appears)
  local function lastId()
    if not given then given = tonumber(redis.call('HGET', K.meta, 'id') or '0') end
    return given
  end
  for _ = 1, n do
    local b = tail
    if #ARGV < b + 19 then return { BAD_ARGUMENT, 1 } end
    if ARGV[b] == '' or badId(ARGV[b], lastId) then return { BAD_ID, b } end
    if not isObject(ARGV[b + 3]) then return { BAD_ARGUMENT, b + 3 } end
    if not isPriority(ARGV[b + 4]) then return { BAD_ARGUMENT, b + 4 } end
    if badLane(ARGV[b + 5]) then return { BAD_LANE, b + 5 } end
    if not isUint(ARGV[b + 6]) then return { BAD_ARGUMENT, b + 6 } end
    if not isFlag(ARGV[b + 7]) then return { BAD_ARGUMENT, b + 7 } end
    if not optInt(ARGV[b + 8]) then return { BAD_ARGUMENT, b + 8 } end
    if not optUint(ARGV[b + 9]) then return { BAD_ARGUMENT, b + 9 } end
    if not optInt(ARGV[b + 10]) then return { BAD_ARGUMENT, b + 10 } end
    if not optUint(ARGV[b + 11]) then return { BAD_ARGUMENT, b + 11 } end
    -- A child names its parent by id and job key together, or a root neither.
    if (ARGV[b + 12] == '') ~= (ARGV[b + 13] == '') then return { BAD_ARGUMENT, b + 13 } end
    if not isPolicy(ARGV[b + 16]) then return { BAD_ARGUMENT, b + 16 } end
    if not optUint(ARGV[b + 17]) then return { BAD_ARGUMENT, b + 17 } end
    if not isFlag(ARGV[b + 18]) or (ARGV[b + 18] == '1' and ARGV[b + 12] == '') then return { BAD_ARGUMENT, b + 18 } end
    if not isUint(ARGV[b + 19]) then return { BAD_ARGUMENT, b + 19 } end
    tail = b + 20 + tonumber(ARGV[b + 19])
    if #ARGV < tail - 1 then return { BAD_ARGUMENT, b + 19 } end
    for c = b + 20, tail - 1 do
      if ARGV[c] == '' then return { BAD_ARGUMENT, c } end
    end
  end
  if #ARGV > tail then return { BAD_ARGUMENT, 1 } end
end
local rec, refused = onceBegin(#ARGV >= tail and ARGV[tail] or nil)
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local nodes = {}
local b = 2
for i = 1, n do
  local m = tonumber(ARGV[b + 19])
  nodes[i] = { base = b, kids = m }
  local ejk = K.jobBase .. ARGV[b]
  if redis.call('EXISTS', ejk) == 1 then
    if ARGV[b + 18] == '1' then return {-12, ARGV[b]} end
    for c = 1, m do
      if string.sub(ARGV[b + 19 + c], 1, #K.jobBase) ~= K.jobBase then return {-12, ARGV[b]} end
    end
    if ARGV[b + 12] ~= '' then
      local old = redis.call('HGET', ejk, 'pk')
      if old and old ~= ARGV[b + 13] and redis.call('EXISTS', old) == 1 then return {-7, ARGV[b]} end
    end
    nodes[i].existing = true
  end
  if ARGV[b + 18] == '1' and redis.call('EXISTS', K.jobBase .. ARGV[b + 12]) == 0 then return {-5, ARGV[b]} end
  b = b + 20 + m
end

local now = nowMs()
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
stampLayout()
if ready then wake() end
onceRecord({ r = existing })
return existing
