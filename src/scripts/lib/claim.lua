-- The lane-aware claim, shared by claim.lua, complete.lua and fail.lua so that a worker can
-- settle a job and take the next ones in one call.
--
-- Order of a claim for n jobs:
--  1. queue paused → nothing claimed (due delayed jobs are still promoted).
--  2. promote due delayed jobs and readmit lanes whose rate window reopened (bounded batches).
--  3. gates: global concurrency (meta conc vs ZCARD active), global rate (meta rlmax/rldur).
--  4. ring turns: continue the current lane's turn (meta tl/tk) if it has share left, else
--     take the next lane off the ring's head and serve it
--     K = min(weight, depth, limit headroom, rate headroom) jobs by ZPOPMIN. Lanes come off the
--     head in passes (one LPOP for as many lanes as jobs are still wanted); at the end of a
--     pass the lanes still serviceable go back to the tail in one RPUSH and the others leave
--     inring in one SREM: the order of a one-step rotation per turn, at O(1) commands per pass
--     and O(1) in the number of lanes.
local PROMOTE_BATCH = 200
-- Shared fields of the active events of claimed jobs (emitJob in lib/common.lua).
local PREV_WAITING = { 'prev', 'waiting' }
local READMIT_BATCH = 100
-- Value of the global rate counter while worker.rateLimit(ms) blocks the queue (2^50).
local RATE_BLOCK = 1125899906842624

-- The meta fields a claim reads, in one HMGET per script call (also sets emit's events cap):
-- 1 paused, 2 conc, 3 rlmax, 4 rldur, 5 tl, 6 tk, 7 blk, 8 evmax, 9 dly, 10 rlw, 11 gconc,
-- 12 grate (the Worker's group defaults, lib/groups.lua: read here so they cost no call).
local metaRow
-- Manual processing (worker.getNextJob, job.moveToCompleted with fetchNext): the caller's token,
-- stored as the claimed jobs' `tok` field beside the attempt fence `att` (docs/internals.md,
-- tokens). nil for a worker's own claims, which store no owner: their token is `att` itself.
local claimOwner

-- Per-call state of this file (see reset_common in lib/common.lua).
local function reset_claim()
  metaRow = nil
  claimOwner = nil
end
local function readMeta()
  if not metaRow then
    metaRow = redis.call('HMGET', K.meta, 'paused', 'conc', 'rlmax', 'rldur', 'tl', 'tk', 'blk',
      'evmax', 'dly', 'rlw', 'gconc', 'grate')
    evmax = metaRow[8] or '10000'
    noteGroupDefaults(metaRow[11], metaRow[12])
  end
  return metaRow
end

-- BullMQ's drained: written by a settle (complete, final fail) that claimed nothing next and
-- left nothing ready and nothing active. Two O(1) reads, only on that idle edge.
local function emitDrainedIfIdle()
  if tonumber(redis.call('HGET', K.meta, 'ready') or '0') <= 0 and redis.call('ZCARD', K.active) == 0 then
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
    local f = redis.call('HMGET', jk, 'lane', 'prio', 'lifo', 'st', 'delay', 'odl')
    if f[4] then
      local stamp = nextStamp(f[3] == '1')
      -- A ready job's delay is 0, as BullMQ's promotion sets it; the delay it was added with
      -- stays in odl (job.opts.delay), as promote.lua keeps it.
      if not f[6] and f[5] and f[5] ~= '0' then redis.call('HSET', jk, 'odl', f[5]) end
      redis.call('HSET', jk, 'sq', stamp, 'st', 'w', 'delay', '0')
      enterLane(laneOr(f[1]), prioOr(f[2]), stamp .. id)
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
-- LEASE_BATCH members (Lua passes at most a few thousand arguments).
local LEASE_BATCH = 1000
local function flushLeases(leases)
  for i = 1, #leases, LEASE_BATCH * 2 do
    redis.call('ZADD', K.active, unpack(leases, i, math.min(i + LEASE_BATCH * 2 - 1, #leases)))
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
  if meta[9] then
    local d = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
    if d[2] then t = tonumber(d[2]) else redis.call('HDEL', K.meta, 'dly') end
  end
  if meta[10] then
    local r = redis.call('ZRANGE', K.rlwait, 0, 0, 'WITHSCORES')
    if r[2] and (t < 0 or tonumber(r[2]) < t) then t = tonumber(r[2]) end
    if not r[2] then redis.call('HDEL', K.meta, 'rlw') end
  end
  return t
end

-- Marks a claimed job active in one write and returns its hash as a flat list for the worker:
-- as written (att = the new fencing token, pOn = the claim time), without the fields a worker
-- does not read (st, which is 'a', and the arrival stamp sq): fewer strings to convert in the
-- reply and to parse in Node. nowStr: the claim time as an integer string. Numbers handed to
-- redis.call are formatted with %.14g each time, so the strings are made here, once, with
-- integer formats.
local function activate(jk, nowStr)
  local h = redis.call('HGETALL', jk)
  local out, n = {}, 0
  local att = '1'
  local hadOwner = false
  for i = 1, #h, 2 do
    local k = h[i]
    if k == 'att' then
      att = string.format('%d', tonumber(h[i + 1]) + 1)
    elseif k == 'tok' then
      hadOwner = true
    elseif k ~= 'st' and k ~= 'sq' and k ~= 'pOn' then
      out[n + 1], out[n + 2] = k, h[i + 1]
      n = n + 2
    end
  end
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 'att', att, 'pOn', nowStr
  if claimOwner then
    -- Manual processing: the caller's token names the owner; att stays the fence.
    out[n + 5], out[n + 6] = 'tok', claimOwner
    redis.call('HSET', jk, 'att', att, 'st', 'a', 'pOn', nowStr, 'tok', claimOwner)
  else
    redis.call('HSET', jk, 'att', att, 'st', 'a', 'pOn', nowStr)
    -- An owner left from an earlier manual attempt would refuse this attempt's own token.
    if hadOwner then redis.call('HDEL', jk, 'tok') end
  end
  return out
end

-- Claims up to n jobs; appends {id, fields} pairs to out. Returns jobs claimed and, when none,
-- the ms until the next wake-up (-1 none) that a worker without jobs should block for.
-- passWake: pass the wake token on when work remains (a standalone claim, which may have been
-- woken by a token meant for several workers). A settle-and-claim call does not: its worker
-- keeps its own slots busy, and whatever made work ready woke the idle workers already.
local function claimJobs(n, leaseMs, now, out, passWake)
  local meta = readMeta()
  if n <= 0 then return 0, -1 end
  if meta[1] == '1' then
    -- Paused (BullMQ's rule): due delayed jobs still move to waiting, where they stay until
    -- resume, and an idle worker wakes for the next one. Only on the paused path.
    if not meta[9] then return 0, -1 end
    promoteDue(now)
    local d = redis.call('ZRANGE', K.delayed, 0, 0, 'WITHSCORES')
    if not d[2] then return 0, -1 end
    local t = tonumber(d[2]) - now
    return 0, t < 0 and 0 or t
  end
  if meta[9] then promoteDue(now) end
  if meta[10] then readmitRateLanes(now) end

  if meta[2] then
    local room = tonumber(meta[2]) - redis.call('ZCARD', K.active)
    if room < n then n = room end
    if n <= 0 then return 0, -1 end
  end
  local grate = tonumber(meta[3])
  local gdur = tonumber(meta[4])
  -- The global rate counter is read only with a limiter, or while worker.rateLimit(ms) may be
  -- blocking the queue (meta blk; the block sets the counter to RATE_BLOCK with PX ms).
  if grate or meta[7] then
    local gused = tonumber(redis.call('GET', K.rate) or '0')
    if gused >= (grate or RATE_BLOCK) then
      local ttl = redis.call('PTTL', K.rate)
      if ttl < 0 then ttl = 0 end
      return 0, ttl
    end
    if meta[7] and gused == 0 then redis.call('HDEL', K.meta, 'blk') end
    if grate and grate - gused < n then n = grate - gused end
  end

  local got = 0
  local nowStr = string.format('%d', now)
  local deadline = string.format('%d', now + leaseMs)
  local tl, tk = meta[5], tonumber(meta[6] or '0')
  local turns = 0
  local maxTurns = n + 16
  local readyServed, prioServed = 0, 0
  -- The lane the previous rotation of this call brought to the tail. When the next rotation
  -- brings the same lane back, the ring holds that lane alone (ring members are unique) and its
  -- turns would follow one another anyway: it is served for the rest of the call in one turn.
  local rotated
  local alone = false
  local leases = {} -- deadline, id pairs: one ZADD of the active set per call (flushLeases)
  -- Rotation in passes: one LPOP takes as many lanes off the ring's head as the jobs still
  -- wanted (each turn serves at least one), the turns serve them in order, and endPass puts the
  -- ones still serviceable back at the tail with one RPUSH, takes the others out of inring with
  -- one SREM, and returns lanes popped but not reached to the head. The ring then reads as if
  -- each turn had rotated it by one (LMOVE head to tail, RPOP of a lane that left), so the order
  -- is the same, at a few commands per pass instead of per turn: the point for many shallow
  -- lanes, which would each pay a rotation and an eviction per job.
  local pass, pi, pn = nil, 0, 0
  local moved = false -- the pass is one lane that LMOVE already put at the tail
  local keep, gone = {}, {}
  local function endPass()
    if pi < pn then
      local back = {}
      for i = pn, pi + 1, -1 do back[#back + 1] = pass[i] end
      redis.call('LPUSH', K.ring, unpack(back))
    end
    if #keep > 0 then redis.call('RPUSH', K.ring, unpack(keep)); keep = {} end
    if #gone > 0 then redis.call('SREM', K.inring, unpack(gone)); gone = {} end
    pi, pn = 0, 0
  end

  while got < n and turns < maxTurns do
    turns = turns + 1
    local lane, share
    local offRing = false -- the lane came off the ring in a pass (not yet back)
    if tk > 0 and tl and redis.call('SISMEMBER', K.inring, tl) == 1 then
      lane, share = tl, tk
    else
      if pi >= pn then
        endPass()
        local want = n - got
        if maxTurns - turns + 1 < want then want = maxTurns - turns + 1 end
        if want == 1 then
          -- One lane (a claim for one job): LMOVE rotates it to the tail in one command,
          -- where it stays or from where it is evicted, as a pass of one would cost two.
          local one = redis.call('LMOVE', K.ring, K.ring, 'LEFT', 'RIGHT')
          if not one then break end
          pass, moved = { one }, true
        else
          pass, moved = redis.call('LPOP', K.ring, want), false
          if not pass then break end
        end
        pn = #pass
        -- The first rotation of a call that wants several jobs learns from the pass whether
        -- the ring holds one lane: a lone lane is then served in one turn from the start.
        if rotated == nil and n - got > 1 then rotated = pn == 1 and pass[1] or false end
      end
      pi = pi + 1
      lane, offRing = pass[pi], not moved
      share = nil
      alone = lane == rotated
      rotated = lane
    end
    -- Settings are read only for lanes that have any (lcfg): a plain lane costs one check.
    local cfg = laneHasCfg(lane)
    local lim, act, rmax, rdur, rused, rk = -1, 0, nil, nil, nil, nil
    if cfg then
      if not share then share = tonumber(redis.call('HGET', K.lweight, lane) or '1') end
      lim = tonumber(laneLimitOf(lane) or '-1')
      if lim >= 0 then act = tonumber(redis.call('HGET', K.lactive, lane) or '0') end
      local rateCfg = laneRateOf(lane)
      if rateCfg then
        rmax, rdur = parseRate(rateCfg)
        rk = K.lrateBase .. lane
        rused = tonumber(redis.call('GET', rk) or '0')
      end
    end
    share = share or 1
    if alone then share = n - got end
    local lk = K.laneBase .. lane
    local depth = redis.call('ZCARD', lk)
    if depth < share then share = depth end
    if lim >= 0 and lim - act < share then share = lim - act end
    if rk and rmax - rused < share then share = rmax - rused end
    if share < 0 then share = 0 end
    local take = share
    if n - got < take then take = n - got end

    if take > 0 then
      local popped = redis.call('ZPOPMIN', lk, take)
      local served = #popped / 2
      for i = 1, #popped, 2 do
        local id = memberId(popped[i])
        local jk = K.jobBase .. id
        leases[#leases + 1] = deadline
        leases[#leases + 1] = id
        if popped[i + 1] ~= '0' then prioServed = prioServed + 1 end
        out[#out + 1] = id
        out[#out + 1] = activate(jk, nowStr)
        emitJob('active', PREV_WAITING, id)
      end
      if #leases >= LEASE_BATCH * 2 then flushLeases(leases) end
      got = got + served
      readyServed = readyServed + served
      depth = depth - served
      -- Only a limit needs the count now; other lanes' counts are written at the end of the
      -- call, netted against the slots this call released (lib/lanes.lua deferActive).
      if lim >= 0 then act = redis.call('HINCRBY', K.lactive, lane, served)
      else deferActive(lane, served) end
      if rk then
        rused = redis.call('INCRBY', rk, served)
        if rused == served then redis.call('PEXPIRE', rk, rdur) end
      end
    end

    tl, tk = lane, share - take
    local rateShut = rk and rused >= rmax
    if depth <= 0 or (lim >= 0 and act >= lim) or rateShut then
      -- A lane of this pass is off the ring list already; one LMOVE rotated, or whose turn
      -- is being continued, is at or close to the ring's tail.
      if offRing then gone[#gone + 1] = lane else evictLane(lane) end
      tk = 0
      if rateShut then
        local ttl = redis.call('PTTL', rk)
        if ttl < 0 then ttl = 0 end
        redis.call('ZADD', K.rlwait, now + ttl, lane)
        redis.call('HSET', K.meta, 'rlw', '1')
        meta[10] = '1'
        -- Workers blocked before this window existed sleep up to their drainDelay: wake one so
        -- it re-reads the earliest wake-up time (as add does for a new earliest delayed job).
        if redis.call('ZRANGE', K.rlwait, 0, 0)[1] == lane then wake() end
      end
    elseif offRing then
      keep[#keep + 1] = lane
    end
  end
  endPass()

  flushLeases(leases)
  flushDeferredActive()

  -- Written only when the turn moved: an idle claim must stay read-only (no write traffic per
  -- idle worker, and no meta hash recreated on a queue that was just obliterated).
  if (tl or '') ~= (meta[5] or '') or tk ~= tonumber(meta[6] or '0') then
    redis.call('HSET', K.meta, 'tl', tl or '', 'tk', tk)
  end
  if readyServed > 0 then
    redis.call('HINCRBY', K.meta, 'ready', -readyServed)
    if prioServed > 0 then redis.call('HINCRBY', K.meta, 'readyP', -prioServed) end
  end
  if grate and got > 0 then
    local used = redis.call('INCRBY', K.rate, got)
    if used == got then redis.call('PEXPIRE', K.rate, gdur) end
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
