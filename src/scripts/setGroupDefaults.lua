-- setGroupDefaults: stores BullMQ Pro's Worker option group ({ concurrency, limit }): the
-- concurrency limit and rate limit of every lane without its own, except the default lane
-- (lib/groups.lua). Lanes already in the ring above a new limit leave it at their next claim
-- turn; lanes held by a lower old limit come back as their active jobs finish.
-- KEYS: meta, lcfg, events
-- ARGV: [1] concurrency (integer >= 1; '' none), [2] rate ("max:durationMs"; '' none)
-- Returns: 1.
-- Errors: none (validated by the caller).
-- Events: none.
local conc, rate = ARGV[1], ARGV[2]
if conc == '' then redis.call('HDEL', K.meta, 'gconc') else redis.call('HSET', K.meta, 'gconc', conc) end
if rate == '' then redis.call('HDEL', K.meta, 'grate') else redis.call('HSET', K.meta, 'grate', rate) end
-- lcfg's member '' tells the claim that defaults exist (lib/groups.lua).
if conc ~= '' or rate ~= '' then redis.call('SADD', K.lcfg, '') else redis.call('SREM', K.lcfg, '') end
return 1
