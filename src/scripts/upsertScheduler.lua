-- upsertScheduler: creates or updates a job scheduler and makes the job of its first slot.
-- Upserting the same schedule again (same every, or same pattern and tz, and same startDate)
-- only updates the job template, endDate and limit: the series goes on and no job is made,
-- so a slot never gets a second job. A changed schedule starts a new series: the job of the
-- old next slot is withdrawn if it has not started, the version is bumped (so a concurrent
-- advanceScheduler computed against the old schedule is refused) and the first slot of the
-- new schedule gets its job.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, delayed, events, wake, scheds, wchildren, schedBase, laneBase, jobBase, logsBase, lcfg
-- ARGV: [1] scheduler id, [2] every (ms; '' for a cron pattern), [3] cron pattern ('' for
--   every), [4] time zone ('' = UTC), [5] startDate (ms; ''), [6] endDate (ms; ''),
--   [7] limit (''), [8] first slot of a cron pattern (ms at or after max(now, startDate),
--   computed by the caller from the Redis time it read just before; '' for every),
--   then the job template: [9] name, [10] data (JSON), [11] opts (JSON object; '' = none),
--   [12] priority (integer 0..2097151), [13] lane (raw name, 'default' for the default lane), [14] lifo ('1'/'0'),
--   [15] keepCompletedCount ('' = keep all), [16] keepCompletedAgeMs, [17] keepFailedCount,
--   [18] keepFailedAgeMs,
--   [19] offset (ms, every only: slots at offset + k * every, BullMQ's alignment; '' = none:
--   slots at startDate, or now, + k * every)
-- Returns: {1, nextSlot, jobId, created (1/0)}; or {0} when the new schedule has no slot left
--   (endDate passed or limit 0): the scheduler is removed.
-- Errors: guards (lib/guard.lua), before any write, replying {code, position}: -15 a lane '' or
--   over 1024 UTF-16 units; -16 an id '' or another argument not in its form above.
-- Events: added, then delayed | waiting for a created job; removed for a withdrawn job.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/schedule.lua
--!include lib/guard.lua

do
  local function check(ok, pos, code) if not ok then return { code or BAD_ARGUMENT, pos } end end
  local r = check(ARGV[1] ~= '', 1) or check(optUint(ARGV[2]), 2) or check(optUint(ARGV[5]), 5)
    or check(optUint(ARGV[6]), 6) or check(optUint(ARGV[7]), 7) or check(optInt(ARGV[8]), 8)
    or check(isObject(ARGV[11]), 11) or check(isPriority(ARGV[12]), 12) or check(not badLane(ARGV[13]), 13, BAD_LANE)
    or check(isFlag(ARGV[14]), 14) or check(optInt(ARGV[15]), 15) or check(optUint(ARGV[16]), 16)
    or check(optInt(ARGV[17]), 17) or check(optUint(ARGV[18]), 18) or check(optUint(ARGV[19] or ''), 19)
  if r then return r end
end
local sid = ARGV[1]
local sk = K.schedBase .. sid
local now = nowMs()
local old = redis.call('HMGET', sk, 'every', 'pattern', 'tz', 'start', 'next', 'off')
redis.call('HSET', sk, 'end', ARGV[6], 'limit', ARGV[7],
  'name', ARGV[9], 'data', ARGV[10], 'opts', ARGV[11], 'prio', ARGV[12], 'lane', ARGV[13],
  'lifo', ARGV[14], 'kc', ARGV[15], 'ka', ARGV[16], 'kfc', ARGV[17], 'kfa', ARGV[18])

if old[5] and old[1] == ARGV[2] and old[2] == ARGV[3] and old[3] == ARGV[4] and old[4] == ARGV[5]
  and (old[6] or '') == ARGV[19] then
  stampLayout()
  return {1, old[5], slotJobId(sid, tonumber(old[5])), 0}
end

if old[5] then withdrawJob(slotJobId(sid, tonumber(old[5]))) end
redis.call('HINCRBY', sk, 'ver', 1)
redis.call('HSET', sk, 'every', ARGV[2], 'pattern', ARGV[3], 'tz', ARGV[4], 'start', ARGV[5], 'off', ARGV[19], 'cnt', 0)
local first
if ARGV[2] ~= '' then
  local anchor = now
  if ARGV[5] ~= '' then anchor = tonumber(ARGV[5]) end
  local from = anchor
  if ARGV[19] ~= '' then anchor = tonumber(ARGV[19]) end
  if from < now then from = now end
  redis.call('HSET', sk, 'anchor', msString(anchor))
  first = everySlotAtOrAfter(anchor, tonumber(ARGV[2]), from)
else
  first = tonumber(ARGV[8])
end
if not slotAllowed(sk, first) then
  dropScheduler(sid)
  return {0}
end
local id, created = makeSlotJob(sid, first, now)
stampLayout()
return {1, msString(first), id, created and 1 or 0}
