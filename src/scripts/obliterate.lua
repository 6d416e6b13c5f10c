-- obliterate: deletes the whole queue — jobs with their logs and flow dependencies, job
-- schedulers, lanes and their settings, events, metrics, deduplication ids — in bounded
-- batches; the caller pauses the queue first and repeats until the reply says done.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, completed, failed, events, wake, rate, dedup, dedupx, laneBase, jobBase, logsBase, lrateBase, wchildren, scheds, outbox, schedBase, depsBase, lcfg, metricsCompleted, metricsCompletedData, metricsFailed, metricsFailedData
-- ARGV: [1] budget (most jobs deleted in this call), [2] '1' = force (also delete active jobs)
-- A deleted job that is a flow child of a parent in another queue, and had not completed, is
-- reported to that parent as removed through this queue's outbox (as BullMQ's obliterate
-- releases a parent whose last pending child it deletes); the caller delivers the outbox
-- between calls, and the last call (which deletes the fixed keys) waits until it is empty.
-- Returns: {deleted, done (1/0)}.
-- Errors: -4 the queue has active jobs and force was not given (nothing is deleted).
-- Events: none (the events stream is deleted with the queue).
--!include lib/common.lua

local budget = tonumber(ARGV[1])
if ARGV[2] ~= '1' and activeJobs() > 0 then return {-4, 0} end
local deleted = 0
local now

local function dropJob(id)
  local jk = K.jobBase .. id
  local p = redis.call('HMGET', jk, 'pid', 'pk', 'pq', 'ppx', 'st')
  if p[1] and p[2] ~= K.jobBase .. p[1] and p[5] ~= 'c' then
    now = now or nowMs()
    redis.call('ZADD', K.outbox, now, cjson.encode({ pid = p[1], pk = p[2], pq = p[3], ppx = p[4], c = jk, k = 'r', v = '' }))
  end
  deleteJob(id)
end

-- Members below +inf: the active set's sentinel (lib/common.lua) is no job; it goes with the
-- fixed keys at the end. Every other set has finite scores only.
local function dropSet(key)
  local ids = redis.call('ZRANGEBYSCORE', key, '-inf', '(+inf', 'LIMIT', 0, budget - deleted)
  for _, id in ipairs(ids) do dropJob(id) end
  if #ids > 0 then redis.call('ZREMRANGEBYRANK', key, 0, #ids - 1) end
  deleted = deleted + #ids
end

for _, key in ipairs({ K.active, K.delayed, K.completed, K.failed, K.wchildren }) do
  if deleted < budget then dropSet(key) end
end
-- Job schedulers (one hash each), counted against the same budget.
if deleted < budget then
  local sids = redis.call('ZRANGE', K.scheds, 0, budget - deleted - 1)
  for _, sid in ipairs(sids) do redis.call('DEL', K.schedBase .. sid) end
  if #sids > 0 then redis.call('ZREMRANGEBYRANK', K.scheds, 0, #sids - 1) end
  deleted = deleted + #sids
end
local visited = 0
while deleted < budget and visited < budget do
  local lane = redis.call('ZRANGE', K.lanes, 0, 0)[1]
  if not lane then break end
  visited = visited + 1
  local lk = K.laneBase .. lane
  -- A one-job lane's job is its lone field (lib/lanes.lua), "<prio>:<member>".
  local lone = redis.call('HGET', K.lone, lane)
  if lone then
    local _, member = parseLone(lone)
    dropJob(memberId(member))
    redis.call('HDEL', K.lone, lane)
    deleted = deleted + 1
  end
  local members = redis.call('ZRANGE', lk, 0, budget - deleted - 1)
  for _, m in ipairs(members) do dropJob(memberId(m)) end
  if #members > 0 then redis.call('ZREMRANGEBYRANK', lk, 0, #members - 1) end
  deleted = deleted + #members
  if redis.call('ZCARD', lk) == 0 then
    redis.call('ZREM', K.lanes, lane)
    redis.call('DEL', K.lrateBase .. lane)
  end
end
if deleted >= budget or visited >= budget then return {deleted, 0} end
-- Parents in other queues are told first (the caller drains the outbox, then calls again).
if redis.call('ZCARD', K.outbox) > 0 then return {deleted, 0} end
-- Everything job-shaped is gone: drop the fixed keys. UNLINK frees large ones in the background.
redis.call('UNLINK', K.meta, K.ring, K.inring, K.lone, K.lanes, K.lweight, K.llimit, K.lactive, K.lpaused,
  K.lrate, K.rlwait, K.active, K.delayed, K.completed, K.failed, K.events, K.wake, K.rate,
  K.dedup, K.dedupx, K.wchildren, K.scheds, K.outbox, K.lcfg,
  K.metricsCompleted, K.metricsCompletedData, K.metricsFailed, K.metricsFailedData)
return {deleted, 1}
