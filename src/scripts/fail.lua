-- fail: settles an active job whose attempt failed: retries it (at once, back of its tier, or
-- after a backoff delay) or fails it for good; then claims the worker's next jobs.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, failed, events, wake, rate, laneBase, jobBase, logsBase, lrateBase, depsBase, wchildren, outbox, lcfg, metricsFailed, metricsFailedData, reqBase
-- ARGV: [1] job id, [2] token (the job's att when claimed), [3] failed reason, [4] the job's stack traces
--   after this failure, stored as given: the claimed `stack` (JSON array of strings, absent =
--   []) with this attempt's trace appended, the newest stackTraceLimit kept (opts, default 10;
--   0 keeps none), written by the client, [5] retry delay (ms; -1 = fail for good, 0 = ready again now), [6] jobs to
--   claim next, [7] lease (ms) for them, [8] '1' when the attempts ran out (BullMQ:
--   attemptsMade >= attempts, attemptsMade counting this failure; docs/protocol.md "The opts
--   JSON"), [9] owner token ('' or absent = a worker's own job; otherwise
--   manual processing, as in complete.lua), [10] metrics data points (0 or absent = none),
--   [11] the worker's removeOnFail keep count for jobs without their own ('' or absent = none),
--   [12] its keep age (ms; '' or absent = none), [13] worker name for the claimed jobs' `pb` ('' or absent = none),
--   [14] request id ('' or absent = none; lib/once.lua): a rerun of a settle that went ahead
--   replies its claimed jobs still active under their attempt and changes nothing
-- Returns: like claim ({claimed, wakeInMs, ...}: the first element, claimed, is 0 or more), or
--   {code} when the job is refused: a negative first element is a refusal.
-- Errors: -1 no such job; -2 stale token; with an owner token also -6 lock mismatch;
--   EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window without a record.
--   Guards (lib/guard.lua), before any write: -16 with the reply {-16, position} when [5] is
--   not a finite number or [6], [7] not non-negative integers.
-- Events: failed (jobId, failedReason, prev, and exhausted <attemptsMade> when the attempts ran
--   out: QueueEvents emits retries-exhausted from it) when final; otherwise retrying then
--   delayed (jobId, delay) or waiting (jobId, prev active). drained after a final failure
--   that claimed nothing and left nothing ready or active (BullMQ's drained). A flow child
--   that fails for good with a policy tells its parent (lib/flow.lua): the parent is released
--   (waiting | delayed) or fails (failed, prev waiting-children).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/claim.lua
--!include lib/newjob.lua
--!include lib/flow.lua
--!include lib/lock.lua
--!include lib/metrics.lua
--!include lib/once.lua

local now = nowMs()
-- Applied once (lib/once.lua): a rerun finds its job no longer active under its token (the
-- first run moved it, or refused it too), so the record is read only on a refusal; a job that
-- still holds its token proves a first run.
local function refusal(code)
  local rec, refused = onceBegin(ARGV[14], now)
  if refused then return redis.error_reply(refused) end
  if not rec then return {code} end
  local out = {}
  local got = onceClaimed(rec.j, out)
  table.insert(out, 1, -1)
  table.insert(out, 1, got)
  return out
end
-- Guards (BAD_ARGUMENT, as lib/guard.lua's; inline: this block of the function library has no
-- room for its locals): a delay, count or lease that is not a number would fail after the ZREM.
do -- the retry delay: any finite number (a long exponential backoff prints with an exponent)
  local d = tonumber(ARGV[5])
  if not d or d ~= d or d == math.huge or d == -math.huge then return { -16, 5 } end
end
if not string.find(ARGV[6], '^%d+$') then return { -16, 6 } end
if not string.find(ARGV[7], '^%d+$') then return { -16, 7 } end
local id, token, reason, stack = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local delay = tonumber(ARGV[5])
local fetch, leaseMs, exhausted = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8] == '1'
local owner = ARGV[9] ~= '' and ARGV[9] or nil
local metricsMax = tonumber(ARGV[10] or '0')
local workerKeep, workerKeepAge = tonumber(ARGV[11] or ''), tonumber(ARGV[12] or '') -- nil when '' or absent
local jk = K.jobBase .. id
local att, st, lane, keepCount, keepAge, prio, lifo, made, parentId, follower =
  unpack(redis.call('HMGET', jk, 'att', 'st', 'lane', 'kfc', 'kfa', 'prio', 'lifo', 'made', 'pid', 'dkn'), 1, 10)
if owner then
  local code = holderCode(jk, att, st, owner, token) -- manual processing (lib/lock.lua)
  if code ~= 1 then return refusal(code) end
elseif not att then
  return refusal(-1)
elseif att ~= token or st ~= 'a' then
  return refusal(-2)
end
onceArm(ARGV[14])
if onceKey then claimTrack = {} end
lane, prio = laneOr(lane), prioOr(prio)
made = tonumber(made or '0') + 1
redis.call('ZREM', K.active, id)
local admitted = releaseActive(lane)

if delay < 0 then
  redis.call('HSET', jk, 'made', made, 'err', reason, 'stack', stack, 'st', 'f', 'fOn', now)
  -- One entry either way; QueueEvents emits retries-exhausted from its exhausted field.
  if exhausted then
    emit('failed', 'jobId', id, 'failedReason', reason, 'prev', 'active', 'exhausted', made)
  else
    emit('failed', 'jobId', id, 'failedReason', reason, 'prev', 'active')
  end
  local keep, keepFor = keepOf(keepCount, keepAge, KEEP_FAILED)
  if workerKeep and not keepCount and not keepAge then keep, keepFor = workerKeep, workerKeepAge or 0 end
  -- flows: tell the parent (lib/flow.lua); a child deleted at once (removeOnFail) no longer
  -- holds a parent that has no failure policy for it, as BullMQ's removal does.
  if parentId then flowSettled(jk, id, 'f', reason, now, 0, keep == 0) end
  if follower then releaseFollower(follower, id, now) end -- keepLastIfActive (lib/dedup.lua)
  recordFinished(K.failed, id, keep, keepFor, now)
  if metricsMax > 0 then countFinished(K.metricsFailed, K.metricsFailedData, metricsMax, now, 1) end
elseif delay > 0 then
  -- job.delay shows the backoff, as BullMQ's; the delay the job was added with stays in odl
  -- (job.opts.delay), as changeDelay keeps it. Retries with a backoff only: not the hot path.
  local d = redis.call('HMGET', jk, 'delay', 'odl')
  if not d[2] then redis.call('HSET', jk, 'odl', d[1] or '0') end
  redis.call('HSET', jk, 'made', made, 'err', reason, 'stack', stack, 'st', 'd', 'delay', delay)
  scheduleDelayed(id, now + delay)
  emit('retrying', 'jobId', id, 'failedReason', reason, 'attemptsMade', made)
  emit('delayed', 'jobId', id, 'delay', now + delay)
else
  -- As BullMQ's retry: delayed jobs already due go ahead of the job retried now. The meta row
  -- read here is the one the claim below reads anyway (cached): no extra call without delayed jobs.
  if readMeta()[M_DELAYED] then promoteDue(now) end
  local stamp = nextStamp(lifo == '1')
  redis.call('HSET', jk, 'made', made, 'err', reason, 'stack', stack, 'sq', stamp, 'st', 'w')
  enterLane(lane, prio, stamp .. id)
  emit('retrying', 'jobId', id, 'failedReason', reason, 'attemptsMade', made)
  emit('waiting', 'jobId', id, 'prev', 'active')
  admitted = true
end

local out = {}
claimOwner = owner -- the next jobs are claimed for the same owner (lib/claim.lua)
if ARGV[13] and ARGV[13] ~= '' then claimName = ARGV[13] end
local got, nextAt = claimJobs(fetch, leaseMs, now, out)
if got == 0 and delay < 0 then emitDrainedIfIdle() end
if admitted and fetch == 0 then wake() end
if onceKey then onceRecordClaim(nil, claimTrack) end
table.insert(out, 1, nextAt)
table.insert(out, 1, got)
return out
