-- migrateBackDedup: moves echomq's live deduplication ids (dedup hash field → holder job id,
-- dedupx score = throttle end) into BullMQ 6's `de:<id>` keys (the job id, PX = the throttle time
-- left) in one atomic call (docs/protocol.md "Moving back to BullMQ"), after the jobs moved:
-- the holder's BullMQ hash gets `deid`, so BullMQ releases a simple-mode id when the job
-- finishes. An id whose throttle has ended, or whose simple-mode holder has finished or is
-- gone, is free and is left to echomq's sweep.
-- KEYS: jobBase, dedup, dedupx, bullBase
-- ARGV: [1] '1' dry run (nothing written), '0' move, [2..] deduplication ids (at most 500)
-- Returns: {moved, id1, code1, …}: a pair per id refused: -20 BullMQ holds this deduplication id
--   already, -21 its simple-mode holder is still in echomq (run again once it moved).
-- Errors: -20, -21 (per id, as above).
-- Events: none.
--!include lib/common.lua

local ID_TAKEN, LOCKED = -20, -21
local dry = ARGV[1] == '1'
local now = nowMs()
local reply = { 0 }
-- BullMQ's job hash fields read and written here (BullMQ's hash, not echomq's field table).
local B = { deid = 'deid', finishedOn = 'finishedOn' }

for i = 2, #ARGV do
  local dd = ARGV[i]
  local holder = redis.call('HGET', K.dedup, dd)
  local code, ttl
  if holder then
    local untilMs = redis.call('ZSCORE', K.dedupx, dd)
    local bk = K.bullBase .. holder
    if untilMs then
      ttl = math.floor(tonumber(untilMs) - now)
      if ttl <= 0 then holder = nil end
    elseif redis.call('EXISTS', K.jobBase .. holder) == 1 then
      code = LOCKED
    elseif redis.call('EXISTS', bk) == 0 or redis.call('HEXISTS', bk, B.finishedOn) == 1 then
      holder = nil
    end
    if holder and not code and redis.call('EXISTS', K.bullBase .. 'de:' .. dd) == 1 then code = ID_TAKEN end
    if code then
      reply[#reply + 1], reply[#reply + 2] = dd, code
    elseif holder then
      if not dry then
        if ttl then
          redis.call('SET', K.bullBase .. 'de:' .. dd, holder, 'PX', ttl)
        else
          redis.call('SET', K.bullBase .. 'de:' .. dd, holder)
        end
        if redis.call('EXISTS', bk) == 1 then redis.call('HSET', bk, B.deid, dd) end
        redis.call('HDEL', K.dedup, dd)
        redis.call('ZREM', K.dedupx, dd)
      end
      reply[1] = reply[1] + 1
    end
  end
end
return reply
