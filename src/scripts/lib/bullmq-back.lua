-- Writing BullMQ 6's stored queue for the move back from echomq (migrateBackJobs,
-- migrateBackMeta; docs/protocol.md "Moving back to BullMQ"). The inverse of lib/bullmq.lua's
-- reading: echomq's fields and long option names become BullMQ's, and what BullMQ has no place
-- for (the lane) goes into the stored options, where the move forward reads it back.
-- Needs lib/common.lua and lib/bullmq.lua (setMove, the prefixes).

-- echomq's option names and BullMQ's short stored names (BullMQ's optsEncodeMap).
local BACK_NAMES = { deduplication = 'de', failParentOnFailure = 'fpof', continueParentOnFailure = 'cpof',
  ignoreDependencyOnFailure = 'idof', keepLogs = 'kl', removeDependencyOnFailure = 'rdof' }
-- echomq's one-letter failure policy toward the parent as BullMQ's flag.
local POL_FLAG = { f = 'fpof', c = 'cpof', i = 'idof', d = 'rdof' }

-- echomq's physical job key `<emq>:{<escaped queue>}:job:<id>` as BullMQ's `<bull>:<queue>:<id>`;
-- a key under another prefix stays as it is. The escaped name holds no '}', so the first one
-- ends it.
local function bullKeyOf(key)
  local p = mv.emq .. ':{'
  if string.sub(key, 1, #p) ~= p then return key end
  local rest = string.sub(key, #p + 1)
  local i = string.find(rest, '}', 1, true)
  if not i or string.sub(rest, i, i + 5) ~= '}:job:' then return key end
  local q = string.sub(rest, 1, i - 1)
  q = string.gsub(q, '%%7B', '{')
  q = string.gsub(q, '%%7D', '}')
  q = string.gsub(q, '%%25', '%%')
  return mv.bull .. ':' .. q .. ':' .. string.sub(rest, i + 6)
end

-- echomq's retention count and age fields as BullMQ's removeOnComplete / removeOnFail value
-- (the inverse of lib/bullmq.lua's keepOf), or nil when both are absent.
local function keepBack(c, a)
  local hasC, hasA = c ~= nil and c ~= '', a ~= nil and a ~= ''
  if not hasC and not hasA then return nil end
  if hasA then
    local t = { age = tonumber(a) / 1000 }
    if hasC then t.count = tonumber(c) end
    return t
  end
  if c == '0' then return true end
  if c == '-2' then return false end
  return tonumber(c)
end

-- An echomq job hash as a table, or nil when the job is gone.
local function readEchoJob(id)
  return hashTable(K.jobBase .. id)
end

-- BullMQ's stored options JSON of an echomq job: its opts with BullMQ's short names, the
-- options echomq keeps in fields of their own, and the lane (a name BullMQ ignores).
local function bullOpts(f)
  local o = {}
  if f.opts and f.opts ~= '' then
    local ok, d = pcall(cjson.decode, f.opts)
    if ok and type(d) == 'table' then o = d end
  end
  local out = {}
  for k, v in pairs(o) do
    if k == 'telemetry' and type(v) == 'table' then
      if v.metadata ~= nil then out.tm = v.metadata end
      if v.omitContext ~= nil then out.omc = v.omitContext end
    else
      out[BACK_NAMES[k] or k] = v
    end
  end
  local prio = tonumber(f.opr or f.prio or '0') or 0
  if prio > 0 then out.priority = prio end
  local delay = tonumber(f.odl or f.delay or '0') or 0
  if delay > 0 then out.delay = delay end
  if f.lifo == '1' then out.lifo = true end
  local rc = keepBack(f.kc, f.ka)
  if rc ~= nil then out.removeOnComplete = rc end
  local rf = keepBack(f.kfc, f.kfa)
  if rf ~= nil then out.removeOnFail = rf end
  if f.lane and f.lane ~= DEFAULT_LANE then out.lane = f.lane end
  if f.pol and POL_FLAG[f.pol] and out[POL_FLAG[f.pol]] == nil then out[POL_FLAG[f.pol]] = true end
  if f.repeatOpts and out['repeat'] == nil then
    out['repeat'], out.prevMillis = f.repeatOpts, f.prevMillis
  end
  return cjson.encode(out)
end

-- The `repeat` options BullMQ's worker reads from a scheduler's job (to add the next slot's
-- job), from the scheduler's BullMQ hash that migrateBackScheduler wrote; nil when it is not
-- in BullMQ (the job then runs once there, as a job of a removed scheduler would).
local function repeatOptsOf(sid)
  local s = hashTable(K.bullBase .. 'repeat:' .. sid)
  if not s then return nil end
  local r = { count = tonumber(s.ic or '1') }
  if s.every then r.every = tonumber(s.every) else r.pattern = s.pattern end
  for _, k in ipairs({ 'limit', 'startDate', 'endDate', 'offset' }) do
    if s[k] then r[k] = tonumber(s[k]) end
  end
  if s.tz then r.tz = s.tz end
  return r
end

-- BullMQ's job hash fields (flat list) of an echomq job; nil and 'outside' when its parent is
-- under another prefix than the one moved.
local function bullJobFields(f)
  local h = { 'name', f.name or '', 'data', f.data or '{}', 'opts', bullOpts(f), 'timestamp', f.ts or '0',
    'delay', f.delay or '0', 'priority', f.prio or '0' }
  local function put(field, v)
    if v and v ~= '' then h[#h + 1], h[#h + 2] = field, v end
  end
  put('atm', f.made)
  if f.att then put('ats', string.format('%d', tonumber(f.att) - tonumber(f.atb or '0'))) end
  put('stc', f.stc)
  put('processedOn', f.pOn)
  put('finishedOn', f.fOn)
  put('returnvalue', f.rv)
  put('failedReason', f.err)
  put('stacktrace', f.stack)
  put('progress', f.prog)
  put('pb', f.pb)
  put('rjk', f.sid)
  if f.dfail then put('defa', 'child ' .. bullKeyOf(f.dfail) .. ' failed') end
  if f.pid then
    if f.ppx ~= mv.emq or not f.pq then return nil, 'outside' end
    local parent = { id = f.pid, queueKey = mv.bull .. ':' .. f.pq }
    if f.pol and POL_FLAG[f.pol] then parent[POL_FLAG[f.pol]] = true end
    put('parentKey', mv.bull .. ':' .. f.pq .. ':' .. f.pid)
    put('parent', cjson.encode(parent))
  end
  return h
end

-- Most children (entries of a deps hash) a parent may have to move in one call.
local BACK_DEPS_MAX = 1000

-- A parent's deps hash as BullMQ's four records: returns a function that writes them, or nil
-- and 'big' / 'outside' (a pending child in a queue this run does not move).
local function backDeps(id, now)
  local dk = K.depsBase .. id
  if redis.call('EXISTS', dk) == 0 then return function() end end
  if redis.call('HLEN', dk) > BACK_DEPS_MAX then return nil, 'big' end
  local raw = redis.call('HGETALL', dk)
  local pend, done, ign, fail = {}, {}, {}, {}
  for i = 1, #raw, 2 do
    local child, v = bullKeyOf(raw[i]), raw[i + 1]
    local kind, val = string.sub(v, 1, 1), string.sub(v, 2)
    if kind == 'p' then
      local q = splitBullKey(child)
      if not q or not mv.moved[q] then return nil, 'outside' end
      pend[#pend + 1] = child
    elseif kind == 'c' then
      done[#done + 1], done[#done + 2] = child, val
    elseif kind == 'i' then
      ign[#ign + 1], ign[#ign + 2] = child, val
    elseif kind == 'f' then
      fail[#fail + 1], fail[#fail + 2] = msString(now), child
    end
  end
  return function()
    local b = K.bullBase .. id
    if #pend > 0 then redis.call('SADD', b .. ':dependencies', unpack(pend)) end
    if #done > 0 then redis.call('HSET', b .. ':processed', unpack(done)) end
    if #ign > 0 then redis.call('HSET', b .. ':failed', unpack(ign)) end
    if #fail > 0 then redis.call('ZADD', b .. ':unsuccessful', unpack(fail)) end
  end
end
