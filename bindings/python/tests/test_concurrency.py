"""Threads and asyncio: the GIL is released during calls, sessions run in parallel, calls on
one session queue in order, and processes share a store."""

from __future__ import annotations

import asyncio
import threading

import burrow
import burrow.aio


def test_threads_on_different_sessions(sb):
    sessions = [sb.create(f"t{i}") for i in range(6)]
    errors = []

    def work(s):
        try:
            for j in range(5):
                r = s.sh(f"echo {s.name}-{j} >> log.txt; wc -l < log.txt")
                assert r.stdout.strip() == str(j + 1)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for s in sessions:
        assert s.read("log.txt") == "".join(f"{s.name}-{j}\n" for j in range(5))


def test_threads_on_one_session_queue(s):
    def work(i):
        for j in range(5):
            s.sh(f"echo {i}-{j} >> log.txt")

    before = s.info().version
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Every call landed, each as its own version: none lost to a conflict.
    assert len(s.read("log.txt").splitlines()) == 20
    assert s.info().version == before + 20


def test_the_gil_is_released_during_a_call(s):
    started = threading.Event()

    def slow():
        started.set()
        s.sh("sleep 3")

    t = threading.Thread(target=slow)
    t.start()
    started.wait()
    # This thread runs Python while the call is in progress: had the call kept the GIL,
    # this loop could only run after it ended, when the thread is no longer alive.
    counted = sum(1 for _ in range(100000))
    threading.Event().wait(0.5)
    assert counted == 100000 and t.is_alive()
    t.join()


def test_asyncio_variants(store):
    async def main():
        sb = burrow.aio.AsyncSandbox(store)
        s = await sb.create("aio")
        await s.write("f.txt", "base\n")
        forks = await s.fork(3)
        results = await asyncio.gather(
            *(f.sh(f"echo {i} > f.txt; cat f.txt") for i, f in enumerate(forks))
        )
        assert [r.stdout for r in results] == ["0\n", "1\n", "2\n"]
        assert await s.read("f.txt") == "base\n"
        assert [c.path for c in (await forks[0].diff(s))] == ["f.txt"]
        assert (await sb.session("aio")).id == s.id
        assert len(await sb.sessions()) == 4
        assert await s.glob("*.txt") == ["/workspace/f.txt"]
        await s.edit("f.txt", "base", "edited")
        assert await s.read_bytes("f.txt") == b"edited\n"
        r = await s.run_tool_use({"type": "tool_use", "id": "x", "name": "bash", "input": {"command": "pwd"}})
        assert r["content"][0]["text"] == "/workspace"
        assert (await s.undo()) > 0
        assert [e.kind for e in await s.log("forked")] == []
        assert (await sb.fsck()).clean

    asyncio.run(main())
