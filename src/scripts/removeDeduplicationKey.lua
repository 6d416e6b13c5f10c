-- removeDeduplicationKey: frees a deduplication id if the given job holds it (BullMQ's
-- Job.removeDeduplicationKey). An id held by another job is left alone.
-- KEYS: dedup, dedupx, jobBase, reqBase
-- ARGV: [1] deduplication id, [2] job id,
--   [3] request id ('' or absent = none; lib/once.lua): a rerun replies the first run's 1
-- Returns: 1 the job held the id and it is free now; 0 the job did not hold it (another job
--   does, or the id was already released: its job finished, or its throttle window ended;
--   a stale entry of this job is cleared then too).
-- Errors: EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window without a
--   record.
-- Events: none.
--!include lib/common.lua
--!include lib/once.lua

-- Applied once (lib/once.lua): a rerun would find the id free and reply 0.
local rec, refused = onceBegin(ARGV[3])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
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
-- Only 1 is recorded: a rerun of a 0 replies 0 again.
if held then onceRecord({ r = 1 }) end
return held and 1 or 0
