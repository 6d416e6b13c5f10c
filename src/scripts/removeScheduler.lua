-- removeScheduler: deletes a job scheduler and the job of its next slot if that job has not
-- started (a running or finished job of the scheduler is left alone).
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, delayed, events, wake, scheds, wchildren, schedBase, laneBase, jobBase, logsBase, lcfg
-- ARGV: [1] scheduler id
-- Returns: 1 removed, 0 no such scheduler.
-- Errors: none.
-- Events: removed (jobId, prev) for a withdrawn job.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/schedule.lua

local sid = ARGV[1]
local nxt = redis.call('HGET', K.schedBase .. sid, 'next')
if not nxt then
  redis.call('ZREM', K.scheds, sid)
  return 0
end
withdrawJob(slotJobId(sid, tonumber(nxt)))
dropScheduler(sid)
return 1
