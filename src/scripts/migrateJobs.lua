-- migrateJobs: moves a batch of one BullMQ 6 queue's jobs of one state into echomq in one
-- atomic call (docs/protocol.md "Moving a BullMQ queue"): each job's hash is read, written as
-- echomq's job (fields and BullMQ's short option names translated), put where its state says,
-- and BullMQ's keys of the job are deleted, so a job moves exactly once and a rerun after a
-- kill finds only what was not moved. Jobs are taken in the order BullMQ serves them (lists
-- from the right; sorted sets by score), so ready jobs keep their order in echomq.
-- A job that cannot move is left in BullMQ's structure and named with its code; the caller
-- passes how many such jobs sit at the serving end of the structure (ARGV[3]), which the call
-- skips. With ARGV[4] = '1' nothing is written: the call reports what it would do, and
-- ARGV[3] is the number of jobs already examined.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, lcfg, delayed, completed, failed, wchildren, events, wake, laneBase, jobBase, logsBase, depsBase, bullBase
-- ARGV: [1] BullMQ state: wait | paused | prioritized | delayed | active | waiting-children |
--   completed | failed, [2] most jobs examined by this call (1..1000), [3] jobs to skip at
--   the serving end (refused before; in a dry run: examined before), [4] '1' dry run, '0' move,
--   [5] echomq key prefix, [6] BullMQ key prefix, [7] JSON array of the BullMQ queue names
--   this run moves (a flow parent or pending child in another queue is refused)
-- Returns: {examined, moved, left, id1, code1, id2, code2, …}: left = entries still in the
--   structure; a pair per job refused by this call, code -20 the id is taken in echomq, -21 a
--   BullMQ lock is live (active), -22 its parent or a pending child is in a queue or prefix
--   not moved (or its parent was refused and still waits for children in BullMQ, or a pending
--   child cannot move: its id taken in echomq, a Pro group job), -23 BullMQ Pro data (a group id), -24 more children than one call moves (its finished ones can go ahead with migrateDeps);
--   code 1 is no refusal: a completed or failed child moved whose parent, moved before it
--   finished, still counts it pending in echomq (BullMQ found the parent's records gone and
--   told it nothing): the caller delivers its outcome with resolveChild;
--   entries without a job hash (and wait's `0:` markers of BullMQ < 5) are dropped and not
--   counted as moved.
-- Errors: -20, -21, -22, -23, -24 (per job, as above).
-- Events: none (a moved job keeps the history BullMQ's stream had; echomq's stream starts
--   with what happens to it next).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/bullmq.lua

local source, limit, skip, dry = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4] == '1'
setMove(ARGV[5], ARGV[6], ARGV[7])
local key = K.bullBase .. source
local isList = source == 'wait' or source == 'paused' or source == 'active'
local now = nowMs()

-- The window: ids in serving order (lists from the right) and, for sorted sets, their scores.
local ids, scores = {}, {}
local total
if isList then
  total = redis.call('LLEN', key)
  local raw = redis.call('LRANGE', key, -(skip + limit), -(skip + 1))
  for i = #raw, 1, -1 do ids[#ids + 1] = raw[i] end
else
  total = redis.call('ZCARD', key)
  local raw = redis.call('ZRANGE', key, skip, skip + limit - 1, 'WITHSCORES')
  for i = 1, #raw, 2 do ids[#ids + 1], scores[#scores + 1] = raw[i], raw[i + 1] end
end

local ID_TAKEN, LOCKED, OUTSIDE, PRO, BIG, DELIVER = -20, -21, -22, -23, -24, 1
local reply = { #ids, 0, 0 }
local kept = {} -- refused ids of a list window, in serving order
local gone = {} -- ids leaving a sorted set
local moved, readyAny = 0, false
if not dry then
  beginLaneBatch()
  -- Ready jobs take FIFO stamps in serving order: one HINCRBY for the call, not one per job.
  if source == 'wait' or source == 'paused' or source == 'prioritized' then reserveStamps(false, #ids) end
end

-- Moves one job; returns nil when it moved (or was a dangling entry), else its code.
local function moveOne(id, score)
  if isList and source ~= 'active' and string.sub(id, 1, 2) == '0:' then return nil end
  local f = readBullJob(id)
  if not f then return nil end
  if f.gid then return PRO end
  if redis.call('EXISTS', K.jobBase .. id) == 1 then return ID_TAKEN end
  local stalled = false
  if source == 'active' then
    if redis.call('EXISTS', K.bullBase .. id .. ':lock') == 1 then return LOCKED end
    stalled = true
  end
  local t = translateOpts(f.opts)
  local prio = tonumber(f.priority or '0') or 0
  if prio > PRIO_MAX then prio = PRIO_MAX end
  local h = { 'ts', intOf(f.timestamp) or msString(now) }
  local n = templateFields(h, 2, f.name, f.data, t, prio)
  local pq, pid
  n, pq, pid = parentFields(f, h, n, t.pol)
  if not n then return OUTSIDE end
  local unfinished = source ~= 'completed' and source ~= 'failed'
  -- (A dry run moved no parent yet: it counts the child as its parent's move would go.)
  if pq and unfinished and (not mv.moved[pq] or (not dry and parentLeftBehind(pq, pid))) then return OUTSIDE end
  local extras = bullExtras(id)
  local deps, pend = bullDeps(id, extras)
  if not deps then return pend == 'big' and BIG or OUTSIDE end
  if dry then
    moved = moved + 1
    return nil
  end
  local function put(field, v)
    if v and v ~= '' then h[n + 1], h[n + 2], n = field, v, n + 2 end
  end
  local delay = intOf(f.delay)
  if delay ~= '0' then put('delay', delay) end
  put('made', intOf(f.atm or f.attemptsMade))
  put('att', intOf(f.ats))
  local stc = tonumber(f.stc or '0') or 0
  if stalled then stc = stc + 1 end
  if stc > 0 then put('stc', string.format('%d', stc)) end
  put('pOn', intOf(f.processedOn))
  put('fOn', intOf(f.finishedOn))
  put('rv', f.returnvalue)
  put('err', f.failedReason)
  put('stack', f.stacktrace)
  put('prog', f.progress)
  put('pb', f.pb)
  put('sid', f.rjk)
  if f.defa then
    local child = string.match(f.defa, '^child (.+) failed$')
    put('dfail', child and childKeyOf(child) or f.defa)
  end
  if pend > 0 then put('pend', string.format('%d', pend)) end
  local jk = K.jobBase .. id
  if source == 'delayed' then
    -- BullMQ's score is due * 4096 + a sequence, due on the producer's clock; echomq's is due +
    -- a fraction that keeps the sequence's order (lib/wake.lua), read as the Redis clock.
    local s = tonumber(score)
    local due = math.floor(s / 4096)
    put('st', 'd')
    redis.call('HSET', jk, unpack(h))
    redis.call('ZADD', K.delayed, string.format('%.12f', due + (s - due * 4096) / 4096), id)
    redis.call('HSET', K.meta, 'dly', '1')
  elseif source == 'completed' or source == 'failed' then
    put('st', source == 'completed' and 'c' or 'f')
    redis.call('HSET', jk, unpack(h))
    redis.call('ZADD', source == 'completed' and K.completed or K.failed, score, id)
  elseif source == 'waiting-children' then
    put('st', 'h')
    redis.call('HSET', jk, unpack(h))
    redis.call('ZADD', K.wchildren, score, id)
  else
    -- Ready, in serving order: each job's stamp follows the last; a job whose BullMQ lock
    -- expired goes to the front of its tier, as echomq's stall recovery puts it.
    local stamp = nextStamp(stalled)
    put('st', 'w')
    put('sq', stamp)
    redis.call('HSET', jk, unpack(h))
    enterLane(t.lane or DEFAULT_LANE, prio, stamp .. id)
    readyAny = true
  end
  if #deps > 0 then redis.call('HSET', K.depsBase .. id, unpack(deps)) end
  if source == 'active' then redis.call('SREM', K.bullBase .. 'stalled', id) end
  dropBullJob(id, extras, source == 'active')
  moved = moved + 1
  if pq and not unfinished and redis.call('HGET', emqDepsKeyOf(pq, pid), jk) == 'p' then return DELIVER end
  return nil
end

for i, id in ipairs(ids) do
  local code = moveOne(id, scores[i])
  if code == DELIVER then
    reply[#reply + 1], reply[#reply + 2] = id, code
    gone[#gone + 1] = id
  elseif code then
    reply[#reply + 1], reply[#reply + 2] = id, code
    kept[#kept + 1] = id
  elseif not isList and not dry then
    gone[#gone + 1] = id
  end
end

if not dry then
  flushLaneBatch()
  if readyAny then wake() end
  if isList then
    -- The window and the refused jobs before it leave the list's right end; every refused job
    -- goes back there in its order (BullMQ's order is unchanged for them).
    local back = {}
    if skip > 0 then back = redis.call('LRANGE', key, -skip, -1) end
    if #ids + skip > 0 then redis.call('LTRIM', key, 0, -(#ids + skip) - 1) end
    for i = #kept, 1, -1 do back[#back + 1] = kept[i] end
    if #back > 0 then
      -- LRANGE gave the old refused jobs left to right; the new ones go to their left.
      local ordered = {}
      for i = skip + 1, #back do ordered[#ordered + 1] = back[i] end
      for i = 1, skip do ordered[#ordered + 1] = back[i] end
      redis.call('RPUSH', key, unpack(ordered))
    end
  elseif #gone > 0 then
    redis.call('ZREM', key, unpack(gone))
  end
  if moved > 0 then stampLayout() end
  total = isList and redis.call('LLEN', key) or redis.call('ZCARD', key)
end
reply[2], reply[3] = moved, total
return reply
