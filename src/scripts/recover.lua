-- recover: the stall sweep. Moves jobs whose lease expired back to the front of their tier
-- (they keep their lane member, so they sort before everything that arrived after them) and
-- counts a stall; a job stalled more than maxStalledCount times fails with reason "stalled".
-- KEYS: meta, ring, inring, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, failed, events, wake, laneBase, jobBase, logsBase, delayed, depsBase, wchildren, outbox, lcfg
-- ARGV: [1] maxStalledCount, [2] batch size (most jobs handled per call)
-- Returns: {requeuedIds, failedIds} (two lists).
-- Errors: none.
-- Events: stalled (jobId) per requeued job; failed (jobId, failedReason "stalled") per failed;
--   a failed flow child tells its parent as fail.lua does (lib/flow.lua).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/newjob.lua
--!include lib/flow.lua

local now = nowMs()
local maxStalled = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', K.active, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local requeued, failed = {}, {}
for _, id in ipairs(ids) do
  redis.call('ZREM', K.active, id)
  local jk = K.jobBase .. id
  local f = redis.call('HMGET', jk, 'lane', 'prio', 'sq', 'kfc', 'kfa', 'st')
  if f[6] then
    f[1], f[2] = laneOr(f[1]), prioOr(f[2])
    local stalls = redis.call('HINCRBY', jk, 'stc', 1)
    if stalls > maxStalled then
      redis.call('HINCRBY', jk, 'made', 1)
      redis.call('HSET', jk, 'st', 'f', 'fOn', now, 'err', 'stalled', 'stack', '[]')
      releaseActive(f[1])
      emit('failed', 'jobId', id, 'failedReason', 'stalled', 'prev', 'active')
      flowSettled(jk, id, 'f', 'stalled', now) -- flows: tell the parent (lib/flow.lua)
      local keep, keepAge = keepOf(f[4], f[5], KEEP_FAILED)
      recordFinished(K.failed, id, keep, keepAge, now)
      failed[#failed + 1] = id
    else
      pushReady(jk, f[1], tonumber(f[2]), f[3] .. id)
      releaseActive(f[1])
      emit('stalled', 'jobId', id)
      requeued[#requeued + 1] = id
    end
  end
end
if #requeued > 0 then wake() end
return {requeued, failed}
