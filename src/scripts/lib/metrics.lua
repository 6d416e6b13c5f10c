-- Per-minute counts of finished jobs, BullMQ's metrics layout, written only by workers started
-- with `metrics: { maxDataPoints }` (so a queue without them pays nothing). The hash at dataKey's
-- side holds `count` (jobs ever counted), `prevTS` (ms of the last minute boundary crossed) and
-- `prevCount` (count at that time); the list holds one number per minute, newest first: the jobs
-- finished in that minute (0 for minutes without any), trimmed to maxDataPoints.
local function countFinished(hashKey, listKey, maxPoints, now, n)
  -- Jobs counted before this call: they belong to the minutes before `now`.
  local before = redis.call('HINCRBY', hashKey, 'count', n) - n
  local prevTS = redis.call('HGET', hashKey, 'prevTS')
  if not prevTS then
    redis.call('HSET', hashKey, 'prevTS', now, 'prevCount', 0)
    return
  end
  local minutes = math.floor(now / 60000) - math.floor(tonumber(prevTS) / 60000)
  if minutes <= 0 then return end
  if minutes > maxPoints then minutes = maxPoints end
  local finished = before - tonumber(redis.call('HGET', hashKey, 'prevCount') or '0')
  -- The minute of the previous boundary gets the jobs counted since; the minutes between it and
  -- now had none. Pushed oldest first, so the newest ends at the head.
  redis.call('LPUSH', listKey, finished)
  local zeros = {}
  for i = 2, minutes do zeros[#zeros + 1] = 0 end
  for i = 1, #zeros, 1000 do redis.call('LPUSH', listKey, unpack(zeros, i, math.min(i + 999, #zeros))) end
  redis.call('LTRIM', listKey, 0, maxPoints - 1)
  redis.call('HSET', hashKey, 'prevCount', before, 'prevTS', now)
end
