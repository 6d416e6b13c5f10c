-- Flows: parents that wait for their children (docs/schedulers-and-flows.md). Needs
-- lib/common.lua, lib/lanes.lua, lib/retention.lua, lib/newjob.lua and K.depsBase,
-- K.wchildren, K.outbox, K.delayed; K.failed where a child can fail its parent (fail.lua,
-- recover.lua, resolveChild.lua: the 'f' path is never taken from complete.lua or remove.lua).
--
-- A child's job hash names its parent: pid (id), pk (the parent's job key), pq and ppx (the
-- parent's queue name and key prefix, read by the TypeScript side), pol (failure policy:
-- 'f' failParentOnFailure, 'i' ignoreDependencyOnFailure, 'c' continueParentOnFailure,
-- 'd' removeDependencyOnFailure, absent: none).
-- A parent's deps:<id> hash maps each child's job key to a status letter and a value:
--   'p' pending; 'c'..returnvalue completed; 'i'..reason failed and ignored;
--   'f'..reason failed and failed the parent; 'r' removed before it finished. A child with
--   continueParentOnFailure that failed is listed as ignored ('i'), as BullMQ lists it. A child with removeDependencyOnFailure that failed leaves
--   the hash (BullMQ drops it from the dependencies).
-- The parent's `pend` field counts its 'p' entries; at 0 the parent leaves 'h'
-- (waiting-children) for delayed or ready.

-- A same-queue cascade (a child failing its parent failing its parent ...) deeper than this
-- goes through the outbox instead, so one call stays bounded.
local FLOW_MAX_CASCADE = 32
-- Set when a call wrote this queue's outbox (resolveChild reports it so the caller drains it).
local flowOutboxWritten = false

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_flow()
  flowOutboxWritten = false
end

local resolveDep

-- Called when job id finishes for good, before retention may delete its hash:
-- outcome 'c' completed (value = return value JSON), 'f' failed (value = reason), 'r' removed.
-- Tells the job's parent, if any: at once when the parent is in this queue, otherwise through
-- this queue's outbox (a worker moves the entry to the parent's queue with resolveChild.lua).
-- deleting: the failed job is deleted in the same call (its retention keeps none).
local function flowSettled(jk, id, outcome, value, now, depth, deleting)
  local p = redis.call('HMGET', jk, 'pid', 'pk', 'pq', 'ppx', 'pol')
  if not p[1] then return end
  local kind = outcome
  if outcome == 'f' then
    local pol = p[5]
    if pol == 'i' then
      kind = 'i'
    elseif pol == 'c' then
      kind = 'x'
    elseif pol == 'd' then
      kind = 'd'
    elseif pol ~= 'f' then
      -- no policy: the parent keeps waiting (a retried child can still complete), unless the
      -- child is deleted now: then it is a removed child.
      if not deleting then return end
      kind = 'r'
      value = ''
    end
  end
  depth = depth or 0
  if p[2] == K.jobBase .. p[1] and depth < FLOW_MAX_CASCADE then
    resolveDep(p[1], jk, kind, value, now, depth)
    return
  end
  redis.call('ZADD', K.outbox, now, cjson.encode({ pid = p[1], pk = p[2], pq = p[3], ppx = p[4],
    c = jk, k = kind, v = value }))
  flowOutboxWritten = true
end

-- Moves a parent out of waiting-children: to delayed (its own delay) or ready.
local function releaseParent(pid, pjk, now)
  redis.call('ZREM', K.wchildren, pid)
  local f = redis.call('HMGET', pjk, 'lane', 'prio', 'delay', 'lifo')
  placeJob(pjk, pid, laneOr(f[1]), prioOr(f[2]), tonumber(f[3] or '0'), f[4] == '1', now, 'waiting-children')
  wake()
end

-- keepLastIfActive (lib/dedup.lua): holder holderId finished for good (completed, failed or
-- removed), so its follower fid leaves waiting-children. Checked against the follower's dka: a
-- follower removed or released meanwhile is left alone.
local function releaseFollower(fid, holderId, now)
  local fk = K.jobBase .. fid
  local f = redis.call('HMGET', fk, 'st', 'dka')
  redis.call('HDEL', K.jobBase .. holderId, 'dkn')
  if f[1] ~= 'h' or f[2] ~= holderId then return end
  -- pend 0 lets it complete (complete.lua refuses a job with pending children).
  redis.call('HDEL', fk, 'pend', 'dka')
  releaseParent(fid, fk, now)
end

-- Records child ref's outcome in parent pid of this queue. kind: 'c' completed, 'i' failed
-- and ignored, 'f' failed and fails the parent, 'r' removed, 'x' failed and starts the parent
-- at once (continueParentOnFailure), 'd' failed and leaves the parent's dependencies
-- (removeDependencyOnFailure). Idempotent: only a pending child counts, so a repeated outcome
-- changes nothing. Returns 1 counted, 0 not a pending child of that parent (already counted,
-- or unknown), -1 no such parent.
resolveDep = function(pid, ref, kind, value, now, depth)
  local pjk = K.jobBase .. pid
  local dk = K.depsBase .. pid
  local st = redis.call('HGET', pjk, 'st')
  if not st then return -1 end
  if redis.call('HGET', dk, ref) ~= 'p' then return 0 end
  if kind == 'd' then
    redis.call('HDEL', dk, ref)
  else
    -- continueParentOnFailure lists the child with the ignored ones, as BullMQ does.
    redis.call('HSET', dk, ref, (kind == 'x' and 'i' or kind) .. value)
  end
  local pend = redis.call('HINCRBY', pjk, 'pend', -1)
  if kind == 'f' then
    -- failParentOnFailure, as BullMQ 6: the parent's failure is deferred (field dfail = the
    -- child's key) and a worker fails it when it takes it, with BullMQ's reason "child <key>
    -- failed" (Job.deferredFailure), without running the processor. A parent waiting for its
    -- children is released to its lane (or its delay), a delayed one made ready now; an active
    -- one goes on, and its next moveToWaitingChildren is refused (BullMQ's failed-child error).
    -- A parent that already finished only records the outcome.
    if st == 'f' or st == 'c' then return 1 end
    redis.call('HSET', pjk, 'dfail', ref)
    if st == 'h' then
      releaseParent(pid, pjk, now)
    elseif st == 'd' then
      redis.call('ZREM', K.delayed, pid)
      redis.call('HSET', pjk, 'delay', 0)
      local f = redis.call('HMGET', pjk, 'lane', 'prio', 'lifo')
      placeJob(pjk, pid, laneOr(f[1]), prioOr(f[2]), 0, f[3] == '1', now, 'delayed')
      wake()
    end
    return 1
  end
  -- A parent that started (a step job: active, delayed or ready) only records the outcome.
  if st ~= 'h' then return 1 end
  if kind == 'x' or pend <= 0 then releaseParent(pid, pjk, now) end
  return 1
end
