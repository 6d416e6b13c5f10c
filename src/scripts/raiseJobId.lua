-- raiseJobId: raises the queue's generated-id counter (meta id) to at least the given value,
-- so that ids generated from now on are above every id another store handed out (the move from
-- BullMQ raises it to BullMQ's `id` counter: a moved job keeps its id). Never lowers it. Not
-- an add: the guard of add.lua against decimal custom ids does not apply.
-- KEYS: meta
-- ARGV: [1] the lowest counter value wanted (decimal integer >= 0)
-- Returns: the counter after the call.
-- Errors: none.
-- Events: none.
--!include lib/common.lua

local want = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', K.meta, 'id') or '0')
if want > cur then
  redis.call('HSET', K.meta, 'id', string.format('%d', want))
  stampLayout()
  return want
end
return cur
