-- updateData: replaces a job's data (JSON).
-- KEYS: jobBase
-- ARGV: [1] job id, [2] data (JSON)
-- Returns: 1.
-- Errors: -1 no such job.
-- Events: none.

local jk = K.jobBase .. ARGV[1]
if redis.call('EXISTS', jk) == 0 then return -1 end
redis.call('HSET', jk, 'data', ARGV[2])
return 1
