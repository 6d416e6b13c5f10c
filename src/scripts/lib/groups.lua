-- Group defaults (BullMQ Pro's Worker option group: { concurrency, limit }): the concurrency
-- limit and rate limit of every lane that has none of its own, except the default lane (jobs
-- without a group). Stored in meta gconc ("n") and grate ("max:durationMs"); while either is
-- set, lcfg also holds the member '' (never a lane name), so the SCARD that laneHasCfg reads
-- anyway tells a queue without defaults apart at no cost on the claim path. A lane's own
-- setting (llimit, lrate) wins. laneServiceable (a lane entering the ring) reads the defaults
-- with one HMGET per script call, and only for a lane other than the default lane that has no
-- limit of its own.
local groupDef

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_groups()
  groupDef = nil
end

-- Takes the defaults from a meta read the caller made anyway (lib/claim.lua readMeta).
local function noteGroupDefaults(conc, rate)
  groupDef = (conc or rate) and { lim = conc, rate = rate } or false
end

-- The defaults as { lim = string|false, rate = string|false }, or false; read once per call.
local function groupDefaults()
  if groupDef == nil then
    local r = redis.call('HMGET', K.meta, 'gconc', 'grate')
    noteGroupDefaults(r[1], r[2])
  end
  return groupDef
end

-- The lane's concurrency limit (string) or nil: its own, else the group default.
local function laneLimitOf(lane)
  local own = redis.call('HGET', K.llimit, lane)
  if own or lane == DEFAULT_LANE then return own end
  local d = groupDefaults()
  return d and d.lim or nil
end

-- The lane's rate ("max:durationMs") or nil: its own, else the group default.
local function laneRateOf(lane)
  local own = redis.call('HGET', K.lrate, lane)
  if own or lane == DEFAULT_LANE then return own end
  local d = groupDefaults()
  return d and d.rate or nil
end
