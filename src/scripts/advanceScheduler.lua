-- advanceScheduler: makes the job of a scheduler's following slot once the job of its current
-- slot has started. Workers call it right after claiming a scheduler's job (and the periodic
-- sweep calls it for schedulers whose slot is due, which repairs a worker that died between
-- the claim and this call). It is a compare-and-set: the caller read the scheduler's version
-- and next slot, computed the following cron slot from the Redis time, and the call is
-- accepted only if both are unchanged and the current slot's job is no longer waiting or
-- delayed, so ten workers racing make one job.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, delayed, events, wake, scheds, wchildren, schedBase, laneBase, jobBase, logsBase, lcfg
-- ARGV: [1] scheduler id, [2] version the caller read, [3] next slot the caller read (ms),
--   [4] following slot of a cron pattern (ms, > the next slot and > the Redis time the caller
--   read; -1 = the pattern never fires again; '' for every: the script computes it from its
--   own clock)
-- Returns: {1, slot, jobId, created} advanced; {0, next} nothing to do (the current slot's job
--   has not started, or someone else advanced or changed the scheduler first); {-1} no such
--   scheduler; {2} no slot left (endDate or limit reached): the scheduler was removed.
-- Errors: none.
-- Events: added, delayed | waiting for the job made.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/schedule.lua

local sid = ARGV[1]
local sk = K.schedBase .. sid
local f = redis.call('HMGET', sk, 'ver', 'next', 'every', 'anchor')
if not f[1] then return {-1} end
if f[1] ~= ARGV[2] or f[2] ~= ARGV[3] then return {0, f[2]} end
local cur = tonumber(f[2])
local st = redis.call('HGET', K.jobBase .. slotJobId(sid, cur), 'st')
if st == 'w' or st == 'd' then return {0, f[2]} end
local now = nowMs()
local nxt
if f[3] and f[3] ~= '' then
  local t = now
  if t <= cur then t = cur + 1 end
  nxt = everySlotAtOrAfter(tonumber(f[4]), tonumber(f[3]), t)
else
  nxt = tonumber(ARGV[4])
  if not nxt or (nxt ~= -1 and nxt <= cur) then return {0, f[2]} end
end
if nxt == -1 or not slotAllowed(sk, nxt) then
  dropScheduler(sid)
  return {2}
end
local id, created = makeSlotJob(sid, nxt, now)
stampLayout()
return {1, msString(nxt), id, created and 1 or 0}
