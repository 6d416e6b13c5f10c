-- migrateDedup: moves BullMQ 6's live deduplication keys (`de:<id>` strings holding the job id,
-- PX = the throttle time left) into echomq's dedup hash and dedupx zset in one atomic call
-- (docs/protocol.md "Moving a BullMQ queue"). The time left is kept on the Redis clock.
-- KEYS: meta, dedup, dedupx, bullBase
-- ARGV: [1] '1' dry run (nothing written), '0' move, [2..] deduplication ids (at most 500)
-- Returns: {moved, id1, code1, …}: a pair per id refused: -20 echomq holds this deduplication
--   id already, -25 a keepLastIfActive next job waits for it (`dn:<id>`, not carried). Ids
--   whose key is gone are skipped.
-- Errors: -20, -25 (per id, as above).
-- Events: none.
--!include lib/common.lua

local ID_TAKEN, NOT_CARRIED = -20, -25
local now = nowMs()
local reply = { 0 }
for i = 2, #ARGV do
  local dd = ARGV[i]
  local dk = K.bullBase .. 'de:' .. dd
  local holder = redis.call('GET', dk)
  if holder then
    if redis.call('EXISTS', K.bullBase .. 'dn:' .. dd) == 1 then
      reply[#reply + 1], reply[#reply + 2] = dd, NOT_CARRIED
    elseif redis.call('HEXISTS', K.dedup, dd) == 1 then
      reply[#reply + 1], reply[#reply + 2] = dd, ID_TAKEN
    else
      if ARGV[1] ~= '1' then
        local ttl = redis.call('PTTL', dk)
        redis.call('HSET', K.dedup, dd, holder)
        if ttl > 0 then redis.call('ZADD', K.dedupx, now + ttl, dd) end
        redis.call('DEL', dk)
      end
      reply[1] = reply[1] + 1
    end
  end
end
if reply[1] > 0 and ARGV[1] ~= '1' then stampLayout() end
return reply
