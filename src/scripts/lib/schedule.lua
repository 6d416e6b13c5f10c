-- Job schedulers (docs/schedulers-and-flows.md). Needs lib/common.lua, lib/lanes.lua,
-- lib/newjob.lua and K.scheds, K.schedBase.
--
-- A scheduler is the hash sched:<id> and a member of the scheds zset scored by its next slot.
-- Fields: every (ms) or pattern + tz (cron; tz is kept, and ignored, with every); anchor (ms,
--   every only: slots are anchor + k*every); off (BullMQ's offset as given, '' = none: the
--   anchor is then startDate or the time of the upsert);
--   start, end (ms, '' = none), limit ('' = none); cnt (jobs made in the current series);
--   next (slot of the newest job, ms); ver (bumped whenever the schedule changes, which starts
--   a new series); the job template: name, data, opts, prio, lane, lifo, kc, ka, kfc, kfa.
-- The job of slot t has the id 'repeat:<scheduler id>:<t>' (t in ms, decimal). The id
-- decides everything: a slot can get at most one job, whoever asks and however often.

-- Slot times are written with msString (lib/common.lua): tostring would print large numbers
-- in exponent form.

local function slotJobId(sid, slot)
  return 'repeat:' .. sid .. ':' .. msString(slot)
end

-- The first slot of an `every` schedule at or after t.
local function everySlotAtOrAfter(anchor, every, t)
  if t <= anchor then return anchor end
  return anchor + math.ceil((t - anchor) / every) * every
end

-- Whether the scheduler may still make a job for this slot (endDate, limit).
local function slotAllowed(sk, slot)
  local endDate, limit, made = unpack(redis.call('HMGET', sk, 'end', 'limit', 'cnt'), 1, 3)
  if endDate and endDate ~= '' and slot > tonumber(endDate) then return false end
  if limit and limit ~= '' and tonumber(made or '0') >= tonumber(limit) then return false end
  return true
end

local function dropScheduler(sid)
  redis.call('DEL', K.schedBase .. sid)
  redis.call('ZREM', K.scheds, sid)
end

-- Makes the job of a slot, due at the slot (ready now if the slot has passed), unless a job
-- with its id exists; then records the slot as the scheduler's next. Returns the job id and
-- whether it was created.
local function makeSlotJob(sid, slot, now)
  local sk = K.schedBase .. sid
  local id = slotJobId(sid, slot)
  local created = false
  if redis.call('EXISTS', K.jobBase .. id) == 0 then
    local t = redis.call('HMGET', sk, 'name', 'data', 'opts', 'prio', 'lane', 'lifo', 'kc', 'ka', 'kfc', 'kfa')
    local delay = slot - now
    if delay < 0 then delay = 0 end
    local placed = createJob({ id = id, name = t[1], data = t[2], opts = t[3], prio = tonumber(t[4]),
      lane = t[5], delay = delay, lifo = t[6], kc = t[7], ka = t[8], kfc = t[9], kfa = t[10],
      extra = { 'sid', sid }, held = 0 }, now)
    if placed == 'w' then wake() end
    redis.call('HINCRBY', sk, 'cnt', 1)
    created = true
  end
  redis.call('HSET', sk, 'next', msString(slot))
  redis.call('ZADD', K.scheds, slot, sid)
  return id, created
end
