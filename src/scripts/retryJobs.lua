-- retryJobs: one batch of Queue.retryJobs: moves failed (or completed) jobs that finished at or
-- before a time back to ready, oldest first, each at the back of its tier (front when lifo).
-- As BullMQ: finishedOn, processedOn and failedReason (returnvalue for completed jobs) are
-- cleared; attemptsMade, attemptsStarted and the stacktrace are kept. A retried flow child whose
-- parent is in this queue is pending for that parent again (the parent keeps its state).
-- KEYS: meta, ring, inring, lone, lanes, lpaused, llimit, lactive, rlwait, completed, failed, events, wake, lcfg, laneBase, jobBase, depsBase
-- ARGV: [1] 'failed' or 'completed', [2] most jobs this call (the caller caps it),
--   [3] time (ms): only jobs finished at or before it
-- Returns: {moved, more}: more = 1 when the batch was full (call again).
-- Errors: none (a set member without its hash is dropped from the set).
-- Events: waiting (jobId, prev = the state) per job.
--!include lib/common.lua
--!include lib/lanes.lua

local state = ARGV[1]
local count = tonumber(ARGV[2])
local setKey = (state == 'completed') and K.completed or K.failed
local want = (state == 'completed') and 'c' or 'f'
local cleared = (state == 'completed') and 'rv' or 'err'
local ids = redis.call('ZRANGEBYSCORE', setKey, '-inf', ARGV[3], 'LIMIT', 0, count)
if #ids == 0 then return {0, 0} end
redis.call('ZREM', setKey, unpack(ids))
local shared = { 'prev', state }

-- A finished child counts for its parent again (BullMQ: back among its dependencies). Only a
-- recorded outcome of this kind goes back to pending: c.. for completed, i.. or f.. for failed.
-- A parent in another queue is not reached from here (its outcome stays recorded).
local function backToPending(jk, pid, pk)
  if not pid or pk ~= K.jobBase .. pid then return end
  local dk = K.depsBase .. pid
  local v = redis.call('HGET', dk, jk)
  if not v then return end
  local kind = string.sub(v, 1, 1)
  if (want == 'c' and kind == 'c') or (want == 'f' and (kind == 'i' or kind == 'f')) then
    redis.call('HSET', dk, jk, 'p')
    redis.call('HINCRBY', pk, 'pend', 1)
  end
end
local moved = 0
reserveStamps(false, #ids) -- one HINCRBY for the batch's FIFO stamps
beginLaneBatch()
for _, id in ipairs(ids) do
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'lifo', 'pid', 'pk')
  if f[1] == want then
    redis.call('HDEL', jk, 'fOn', 'pOn', cleared)
    backToPending(jk, f[5], f[6])
    readyAgain(jk, id, f[2], f[3], f[4])
    emitJob('waiting', shared, id)
    moved = moved + 1
  end
end
flushLaneBatch()
if moved > 0 then wake() end
return {moved, #ids == count and 1 or 0}
