-- addFlow: adds the part of a flow (a tree of jobs) that lives in this queue, in one call: a
-- flow whose jobs all share one queue is added atomically. A job with children enters
-- waiting-children with one pending entry per child in its deps hash; a leaf is added like
-- add.lua adds a job (ready, or delayed). The caller sends parents before (or with) their
-- children: a parent in another queue has been added by an earlier call.
-- KEYS: meta, ring, inring, lanes, lpaused, llimit, lactive, rlwait, delayed, events, wake, wchildren, depsBase, laneBase, jobBase, lcfg
-- ARGV: [1] node count n, then per node 18 fields and its children's job keys:
--   id (never '': the caller names every node), name, data (JSON), opts (JSON),
--   priority (integer 0..2097151), lane, delay (ms), lifo ('1'/'0'), keepCompletedCount,
--   keepCompletedAgeMs, keepFailedCount, keepFailedAgeMs,
--   parent id, parent job key, parent queue name, parent key prefix (all '' for a root),
--   policy ('f' failParentOnFailure, 'i' ignoreDependencyOnFailure, '' neither),
--   child count m, then m child job keys
-- Returns: {1}; or {-5, id} when a job with that id already exists (nothing is written).
-- Errors: -5 as above.
-- Events: added per job, then waiting | delayed | waiting-children.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua

local n = tonumber(ARGV[1])
local nodes = {}
local b = 2
for i = 1, n do
  local m = tonumber(ARGV[b + 17])
  nodes[i] = { base = b, kids = m }
  if redis.call('EXISTS', K.jobBase .. ARGV[b]) == 1 then return {-5, ARGV[b]} end
  b = b + 18 + m
end

local now = nowMs()
local ready = false
for i = 1, n do
  local a = nodes[i].base
  local id = ARGV[a]
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
    for c = 1, m do redis.call('HSET', dk, ARGV[a + 17 + c], 'p') end
    -- Child keys are distinct (the caller checks), so the count is the hash's size.
    m = redis.call('HLEN', dk)
  end
  local placed = createJob({ id = id, name = ARGV[a + 1], data = ARGV[a + 2], opts = ARGV[a + 3],
    prio = tonumber(ARGV[a + 4]), lane = ARGV[a + 5], delay = tonumber(ARGV[a + 6]),
    lifo = ARGV[a + 7], kc = ARGV[a + 8], ka = ARGV[a + 9], kfc = ARGV[a + 10], kfa = ARGV[a + 11],
    extra = extra, held = m }, now)
  if placed == 'w' then ready = true end
end
if ready then wake() end
return {1}
