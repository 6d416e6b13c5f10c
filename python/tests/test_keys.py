"""Key names as src/core/keys.ts builds them, checked against Node's output for tricky names."""
from echomq.keys import QueueKeys, client_name, parse_job_key, unescape_queue_name, escape_queue_name

TRICKY = [
    ["plain", "emq"], ["a}:x", "emq"], ["ü{b}%7D", "{bull}"], ["q:with:colons", "bull"],
    ["😀 émoji", "emq:sub"], ["%25", "%"], ["{}", "{x}:y"],
]


async def test_same_keys_as_node(node):
    expected = await node.call("keys", names=TRICKY)
    for (queue, prefix), want in zip(TRICKY, expected):
        got = QueueKeys(queue, prefix)
        for name, key in want.items():
            if name in ("queue", "prefix", "base"):
                assert getattr(got, name) == key
            else:
                assert got[name] == key, (queue, name)
        assert set(want) - {"queue", "prefix", "base"} == set(got.as_dict())


def test_job_keys_round_trip_with_any_id():
    for queue, prefix in TRICKY:
        k = QueueKeys(queue, prefix)
        for jid in ["1", "a:b", "{x}", "ü"]:
            assert parse_job_key(k.job(jid)) == {"prefix": prefix, "queue": queue, "id": jid}
        assert unescape_queue_name(escape_queue_name(queue)) == queue


def test_client_name_is_base64_of_the_queue():
    assert client_name(QueueKeys("ü", "emq"), ":qe") == "emq:w7w=:qe"
