"""Bad input, table-driven (test/core-validation.test.ts adapted to Python): every public entry
refuses it with a typed error naming the field, the expected form and what it got, and leaves
Redis byte-for-byte unchanged (DUMP of every key of a queue that already holds jobs).

Adapted where BullMQ Python differs: an option given as None is absent (BullMQ Python reads
options with .get), and Python has no undefined, BigInt or symbol; bytes, sets, datetimes,
NaN and Infinity are its values JSON cannot carry."""
import datetime
import math

import pytest

from echomq import Queue, ValidationError, Worker
from echomq.keys import QueueKeys

cycle: dict = {"a": 1}
cycle["self"] = cycle


def add(opts=None, data=None, name="job", **kw):
    d = {"ok": True} if data is None and "data" not in kw else data
    return lambda q, j: q.add(name, d, opts)


CASES = [
    ("priority 2.5", add({"priority": 2.5}), "priority", "an integer 0…2097151", "2.5"),
    ("priority -1", add({"priority": -1}), "priority", "an integer 0…2097151", "-1"),
    ("priority 2^21", add({"priority": 2 ** 21}), "priority", "an integer 0…2097151", "2097152"),
    ("priority nan", add({"priority": math.nan}), "priority", "an integer", "nan"),
    ("priority '3'", add({"priority": "3"}), "priority", "an integer", '"3"'),
    ("priority True", add({"priority": True}), "priority", "an integer", "True"),
    ("delay inf", add({"delay": math.inf}), "delay", "an integer", "inf"),
    ("delay 1.5", add({"delay": 1.5}), "delay", "an integer", "1.5"),
    ("attempts -3", add({"attempts": -3}), "attempts", "a non-negative integer", "-3"),
    ("attempts 1.5", add({"attempts": 1.5}), "attempts", "a non-negative integer", "1.5"),
    ("data nan", add({}, math.nan), "data", "a finite number", "nan"),
    ("data nested inf", add({}, {"n": [math.inf]}), "data.n[0]", "a finite number", "inf"),
    ("data bytes", add({}, b"x"), "data", "a JSON value", "a bytes"),
    ("data set", add({}, {"s": {1}}), "data.s", "a JSON value", "a set"),
    ("data datetime", add({}, {"at": datetime.datetime(2020, 1, 1)}), "data.at", "a JSON value", "a datetime"),
    ("data function", add({}, {"f": len}), "data.f", "a JSON value", "a function"),
    ("data cycle", add({}, cycle), "data.self", "without cycles", "a dict"),
    ("name 42", add({}, {}, 42), "name", "a string", "42"),
    ("name None", add({}, {}, None), "name", "a string", "None"),
    ("lane ''", add({"lane": ""}), "lane", "a non-empty string", '""'),
    ("lane 7", add({"lane": 7}), "lane", "a non-empty string", "7"),
    ("lane too long", add({"lane": "x" * 1025}), "lane", "at most 1024", f'"{"x" * 60}"… (1025 chars)'),
    ("lane lone surrogate", add({"lane": "a\ud800"}), "lane", "well-formed", '"a\ud800"'),
    ("jobId '12'", add({"jobId": "12"}), "jobId", "not an integer", '"12"'),
    ("jobId 12", add({"jobId": 12}), "jobId", "a non-empty string", "12"),
    ("jobId '0'", add({"jobId": "0"}), "jobId", "other than '0'", '"0"'),
    ("backoff 'soon'", add({"backoff": "soon"}), "backoff", "a dict", '"soon"'),
    ("backoff -1", add({"backoff": -1}), "backoff", "a non-negative integer", "-1"),
    ("backoff no type", add({"backoff": {"delay": 5}}), "backoff.type", "'fixed'", "None"),
    ("backoff delay -1", add({"backoff": {"type": "fixed", "delay": -1}}), "backoff.delay", "a non-negative integer", "-1"),
    ("backoff jitter 2", add({"backoff": {"type": "fixed", "jitter": 2}}), "backoff.jitter", "0…1", "2"),
    ("removeOnComplete -1", add({"removeOnComplete": -1}), "removeOnComplete", "a non-negative integer", "-1"),
    ("removeOnFail 1.5", add({"removeOnFail": 1.5}), "removeOnFail", "a non-negative integer", "1.5"),
    ("removeOnComplete 'yes'", add({"removeOnComplete": "yes"}), "removeOnComplete", "True, False, a count", '"yes"'),
    ("removeOnComplete age -1", add({"removeOnComplete": {"age": -1}}), "removeOnComplete.age", "a non-negative integer", "-1"),
    ("lifo 'yes'", add({"lifo": "yes"}), "lifo", "a boolean", '"yes"'),
    ("unknown option", add({"prority": 1}), "opts.prority", "one of the known options", '"prority"'),
    ("opts a number", lambda q, j: q.add("job", {}, 5), "opts", "a dict", "5"),
    ("opts a list", lambda q, j: q.add("job", {}, []), "opts", "a dict", "a list of 0"),
    ("group and lane differ", add({"lane": "a", "group": {"id": "b"}}), "group.id", "the same as lane", '"b"'),
    ("parent queue unqualified", add({"parent": {"id": "1", "queue": "q"}}), "opts.parent.queue", "qualified name", '"q"'),
    ("dedup without id", add({"deduplication": {"ttl": 5}}), "deduplication.id", "a non-empty string", "None"),
    ("addBulk not a list", lambda q, j: q.addBulk({}), "jobs", "a list", "a dict"),
    ("addBulk None entry", lambda q, j: q.addBulk([{"name": "a", "data": {}}, None]), "jobs[1]", "a dict", "None"),
    ("addBulk bad name", lambda q, j: q.addBulk([{"name": "a", "data": {}}, {"name": 1, "data": {}}]), "jobs[1].name", "a string", "1"),
    ("addBulk bad priority", lambda q, j: q.addBulk([{"name": "a", "data": {}}, {"name": "b", "data": {}, "opts": {"priority": -1}}]), "jobs[1].opts.priority", "an integer", "-1"),
    ("addBulk bad data", lambda q, j: q.addBulk([{"name": "a", "data": {}}, {"name": "b", "data": {1, 2}}]), "jobs[1].data", "a JSON value", "a set"),
    ("addBulk unknown option", lambda q, j: q.addBulk([{"name": "b", "data": {}, "opts": {"nope": 1}}]), "jobs[0].opts.nope", "one of the known options", '"nope"'),
    ("sizeLimit in UTF-8 bytes", add({"sizeLimit": 10}, "é" * 5), "data", "at most 10 bytes of JSON (sizeLimit)", "12 bytes"),
    ("changePriority 2.5", lambda q, j: j.changePriority({"priority": 2.5}), "priority", "an integer", "2.5"),
    ("getJob ''", lambda q, j: q.getJob(""), "jobId", "a non-empty string", '""'),
    ("getJobCounts bogus", lambda q, j: q.getJobCounts("bogus"), "types", "waiting", '"bogus"'),
    ("updateProgress nan", lambda q, j: j.updateProgress({"n": math.nan}), "progress.n", "a finite number", "nan"),
    ("updateData cycle", lambda q, j: j.updateData(cycle), "data.self", "without cycles", "a dict"),
    ("log line 5", lambda q, j: j.log(5), "logRow", "a string", "5"),
    ("lanes.setWeight 0", lambda q, j: q.lanes.setWeight("a", 0), "weight", "1…", "0"),
    ("lanes.setLimit -1", lambda q, j: q.lanes.setLimit("a", -1), "limit", "a non-negative integer", "-1"),
    ("lanes.setRateLimit max 0", lambda q, j: q.lanes.setRateLimit("a", {"max": 0, "duration": 10}), "rate.max", "a positive integer", "0"),
    ("lanes.pause ''", lambda q, j: q.lanes.pause(""), "lane", "a non-empty string", '""'),
    ("getJobs start 1.5", lambda q, j: q.getJobs(["waiting"], 1.5), "start", "an integer", "1.5"),
]


async def snapshot(r, keys: QueueKeys):
    out = {}
    async for k in r.scan_iter(match=keys.base.replace("[", "\\[") + "*"):
        out[k] = await r.dump(k)
    return out


@pytest.mark.parametrize("label,call,field,expected,got", CASES, ids=[c[0] for c in CASES])
async def test_refuses_and_writes_nothing(conn, redis_url, qname, label, call, field, expected, got):
    import redis.asyncio as aioredis
    r = aioredis.Redis.from_url(redis_url)
    q = Queue(qname, {"connection": conn})
    job = await q.add("seed", {"x": 1}, {"attempts": 2})
    await q.add("other", {"y": 2}, {"lane": "a", "priority": 3})
    before = await snapshot(r, q.keys)
    with pytest.raises(ValidationError) as e:
        await call(q, job)
    err = e.value
    assert err.field == field and expected in err.expected and err.got == got, str(err)
    assert f"{field} must be" in str(err) and got in str(err)
    assert await snapshot(r, q.keys) == before
    await q.close()
    await r.aclose()


BULLMQ_TEXTS = [
    ({"priority": 2.5}, "Priority should not be float"),
    ({"priority": 2 ** 21}, "Priority should be between 0 and 2097151"),
    ({"jobId": "12"}, "Custom Id cannot be integers"),
    ({"sizeLimit": 1}, "The size of job j exceeds the limit 1 bytes"),
    ({"failParentOnFailure": True, "removeDependencyOnFailure": True}, "The following options cannot be used together"),
]


@pytest.mark.parametrize("opts,text", BULLMQ_TEXTS)
async def test_messages_begin_with_bullmq_text(conn, qname, opts, text):
    q = Queue(qname, {"connection": conn})
    with pytest.raises(ValidationError, match="^" + text):
        await q.add("j", {}, opts)
    await q.close()


@pytest.mark.parametrize("make,field,got", [
    (lambda: Queue(None), "queue name", "None"),
    (lambda: Queue(5), "queue name", "5"),
    (lambda: Queue("q", {"prefix": ""}), "prefix", '""'),
    (lambda: Queue("q", {"defaultJobOptions": {"priority": -2}}), "priority", "-2"),
    (lambda: Queue("q", {"maxPayloadBytes": 0}), "maxPayloadBytes", "0"),
    (lambda: Queue("q", {"conection": {}}), "opts.conection", '"conection"'),
    (lambda: Worker(None, None, {"autorun": False}), "queue name", "None"),
    (lambda: Worker("q", 42), "processor", "42"),
    (lambda: Worker("q", None, {"concurrency": 2.5}), "concurrency", "2.5"),
    (lambda: Worker("q", None, {"lockDuration": 0}), "lockDuration", "0"),
    (lambda: Worker("q", None, {"maxStalledCount": -1}), "maxStalledCount", "-1"),
    (lambda: Worker("q", None, {"drainDelay": 0}), "drainDelay", "0"),
    (lambda: Worker("q", None, {"limiter": {"max": 0, "duration": 1}}), "limiter.max", "0"),
])
async def test_constructors_refuse_bad_options(make, field, got):
    with pytest.raises(ValidationError) as e:
        make()
    assert e.value.field == field and e.value.got == got
