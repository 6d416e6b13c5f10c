-- Removing one job from whatever state it is in (remove.lua, clean.lua). Needs lib/common.lua,
-- lib/lanes.lua, lib/retention.lua, lib/newjob.lua, lib/flow.lua and the keys they use, plus
-- K.active, K.delayed, K.completed, K.failed, K.wchildren, K.dedup, K.dedupx.

-- BullMQ's names of the structure a removed job was in (the 'prev' field of a removed event):
-- its key names, so a ready job was in 'wait' or, with a priority, 'prioritized'.
local STATE_NAMES = { d = 'delayed', c = 'completed', f = 'failed', h = 'waiting-children', a = 'active' }
local function prevName(st, prio)
  if st == 'w' then return prio > 0 and 'prioritized' or 'wait' end
  return STATE_NAMES[st] or st
end

-- clean.lua sets this, as BullMQ's clean removes jobs: a removed child that was the last
-- pending child of a waiting parent in this queue deletes that parent too (and so on up, within
-- this queue); a parent in another queue is released through the outbox. Without it
-- (remove.lua, BullMQ's Job.remove) the parent is released.
local removalDeletesParents = false
-- A same-queue chain of parents deeper than this is released instead (bounded call).
local REMOVAL_MAX_CASCADE = 32

-- Job jk (id) is being removed: its parent no longer waits for it (see above).
local function removedChild(jk, id, now, depth)
  if not removalDeletesParents then return flowSettled(jk, id, 'r', '', now, depth) end
  local p = redis.call('HMGET', jk, 'pid', 'pk')
  if not p[1] then return end
  if p[2] == K.jobBase .. p[1] and depth < REMOVAL_MAX_CASCADE
    and redis.call('HGET', K.depsBase .. p[1], jk) == 'p' then
    local pf = redis.call('HMGET', p[2], 'st', 'pend')
    if pf[1] == 'h' and tonumber(pf[2] or '0') <= 1 then
      redis.call('ZREM', K.wchildren, p[1])
      removedChild(p[2], p[1], now, depth + 1)
      deleteJob(p[1])
      return
    end
  end
  flowSettled(jk, id, 'r', '', now, depth)
end

-- A keepLastIfActive holder (lib/dedup.lua) is being removed: its follower is released, or
-- with clean deleted, as a parent whose last child was removed.
local function removedHolder(fid, holderId, now)
  if not removalDeletesParents then return releaseFollower(fid, holderId, now) end
  local f = redis.call('HMGET', K.jobBase .. fid, 'st', 'dka')
  if f[1] == 'h' and f[2] == holderId then
    redis.call('ZREM', K.wchildren, fid)
    deleteJob(fid)
  end
end

-- Removes job id if it passes the filter. filter: '' any state (an active job only once its
-- lease expired before now: nobody holds it), or one state letter (w, d, c, f, h; 'a' = active
-- whose lease expired). cutoff (ms or
-- nil): only a job whose age stamp is <= cutoff — finish time for c/f, else the last start
-- (pOn) and then the creation time (ts), as BullMQ's clean reads finishedOn, processedOn,
-- timestamp. Returns 1 removed, -1 no such job, -3 active (held) or filtered out; and the
-- BullMQ name of what it was in (prevName).
local function removeOne(id, filter, cutoff, now)
  local jk = K.jobBase .. id
  local st, lane, prio, stamp, createdAt, finishedAt, startedAt, opts, follower =
    unpack(redis.call('HMGET', jk, 'st', 'lane', 'prio', 'sq', 'ts', 'fOn', 'pOn', 'opts', 'dkn'), 1, 9)
  if not st then return -1 end
  if filter ~= '' and st ~= filter then return -3 end
  if st == 'a' then
    -- An active job can be removed once its lease has expired (nobody holds it), as BullMQ
    -- removes an active job whose lock is gone: by filter 'a' (clean) or '' (remove).
    if filter ~= 'a' and filter ~= '' then return -3 end
    local deadline = redis.call('ZSCORE', K.active, id)
    if deadline and tonumber(deadline) >= now then return -3 end
  end
  if cutoff then
    local t
    if st == 'c' or st == 'f' then t = finishedAt else t = startedAt or createdAt end
    if t and tonumber(t) > cutoff then return -3 end
  end
  lane, prio = laneOr(lane), prioOr(prio)
  if st == 'w' then
    pullReady(lane, stamp .. id, prio)
    forgetLaneIfIdle(lane)
  elseif st == 'a' then
    if redis.call('ZREM', K.active, id) == 1 then releaseActive(lane) end
  elseif st == 'd' then
    redis.call('ZREM', K.delayed, id)
  elseif st == 'c' then
    redis.call('ZREM', K.completed, id)
  elseif st == 'f' then
    redis.call('ZREM', K.failed, id)
  elseif st == 'h' then
    redis.call('ZREM', K.wchildren, id)
  end
  removedChild(jk, id, now, 0) -- flows: a removed child no longer holds its parent
  if follower then removedHolder(follower, id, now) end
  -- A removed job frees the deduplication id it holds, throttle window or not (BullMQ's
  -- removal does; a job deleted by retention keeps a throttle until it ends).
  if opts and string.find(opts, '"deduplication"', 1, true) then
    local ok, o = pcall(cjson.decode, opts)
    local dd = ok and type(o) == 'table' and type(o.deduplication) == 'table' and o.deduplication.id
    if type(dd) == 'string' and redis.call('HGET', K.dedup, dd) == id then
      redis.call('HDEL', K.dedup, dd)
      redis.call('ZREM', K.dedupx, dd)
    end
  end
  deleteJob(id)
  return 1, prevName(st, prio)
end
