-- migrateMeta: carries a BullMQ 6 queue's settings from its meta hash into echomq's
-- (docs/protocol.md "Moving a BullMQ queue"): paused, global concurrency, global rate limit.
-- A paused BullMQ queue pauses the echomq queue; an echomq queue is never resumed by it.
-- BullMQ's meta hash is left in place.
-- KEYS: meta, bullBase
-- ARGV: [1] '1' dry run (nothing written), '0' move
-- Returns: {paused ('1'/'0'), concurrency ('' = none), rate max ('' = none), rate duration ms}
--   as BullMQ's meta holds them.
-- Errors: none.
-- Events: none.
--!include lib/common.lua

-- BullMQ's meta hash is small; read whole, its field names stay out of echomq's field table.
local raw = redis.call('HGETALL', K.bullBase .. 'meta')
local m = {}
for i = 1, #raw, 2 do m[raw[i]] = raw[i + 1] end
local f = { m.paused, m.concurrency, m.max, m.duration }
local paused = (f[1] == '1' or f[1] == 'true') and '1' or '0'
if ARGV[1] ~= '1' then
  if paused == '1' then redis.call('HSET', K.meta, 'paused', '1') end
  if f[2] then redis.call('HSET', K.meta, 'conc', f[2]) end
  if f[3] and f[4] then redis.call('HSET', K.meta, 'rlmax', f[3], 'rldur', f[4]) end
  stampLayout()
end
return { paused, f[2] or '', f[3] or '', f[4] or '' }
