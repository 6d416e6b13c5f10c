-- setGroupDefaults: stores BullMQ Pro's Worker option group ({ concurrency, limit }): the
-- concurrency limit and rate limit of every lane without its own, except the default lane
-- (lib/groups.lua). `group: {}` clears both. Ring membership follows at once: a limit is at
-- least 1, so only a lane with active jobs can change serviceability, and those are the lanes
-- of lactive (at most one per active job), each refreshed. A lane waiting for a rate window
-- (rlwait) comes back when that window passes.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, events, wake, laneBase, lcfg
-- ARGV: [1] concurrency (integer >= 1; '' none), [2] rate ("max:durationMs"; '' none)
-- Returns: 1.
-- Errors: none (validated by the caller).
-- Events: none.
--!include lib/common.lua
--!include lib/lanes.lua

local conc, rate = ARGV[1], ARGV[2]
stampLayout()
if conc == '' then redis.call('HDEL', K.meta, 'gconc') else redis.call('HSET', K.meta, 'gconc', conc) end
if rate == '' then redis.call('HDEL', K.meta, 'grate') else redis.call('HSET', K.meta, 'grate', rate) end
-- lcfg's member '' tells the claim that defaults exist (lib/groups.lua).
if conc ~= '' or rate ~= '' then redis.call('SADD', K.lcfg, '') else redis.call('SREM', K.lcfg, '') end
-- The defaults are read (once) only from here on, so the refresh sees the new ones.
local admitted = false
for _, lane in ipairs(redis.call('HKEYS', K.lactive)) do
  if lane ~= WIDE_FIELD and refreshLane(lane) then admitted = true end
end
if admitted then wake() end
return 1
