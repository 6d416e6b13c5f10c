-- migrateDeps: moves a bounded part of a BullMQ 6 flow parent's finished children (its
-- `<id>:processed`, `<id>:failed` and `<id>:unsuccessful` records) into echomq's deps:<id>
-- hash ahead of the parent itself, for a parent with more children than one migrateJobs call
-- moves (docs/protocol.md "Moving a BullMQ queue"). Each entry leaves BullMQ's record in the
-- call that writes it to echomq's, so steps killed at any point and run again move each entry
-- once; migrateJobs then moves the parent with the rest (its pending children included).
-- KEYS: jobBase, depsBase, bullBase
-- ARGV: [1] the parent's job id, [2] most entries this call moves (1..1000), [3] echomq key
--   prefix, [4] BullMQ key prefix
-- Returns: the entries left in the three records (0: done), or -20 echomq already holds a job
--   with this id (nothing is written).
-- Errors: -20 (as above).
-- Events: none.
--!include lib/common.lua
--!include lib/bullmq.lua

local id, n = ARGV[1], tonumber(ARGV[2])
setMove(ARGV[3], ARGV[4], '[]')
if redis.call('EXISTS', K.jobBase .. id) == 1 then return -20 end
local b = K.bullBase .. id
local pk, fk, uk = b .. ':processed', b .. ':failed', b .. ':unsuccessful'
local entries, gone = {}, 0
for _, rec in ipairs({ { pk, 'c' }, { fk, 'i' } }) do
  if gone < n then
    local page = redis.call('HSCAN', rec[1], 0, 'COUNT', n - gone)[2]
    local fields = {}
    for i = 1, #page, 2 do
      if gone >= n then break end
      entries[#entries + 1], entries[#entries + 2] = childKeyOf(page[i]), rec[2] .. page[i + 1]
      fields[#fields + 1] = page[i]
      gone = gone + 1
    end
    if #fields > 0 then redis.call('HDEL', rec[1], unpack(fields)) end
  end
end
if gone < n then
  local kids = redis.call('ZRANGE', uk, 0, n - gone - 1)
  for _, c in ipairs(kids) do
    local reason = ''
    local q, cid = splitBullKey(c)
    if q and K.bullBase == mv.bull .. ':' .. q .. ':' then reason = redis.call('HGET', K.bullBase .. cid, BULL_FAILED_REASON) or '' end
    entries[#entries + 1], entries[#entries + 2] = childKeyOf(c), 'f' .. reason
  end
  if #kids > 0 then redis.call('ZREM', uk, unpack(kids)) end
end
if #entries > 0 then redis.call('HSET', K.depsBase .. id, unpack(entries)) end
return redis.call('HLEN', pk) + redis.call('HLEN', fk) + redis.call('ZCARD', uk)
