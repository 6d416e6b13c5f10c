-- One-job lanes (docs/internals.md#one-job-lanes): a lane with a single ready job keeps it in
-- its `lone` field instead of a sorted set of its own; and the wide field that keeps the hashes
-- written many fields at a time (lone, lactive) as hashtables.
-- Hashes read and written many fields at a time (lactive, lone). Redis keeps a small hash as a
-- listpack, where each field costs a scan of the whole hash: with a lane per user and
-- concurrency 50 that is ~100 lanes, and one HMGET and one HSET of lactive took 20-30 µs per
-- call. A field whose value is longer than hash-max-listpack-value (64 bytes by default) makes
-- Redis keep the hash as a hashtable (O(1) per field) for as long as the key lives, so a write
-- of many fields adds this one (never a lane: lane names are not empty). dropFields deletes the
-- key once only this field is left, so an idle queue keeps neither key.
local WIDE_FIELD = ''
-- (A literal: the standard libraries are not reachable while FUNCTION LOAD runs a library's top level.)
local WIDE_VALUE = '------------------------------------------------------------------------'
local WIDE_AT = 16 -- fields in one write from which the wide field is added

-- HDEL of some fields; the key goes when only the wide field is left. Returns whether it is gone.
local function dropFields(key, ...)
  redis.call('HDEL', key, ...)
  local left = redis.call('HLEN', key)
  if left == 1 and redis.call('HEXISTS', key, WIDE_FIELD) == 1 then
    redis.call('DEL', key)
    return true
  end
  return left == 0
end

-- One-job lanes. A multi-lane add (a lane per user) that puts a single job into an empty plain
-- lane (no settings, not paused) writes the job into the lone hash (lane → "<prio>:<member>")
-- instead of creating the lane's sorted set, and puts the lane on the ring without adding it to
-- inring: one HSET, one RPUSH and the registry ZADD for a whole call, where a sorted set per lane
-- costs a command and a key each. The claim serves such a lane from the field (one HMGET per
-- pass) and deletes it (one HDEL per pass). A lane holds its ready jobs in the lone field or in
-- its sorted set, never both: anything else that gives the lane jobs, or changes how it is
-- served, first moves the job into a sorted set (materializeLane), after which the lane is an
-- ordinary lane in the same ring position.

-- Whether the lone hash may hold fields. meta lone is set with every write of lone and cleared
-- when the hash is gone, so a claim reads it with the meta fields it reads anyway (noteLoneHint)
-- and a queue without one-job lanes pays no command for them; other calls read it once.
local loneSeen -- nil: not read in this call yet
local function anyLone()
  if loneSeen == nil then loneSeen = redis.call('HGET', K.meta, 'lone') == '1' end
  return loneSeen
end
local function noteLoneHint(v)
  if loneSeen == nil then loneSeen = v == '1' end
end

-- Deletes lone fields; the hint goes with the hash.
local function dropLone(...)
  if dropFields(K.lone, ...) then redis.call('HDEL', K.meta, 'lone') end
end

-- The lane's lone field ("<prio>:<member>"), or nil.
local function loneOf(lane)
  if not anyLone() then return nil end
  return redis.call('HGET', K.lone, lane) or nil
end

-- Writes lone fields (flat lane, value list).
local function writeLone(flat)
  if #flat >= 2 * WIDE_AT then
    flat[#flat + 1] = WIDE_FIELD
    flat[#flat + 1] = WIDE_VALUE
  end
  redis.call('HSET', K.lone, unpack(flat))
  redis.call('HSET', K.meta, 'lone', '1')
  loneSeen = true
end

-- Moves a one-job lane's job (its lone field v) into the lane's sorted set; the lane keeps its
-- ring position and is now recorded in inring.
local function materializeLone(lane, v)
  local prio, member = parseLone(v)
  redis.call('ZADD', K.laneBase .. lane, prio, member)
  dropLone(lane)
  redis.call('SADD', K.inring, lane)
end

-- materializeLone for a lane that may be a one-job lane; returns whether it was one.
local function materializeLane(lane)
  local v = loneOf(lane)
  if not v then return false end
  materializeLone(lane, v)
  return true
end

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_lone()
  loneSeen = nil
end
