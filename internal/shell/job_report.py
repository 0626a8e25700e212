"""What the model reads about a background job: the report of a read (its output, what was
skipped, its state), the status line, and the one line a listing shows."""

from __future__ import annotations

import time
from typing import Any

from ..truncate import head_tail
from ..vocabulary import tool_name
from .job import Job
from .job_buffer import JOB_RING_BYTES, Delta

#: Characters of one read the model sees (head and tail); all of it is in the spill file.
MAX_DELTA_CHARS = 30_000
#: The longest a call (job_output, job_input) waits for a job's output.
MAX_WAIT_MS = 60_000


def report(job: Job, delta: Delta, *, empty: str = "(no new output)") -> tuple[str, dict[str, Any]]:
    """The model's text for a read of ``job`` (output, what was skipped, the state) and metadata."""
    parts = []
    if delta.skipped:
        parts.append(
            f"({delta.skipped} bytes of output were skipped: more than the {JOB_RING_BYTES // 1024} KB kept in "
            f"memory arrived since the last read. The full output is in {job.spill_path}; read it with "
            f"{tool_name('view')}.)"
        )
    bounded = head_tail(delta.text, MAX_DELTA_CHARS)
    parts.append(bounded.text.rstrip("\n") if delta.text.strip() else empty)
    if bounded.truncated:
        parts.append(f"(This read was shortened; the full output is in {job.spill_path}.)")
    parts.append(status_line(job))
    metadata: dict[str, Any] = {
        "job_id": job.id,
        "state": job.state,
        "exit_code": job.exit_code,
        "pid": job.pid,
        "output_bytes": delta.total_bytes,
        "skipped_bytes": delta.skipped,
        "truncated": bounded.truncated,
        "full_output_path": str(job.spill_path),
        "tty": job.tty,
    }
    return "\n\n".join(parts), metadata


def status_line(job: Job) -> str:
    if job.state == "running":
        return f"Job {job.id} is running ({age(job)})."
    if job.state == "timed out":
        line = f"Job {job.id} timed out after {job.timeout_s:g} s and was stopped ({age(job)})."
    elif job.state == "killed":
        line = f"Job {job.id} was killed ({age(job)})."
    else:
        line = f"Job {job.id} exited with code {job.exit_code} ({age(job)})."
    if job.stopped_background:
        was = "process was" if job.stopped_background == 1 else "processes were"
        line += f" {job.stopped_background} background {was} stopped when its shell exited."
    return line


def summary(job: Job) -> str:
    """One line: id, command, state, age, output size."""
    command = job.command if len(job.command) <= 60 else job.command[:59] + "…"
    return f"{job.id} | {command} | {describe_state(job)} | {age(job)} | {_size(job.total_bytes)} output"


def describe_state(job: Job) -> str:
    if job.state == "exited":
        return f"exited with code {job.exit_code}"
    return job.state


def age(job: Job) -> str:
    seconds = (job.ended or time.monotonic()) - job.started
    verb = "running for" if job.running else "ran for"
    return f"{verb} {_duration(seconds)}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{seconds % 3600 // 60:02.0f}m"


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / 1024 / 1024:.1f} MB"
