-- migrateDedup: moves BullMQ 6's live deduplication keys (`de:<id>` strings holding the job id,
-- PX = the throttle time left) into echomq's dedup hash and dedupx zset in one atomic call
-- (docs/protocol.md "Moving a BullMQ queue"). The time left is kept on the Redis clock. A
-- keepLastIfActive next job (`dn:<id>`: the job to add once the holder finishes) becomes
-- echomq's follower of the holder (waiting-children with `dka`, the holder's `dkn`), so it runs
-- when the holder finishes, as BullMQ would add it then; it moves once its holder is in echomq.
-- KEYS: meta, ring, inring, lone, lanes, lweight, llimit, lactive, lpaused, lrate, rlwait, lcfg, delayed, wchildren, events, wake, laneBase, jobBase, dedup, dedupx, bullBase
-- ARGV: [1] '1' dry run (nothing written), '0' move, [2..] deduplication ids (at most 500)
-- Returns: {moved, id1, code1, …}: a pair per id refused: -20 echomq holds this deduplication
--   id already (or the next job's id), -21 a next job waits for a holder still in BullMQ (run
--   again once it moved), -25 a next job with a flow parent (not carried). Ids whose key is
--   gone are skipped.
-- Errors: -20, -21, -25 (per id, as above).
-- Events: added and waiting-children for a next job made a follower.
--!include lib/common.lua
--!include lib/lanes.lua
--!include lib/newjob.lua
--!include lib/bullmq.lua

local ID_TAKEN, LOCKED, NOT_CARRIED = -20, -21, -25
local dry = ARGV[1] == '1'
local now = nowMs()
local reply = { 0 }

-- The next job of a keepLastIfActive id as echomq's follower of holder; nil or a code.
local function follow(dd, holder, nk)
  local f = hashTable(nk) or {}
  if f.pk then return NOT_CARRIED end
  local hk = K.jobBase .. holder
  local st = redis.call('HGET', hk, 'st')
  if not st then return LOCKED end
  if f.jid and redis.call('EXISTS', K.jobBase .. f.jid) == 1 then return ID_TAKEN end
  if dry then return nil end
  local id = f.jid or string.format('%d', redis.call('HINCRBY', K.meta, 'id', 1))
  local t = translateOpts(f.opts)
  local delay, prio = 0, 0
  local ok, o = pcall(cjson.decode, f.opts or '{}')
  if ok and type(o) == 'table' then
    if type(o.delay) == 'number' then delay = o.delay end
    if type(o.priority) == 'number' then prio = math.min(o.priority, PRIO_MAX) end
  end
  local finished = st == 'c' or st == 'f'
  local extra = f.rjk and { 'sid', f.rjk } or nil
  if not finished then
    extra = extra or {}
    extra[#extra + 1], extra[#extra + 2] = 'dka', holder
  end
  local placed = createJob({ id = id, name = f.name or '', data = f.data or '{}', opts = t.opts, prio = prio,
    lane = DEFAULT_LANE, delay = delay, lifo = t.lifo, kc = t.kc, ka = t.ka, kfc = t.kfc, kfa = t.kfa,
    extra = extra, held = finished and 0 or 1 }, now)
  if placed == 'w' then wake() end
  if not finished then redis.call('HSET', hk, 'dkn', id) end
  redis.call('HSET', K.dedup, dd, id)
  redis.call('ZREM', K.dedupx, dd)
  redis.call('DEL', nk, K.bullBase .. 'de:' .. dd)
  return nil
end

for i = 2, #ARGV do
  local dd = ARGV[i]
  local dk = K.bullBase .. 'de:' .. dd
  local holder = redis.call('GET', dk)
  if holder then
    local nk = K.bullBase .. 'dn:' .. dd
    local code
    if redis.call('HEXISTS', K.dedup, dd) == 1 then
      code = ID_TAKEN
    elseif redis.call('EXISTS', nk) == 1 then
      code = follow(dd, holder, nk)
    elseif not dry then
      local ttl = redis.call('PTTL', dk)
      redis.call('HSET', K.dedup, dd, holder)
      if ttl > 0 then redis.call('ZADD', K.dedupx, now + ttl, dd) end
      redis.call('DEL', dk)
    end
    if code then
      reply[#reply + 1], reply[#reply + 2] = dd, code
    else
      reply[1] = reply[1] + 1
    end
  end
end
if reply[1] > 0 and not dry then stampLayout() end
return reply
