-- Shared helpers: clock, events, job members. Included into transition scripts by the
-- loader (`--!include lib/common.lua`); relies on the table K of named keys that the loader
-- builds from the script's `-- KEYS:` header.

-- Redis server clock in milliseconds. Every deadline and due time uses this clock, never the
-- client's, so workers on machines with skewed clocks agree.
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The stored layout version (docs/protocol.md "Versions"; the same number as LAYOUT_VERSION in
-- src/core/layout.ts and the library artifact's layoutVersion, checked by
-- test/layout-version.test.ts). The scripts that create a queue's content stamp it into meta
-- field lv with stampLayout, once per call and only on their success path (after every
-- refusal has returned), so a refused call writes nothing. Clients only read it.
local LAYOUT_VERSION = '2'
local function stampLayout()
  redis.call('HSETNX', K.meta, 'lv', LAYOUT_VERSION)
end

-- The active set's sentinel (docs/protocol.md, key `active`; layout version 2): one permanent
-- member at score +inf, written with the leases. It is longer than zset-max-listpack-value (64
-- bytes), so Redis keeps the set as a skiplist for as long as the key lives, where a listpack
-- of 50 leases costs a scan on every ZADD and ZREM. Never a job: readers stop below +inf.
-- (A literal: the standard libraries are not reachable while FUNCTION LOAD runs the top level.)
local ACTIVE_SENTINEL = '~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~'

-- Jobs in the active set: every member below +inf (the sentinel is not one).
local function activeJobs()
  return redis.call('ZCOUNT', K.active, '-inf', '(+inf')
end

-- Small integers as strings, made once per library load and reused by every call: a Lua number
-- handed to redis.call is formatted with %.14g (printf's float path) each time.
local intMemo = {}
local function intStr(n)
  local s = intMemo[n]
  if not s then
    s = string.format('%d', n)
    if n >= -1000 and n <= 1000 then intMemo[n] = s end
  end
  return s
end

-- now (ms) as an integer string, made once per call for the job hashes it stamps.
local msMemoN, msMemoS
local function msString(ms)
  if ms ~= msMemoN then
    msMemoN, msMemoS = ms, string.format('%d', ms)
  end
  return msMemoS
end

-- Appends an event to the capped events stream (cap: meta field evmax, default 10000;
-- 0 turns events off).
-- evmax is kept as the string read from meta: a Lua number passed to redis.call is formatted
-- with %.14g on every call, which costs more than the XADD's own bookkeeping.
-- The first event of a call trims the stream (MAXLEN ~ evmax); the call's later events are
-- appended without the trim arguments and check, so the stream may pass the cap by one call's
-- events until the next call trims it (the cap is approximate anyway: whole nodes are trimmed).
local evmax
local evTrimmed = false
local function xadd(event, ...)
  if evTrimmed then
    redis.call('XADD', K.events, '*', 'event', event, ...)
  else
    evTrimmed = true
    redis.call('XADD', K.events, 'MAXLEN', '~', evmax, '*', 'event', event, ...)
  end
end

-- Events about many jobs share entries. Consecutive events of one kind and the same shared
-- fields (a constant table, compared by identity) go into one entry: 'event' <kind>, the
-- shared fields, then each job's fields, each job's starting with 'jobId' — up to EVENT_GROUP
-- jobs. Any other event, and the end of the call (finish_common, run by the loader after
-- every transition), writes the pending entry first, so entries keep the order in which the
-- events happened. One XADD per 10 jobs instead of one per job; readers give each job the
-- shared fields, then its own (QueueEvents, metrics.ts readEvents; docs/events.md). 10 keeps an
-- entry small (the cap counts entries) and saves nearly all of the per-job XADD time.
local EVENT_GROUP = 10
-- Shared fields of the completed events of a settle (made once per load, not per call).
local PREV_ACTIVE = { 'prev', 'active' }
local group, groupKind, groupShared, groupJobs, groupFirst
-- The table of the entry written last, emptied: the next entry reuses it (no table per entry).
local groupSpare

local function flushEvents()
  local g = group
  if not g then return end
  group = nil
  xadd(groupKind, unpack(g))
  for i = #g, 1, -1 do g[i] = nil end
  groupSpare = g
end

-- Whether the queue keeps events (cap evmax, read once per call; '0' turns them off).
local function eventsOn()
  if not evmax then evmax = redis.call('HGET', K.meta, 'evmax') or '10000' end
  return evmax ~= '0'
end

local function emit(event, ...)
  if not eventsOn() then return end
  if group then flushEvents() end
  xadd(event, ...)
end

-- The pending entry an event about one job joins, its length, and whether it is new (then it
-- holds only the shared fields); nil when the queue keeps no events.
local function entryFor(event, shared)
  if not eventsOn() then return nil end
  local g = group
  if g and (groupKind ~= event or groupShared ~= shared or groupJobs >= EVENT_GROUP) then
    flushEvents()
    g = nil
  end
  if g then return g, #g, false end
  g = groupSpare or {}
  groupSpare = nil
  for i = 1, #shared do g[i] = shared[i] end
  group, groupKind, groupShared, groupJobs = g, event, shared, 0
  return g, #shared, true
end

-- An event about one job that may share an entry with its neighbours (see above). shared: the
-- event's fields common to all jobs, a table made once; id: the job; f, v: one field of the
-- job's own (optional). Fixed parameters, not varargs: this runs once per claimed and per
-- settled job.
local function emitJob(event, shared, id, f, v)
  local g, n = group, nil
  -- The usual case, the next job of the pending entry, without the calls of entryFor.
  if g and groupKind == event and groupShared == shared and groupJobs < EVENT_GROUP then
    n = #g
  else
    g, n = entryFor(event, shared)
    if not g then return end
  end
  g[n + 1], g[n + 2] = 'jobId', id
  if f then g[n + 3], g[n + 4] = f, v end
  groupJobs = groupJobs + 1
end

-- The same for a shared table with inherit: every job of the event has a name and a lane; the
-- first job's go among the shared fields, and a later job writes only those that differ from
-- them (in a bulk add, names and lanes mostly repeat). The added event of a job made ready.
local function emitJobNamed(event, shared, id, name, lane)
  local g, n = group, nil
  -- The next job of the pending entry without the calls of entryFor, as in emitJob.
  if g and groupKind == event and groupShared == shared and groupJobs < EVENT_GROUP then
    n = #g
  else
    local new
    g, n, new = entryFor(event, shared)
    if not g then return end
    if new then
      groupFirst = { 'name', name, 'lane', lane }
      g[n + 1], g[n + 2], g[n + 3], g[n + 4] = 'name', name, 'lane', lane
      n = n + 4
    end
  end
  g[n + 1], g[n + 2] = 'jobId', id
  n = n + 2
  local first = groupFirst
  if first[2] ~= name then g[n + 1], g[n + 2], n = 'name', name, n + 2 end
  if first[4] ~= lane then g[n + 1], g[n + 2] = 'lane', lane end
  groupJobs = groupJobs + 1
end

-- A job hash leaves out its lane and priority at their defaults (lib/newjob.lua): the
-- default lane and 0. Every reader of those fields goes through these two.
local DEFAULT_LANE = 'default'
local function laneOr(v)
  return v or DEFAULT_LANE
end
local function prioOr(v)
  return tonumber(v or '0')
end

-- Arrival stamp. A ready job's member in its lane set is <14 hex digits><job id>; members of
-- one priority (equal scores) sort by bytes, so the stamp orders a tier. FIFO stamps count up
-- from 2^52, LIFO stamps count down from it, and both stay below 2^53, exact in a double: no
-- wrap for 2^52 arrivals either way.
local STAMP_BASE = 4503599627370496
-- Counter values reserved in blocks by reserveStamps (a bulk add takes them with one HINCRBY
-- per counter instead of one per job; unused ones leave harmless gaps).
local fifoNext, fifoLast, lifoNext, lifoLast = 1, 0, 1, 0

-- Per-call state of this file, reset at the start of every call when the scripts run as a
-- loaded function library (see src/scripts/loader.ts); a fresh EVAL starts clean anyway.
local function reset_common()
  evmax = nil
  evTrimmed = false
  group = nil
  fifoNext, fifoLast, lifoNext, lifoLast = 1, 0, 1, 0
end
-- Run by the loader when a transition's body returns: writes the pending event entry.
local function finish_common()
  flushEvents()
end

-- Reserves n stamps of one kind if none are left in the current block.
local function reserveStamps(lifo, n)
  if n <= 0 then return end
  if lifo then
    if lifoNext > lifoLast then
      lifoLast = redis.call('HINCRBY', K.meta, 'lseq', n)
      lifoNext = lifoLast - n + 1
    end
  elseif fifoNext > fifoLast then
    fifoLast = redis.call('HINCRBY', K.meta, 'seq', n)
    fifoNext = fifoLast - n + 1
  end
end
local function nextStamp(lifo)
  local v
  if lifo then
    if lifoNext <= lifoLast then
      v = lifoNext
      lifoNext = lifoNext + 1
    else
      v = redis.call('HINCRBY', K.meta, 'lseq', 1)
    end
    return string.format('%014x', STAMP_BASE - v)
  end
  if fifoNext <= fifoLast then
    v = fifoNext
    fifoNext = fifoNext + 1
  else
    v = redis.call('HINCRBY', K.meta, 'seq', 1)
  end
  return string.format('%014x', STAMP_BASE + v)
end

-- The job id inside a lane member.
local function memberId(member)
  return string.sub(member, 15)
end

-- Priority (string) and member of a one-job lane's field in the lone hash, "<prio>:<member>"
-- (lib/lanes.lua).
local function parseLone(v)
  return string.match(v, '^(%d+):(.*)$')
end

-- Deletes a job's hash and logs (and a flow parent's deps hash, in scripts that declare
-- depsBase: every script that can delete a parent does).
local function deleteJob(id)
  if K.depsBase then
    redis.call('DEL', K.jobBase .. id, K.logsBase .. id, K.depsBase .. id)
  else
    redis.call('DEL', K.jobBase .. id, K.logsBase .. id)
  end
end

-- Deletes several jobs in one DEL (ids: a flat list; every other element when step is 2, as in
-- a ZPOPMIN reply).
local function deleteJobs(ids, step)
  if #ids == 0 then return end
  local keys = {}
  for i = 1, #ids, step or 1 do
    keys[#keys + 1] = K.jobBase .. ids[i]
    keys[#keys + 1] = K.logsBase .. ids[i]
    if K.depsBase then keys[#keys + 1] = K.depsBase .. ids[i] end
  end
  redis.call('DEL', unpack(keys))
end
