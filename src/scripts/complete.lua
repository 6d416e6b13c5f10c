-- complete: settles an active job as completed, then claims the worker's next jobs in the
-- same call.
-- KEYS: meta, ring, inring, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, completed, events, wake, rate, laneBase, jobBase, logsBase, lrateBase, depsBase, wchildren, outbox, lcfg
-- ARGV: [1] job id, [2] token (the job's att when claimed), [3] return value (JSON),
--   [4] jobs to claim next (0 = none), [5] lease (ms) for them,
--   [6] largest return value (bytes) copied into the completed event
-- Returns: {claimed, nextWakeAt, id1, fields1, ...} like claim, or {code} on error:
-- Errors: -1 no such job; -2 stale token (the lease was lost: the job was recovered, is held
--   under a newer token, or already finished).
-- Events: completed (jobId, returnvalue, prev); a flow child releases its parent in this queue
--   when it was the last pending child: waiting | delayed (jobId of the parent). A parent in
--   another queue is told through the outbox (lib/flow.lua).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/claim.lua
--!include lib/newjob.lua
--!include lib/flow.lua

local id, token = ARGV[1], ARGV[2]
local jk = K.jobBase .. id
local f = redis.call('HMGET', jk, 'att', 'st', 'lane', 'kc', 'ka', 'made', 'pid')
if not f[1] then return {-1} end
if f[1] ~= token or f[2] ~= 'a' then return {-2} end
local now = nowMs()
readMeta() -- the claim below needs it anyway; reading it first also gives emit its cap
local keep, keepAge = keepOf(f[4], f[5], KEEP_COMPLETED)
redis.call('ZREM', K.active, id)
-- A job that keeps no record is deleted below: writing its final fields would be wasted.
if keep ~= 0 then
  redis.call('HSET', jk, 'st', 'c', 'fOn', now, 'rv', ARGV[3], 'made', tonumber(f[6] or '0') + 1)
end
-- A lane without settings cannot become serviceable by freeing a slot: its release may wait
-- for the claim below, which often serves the same lane (lib/lanes.lua releaseActiveLater).
local admitted = false
if laneHasCfg(f[3]) then admitted = releaseActive(f[3]) else releaseActiveLater(f[3]) end
if #ARGV[3] <= tonumber(ARGV[6]) then
  emit('completed', 'jobId', id, 'returnvalue', ARGV[3], 'prev', 'active')
else
  emit('completed', 'jobId', id, 'prev', 'active', 'truncated', '1')
end
if f[7] then flowSettled(jk, id, 'c', ARGV[3], now) end -- flows: tell the parent (lib/flow.lua)
recordFinished(K.completed, id, keep, keepAge, now)

local out = {}
local want = tonumber(ARGV[4])
local got, nextAt = claimJobs(want, tonumber(ARGV[5]), now, out)
flushDeferredReleases()
if admitted and want == 0 then wake() end
table.insert(out, 1, nextAt)
table.insert(out, 1, got)
return out
