-- removeScheduler: deletes a job scheduler and the job of its next slot if that job has not
-- started (a running or finished job of the scheduler is left alone).
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, delayed, events, wake, scheds, wchildren, schedBase, laneBase, jobBase, logsBase, lcfg, reqBase
-- ARGV: [1] scheduler id,
--   [2] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's 1
-- Returns: 1 removed, 0 no such scheduler.
-- Errors: EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window without a
--   record.
-- Events: removed (jobId, prev) for a withdrawn job.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/schedule.lua
--!include lib/once.lua

-- Applied once (lib/once.lua): a rerun would find no scheduler and reply 0.
local rec, refused = onceBegin(ARGV[2])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local sid = ARGV[1]
local nxt = redis.call('HGET', K.schedBase .. sid, 'next')
if not nxt then
  redis.call('ZREM', K.scheds, sid)
  return 0
end
withdrawJob(slotJobId(sid, tonumber(nxt)))
dropScheduler(sid)
onceRecord({ r = 1 })
return 1
