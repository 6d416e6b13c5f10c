-- Creating jobs outside add.lua: the flow and job-scheduler scripts build a job hash with the
-- same fields as add.lua (name, data, opts, ts, prio, lane, delay, att, made, kc, ka, kfc,
-- kfa, st, sq). add.lua uses createJob too. Needs lib/common.lua, lib/lanes.lua and
-- K.delayed, K.wchildren.

-- Puts an existing job hash where its state says: delayed (due at now + delay) or ready at the
-- back (front when lifo) of its tier. Returns 'd' or 'w'. A ready job does not wake anyone:
-- the caller wakes one worker once, after its loop. prev (optional): the state it leaves,
-- named in the waiting event (BullMQ's `prev`).
local function placeJob(jk, id, lane, prio, delay, lifo, now, prev)
  if delay > 0 then
    redis.call('HSET', jk, 'st', 'd')
    scheduleDelayed(id, now + delay)
    emit('delayed', 'jobId', id, 'delay', now + delay)
    return 'd'
  end
  local stamp = nextStamp(lifo)
  redis.call('HSET', jk, 'sq', stamp)
  pushReady(jk, lane, prio, stamp .. id)
  if prev then emit('waiting', 'jobId', id, 'prev', prev) else emit('waiting', 'jobId', id) end
  return 'w'
end

-- The shared fields of an added event of a job ready at once (one entry for both events, see
-- createJob; grouped with its neighbours by emitJob in lib/common.lua).
local THEN_WAITING = { 'then', 'waiting', inherit = true }

-- The hash fields of a new job before its state (see createJob), as a list and its length.
-- Fields at their default are left out (opts '', prio 0, the default lane, att, made, delay 0;
-- retention '' = the defaults in lib/retention.lua): every reader treats an absent field as its
-- default, and a smaller hash is cheaper to write and to keep. (Built with an index rather than
-- a helper closure: this runs once per job of a bulk add.)
local function jobFields(j, now)
  local h = { 'name', j.name, 'data', j.data, 'ts', j.ts or msString(now) }
  local n = 6
  if j.opts and j.opts ~= '' then h[n + 1], h[n + 2], n = 'opts', j.opts, n + 2 end
  if j.prio and j.prio ~= 0 then h[n + 1], h[n + 2], n = 'prio', string.format('%d', j.prio), n + 2 end
  if j.lane ~= DEFAULT_LANE then h[n + 1], h[n + 2], n = 'lane', j.lane, n + 2 end
  if j.delay > 0 then h[n + 1], h[n + 2], n = 'delay', string.format('%d', j.delay), n + 2 end
  if j.kc ~= '' then h[n + 1], h[n + 2], n = 'kc', j.kc, n + 2 end
  if j.ka ~= '' and j.ka ~= '0' then h[n + 1], h[n + 2], n = 'ka', j.ka, n + 2 end
  if j.kfc ~= '' then h[n + 1], h[n + 2], n = 'kfc', j.kfc, n + 2 end
  if j.kfa ~= '' and j.kfa ~= '0' then h[n + 1], h[n + 2], n = 'kfa', j.kfa, n + 2 end
  if j.lifo == '1' then h[n + 1], h[n + 2], n = 'lifo', '1', n + 2 end
  if j.extra then
    for i = 1, #j.extra do h[n + i] = j.extra[i] end
    n = n + #j.extra
  end
  return h, n
end

-- Creates job j, which must not exist:
--   j = { id, name, data, opts, prio (number), lane, delay (number, ms), lifo ('1'/'0'),
--         kc, ka, kfc, kfa, extra (flat field/value list of more hash fields, or nil),
--         held (number of children it waits for; 0 = none), ts (creation time as an integer
--         string, or nil for now: BullMQ's `timestamp` option) }
-- A job with held > 0 enters state 'h' (waiting-children) and the wchildren set; its delay
-- applies when its children are done. Returns 'w' (ready), 'd' (delayed) or 'h'.
-- The whole hash, state and stamp included, is written with one HSET.
local function createJob(j, now)
  local jk = K.jobBase .. j.id
  local h, n = jobFields(j, now)
  local delayStr = j.delay > 0 and string.format('%d', j.delay) or '0'
  local state, stamp
  if j.held > 0 then
    state = 'h'
    h[n + 1], h[n + 2], h[n + 3], h[n + 4] = 'st', 'h', 'pend', j.held
  elseif j.delay > 0 then
    state = 'd'
    h[n + 1], h[n + 2] = 'st', 'd'
  else
    state = 'w'
    stamp = nextStamp(j.lifo == '1')
    h[n + 1], h[n + 2], h[n + 3], h[n + 4] = 'st', 'w', 'sq', stamp
  end
  redis.call('HSET', jk, unpack(h))
  if state == 'w' then
    -- A job ready at once gets one event for both: 'then' tells readers (QueueEvents) to emit
    -- waiting right after added (and implies delay 0); neighbouring jobs share the entry.
    enterLane(j.lane, j.prio, stamp .. j.id)
    emitJobNamed('added', THEN_WAITING, j.id, j.name, j.lane)
    return state
  end
  emit('added', 'jobId', j.id, 'name', j.name, 'lane', j.lane, 'delay', delayStr)
  if state == 'h' then
    redis.call('ZADD', K.wchildren, now, j.id)
    emit('waiting-children', 'jobId', j.id)
  elseif state == 'd' then
    scheduleDelayed(j.id, now + j.delay)
    emit('delayed', 'jobId', j.id, 'delay', now + j.delay)
  end
  return state
end

-- Takes a job that has not started (ready or delayed) out of the queue and deletes it.
-- Returns true when it did; false when the job is missing or in any other state.
local function withdrawJob(id)
  local jk = K.jobBase .. id
  local st, lane, prio, stamp = unpack(redis.call('HMGET', jk, 'st', 'lane', 'prio', 'sq'), 1, 4)
  lane, prio = laneOr(lane), prioOr(prio)
  if st == 'd' then
    redis.call('ZREM', K.delayed, id)
  elseif st == 'w' then
    pullReady(lane, stamp .. id, prio)
    forgetLaneIfIdle(lane)
  else
    return false
  end
  deleteJob(id)
  emit('removed', 'jobId', id, 'prev', (st == 'd') and 'delayed' or 'waiting')
  return true
end

-- Registers job key childKey as a pending dependency of parent pid (in this queue; needs
-- K.depsBase): a job added with BullMQ's `parent` option counts like a flow child. A key the
-- deps hash already holds (pending, or an outcome that arrived first) is left alone.
-- (HEXISTS + HSET rather than HSETNX: the documented least-privilege ACL, docs/reliability.md,
-- allows those.)
local function addDependency(pid, childKey)
  local dk = K.depsBase .. pid
  if redis.call('HEXISTS', dk, childKey) == 0 then
    redis.call('HSET', dk, childKey, 'p')
    redis.call('HINCRBY', K.jobBase .. pid, 'pend', 1)
  end
end
