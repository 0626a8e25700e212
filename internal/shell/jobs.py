"""A session's background jobs: starting one within the session's limit, finding one by id,
listing them, and stopping them all when the session closes. One job is job.py; what the model
reads about it, job_report.py. Both are imported when a job starts or is looked up: every
session has a job table, few calls start a job."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ToolError
from ..vocabulary import tool_name

if TYPE_CHECKING:
    from ..proc import ProcessSupervisor
    from .job import Job

__all__ = ["JobTable"]

#: Finished jobs stay listed (and readable) until this many jobs exist; the oldest go first.
MAX_KEPT_JOBS = 64


class JobTable:
    """A session's background jobs. ``max_jobs`` is checked when a job starts."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._counter = 0
        self._lock = threading.Lock()

    def start(
        self,
        command: str,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        tty: bool,
        spill_path: Callable[[], Path],
        timeout_s: float | None,
        max_jobs: int,
        owner: ProcessSupervisor,
    ) -> Job:
        from .job import Job
        from .job_report import summary

        with self._lock:
            running = [job for job in self._jobs.values() if job.running]
            if len(running) >= max_jobs:
                listing = "\n".join(summary(job) for job in running)
                raise ToolError(
                    f"This session already runs {len(running)} background jobs, the limit ([bash] max_jobs = "
                    f"{max_jobs}). Stop one with {tool_name('job_kill')} first:\n{listing}",
                    code="too_many_jobs",
                )
            self._counter += 1
            job = Job(f"j{self._counter}", command, tty, spill_path(), timeout_s)
            self._jobs[job.id] = job
            self._forget_old()
        try:
            job.start(argv, cwd=cwd, env=env, owner=owner)
        except OSError as exc:
            with self._lock:
                self._jobs.pop(job.id, None)
            raise ToolError(
                f"The background job could not be started: {exc.strerror or exc}.",
                code="job_not_started",
            ) from exc
        return job

    def _forget_old(self) -> None:
        finished = [job for job in self._jobs.values() if not job.running]
        for job in finished[: max(len(self._jobs) - MAX_KEPT_JOBS, 0)]:
            del self._jobs[job.id]

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id.strip())
            known = list(self._jobs.values())
        if job is None:
            from .job_report import summary

            listing = "\n".join(summary(j) for j in known) or "(none)"
            raise ToolError(
                f"No background job {job_id!r} in this session. Its jobs:\n{listing}", code="unknown_job"
            )
        return job

    def jobs(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    async def close(self) -> None:
        """Kill every running job and wait (bounded) until their threads finished."""
        jobs = [job for job in self.jobs() if job.running]
        if not jobs:
            return
        from ..proc import KILL_GRACE_S
        for job in jobs:
            job.kill()
        for job in jobs:
            await job.finished(KILL_GRACE_S + 2)
