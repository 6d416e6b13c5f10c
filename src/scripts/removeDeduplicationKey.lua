-- removeDeduplicationKey: frees a deduplication id if the given job holds it (BullMQ's
-- Job.removeDeduplicationKey). An id held by another job is left alone.
-- KEYS: dedup, dedupx, jobBase
-- ARGV: [1] deduplication id, [2] job id
-- Returns: 1 the job held the id and it is free now; 0 the job did not hold it (another job
--   does, or the id was already released: its job finished, or its throttle window ended;
--   a stale entry of this job is cleared then too).
-- Errors: none.
-- Events: none.
--!include lib/common.lua

local dd, id = ARGV[1], ARGV[2]
if redis.call('HGET', K.dedup, dd) ~= id then return 0 end
local untilMs = redis.call('ZSCORE', K.dedupx, dd)
local held
if untilMs then
  held = tonumber(untilMs) > nowMs()
else
  local st = redis.call('HGET', K.jobBase .. id, 'st')
  held = st ~= false and st ~= 'c' and st ~= 'f'
end
redis.call('HDEL', K.dedup, dd)
redis.call('ZREM', K.dedupx, dd)
return held and 1 or 0
