-- migrateScheduler: moves one BullMQ 6 job scheduler (its `repeat` zset entry and
-- `repeat:<id>` hash) into echomq's scheds zset and sched:<id> hash in one atomic call
-- (docs/protocol.md "Moving a BullMQ queue"). The schedule, its template (BullMQ's short option
-- names translated) and its count carry over; the next slot is BullMQ's, whose job
-- `repeat:<id>:<ms>` migrateJobs moves as that delayed (or waiting) job, so the scheduler goes
-- on from it: no slot skipped, none run twice. A repeatable job of BullMQ 5 (a `repeat:<key>`
-- hash without `ic`) becomes a scheduler of the same id, its template read from its next job.
-- KEYS: meta, scheds, schedBase, bullBase
-- ARGV: [1] scheduler id, [2] '1' dry run (nothing written), '0' move
-- Returns: 1 moved (or would move), 0 BullMQ has no such scheduler, -20 echomq has a
--   scheduler with this id, -25 a repeatable job of BullMQ before 5.10 or so (a member without a
--   repeat:<id> hash: its jobs' ids are digests of the member, not carried).
-- Errors: -20, -25 (as above; nothing is written).
-- Events: none.
--!include lib/common.lua
--!include lib/bullmq.lua

local sid = ARGV[1]
local zkey = K.bullBase .. 'repeat'
local nextSlot = redis.call('ZSCORE', zkey, sid)
if not nextSlot then return 0 end
local f = hashTable(zkey .. ':' .. sid)
if not f then return -25 end
if redis.call('EXISTS', K.schedBase .. sid) == 1 then return -20 end
if ARGV[2] == '1' then return 1 end
local nxt = string.format('%d', tonumber(nextSlot))
if not f.ic then
  -- A repeatable job of BullMQ 5 (its hash holds the schedule only: name, every or pattern,
  -- tz, endDate). The template, count, limit and start are in its next job's opts.repeat.
  local job = readBullJob('repeat:' .. sid .. ':' .. nxt)
  f.ic = '1'
  if job then
    f.name, f.data = job.name or f.name, job.data
    local ok, o = pcall(cjson.decode, job.opts or '{}')
    if ok and type(o) == 'table' then
      local r = type(o['repeat']) == 'table' and o['repeat'] or {}
      if type(r.count) == 'number' then f.ic = string.format('%d', r.count) end
      if type(r.limit) == 'number' then f.limit = string.format('%d', r.limit) end
      if type(r.startDate) == 'number' then f.startDate = string.format('%d', r.startDate) end
      for _, k in ipairs({ 'repeat', 'jobId', 'delay', 'timestamp', 'prevMillis', 'repeatJobKey' }) do o[k] = nil end
      f.opts = cjson.encode(o)
    end
  end
end
local t = translateOpts(f.opts)
local prio = 0
if f.opts then
  local ok, o = pcall(cjson.decode, f.opts)
  if ok and type(o) == 'table' and type(o.priority) == 'number' then prio = o.priority end
end
local h = { 'ver', '1', 'next', nxt, 'cnt', intOf(f.ic) or '1',
  'every', f.every or '', 'pattern', f.pattern or '', 'tz', f.tz or '',
  'start', intOf(f.startDate) or '', 'end', intOf(f.endDate) or '', 'limit', intOf(f.limit) or '',
  'off', intOf(f.offset) or '' }
-- every: slots are anchor + k * every; BullMQ's next slot is one of them.
if f.every and f.every ~= '' then h[#h + 1], h[#h + 2] = 'anchor', nxt end
-- The template as upsertScheduler writes it: every field present ('' = default).
local tpl = { 'name', f.name or '', 'data', f.data or '{}', 'opts', t.opts, 'prio', string.format('%d', prio),
  'lane', t.lane or DEFAULT_LANE, 'lifo', t.lifo, 'kc', t.kc, 'ka', t.ka, 'kfc', t.kfc, 'kfa', t.kfa }
for i = 1, #tpl do h[#h + 1] = tpl[i] end
redis.call('HSET', K.schedBase .. sid, unpack(h))
redis.call('ZADD', K.scheds, nxt, sid)
redis.call('DEL', zkey .. ':' .. sid)
redis.call('ZREM', zkey, sid)
stampLayout()
return 1
