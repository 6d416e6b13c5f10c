-- upgradeLayout: moves a queue stored in layout version 1 to layout version 2 in one atomic call
-- (docs/protocol.md "Versions"). Layout 2 differs from 1 only by the active set's sentinel
-- (lib/common.lua ACTIVE_SENTINEL): it is added when the active key exists, and meta lv is set
-- to 2. A queue without an active key needs no member: its first claim writes the sentinel with
-- the leases, so the upgraded queue is key for key what layout 2 would have written.
-- KEYS: meta, active
-- ARGV: [1] '1' to upgrade, '0' to only report the stored version (nothing is written)
-- Returns: the stored layout version before the call: 1 (upgraded now, or would be with '0'),
--   2 (already layout 2: nothing to do), 0 (no version stored: a new queue, nothing to do).
-- Errors: -13 the stored version is another (no upgrade from it to layout 2; nothing is written).
-- Events: none.
--!include lib/common.lua

local FROM = '1' -- the layout version this upgrade starts from; LAYOUT_VERSION is where it ends
local stored = redis.call('HGET', K.meta, 'lv')
if not stored then return 0 end
if stored == LAYOUT_VERSION then return tonumber(LAYOUT_VERSION) end
if stored ~= FROM then return -13 end
if ARGV[1] == '1' then
  if redis.call('EXISTS', K.active) == 1 then redis.call('ZADD', K.active, '+inf', ACTIVE_SENTINEL) end
  redis.call('HSET', K.meta, 'lv', LAYOUT_VERSION)
end
return tonumber(FROM)
