"""Job output reads are deltas: whatever the chunking of the output and the timing of the reads,
the reads joined are the output, each byte once, and a character split across writes is never
garbled."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from agent_toolsmith.proc import ProcessSupervisor
from agent_toolsmith.shell.job import Job
from agent_toolsmith.shell.jobs import JobTable
from hypothesis import given, settings
from hypothesis import strategies as st

#: Hang guard for one piece of output to come back through `cat`.
ECHO_TIMEOUT_S = 30.0


def start_cat(tmp: Path, name: str) -> tuple[JobTable, ProcessSupervisor, Job]:
    table, owner = JobTable(), ProcessSupervisor()
    job = table.start(
        "cat", ["cat"], cwd=str(tmp), env={"PATH": "/usr/bin:/bin"}, tty=False,
        spill_path=lambda: tmp / f"{name}.txt", timeout_s=None, max_jobs=1, owner=owner,
    )  # fmt: skip
    return table, owner, job


@settings(max_examples=25, deadline=None)
@given(
    pieces=st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=6),
    read_after=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_reads_joined_are_the_output(tmp_path_factory: object, pieces: list[bytes], read_after: list[bool]) -> None:
    tmp = tmp_path_factory.mktemp("deltas")  # type: ignore[attr-defined]
    table, owner, job = start_cat(tmp, "cat")
    expected = b"".join(pieces)
    reads: list[str] = []

    async def main() -> None:
        sent = 0
        for index, piece in enumerate(pieces):
            assert job.write(piece, ECHO_TIMEOUT_S) == len(piece)
            sent += len(piece)
            deadline = time.monotonic() + ECHO_TIMEOUT_S
            while job.total_bytes < sent and time.monotonic() < deadline:
                await job.wait_change(job.version, 1.0)
            if read_after[index]:
                reads.append(job.read_delta().text)
        job.kill()
        assert await job.finished(ECHO_TIMEOUT_S)
        reads.append(job.read_delta().text)
        await table.close()
        await owner.close()

    asyncio.run(main())
    assert "".join(reads) == expected.decode("utf-8", "replace")
    assert job.read_delta().text == ""  # nothing is read twice
    assert (tmp / "cat.txt").read_bytes() == expected


def test_a_character_split_across_writes_is_held_back_until_whole(tmp_path: Path) -> None:
    table, owner, job = start_cat(tmp_path, "split")
    euro = "€".encode()

    async def main() -> tuple[str, str]:
        job.write(b"a" + euro[:1], ECHO_TIMEOUT_S)
        async with asyncio.timeout(ECHO_TIMEOUT_S):
            while job.total_bytes < 2:
                await job.wait_change(job.version, 1.0)
        first = job.read_delta().text
        job.write(euro[1:] + b"b", ECHO_TIMEOUT_S)
        async with asyncio.timeout(ECHO_TIMEOUT_S):
            while job.total_bytes < 5:
                await job.wait_change(job.version, 1.0)
        second = job.read_delta().text
        await table.close()
        await owner.close()
        return first, second

    assert asyncio.run(main()) == ("a", "€b")
