"""job_output: read a background job's new output (a delta), or list the session's jobs."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...shell.job_report import MAX_WAIT_MS, report, summary
from .context import ProcessServices
from .contract import Tool, ToolResponse
from .params import param

#: Once a waited-for output started, this much silence ends the wait.
QUIET_S = 0.05

DESCRIPTION = f"""Reads the output a background job (started by bash with run_in_background) produced since
it was last read, and its state: running, exited with code N, killed, or timed out.

- Each read returns only new output, so nothing is read twice. `wait_ms` (0 to {MAX_WAIT_MS}) waits for
  new output or the job's end when there is none yet: use it instead of sleep to wait for a server
  to come up or a build to finish.
- Without `job_id`: the session's jobs, one line each (id, command, state, age, output size).
- A job keeps its last 1 MB of output in memory; when more arrived since the last read, the result
  says how much was skipped and names the file holding the full output (read it with view).
- Use job_input to type into a job and job_kill to stop it.
"""


@dataclass(frozen=True)
class JobOutputParams:
    job_id: str | None = param("The job's id (from bash run_in_background); omit to list all jobs", None)
    wait_ms: int = param("Wait up to this long for new output or the job's end", 0, minimum=0, maximum=MAX_WAIT_MS)


class JobOutputTool(Tool):
    name = "job_output"
    title = "Read a background job's output"
    description = DESCRIPTION
    Params = JobOutputParams
    read_only = True
    idempotent = False  # each read consumes the output it returns

    async def run(self, params: JobOutputParams, ctx: ProcessServices) -> ToolResponse:
        if params.job_id is None:
            jobs = ctx.jobs.jobs()
            if not jobs:
                return ToolResponse("No background jobs in this session.", metadata={"jobs": []})
            lines = [summary(job) for job in jobs]
            return ToolResponse("\n".join(lines), metadata={"jobs": [job.id for job in jobs]})
        job = ctx.jobs.get(params.job_id)
        started = time.monotonic()
        if params.wait_ms and job.running and not job.unread():
            # Output that just started arriving gets a moment to finish its line.
            await job.wait_output(job.version, params.wait_ms / 1000, QUIET_S)
        text, metadata = report(job, job.read_delta())
        metadata["waited_ms"] = round((time.monotonic() - started) * 1000)
        return ToolResponse(text, metadata=metadata)


TOOL = JobOutputTool()
