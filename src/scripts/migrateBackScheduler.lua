-- migrateBackScheduler: moves one echomq job scheduler (its scheds entry and sched:<id> hash)
-- into BullMQ 6's `repeat` zset and `repeat:<id>` hash in one atomic call (docs/protocol.md
-- "Moving back to BullMQ"). The schedule, its template (option names as BullMQ stores them, the
-- lane as the option `lane`) and its count carry over; BullMQ's next slot is echomq's, whose job
-- `repeat:<id>:<ms>` migrateBackJobs moves afterwards (reading the schedule from the hash
-- written here for the job's `opts.repeat`), so BullMQ's workers go on from it: no slot
-- skipped, none run twice.
-- KEYS: meta, scheds, schedBase, bullBase
-- ARGV: [1] scheduler id, [2] '1' dry run (nothing written), '0' move, [3] echomq key prefix,
--   [4] BullMQ key prefix
-- Returns: 1 moved (or would move), 0 echomq has no such scheduler, -20 BullMQ has a
--   scheduler with this id.
-- Errors: -20 (as above; nothing is written).
-- Events: none.
--!include lib/common.lua
--!include lib/bullmq.lua
--!include lib/bullmq-back.lua

local sid = ARGV[1]
setMove(ARGV[3], ARGV[4], '[]')
local nextSlot = redis.call('ZSCORE', K.scheds, sid)
if not nextSlot then return 0 end
local zkey = K.bullBase .. 'repeat'
if redis.call('ZSCORE', zkey, sid) or redis.call('EXISTS', zkey .. ':' .. sid) == 1 then return -20 end
if ARGV[2] == '1' then return 1 end
local f = hashTable(K.schedBase .. sid) or {}
-- BullMQ's scheduler hash field names (BullMQ's hash, not echomq's field table).
local B = { name = 'name', every = 'every', pattern = 'pattern', tz = 'tz', startDate = 'startDate', endDate = 'endDate',
  limit = 'limit', offset = 'offset', ic = 'ic', data = 'data', opts = 'opts' }
local h = { B.name, f.name or '', B.ic, f.cnt or '1' }
local function put(field, v)
  if v and v ~= '' then h[#h + 1], h[#h + 2] = field, v end
end
if f.every and f.every ~= '' then put(B.every, f.every) else put(B.pattern, f.pattern) end
if f.tz and f.tz ~= '' and (not f.every or f.every == '') then put(B.tz, f.tz) end
put(B.startDate, f.start)
put(B.endDate, f['end'])
put(B.limit, f.limit)
put(B.offset, f.off)
if f.data and f.data ~= '{}' then put(B.data, f.data) end
-- The template as a job's options: the job fields that hold options are the template's.
local o = bullOpts({ opts = f.opts, prio = f.prio, lane = f.lane, lifo = f.lifo, kc = f.kc, ka = f.ka, kfc = f.kfc, kfa = f.kfa })
if o ~= '{}' then put(B.opts, o) end
redis.call('HSET', zkey .. ':' .. sid, unpack(h))
redis.call('ZADD', zkey, string.format('%d', tonumber(nextSlot)), sid)
redis.call('DEL', K.schedBase .. sid)
redis.call('ZREM', K.scheds, sid)
return 1
