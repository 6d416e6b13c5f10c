-- progress: stores a job's progress (JSON) and reports it.
-- KEYS: meta, events, jobBase
-- ARGV: [1] job id, [2] progress (JSON)
-- Returns: 1.
-- Errors: -1 no such job.
-- Events: progress (jobId, data).
--!include lib/common.lua

local jk = K.jobBase .. ARGV[1]
if redis.call('EXISTS', jk) == 0 then return -1 end
redis.call('HSET', jk, 'prog', ARGV[2])
emit('progress', 'jobId', ARGV[1], 'data', ARGV[2])
return 1
