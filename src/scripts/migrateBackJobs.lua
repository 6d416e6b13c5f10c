-- migrateBackJobs: moves a batch of one echomq queue's jobs of one state into BullMQ 6's layout
-- in one atomic call (docs/protocol.md "Moving back to BullMQ"): each job's hash is written as
-- BullMQ's job (fields and option names translated, the lane kept as the option `lane`), put
-- where its state says, and echomq's keys of the job are deleted, so a job moves exactly once
-- and a rerun after a kill finds only what was not moved. The caller names the jobs in the
-- order they are to take in BullMQ (ready jobs: priority, then arrival across lanes); a named
-- job no longer in the given state is passed over. Ready jobs of priority 0 go to the head end
-- of BullMQ's `wait` list in the order named; prioritized ones take BullMQ's score priority *
-- 2^32 + its `pc` counter, counted up in the order named. Active jobs are never taken.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, lcfg, delayed, completed, failed, wchildren, events, wake, laneBase, jobBase, logsBase, depsBase, bullBase
-- ARGV: [1] state: ready | delayed | failed | completed | waiting-children, [2] '1' dry run,
--   '0' move, [3] echomq key prefix, [4] BullMQ key prefix, [5] JSON array of the queue names
--   this run moves (a flow parent or pending child in another queue is refused), [6..] job ids
-- Returns: {examined, moved, id1, code1, id2, code2, …}: a pair per job refused by this call,
--   code -20 the id is taken in BullMQ, -22 its parent or a pending child is in a queue or
--   prefix not moved (or its parent was refused and still waits for children in echomq), -24
--   more children than one call moves, -25 a keepLastIfActive job (not carried), -26 its lane
--   is paused (BullMQ has no lanes to hold it back).
-- Errors: -20, -22, -24, -25, -26 (per job, as above).
-- Events: none (BullMQ's stream starts with what happens to the job next).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/bullmq.lua
--!include lib/bullmq-back.lua

local source, dry = ARGV[1], ARGV[2] == '1'
setMove(ARGV[3], ARGV[4], ARGV[5])
local ST = { ready = 'w', delayed = 'd', failed = 'f', completed = 'c', ['waiting-children'] = 'h' }
local want = ST[source]
local now = nowMs()
local ID_TAKEN, OUTSIDE, BIG, NOT_CARRIED, LANE_PAUSED = -20, -22, -24, -25, -26
local reply = { #ARGV - 5, 0 }
local moved, readyAny = 0, false
local bullMeta = redis.call('HMGET', K.bullBase .. 'meta', 'paused')

-- Moves one job; returns nil when it moved (or is no longer in the state), else its code.
local function moveOne(id)
  local f = readEchoJob(id)
  if not f or f.st ~= want then return nil end
  if f.dka or f.dkn then return NOT_CARRIED end
  if want == 'w' and redis.call('SISMEMBER', K.lpaused, laneOr(f.lane)) == 1 then return LANE_PAUSED end
  if redis.call('EXISTS', K.bullBase .. id) == 1 then return ID_TAKEN end
  if f.sid then
    f.repeatOpts = repeatOptsOf(f.sid)
    f.prevMillis = tonumber(string.match(id, ':(%d+)$') or '')
  end
  local h = bullJobFields(f)
  if not h then return OUTSIDE end
  local unfinished = want ~= 'c' and want ~= 'f'
  if f.pid and unfinished then
    if not mv.moved[f.pq] then return OUTSIDE end
    -- Parents move first: one not in BullMQ by now was refused and waits in echomq. (Under the
    -- BullMQ prefix, which on a Cluster carries the hash tag of every queue the run moves.)
    if not dry and redis.call('EXISTS', mv.bull .. ':' .. f.pq .. ':' .. f.pid) == 0 then return OUTSIDE end
  end
  local writeDeps, w = backDeps(id, now)
  if not writeDeps then return w == 'big' and BIG or OUTSIDE end
  if dry then
    moved = moved + 1
    return nil
  end
  local jk, bk = K.jobBase .. id, K.bullBase .. id
  redis.call('HSET', bk, unpack(h))
  writeDeps()
  if want == 'w' then
    local lane, prio = laneOr(f.lane), prioOr(f.prio)
    pullReady(lane, (f.sq or '') .. id, prio)
    forgetLaneIfIdle(lane)
    if prio > 0 then
      local pc = redis.call('INCR', K.bullBase .. 'pc')
      redis.call('ZADD', K.bullBase .. 'prioritized', string.format('%d', prio * 4294967296 + pc % 4294967296), id)
    else
      redis.call('LPUSH', K.bullBase .. 'wait', id)
    end
    readyAny = true
  elseif want == 'd' then
    -- echomq's score is due + a fraction ordering one millisecond (lib/wake.lua); BullMQ's is
    -- due * 4096 + a sequence in the low 12 bits.
    local s = tonumber(redis.call('ZSCORE', K.delayed, id) or now)
    local due = math.floor(s)
    local k = math.floor((s - due) * 4096 + 0.5)
    if k > 4095 then k = 4095 end
    redis.call('ZADD', K.bullBase .. 'delayed', string.format('%d', due * 4096 + k), id)
    redis.call('ZREM', K.delayed, id)
  elseif want == 'h' then
    local s = redis.call('ZSCORE', K.wchildren, id) or f.ts or msString(now)
    redis.call('ZADD', K.bullBase .. 'waiting-children', s, id)
    redis.call('ZREM', K.wchildren, id)
  else
    local set = want == 'c' and K.completed or K.failed
    local s = redis.call('ZSCORE', set, id) or f.fOn or msString(now)
    redis.call('ZADD', K.bullBase .. (want == 'c' and 'completed' or 'failed'), s, id)
    redis.call('ZREM', set, id)
  end
  if redis.call('EXISTS', K.logsBase .. id) == 1 then redis.call('RENAME', K.logsBase .. id, bk .. ':logs') end
  redis.call('DEL', jk, K.depsBase .. id)
  moved = moved + 1
  return nil
end

for i = 6, #ARGV do
  local code = moveOne(ARGV[i])
  if code then reply[#reply + 1], reply[#reply + 2] = ARGV[i], code end
end

if not dry and moved > 0 and not bullMeta[1] then
  -- Wake BullMQ's workers as its own adds do: the base marker for ready jobs, the delay marker
  -- at the earliest due time.
  if readyAny then redis.call('ZADD', K.bullBase .. 'marker', 0, '0') end
  if want == 'd' then
    local first = redis.call('ZRANGE', K.bullBase .. 'delayed', 0, 0, 'WITHSCORES')
    if first[2] then redis.call('ZADD', K.bullBase .. 'marker', string.format('%d', math.floor(tonumber(first[2]) / 4096)), '1') end
  end
end
reply[2] = moved
return reply
