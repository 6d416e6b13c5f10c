"""The shipped library artifact: what the Python client needs from it is there (test/
library-artifact.test.ts checks on the Node side that it equals what src/scripts builds)."""
from echomq.keys import QueueKeys
from echomq.library import library

USED = ("add", "claim", "complete", "fail", "extendLeases", "recover", "progress", "addLog", "updateData", "pause",
        "pauseLane", "setLane", "retry", "remove", "promote", "changePriority", "moveToWait", "advanceScheduler",
        "upgradeLayout")
CODES = ("NOT_FOUND", "STALE", "BAD_STATE", "ACTIVE_JOBS", "GROUP_FULL", "LOCK_MISMATCH", "PENDING_DEPENDENCIES",
         "UNKNOWN_LAYOUT")


def test_every_key_name_of_every_script_is_built_by_keys_py():
    k = QueueKeys("q")
    for s in library().scripts.values():
        for name in s.keys:
            if name == "bullBase":  # BullMQ's base of the queue, which the move's scripts take (echomq.migrate)
                continue
            assert k[name].startswith("emq:{q}:"), (s.name, name)


def test_the_scripts_and_codes_the_client_calls_are_there():
    lib = library()
    assert set(USED) <= set(lib.scripts)
    assert set(CODES) <= set(lib.codes) and all(lib.codes[c] < 0 for c in CODES)
    hot = {n for n, s in lib.scripts.items() if s.function_name}
    assert {"add", "claim", "complete", "fail", "extendLeases", "recover"} <= hot
    for n in hot:
        assert lib.scripts[n].function_name == f"emq_{lib.tag}_{n}" and lib.scripts[n].function_name in lib.source
    assert lib.layout_version == 2


async def test_function_library_is_loaded_and_reloaded_after_flush(conn, r, qname):
    from echomq import Queue
    q = Queue(qname, {"connection": conn})
    await q.add("a", {})
    listing = await r.execute_command("FUNCTION", "LIST", "LIBRARYNAME", library().name)
    assert library().name in str(listing)
    await r.function_flush()
    await q.add("b", {})  # "Function not found" → FUNCTION LOAD REPLACE → FCALL again
    assert await q.getWaitingCount() == 2
    await q.close()


async def test_eval_mode_recovers_from_script_flush(conn, r, qname, monkeypatch):
    from echomq import Queue
    from echomq import runner
    monkeypatch.setenv("ECHOMQ_SCRIPTS", "eval")
    q = Queue(qname, {"connection": conn})
    assert runner.script_mode(q.client) == "eval"
    await q.add("a", {})
    await r.script_flush()
    await q.add("b", {})  # NOSCRIPT → EVAL of the source
    assert await q.getWaitingCount() == 2
    await q.close()
