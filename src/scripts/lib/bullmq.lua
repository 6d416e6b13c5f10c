-- Reading BullMQ 6's stored queue for the move into echomq (migrateJobs, migrateScheduler,
-- migrateDedup, migrateMeta; docs/protocol.md "Moving a BullMQ queue"). BullMQ's keys are
-- `<bull prefix>:<queue>:<suffix>` and its job keys `<bull prefix>:<queue>:<id>`; the scripts
-- get the queue's base `<bull prefix>:<queue>:` as K.bullBase and build the rest from it, as
-- echomq's families are built from their bases. Needs lib/common.lua.

-- Move settings of one call (setMove), read by the functions below.
local mv

-- emqPrefix, bullPrefix: the two key prefixes; moved: JSON array of the BullMQ queue names the
-- run moves (a parent or pending child in any other queue would be stranded).
local function setMove(emqPrefix, bullPrefix, movedJson)
  mv = { emq = emqPrefix, bull = bullPrefix, moved = {} }
  for _, q in ipairs(cjson.decode(movedJson)) do mv.moved[q] = true end
end

local function reset_bullmq()
  mv = nil
end

-- echomq's escaping of a queue name inside its hash tag (src/core/keys.ts escapeQueueName).
local ESCAPES = { ['%'] = '%25', ['{'] = '%7B', ['}'] = '%7D' }
local function emqJobKeyOf(queue, id)
  return mv.emq .. ':{' .. string.gsub(queue, '[%%{}]', ESCAPES) .. '}:job:' .. id
end

-- echomq's deps hash of a job of another queue (a flow parent's children records).
local function emqDepsKeyOf(queue, id)
  return mv.emq .. ':{' .. string.gsub(queue, '[%%{}]', ESCAPES) .. '}:deps:' .. id
end

-- A BullMQ job key as (queue, id), or nil when it is not under the BullMQ prefix. BullMQ's
-- queue names hold no ':', so the first ':' after the prefix ends the queue name.
local function splitBullKey(key)
  local p = mv.bull .. ':'
  if string.sub(key, 1, #p) ~= p then return nil end
  local rest = string.sub(key, #p + 1)
  local i = string.find(rest, ':', 1, true)
  if not i or i == 1 or i == #rest then return nil end
  return string.sub(rest, 1, i - 1), string.sub(rest, i + 1)
end

-- A child's key in a parent's records: echomq's physical key when the child's queue is under
-- the BullMQ prefix (moved now or later), else the key as BullMQ wrote it.
local function childKeyOf(key)
  local q, id = splitBullKey(key)
  if not q then return key end
  return emqJobKeyOf(q, id)
end

local function intOf(v)
  local n = tonumber(v)
  if not n then return nil end
  return string.format('%d', n)
end

-- removeOnComplete / removeOnFail as echomq's count and age fields (src/core/options.ts keep).
local function keepOf(v)
  if v == nil or v == cjson.null then return '', '' end
  if v == true then return '0', '' end
  if v == false then return '-2', '' end
  if type(v) == 'number' then return string.format('%d', v), '' end
  if type(v) == 'table' then
    local c = type(v.count) == 'number' and string.format('%d', v.count) or ''
    local a = type(v.age) == 'number' and string.format('%d', v.age * 1000) or ''
    return c, a
  end
  return '', ''
end

-- BullMQ's short names of stored options (optsDecodeMap) and echomq's names for them; tm and
-- omc go under telemetry. Options echomq keeps in fields of their own leave the JSON.
local OPT_NAMES = { de = 'deduplication', fpof = 'failParentOnFailure', cpof = 'continueParentOnFailure',
  idof = 'ignoreDependencyOnFailure', kl = 'keepLogs', rdof = 'removeDependencyOnFailure' }
-- `lane` is the option the move back to BullMQ keeps an echomq job's lane in (lib/bullmq-back.lua).
local OWN_FIELDS = { priority = true, delay = true, lifo = true, removeOnComplete = true, removeOnFail = true, lane = true }

-- BullMQ's stored opts JSON as echomq's: { opts (JSON or ''), lifo, kc, ka, kfc, kfa, pol, lane (nil = default) }.
local function translateOpts(raw)
  local o = {}
  if raw and raw ~= '' then
    local ok, d = pcall(cjson.decode, raw)
    if ok and type(d) == 'table' then o = d end
  end
  local t = { lifo = o.lifo == true and '1' or '0', pol = '' }
  if type(o.lane) == 'string' and o.lane ~= '' and o.lane ~= DEFAULT_LANE then t.lane = o.lane end
  t.kc, t.ka = keepOf(o.removeOnComplete)
  t.kfc, t.kfa = keepOf(o.removeOnFail)
  if o.fpof == true then t.pol = 'f' elseif o.cpof == true then t.pol = 'c'
  elseif o.idof == true then t.pol = 'i' elseif o.rdof == true then t.pol = 'd' end
  local out, any = {}, false
  for k, v in pairs(o) do
    if not OWN_FIELDS[k] then
      any = true
      if k == 'tm' or k == 'omc' then
        out.telemetry = out.telemetry or {}
        out.telemetry[k == 'tm' and 'metadata' or 'omitContext'] = v
      else
        out[OPT_NAMES[k] or k] = v
      end
    end
  end
  t.opts = any and cjson.encode(out) or ''
  return t
end

-- The template fields of a job or scheduler hash (name … kfa) from BullMQ's values.
local function templateFields(h, n, name, data, t, prio)
  local function put(f, v)
    if v and v ~= '' then h[n + 1], h[n + 2], n = f, v, n + 2 end
  end
  h[n + 1], h[n + 2], h[n + 3], h[n + 4], n = 'name', name or '', 'data', data or '{}', n + 4
  put('opts', t.opts)
  if prio and prio > 0 then put('prio', string.format('%d', prio)) end
  put('lane', t.lane)
  if t.lifo == '1' then put('lifo', '1') end
  put('kc', t.kc)
  put('ka', t.ka)
  put('kfc', t.kfc)
  put('kfa', t.kfa)
  return n
end

-- echomq's highest priority; BullMQ allows one more (2^21), moved as this one.
local PRIO_MAX = 2097151

-- A hash (HGETALL list) as a table, or nil when the key does not exist.
local function hashTable(key)
  local raw = redis.call('HGETALL', key)
  if #raw == 0 then return nil end
  local f = {}
  for i = 1, #raw, 2 do f[raw[i]] = raw[i + 1] end
  return f
end

-- A BullMQ job hash as a table, or nil when the job is gone.
local function readBullJob(id)
  return hashTable(K.bullBase .. id)
end

-- The parent fields (pid, pk, pq, ppx, pol) of a BullMQ child, appended to h; returns the new
-- length and the parent's BullMQ queue, or nil and 'outside' when its parent is under another
-- prefix.
local function parentFields(f, h, n, pol)
  if not f.parentKey or f.parentKey == '' then return n end
  local pq, pid
  if f.parent then
    local ok, p = pcall(cjson.decode, f.parent)
    if ok and type(p) == 'table' and type(p.id) == 'string' and type(p.queueKey) == 'string' then
      local pre = mv.bull .. ':'
      if string.sub(p.queueKey, 1, #pre) ~= pre then return nil, 'outside' end
      pq, pid = string.sub(p.queueKey, #pre + 1), p.id
      if p.fpof then pol = 'f' elseif p.cpof then pol = 'c' elseif p.idof then pol = 'i' elseif p.rdof then pol = 'd' end
    end
  end
  if not pq then pq, pid = splitBullKey(f.parentKey) end
  if not pq then return nil, 'outside' end
  h[n + 1], h[n + 2], h[n + 3], h[n + 4], h[n + 5], h[n + 6] = 'pid', pid, 'pk', emqJobKeyOf(pq, pid), 'pq', pq
  h[n + 7], h[n + 8], n = 'ppx', mv.emq, n + 8
  if pol ~= '' then h[n + 1], h[n + 2], n = 'pol', pol, n + 2 end
  return n, pq, pid
end

-- Whether a child's parent still waits for children in BullMQ: the run moves parents first, so
-- such a parent was refused, and the child must stay with it. (Under the BullMQ prefix, which
-- on a Cluster carries the hash tag of every queue it moves.)
local function parentLeftBehind(pq, pid)
  return redis.call('ZSCORE', mv.bull .. ':' .. pq .. ':waiting-children', pid) ~= false
end

-- Most children (all four records together) a parent may have to move in one call.
local DEPS_MAX = 1000
-- BullMQ's job hash field of the failed reason (a field of BullMQ's hash, not of echomq's).
local BULL_FAILED_REASON = 'failedReason'
-- BullMQ Pro's group id field of a job hash.
local BULL_GROUP_ID = 'gid'

-- A parent's children as echomq's deps hash entries (flat field, value list) and the number
-- still pending, or nil and the refusal: 'big' (more than DEPS_MAX children for one call) or
-- 'outside' (a pending child in a queue this run does not move).
-- How many of BullMQ's per-job keys beside the hash exist (the flow records and the logs): one
-- EXISTS, so a plain job (0) costs no more reads and only its hash is deleted.
local function bullExtras(id)
  local b = K.bullBase .. id
  return redis.call('EXISTS', b .. ':dependencies', b .. ':processed', b .. ':failed', b .. ':unsuccessful', b .. ':logs')
end

local function bullDeps(id, extras)
  local b = K.bullBase .. id
  local dk, pk, fk, uk = b .. ':dependencies', b .. ':processed', b .. ':failed', b .. ':unsuccessful'
  if extras == 0 or redis.call('EXISTS', dk, pk, fk, uk) == 0 then return {}, 0 end
  local size = redis.call('SCARD', dk) + redis.call('HLEN', pk) + redis.call('HLEN', fk) + redis.call('ZCARD', uk)
  if size > DEPS_MAX then return nil, 'big' end
  local e, pend = {}, 0
  for _, c in ipairs(redis.call('SMEMBERS', dk)) do
    local q = splitBullKey(c)
    if not q or not mv.moved[q] then return nil, 'outside' end
    -- A pending child that will stay (its id taken in echomq, a Pro group job) would leave the
    -- parent waiting in echomq for good: the parent stays with it.
    local ek = childKeyOf(c)
    if redis.call('EXISTS', ek) == 1 or redis.call('HEXISTS', c, BULL_GROUP_ID) == 1 then return nil, 'outside' end
    e[#e + 1], e[#e + 2] = ek, 'p'
    pend = pend + 1
  end
  local p = redis.call('HGETALL', pk)
  for i = 1, #p, 2 do e[#e + 1], e[#e + 2] = childKeyOf(p[i]), 'c' .. p[i + 1] end
  local fl = redis.call('HGETALL', fk)
  for i = 1, #fl, 2 do e[#e + 1], e[#e + 2] = childKeyOf(fl[i]), 'i' .. fl[i + 1] end
  for _, c in ipairs(redis.call('ZRANGE', uk, 0, -1)) do
    local reason = ''
    local q, cid = splitBullKey(c)
    if q and K.bullBase == mv.bull .. ':' .. q .. ':' then reason = redis.call('HGET', K.bullBase .. cid, BULL_FAILED_REASON) or '' end
    e[#e + 1], e[#e + 2] = childKeyOf(c), 'f' .. reason
  end
  return e, pend
end

-- Deletes BullMQ's keys of a moved job; its logs list becomes echomq's (RENAME, O(1)).
-- extras: bullExtras' count (0: only the hash, and the lock of an active job, exist).
local function dropBullJob(id, extras, active)
  local b = K.bullBase .. id
  if extras == 0 then
    if active then redis.call('DEL', b, b .. ':lock') else redis.call('DEL', b) end
    return
  end
  if redis.call('EXISTS', b .. ':logs') == 1 then redis.call('RENAME', b .. ':logs', K.logsBase .. id) end
  redis.call('DEL', b, b .. ':dependencies', b .. ':processed', b .. ':failed', b .. ':unsuccessful', b .. ':lock')
end
