-- migrateBackMeta: carries an echomq queue's settings and id counter into BullMQ 6's meta hash
-- and `id` key (docs/protocol.md "Moving back to BullMQ"): paused, global concurrency, global
-- rate limit; BullMQ's `id` counter is raised to echomq's generated-id counter (never lowered),
-- so ids BullMQ generates from now on are above every id echomq handed out. A paused echomq
-- queue pauses the BullMQ queue; a BullMQ queue is never resumed by it. echomq's meta is left.
-- KEYS: meta, bullBase
-- ARGV: [1] '1' dry run (nothing written), '0' move
-- Returns: {paused ('1'/'0'), concurrency ('' = none), rate max ('' = none), rate duration ms,
--   BullMQ's id counter after the call (in a dry run: as it would be)}.
-- Errors: none.
-- Events: none.
--!include lib/common.lua

local m = redis.call('HMGET', K.meta, 'paused', 'conc', 'rlmax', 'rldur', 'id')
local idKey = K.bullBase .. 'id'
local bullId = tonumber(redis.call('GET', idKey) or '0') or 0
local ours = tonumber(m[5] or '0') or 0
if ours > bullId then bullId = ours end
local paused = m[1] == '1' and '1' or '0'
-- BullMQ's meta field names, kept out of echomq's field table (they name BullMQ's hash).
local BULL_META = { paused = 'paused', conc = 'concurrency', max = 'max', dur = 'duration' }
if ARGV[1] ~= '1' then
  local mk = K.bullBase .. 'meta'
  if paused == '1' then redis.call('HSET', mk, BULL_META.paused, '1') end
  if m[2] then redis.call('HSET', mk, BULL_META.conc, m[2]) end
  if m[3] and m[4] then redis.call('HSET', mk, BULL_META.max, m[3], BULL_META.dur, m[4]) end
  if ours > 0 then redis.call('SET', idKey, string.format('%d', bullId)) end
end
return { paused, m[2] or '', m[3] or '', m[4] or '', string.format('%d', bullId) }
