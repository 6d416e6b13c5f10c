-- retryJobs: one batch of Queue.retryJobs: moves failed (or completed) jobs that finished at or
-- before a time back to ready, oldest first, each at the back of its tier (front when lifo).
-- As BullMQ: finishedOn, processedOn and failedReason (returnvalue for completed jobs) are
-- cleared; attemptsMade, attemptsStarted and the stacktrace are kept.
-- KEYS: meta, ring, inring, lanes, lpaused, llimit, lactive, rlwait, completed, failed, events, wake, laneBase, jobBase
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
local moved = 0
reserveStamps(false, #ids) -- one HINCRBY for the batch's FIFO stamps
beginLaneBatch()
for _, id in ipairs(ids) do
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'st', 'lane', 'prio', 'lifo')
  if f[1] == want then
    redis.call('HDEL', jk, 'fOn', 'pOn', cleared)
    local stamp = nextStamp(f[4] == '1')
    redis.call('HSET', jk, 'st', 'w', 'sq', stamp)
    enterLane(laneOr(f[2]), prioOr(f[3]), stamp .. id)
    emitJob('waiting', shared, id)
    moved = moved + 1
  end
end
flushLaneBatch()
if moved > 0 then wake() end
return {moved, #ids == count and 1 or 0}
