-- publishEvent: appends a custom event to the queue's events stream (QueueEventsProducer),
-- applied once (lib/once.lua): a resent publish answers with the entry the first run wrote.
-- KEYS: events, reqBase
-- ARGV: [1] maxEvents (the stream is trimmed to about this many entries), [2] request id
--   ('' = none), then field/value pairs ('event', name, …)
-- Returns: the stream entry id.
-- Errors: EMQ_EXPIRED (error reply, lib/once.lua): a request older than the window without a record.
-- Events: the custom event itself.
--!include lib/once.lua

local rec, refused = onceBegin(ARGV[2])
if refused then return redis.error_reply(refused) end
if rec then return rec.r end
local id = redis.call('XADD', K.events, 'MAXLEN', '~', ARGV[1], '*', unpack(ARGV, 3))
onceRecord({ r = id })
return id
