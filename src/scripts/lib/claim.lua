-- The lane-aware claim, shared by claim.lua, complete.lua and fail.lua so that a worker can
-- settle a job and take the next ones in one call.
--
-- Order of a claim for n jobs (claimJobs, at the end of this file, runs the steps):
--  1. queue paused → nothing claimed; due delayed jobs are still promoted (gate).
--  2. promote due delayed jobs and readmit lanes whose rate window reopened (bounded batches).
--  3. gates: global concurrency (meta conc vs the active jobs), global rate (meta rlmax/rldur).
--  4. ring turns (nextRingLane, laneShare, serveTurn, endTurn), taken off the ring in passes
--     (the pass state below); the algorithm and its costs: docs/internals.md#the-claim.
--  5. counters of the call written once (finishClaim).
local PROMOTE_BATCH = 200
-- Shared fields of the active events of claimed jobs (emitJob in lib/common.lua).
local PREV_WAITING = { 'prev', 'waiting' }
local READMIT_BATCH = 100
-- Value of the global rate counter while worker.rateLimit(ms) blocks the queue (2^50).
local RATE_BLOCK = 1125899906842624

-- The meta fields a claim reads, in one HMGET per script call (also sets emit's events cap),
-- and their places in the row: paused, global concurrency, global rate (max, duration ms),
-- the turn in progress (tl lane, tk share left), blk (worker.rateLimit may be blocking), the
-- events cap, dly / rlw (there may be delayed jobs / lanes waiting for their rate window),
-- the Worker's group defaults (lib/groups.lua: read here so they cost no call) and lone (there
-- may be one-job lanes, lib/lanes.lua). The row starts with the wide field (lib/lone.lua),
-- which a claim that took jobs writes once: meta is then a hashtable, where each field read is
-- one lookup instead of a scan of the whole listpack.
local META_FIELDS = { 'paused', 'conc', 'rlmax', 'rldur', 'tl', 'tk', 'blk', 'evmax', 'dly', 'rlw', 'gconc', 'grate', 'lone' }
local M_WIDE = 1
local M_PAUSED, M_CONC, M_RATE_MAX, M_RATE_DUR, M_TURN_LANE, M_TURN_LEFT = 2, 3, 4, 5, 6, 7
local M_BLOCKED, M_EVMAX, M_DELAYED, M_RATE_WAIT, M_GROUP_CONC, M_GROUP_RATE = 8, 9, 10, 11, 12, 13
local M_LONE = 14
local metaRow
-- Manual processing (worker.getNextJob, job.moveToCompleted with fetchNext): the caller's token,
-- stored as the claimed jobs' `tok` field beside the attempt fence `att` (docs/internals.md,
-- tokens). nil for a worker's own claims, which store no owner: their token is `att` itself.
local claimOwner
-- The claiming worker's name (BullMQ's Worker option name), stored as the claimed jobs' `pb`
-- (job.processedBy, as BullMQ stores it); nil for a worker without a name.
local claimName
-- Applied once (lib/once.lua): when a table, activate appends each claimed job's id and new
-- attempt to it, in reply order, so the call can record its (job, attempt) pairs. nil otherwise.
local claimTrack

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_claim()
  metaRow = nil
  claimOwner = nil
  claimName = nil
  claimTrack = nil
end
local function readMeta()
  if not metaRow then
    metaRow = redis.call('HMGET', K.meta, WIDE_FIELD, unpack(META_FIELDS))
    evmax = metaRow[M_EVMAX] or '10000'
    noteGroupDefaults(metaRow[M_GROUP_CONC], metaRow[M_GROUP_RATE])
    noteLoneHint(metaRow[M_LONE])
  end
  return metaRow
end

-- BullMQ's drained: written by a settle (complete, final fail) that claimed nothing next and
-- left nothing ready and nothing active. Two cheap reads, only on that idle edge.
local function emitDrainedIfIdle()
  if tonumber(redis.call('HGET', K.meta, 'ready') or '0') <= 0 and activeJobs() == 0 then
    emit('drained')
  end
end

-- Promotes due delayed jobs. meta dly is set whenever a job enters the delayed set
-- (scheduleDelayed) and cleared here once the set is seen empty, so a queue without delayed jobs
-- pays no call for this.
local function promoteDue(now)
  local ids = redis.call('ZRANGEBYSCORE', K.delayed, '-inf', now, 'LIMIT', 0, PROMOTE_BATCH)
  for _, id in ipairs(ids) do
    redis.call('ZREM', K.delayed, id)
    local jk = K.jobBase .. id
    local lane, prio, lifo, st, delay, addedDelay =
      unpack(redis.call('HMGET', jk, 'lane', 'prio', 'lifo', 'st', 'delay', 'odl'), 1, 6)
    if st then
      local stamp = nextStamp(lifo == '1')
      -- A ready job's delay is 0, as BullMQ's promotion sets it; the delay it was added with
      -- stays in odl (job.opts.delay), as promote.lua keeps it.
      if not addedDelay and delay and delay ~= '0' then redis.call('HSET', jk, 'odl', delay) end
      redis.call('HSET', jk, 'sq', stamp, 'st', 'w', 'delay', '0')
      enterLane(laneOr(lane), prioOr(prio), stamp .. id)
      emit('waiting', 'jobId', id, 'prev', 'delayed')
    end
  end
  if #ids > 0 and #ids < PROMOTE_BATCH and redis.call('ZCARD', K.delayed) == 0 then
    redis.call('HDEL', K.meta, 'dly')
  end
end

-- Readmits lanes whose rate window reopened. meta rlw is set whenever a lane enters rlwait and
-- cleared here once rlwait is seen empty.
local function readmitRateLanes(now)
  local lanes = redis.call('ZRANGEBYSCORE', K.rlwait, '-inf', now, 'LIMIT', 0, READMIT_BATCH)
  for _, lane in ipairs(lanes) do
    redis.call('ZREM', K.rlwait, lane)
    admitLane(lane)
  end
  if #lanes > 0 and #lanes < READMIT_BATCH and redis.call('ZCARD', K.rlwait) == 0 then
    redis.call('HDEL', K.meta, 'rlw')
  end
end

-- Leases of the jobs a claim takes go into the active set with one ZADD per call, in chunks of
-- LEASE_BATCH members (Lua passes at most a few thousand arguments). The first chunk also
-- writes the sentinel (lib/common.lua), ahead of the leases, so a new key is a skiplist from
-- its first member on; once it is there this costs one hash lookup per call.
local LEASE_BATCH = 1000
local claimLeases = {}
-- activeExists: the caller saw the active key exist in this call (complete.lua's ZREM removed
-- a lease), so the key holds the sentinel, which goes only with the key: it is not resent.
local function flushLeases(leases, activeExists)
  for i = 1, #leases, LEASE_BATCH * 2 do
    local last = math.min(i + LEASE_BATCH * 2 - 1, #leases)
    if i == 1 and not activeExists then
      redis.call('ZADD', K.active, '+inf', ACTIVE_SENTINEL, unpack(leases, i, last))
    else
      redis.call('ZADD', K.active, unpack(leases, i, last))
    end
  end
  for i = #leases, 1, -1 do leases[i] = nil end
end

-- Parses "max:durationMs".
local function parseRate(s)
  local m, d = string.match(s, '^(%d+):(%d+)$')
  return tonumber(m), tonumber(d)
end

-- Time (ms) of the next event that can make work ready without a transition waking anyone:
-- the next delayed job, a lane's or the queue's rate window. -1 when there is none. Clears the
-- dly / rlw hints when their set turns out empty (jobs removed, settings changed), so idle
-- claims stay read-only afterwards.
local function nextWakeAt(meta)
  local t = -1
  if meta[M_DELAYED] then
    local due = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')[2]
    if due then t = tonumber(due) else redis.call('HDEL', K.meta, 'dly') end
  end
  if meta[M_RATE_WAIT] then
    local reopens = redis.call('ZRANGE', K.rlwait, 0, 0, 'WITHSCORES')[2]
    if reopens and (t < 0 or tonumber(reopens) < t) then t = tonumber(reopens) end
    if not reopens then redis.call('HDEL', K.meta, 'rlw') end
  end
  return t
end

-- Marks a claimed job active in one write and returns its hash as a flat list for the worker:
-- as written (att = the new fencing token, pOn = the claim time), without the fields a worker
-- does not read (st, which is 'a', and the arrival stamp sq): fewer strings to convert in the
-- reply and to parse in Node. nowStr: the claim time as an integer string. Numbers handed to
-- redis.call are formatted with %.14g each time, so the strings are made here, once, with
-- integer formats.
local function activate(jk, nowStr, id)
  local h = redis.call('HGETALL', jk)
  -- The reply table is compacted in place (w: fields written so far): no second table per job.
  local w, len = 0, #h
  local att = '1'
  local hadOwner = false
  for i = 1, len, 2 do
    local k = h[i]
    if k == 'att' then
      att = intStr(tonumber(h[i + 1]) + 1)
    elseif k == 'tok' then
      hadOwner = true
    elseif k ~= 'st' and k ~= 'sq' and k ~= 'pOn' and not (k == 'pb' and claimName) then
      h[w + 1], h[w + 2] = k, h[i + 1]
      w = w + 2
    end
  end
  for i = len, w + 1, -1 do h[i] = nil end
  local out, n = h, w
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 'att', att, 'pOn', nowStr
  n = n + 4
  if claimTrack then
    local k = #claimTrack
    claimTrack[k + 1], claimTrack[k + 2] = id, att
  end
  -- The worker's name, when it has one, goes with the same write (BullMQ's processedBy).
  if claimName then out[n + 1], out[n + 2], n = 'pb', claimName, n + 2 end
  if claimOwner then
    -- Manual processing: the caller's token names the owner; att stays the fence.
    out[n + 1], out[n + 2] = 'tok', claimOwner
    if claimName then
      redis.call('HSET', jk, 'att', att, 'st', 'a', 'pOn', nowStr, 'tok', claimOwner, 'pb', claimName)
    else
      redis.call('HSET', jk, 'att', att, 'st', 'a', 'pOn', nowStr, 'tok', claimOwner)
    end
    return out
  end
  if claimName then
    redis.call('HSET', jk, 'att', att, 'st', 'a', 'pOn', nowStr, 'pb', claimName)
  else
    redis.call('HSET', jk, 'att', att, 'st', 'a', 'pOn', nowStr)
  end
  -- An owner left from an earlier manual attempt would refuse this attempt's own token.
  if hadOwner then redis.call('HDEL', jk, 'tok') end
  return out
end
-- A pass: the lanes one LPOP took off the ring's head; endPass puts the served ones still
-- serviceable back at the tail (RPUSH), the others out of inring (SREM), the unreached ones back
-- at the head: the order of one rotation per turn at a few commands per pass (docs/internals.md).
local pass, passAt, passLen = nil, 0, 0
local passMoved = false -- the pass is one lane that LMOVE already put at the tail
local passKeep, passGone = {}, {}
-- Lanes of passKeep (their places in it, and their ready-set keys) that a turn served without
-- reading their depth first (see laneShare): whether they still hold jobs is found out at
-- endPass, for all of them with one EXISTS.
local passMaybe, passMaybeKey = {}, {}
-- The lone fields of the pass's lanes (false: an ordinary lane; nil when no lone hash exists)
-- and the one-job lanes the pass served, whose fields endPass deletes with one HDEL.
local passLone, passLoneServed = nil, {}

-- The pass tables are emptied in place when used, so a call that uses none makes none; a call
-- that errored halfway may have left entries, which a new table drops.
local onePass = {} -- the pass of a claim for one job (LMOVE): reused
local function startPasses()
  pass, passAt, passLen, passMoved = nil, 0, 0, false
  if passKeep[1] then passKeep = {} end
  if passGone[1] then passGone = {} end
  if passMaybe[1] then passMaybe, passMaybeKey = {}, {} end
  passLone = nil
  if passLoneServed[1] then passLoneServed = {} end
end

local function clearList(t)
  for i = #t, 1, -1 do t[i] = nil end
end

-- Moves the lanes of passMaybe that turned out empty from passKeep to passGone. One EXISTS
-- over their keys usually settles them all (every lane of one job is empty now, every deep
-- lane is not); a mixed answer costs one EXISTS per lane, as many calls as the ZCARDs saved.
local function settleMaybeEmpty()
  local m = #passMaybe
  if m == 0 then return end
  local left = 0
  for i = 1, m, LANE_CHUNK do
    left = left + redis.call('EXISTS', unpack(passMaybeKey, i, math.min(i + LANE_CHUNK - 1, m)))
  end
  if left < m then
    local empty = {}
    for i = 1, m do
      if left == 0 or redis.call('EXISTS', passMaybeKey[i]) == 0 then empty[passMaybe[i]] = true end
    end
    local keep = {}
    for i, lane in ipairs(passKeep) do
      if empty[i] then passGone[#passGone + 1] = lane else keep[#keep + 1] = lane end
    end
    passKeep = keep
  end
  clearList(passMaybe)
  clearList(passMaybeKey)
end

local function endPass()
  settleMaybeEmpty()
  if passAt < passLen then
    local back = {}
    for i = passLen, passAt + 1, -1 do back[#back + 1] = pass[i] end
    redis.call('LPUSH', K.ring, unpack(back))
  end
  if #passKeep > 0 then redis.call('RPUSH', K.ring, unpack(passKeep)); clearList(passKeep) end
  if #passGone > 0 then redis.call('SREM', K.inring, unpack(passGone)); clearList(passGone) end
  if #passLoneServed > 0 then dropLone(unpack(passLoneServed)); clearList(passLoneServed) end
  passAt, passLen = 0, 0
end

-- The next lane in ring order, for a claim that still wants `want` jobs; nil when the ring is
-- empty. Second value: whether the lane is off the ring list until endPass (false for the lane
-- a claim for one job rotated with LMOVE, which sits at the tail already). Third: the lane's
-- lone field when it is a one-job lane (read for the whole pass with one HMGET).
local function nextRingLane(want)
  if passAt >= passLen then
    if passLen > 0 then endPass() end -- nothing is pending before the first pass
    if want == 1 then
      -- One lane (a claim for one job): LMOVE rotates it to the tail in one command, where it
      -- stays or from where it is evicted, as a pass of one would cost two.
      local one = redis.call('LMOVE', K.ring, K.ring, 'LEFT', 'RIGHT')
      if not one then return nil end
      onePass[1] = one
      pass, passMoved = onePass, true
    else
      pass, passMoved = redis.call('LPOP', K.ring, intStr(want)), false
      if not pass then return nil end
    end
    passLen = #pass
    passLone = anyLone() and redis.call('HMGET', K.lone, unpack(pass)) or nil
  end
  passAt = passAt + 1
  return pass[passAt], not passMoved, passLone and passLone[passAt] or nil
end

-- Step 1, gate: a paused queue gives nothing; due delayed jobs are promoted and lanes whose
-- rate window reopened readmitted; the global concurrency and rate limits cap n. Returns the
-- jobs the claim may take, or 0 and the ms a worker without jobs should block for (-1 none).
local function gate(meta, n, now)
  if n <= 0 then return 0, -1 end
  if meta[M_PAUSED] == '1' then
    -- Paused (BullMQ's rule): due delayed jobs still move to waiting, where they stay until
    -- resume, and an idle worker wakes for the next one. Only on the paused path.
    if not meta[M_DELAYED] then return 0, -1 end
    promoteDue(now)
    local d = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
    if not d[2] then return 0, -1 end
    local t = tonumber(d[2]) - now
    return 0, t < 0 and 0 or t
  end
  if meta[M_DELAYED] then promoteDue(now) end
  if meta[M_RATE_WAIT] then readmitRateLanes(now) end
  if meta[M_CONC] then
    local room = tonumber(meta[M_CONC]) - activeJobs()
    if room < n then n = room end
    if n <= 0 then return 0, -1 end
  end
  local rateMax = meta[M_RATE_MAX] and tonumber(meta[M_RATE_MAX])
  local blocked = meta[M_BLOCKED]
  -- The global rate counter is read only with a limiter, or while worker.rateLimit(ms) may be
  -- blocking the queue (meta blk; the block sets the counter to RATE_BLOCK with PX ms).
  if rateMax or blocked then
    local used = tonumber(redis.call('GET', K.rate) or '0')
    if used >= (rateMax or RATE_BLOCK) then
      local ttl = redis.call('PTTL', K.rate)
      if ttl < 0 then ttl = 0 end
      return 0, ttl
    end
    if blocked and used == 0 then redis.call('HDEL', K.meta, 'blk') end
    if rateMax and rateMax - used < n then n = rateMax - used end
  end
  return n
end

-- One lane's turn, filled by laneShare and updated by serveTurn (one table for every turn).
--   lane, key (its ready set), share (K), depth (ready jobs), limit (-1 none) and active
--   (its active count, read only with a limit), rateKey (nil: no rate limit), rateMax,
--   rateDur, rateUsed.
local turn = {}

-- Step 2, share: K = min(weight, depth, limit headroom, rate headroom); share: the share left
-- of a turn being continued (nil: a new turn, which starts from the lane's weight); alone: the
-- lane is the ring's only one, served `wanted` jobs in one turn. Settings are read only for
-- lanes that have any (lcfg). A plain lane of a pass (offRing) is not measured at all: its K
-- is its weight 1 (or `wanted` when alone), ZPOPMIN takes at most what it holds, and whether
-- it is left empty is settled for the whole pass at endPass (depth nil until then); others
-- cost one ZCARD.
local function laneShare(lane, share, wanted, alone, offRing)
  local limit, active, rateKey, rateMax, rateDur, rateUsed = -1, 0, nil, nil, nil, nil
  local cfg = laneHasCfg(lane)
  if cfg then
    if not share then share = tonumber(redis.call('HGET', K.lweight, lane) or '1') end
    limit = tonumber(laneLimitOf(lane) or '-1')
    if limit >= 0 then active = tonumber(redis.call('HGET', K.lactive, lane) or '0') end
    local rateCfg = laneRateOf(lane)
    if rateCfg then
      rateMax, rateDur = parseRate(rateCfg)
      rateKey = K.lrateBase .. lane
      rateUsed = tonumber(redis.call('GET', rateKey) or '0')
    end
  end
  share = share or 1
  if alone then share = wanted end
  local key = K.laneBase .. lane
  local depth
  if cfg or not offRing then
    depth = redis.call('ZCARD', key)
    if depth < share then share = depth end
  end
  if limit >= 0 and limit - active < share then share = limit - active end
  if rateKey and rateMax - rateUsed < share then share = rateMax - rateUsed end
  if share < 0 then share = 0 end
  local t = turn
  t.lane, t.key, t.share, t.depth, t.limit, t.rateKey = lane, key, share, depth, limit, rateKey
  -- The count and the rate fields are read only with a limit / a rate (most turns have neither).
  if limit >= 0 then t.active = active end
  if rateKey then t.rateMax, t.rateDur, t.rateUsed = rateMax, rateDur, rateUsed end
  return t
end

-- Step 3, serve: takes up to `take` jobs off the turn's lane in priority order, activates each
-- (out gets id, fields; leases its deadline, id) and counts them against the lane's active
-- count and rate window. Returns the jobs served and how many of them had a priority.
local function serveTurn(t, take, out, leases, nowStr, deadline)
  local popped = redis.call('ZPOPMIN', t.key, intStr(take))
  local prioritized = 0
  local nl, no = #leases, #out -- lengths kept here: # costs a search per use
  local sub = string.sub
  for i = 1, #popped, 2 do
    local id = sub(popped[i], 15) -- memberId, without a Lua call per job
    leases[nl + 1], leases[nl + 2], nl = deadline, id, nl + 2
    if popped[i + 1] ~= '0' then prioritized = prioritized + 1 end
    out[no + 1] = id
    out[no + 2] = activate(K.jobBase .. id, nowStr, id)
    no = no + 2
    emitJob('active', PREV_WAITING, id)
  end
  if #leases >= LEASE_BATCH * 2 then flushLeases(leases) end
  local served = #popped / 2
  if t.depth then t.depth = t.depth - served
  elseif served < take then t.depth = 0 end -- it held fewer than asked: empty now
  -- Only a limit needs the count now; other lanes' counts are written at the end of the
  -- call, netted against the slots this call released (lib/lanes.lua deferActive).
  if t.limit >= 0 then t.active = redis.call('HINCRBY', K.lactive, t.lane, intStr(served))
  else deferActive(t.lane, served) end
  if t.rateKey then
    t.rateUsed = redis.call('INCRBY', t.rateKey, intStr(served))
    if t.rateUsed == served then redis.call('PEXPIRE', t.rateKey, t.rateDur) end
  end
  return served, prioritized
end

-- A one-job lane's turn (lib/lanes.lua): a plain lane, so K = 1, its job is the lone field v.
-- The lane leaves the ring: it is off the list already (a pass) or at its tail (LMOVE), and
-- its field goes at endPass. Returns whether the job had a priority.
local function serveLone(lane, v, offRing, out, leases, nowStr, deadline)
  local prio, member = parseLone(v)
  local id = memberId(member)
  leases[#leases + 1] = deadline
  leases[#leases + 1] = id
  out[#out + 1] = id
  out[#out + 1] = activate(K.jobBase .. id, nowStr, id)
  emitJob('active', PREV_WAITING, id)
  if #leases >= LEASE_BATCH * 2 then flushLeases(leases) end
  deferActive(lane, 1)
  passLoneServed[#passLoneServed + 1] = lane
  if not offRing then redis.call('LREM', K.ring, -1, lane) end
  return prio ~= '0'
end

-- After a turn: a lane that emptied, reached its limit or used up its rate window leaves the
-- ring (a lane of the current pass at endPass; one that LMOVE rotated, or whose turn was
-- continued, is at or close to the ring's tail: LREM from there); a lane whose rate window
-- shut waits in rlwait. A lane of the pass that stays goes back to the tail at endPass.
-- Returns whether the lane left.
local function endTurn(t, offRing, now)
  local lane = t.lane
  if not t.depth then
    -- A plain lane of the pass whose depth was not read: kept unless endPass finds it empty.
    passKeep[#passKeep + 1] = lane
    passMaybe[#passMaybe + 1] = #passKeep
    passMaybeKey[#passMaybeKey + 1] = t.key
    return false
  end
  local rateShut = t.rateKey and t.rateUsed >= t.rateMax
  if not (t.depth <= 0 or (t.limit >= 0 and t.active >= t.limit) or rateShut) then
    if offRing then passKeep[#passKeep + 1] = lane end
    return false
  end
  if offRing then passGone[#passGone + 1] = lane else leaveRing(lane) end
  if rateShut then
    local ttl = redis.call('PTTL', t.rateKey)
    if ttl < 0 then ttl = 0 end
    redis.call('ZADD', K.rlwait, now + ttl, lane)
    redis.call('HSET', K.meta, 'rlw', '1')
    metaRow[M_RATE_WAIT] = '1'
    -- Workers blocked before this window existed sleep up to their drainDelay: wake one so it
    -- re-reads the earliest wake-up time (as add does for a new earliest delayed job).
    if redis.call('ZRANGE', K.rlwait, 0, 0)[1] == lane then wake() end
  end
  return true
end

-- Step 4, finish: the pass ends, leases and deferred active counts are written, then the turn
-- (meta tl/tk: the lane whose turn a next claim continues and its share left), the ready
-- counters and the global rate counter, once per call. Returns like claimJobs.
local function finishClaim(meta, got, turnLane, turnLeft, readyServed, prioServed, leases, now, passWake, activeExists)
  endPass()
  flushLeases(leases, activeExists)
  flushDeferredActive()
  -- Written only when the turn moved: an idle claim must stay read-only (no write traffic per
  -- idle worker, and no meta hash recreated on a queue that was just obliterated).
  if (turnLane or '') ~= (meta[M_TURN_LANE] or '') or intStr(turnLeft) ~= (meta[M_TURN_LEFT] or '0') then
    redis.call('HSET', K.meta, 'tl', turnLane or '', 'tk', intStr(turnLeft))
  end
  if got > 0 and not meta[M_WIDE] then redis.call('HSETNX', K.meta, WIDE_FIELD, WIDE_VALUE) end
  if readyServed > 0 then
    redis.call('HINCRBY', K.meta, 'ready', intStr(-readyServed))
    if prioServed > 0 then redis.call('HINCRBY', K.meta, 'readyP', intStr(-prioServed)) end
  end
  if got > 0 and meta[M_RATE_MAX] and tonumber(meta[M_RATE_MAX]) then
    local used = redis.call('INCRBY', K.rate, got)
    if used == got then redis.call('PEXPIRE', K.rate, tonumber(meta[M_RATE_DUR])) end
  end
  if passWake and got > 0 and redis.call('LLEN', K.ring) > 0 then wake() end
  if got == 0 then
    local t = nextWakeAt(meta)
    if t >= 0 then
      t = t - now
      if t < 0 then t = 0 end
    end
    return 0, t
  end
  return got, -1
end

-- Claims up to n jobs; appends {id, fields} pairs to out. Returns jobs claimed and, when none,
-- the ms until the next wake-up (-1 none) that a worker without jobs should block for.
-- passWake: pass the wake token on when work remains (a standalone claim, which may have been
-- woken by a token meant for several workers). A settle-and-claim call does not: its worker
-- keeps its own slots busy, and whatever made work ready woke the idle workers already.
-- activeExists: see flushLeases.
local function claimJobs(n, leaseMs, now, out, passWake, activeExists)
  local meta = readMeta()
  local wait
  n, wait = gate(meta, n, now)
  if n <= 0 then return 0, wait end

  local got, readyServed, prioServed = 0, 0, 0
  local nowStr = msString(now)
  local deadline = string.format('%d', now + leaseMs)
  -- The turn in progress: its lane and the share it has left (continued from the last claim).
  local turnLane, turnLeft = meta[M_TURN_LANE], meta[M_TURN_LEFT] and tonumber(meta[M_TURN_LEFT]) or 0
  local turns, maxTurns = 0, n + 16
  -- The lane the previous rotation of this call brought to the tail. When the next rotation
  -- brings the same lane back, the ring holds that lane alone (ring members are unique) and its
  -- turns would follow one another anyway: it is served for the rest of the call in one turn.
  local rotated
  local alone = false
  -- deadline, id pairs: one ZADD of the active set per call (flushLeases empties it in place)
  if claimLeases[1] then claimLeases = {} end
  local leases = claimLeases
  startPasses()

  while got < n and turns < maxTurns do
    turns = turns + 1
    local lane, share, offRing, lone
    if turnLeft > 0 and turnLane and redis.call('SISMEMBER', K.inring, turnLane) == 1 then
      lane, share, offRing = turnLane, turnLeft, false
    else
      local want = n - got
      if maxTurns - turns + 1 < want then want = maxTurns - turns + 1 end
      lane, offRing, lone = nextRingLane(want)
      if not lane then break end
      -- The first rotation of a call that wants several jobs learns from its pass whether the
      -- ring holds one lane: a lane alone in the ring is then served in one turn from the start.
      if rotated == nil and n - got > 1 then rotated = passLen == 1 and lane or false end
      alone = lane == rotated
      rotated = lane
    end
    -- A one-job lane that got a setting (a weight, limit or rate, or the Worker's group
    -- defaults) since is served as an ordinary lane: its job moves into a sorted set first.
    if lone and laneHasCfg(lane) then
      materializeLone(lane, lone)
      lone = nil
    end
    if lone then
      local prioritized = serveLone(lane, lone, offRing, out, leases, nowStr, deadline)
      got, readyServed = got + 1, readyServed + 1
      if prioritized then prioServed = prioServed + 1 end
      turnLane, turnLeft = lane, 0
    else
      local t = laneShare(lane, share, n - got, alone, offRing)
      local take = t.share
      if n - got < take then take = n - got end
      if take > 0 then
        local served, prioritized = serveTurn(t, take, out, leases, nowStr, deadline)
        got = got + served
        readyServed = readyServed + served
        prioServed = prioServed + prioritized
      end
      turnLane, turnLeft = lane, t.share - take
      if endTurn(t, offRing, now) then turnLeft = 0 end
    end
  end
  return finishClaim(meta, got, turnLane, turnLeft, readyServed, prioServed, leases, now, passWake, activeExists)
end
