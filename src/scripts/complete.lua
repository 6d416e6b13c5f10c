-- complete: settles one or more active jobs of a worker as completed, then claims the
-- worker's next jobs in the same call. A worker whose jobs finish in the same tick settles
-- them together: the call's fixed costs (meta read, clock, claim turn) are paid once.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, active, delayed, completed, events, wake, rate, laneBase, jobBase, logsBase, lrateBase, depsBase, wchildren, outbox, lcfg, metricsCompleted, metricsCompletedData, reqBase
-- ARGV: [1] jobs to claim next (0 = none), [2] lease (ms) for them,
--   [3] largest return value (bytes) copied into the completed event,
--   [4] owner token ('' = a worker's own jobs, whose token is their att; otherwise manual
--   processing: the lock is checked as lib/lock.lua does, and the claimed jobs get this owner),
--   [5] metrics data points (0 = the worker keeps no metrics; lib/metrics.lua),
--   [6] the worker's removeOnComplete keep count for jobs without their own ('' = none: the
--   default applies), [7] its keep age (ms; '' = none), [8] worker name for the claimed jobs' `pb` ('' = none),
--   [9] F, fields per settled job: 3, or 7 when the caller passes what it read from the claim
--   reply (the fields that cannot change while the job is active under its attempt), or 'g'
--   for those fields given once per group of jobs that share them,
--   then per settled job (at most 1000), from a = 10 + F * i: [a] job id, [a + 1] token (the
--   job's att when claimed), [a + 2] return value (JSON), and with F = 7: [a + 3] lane, [a + 4]
--   kc, [a + 5] ka, [a + 6] made, each as the claim reply gave it ('' when absent there);
--   then with F = 'g', instead of the jobs above, groups of jobs that share those four fields
--   (the codes follow the jobs' order here): lane, kc, ka, made (as with F = 7), k (1 or more),
--   and k jobs of three fields (id, token, return value);
--   then optionally one more: the request id (lib/once.lua; present when (#ARGV - 9) mod F is
--   1, with 'g' when one argument is left after the last group): a rerun replies the first
--   run's codes and its claimed jobs still active under their attempt, and changes nothing
-- Returns: {claimed, wakeInMs, m, code1..codem, id1, fields1, ...}: m settled jobs, each
--   code 1 (completed) or an error code below, then the claimed jobs like claim.
-- Errors (per job): -1 no such job; -2 stale token (the lease was lost: the job was
--   recovered, is held under a newer token, or already finished); with an owner token also
--   -6 lock mismatch (lib/lock.lua); -10 the job has pending children (flows). A job with an
--   error code is left as it was. Guards (lib/guard.lua), before any write: -16 with the reply
--   {-16, position} when [1], [2] or [3] is not a non-negative integer.
--   EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window without a record.
-- Events: completed (jobId, returnvalue, prev) per settled job; a flow child releases its
--   parent in this queue when it was the last pending child: waiting | delayed (jobId of the
--   parent). A parent in another queue is told through the outbox (lib/flow.lua). drained
--   when the call claimed nothing and left nothing ready or active (BullMQ's drained).
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/retention.lua
--!include lib/claim.lua
--!include lib/newjob.lua
--!include lib/flow.lua
--!include lib/lock.lua
--!include lib/metrics.lua
--!include lib/once.lua

local MAX_SETTLE = 1000
-- grouped: the settle fields come once per group (F = 'g'); the jobs then take 3 arguments
-- each instead of 7 (an argument costs Redis ~800 instructions to parse and hand to Lua).
local grouped = ARGV[9] == 'g'
local F = ARGV[9] == '7' and 7 or ARGV[9] == '3' and 3 or grouped and 7 or nil
if not F then return redis.error_reply("ERR complete: fields per job must be 3, 7 or 'g'") end
-- Guards (BAD_ARGUMENT, as lib/guard.lua's; inline: this block of the function library has no
-- room for its locals): a count, lease or size that is not a number would fail after the settles.
for p = 1, 3 do
  if not string.find(ARGV[p], '^%d+$') then return { -16, p } end
end
local rid, m
if grouped then
  local p, nargs = 10, #ARGV
  m = 0
  while p + 4 <= nargs do
    local k = tonumber(ARGV[p + 4])
    if not k or k < 1 or k % 1 ~= 0 then
      return redis.error_reply('ERR complete: a group\'s job count must be a positive integer, got ' .. ARGV[p + 4])
    end
    p, m = p + 5 + 3 * k, m + k
  end
  if p == nargs then rid = ARGV[p]
  elseif p ~= nargs + 1 then return redis.error_reply('ERR complete: the groups do not match the arguments') end
else
  if (#ARGV - 9) % F == 1 then rid = ARGV[#ARGV] end
  m = math.floor((#ARGV - 9) / F)
end
if m > MAX_SETTLE then return redis.error_reply('ERR complete: at most 1000 jobs per call') end
local fetch, leaseMs = tonumber(ARGV[1]), tonumber(ARGV[2])
local maxEv = tonumber(ARGV[3])
local owner = ARGV[4] ~= '' and ARGV[4] or nil
local metricsMax = ARGV[5] == '0' and 0 or tonumber(ARGV[5])
-- nil when '' (the usual case: no tonumber call then)
local workerKeep = ARGV[6] ~= '' and tonumber(ARGV[6]) or nil
local workerKeepAge = ARGV[7] ~= '' and tonumber(ARGV[7]) or nil
local workerName = ARGV[8] ~= '' and ARGV[8] or nil
local now = nowMs()
if m == 0 then
  local rec, refused = onceBegin(rid, now)
  if refused then return redis.error_reply(refused) end
  if rec then return onceSettleRerun(rec) end
end
local nowStr = msString(now) -- written as a string: see activate in lib/claim.lua
readMeta() -- the claim below needs it anyway; reading it first also gives emit its cap
local admitted = false
-- The reply: {claimed, wakeInMs, m, codes…, claimed jobs…}, built in place (the claim below
-- appends its jobs to it).
local head = { 0, -1, m }
local finished = {} -- ids of settled jobs, removed from the active set with one ZREM
local trims = {}

-- The retention of a settled job: (0, 0) for removeOnComplete: true, the usual case.
local function keepRule(keepCount, keepAge)
  if keepCount == '0' and not keepAge then return 0, 0 end
  if workerKeep and not keepCount and not keepAge then return workerKeep, workerKeepAge or 0 end
  return keepOf(keepCount, keepAge, KEEP_COMPLETED)
end
-- The current group (grouped): jobs left and the next argument; what its jobs share is worked
-- out once ('' read as absent): the lane, the retention, made + 1, whether the lane
-- has settings (nil until a job settles), and the lane slots its settled jobs release, deferred
-- as one count (a lane without settings, lib/lanes.lua releaseActiveLater).
local gLane
local gLeft, gAt = 0, 10
local gKeep, gKeepFor, gMadeNext, gCfg
local gReleased = 0
for i = 0, m - 1 do
  local id, token, rv
  local a = 10 + F * i
  if grouped then
    if gLeft == 0 then
      if gReleased > 0 then deferActive(gLane, -gReleased) end
      local kc, ka, made = ARGV[gAt + 1], ARGV[gAt + 2], ARGV[gAt + 3]
      gLane = ARGV[gAt] ~= '' and ARGV[gAt] or DEFAULT_LANE
      gLeft, gAt = tonumber(ARGV[gAt + 4]), gAt + 5
      gKeep, gKeepFor = keepRule(kc ~= '' and kc or nil, ka ~= '' and ka or nil)
      gMadeNext = gKeep ~= 0 and intStr(tonumber(made ~= '' and made or '0') + 1) or nil
      gCfg, gReleased = nil, 0
    end
    id, token, rv = ARGV[gAt], ARGV[gAt + 1], ARGV[gAt + 2]
    gLeft, gAt = gLeft - 1, gAt + 3
  else
    id, token, rv = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  end
  local jk = K.jobBase .. id
  local att, st, lane, keepCount, keepAge, made, parentId, pending, follower
  if F == 7 then
    -- The caller's copy from the claim: valid while the fence below holds (a job is active
    -- under one attempt only, and nothing rewrites these fields of an active job).
    local f = redis.call('HMGET', jk, 'att', 'st', 'pid', 'pend', 'dkn')
    att, st, parentId, pending, follower = f[1], f[2], f[3], f[4], f[5] -- not unpack: a C call per job
    -- (A grouped job takes its group's, worked out above, where it settles.)
    if not grouped then
      lane, keepCount, keepAge, made = ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6]
      if lane == '' then lane = nil end
      if keepCount == '' then keepCount = nil end
      if keepAge == '' then keepAge = nil end
      if made == '' then made = nil end
    end
  else
    att, st, lane, keepCount, keepAge, made, parentId, pending, follower =
      unpack(redis.call('HMGET', jk, 'att', 'st', 'lane', 'kc', 'ka', 'made', 'pid', 'pend', 'dkn'), 1, 9)
  end
  local code = 1
  if owner then
    code = holderCode(jk, att, st, owner, token) -- manual processing (lib/lock.lua)
  elseif not att then
    code = -1
  elseif att ~= token or st ~= 'a' then
    code = -2
  end
  -- A flow parent (a step job) with children still pending cannot complete (BullMQ's
  -- pending-dependencies refusal); pend is absent on jobs that never had children.
  if code == 1 and pending and pending ~= '0' then code = -10 end
  if i == 0 then
    -- Applied once: a rerun always finds its first job refused (the first run settled it, or
    -- refused it too), so the record is read only then, before anything is written; a first
    -- job that still holds its token proves a first run.
    if code == 1 then
      onceArm(rid)
    else
      local rec, refused = onceBegin(rid, now)
      if refused then return redis.error_reply(refused) end
      if rec then return onceSettleRerun(rec) end
    end
  end
  head[4 + i] = code
  if code == 1 then
    finished[#finished + 1] = id
    local keep, keepFor, madeNext, cfg
    if grouped then
      lane, keep, keepFor, madeNext = gLane, gKeep, gKeepFor, gMadeNext
      if gCfg == nil then gCfg = laneHasCfg(lane) end
      cfg = gCfg
    else
      lane = laneOr(lane)
      keep, keepFor = keepRule(keepCount, keepAge)
      if keep ~= 0 then madeNext = intStr(tonumber(made or '0') + 1) end
      cfg = laneHasCfg(lane)
    end
    -- A job that keeps no record is deleted below: writing its final fields would be wasted.
    if keep ~= 0 then
      redis.call('HSET', jk, 'st', 'c', 'fOn', nowStr, 'rv', rv, 'made', madeNext)
    end
    -- A lane without settings cannot become serviceable by freeing a slot: its release may
    -- wait for the claim below, which often serves the same lane (lib/lanes.lua
    -- releaseActiveLater).
    if cfg then
      if releaseActive(lane) then admitted = true end
    elseif grouped then
      gReleased = gReleased + 1
    else
      releaseActiveLater(lane)
    end
    if #rv <= maxEv then
      emitJob('completed', PREV_ACTIVE, id, 'returnvalue', rv)
    else
      emitJob('completed', PREV_ACTIVE, id, 'truncated', '1')
    end
    if parentId then flowSettled(jk, id, 'c', rv, now) end -- flows: tell the parent (lib/flow.lua)
    if follower then releaseFollower(follower, id, now) end -- keepLastIfActive (lib/dedup.lua)
    recordFinishedLater(K.completed, id, keep, keepFor, now, nowStr, trims)
  end
end
if gReleased > 0 then deferActive(gLane, -gReleased) end
-- A lease removed shows the active key exists: the claim below need not resend its sentinel.
local activeExists = #finished > 0 and redis.call('ZREM', K.active, unpack(finished)) > 0
flushTrims(K.completed, trims, now)
if metricsMax > 0 and #finished > 0 then
  countFinished(K.metricsCompleted, K.metricsCompletedData, metricsMax, now, #finished)
end

claimOwner = owner -- the next jobs are claimed for the same owner (lib/claim.lua)
claimName = workerName
-- A call that settled nothing (every token stale) claims nothing either: it changes nothing.
local want = #finished > 0 and fetch or 0
if onceKey then claimTrack = {} end
local got, nextAt = claimJobs(want, leaseMs, now, head, false, activeExists)
flushDeferredActive()
if got == 0 and #finished > 0 then emitDrainedIfIdle() end
if admitted and want == 0 then wake() end
head[1], head[2] = got, nextAt
-- A call that settled nothing changed nothing: its rerun answers the same.
-- The codes are recorded as their count when all are 1: cjson formats each number with %.14g.
if #finished > 0 and onceKey then
  onceRecordClaim(#finished == m and intStr(m) or { unpack(head, 4, 3 + m) }, claimTrack)
end
return head
