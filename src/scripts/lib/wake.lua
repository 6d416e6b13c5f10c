-- Waking blocked workers, and the delayed set whose earliest due time they sleep until.
-- Wakes one blocked worker (the wake list holds at most one token; the claim that takes it
-- passes it on while work remains).
local function wake()
  if redis.call('LLEN', K.wake) == 0 then redis.call('RPUSH', K.wake, '1') end
end

-- Puts a job into the delayed set, due at the given Redis time (ms). meta dly tells the claim
-- that there may be delayed jobs to promote (it skips the check otherwise, one call saved per
-- claim). A blocked worker sleeps until the earliest due time it knew of: wake one if this job
-- is due sooner, so it recomputes its timeout.
--
-- Jobs due in the same millisecond are promoted in the order they were scheduled (BullMQ's
-- FIFO), not by id text: the score is due + k/1024, k one more than the last job of that
-- millisecond (k capped at 1023; ties past that fall back to id order). Exact in a double until
-- 2^42 ms (year 2109). Readers treat the score as ms: ZRANGEBYSCORE -inf now promotes a job
-- of millisecond `due` from due + 1 at the latest, and a count "due before t" is unchanged.
local DELAY_STEP = 1 / 1024
local function scheduleDelayed(id, due)
  local last = redis.call('ZRANGE', K.delayed, '(' .. (due + 1), due, 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  local score = due
  if last[2] then
    score = tonumber(last[2]) + DELAY_STEP
    if score >= due + 1 then score = tonumber(last[2]) end
  end
  redis.call('ZADD', K.delayed, score, id)
  redis.call('HSET', K.meta, 'dly', '1')
  if redis.call('ZRANGE', K.delayed, 0, 0)[1] == id then wake() end
end
