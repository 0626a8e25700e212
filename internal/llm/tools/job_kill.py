"""job_kill: stop a background job and everything it started."""

from __future__ import annotations

from dataclasses import dataclass

from ...proc import KILL_GRACE_S, REAP_TIMEOUT_S
from ...shell.job_report import report
from .context import ProcessServices
from .contract import Tool, ToolResponse
from .params import param

DESCRIPTION = """Stops a background job (started by bash with run_in_background) and every process it
started, and returns its last unread output and final state. Killing a job that already ended just
reports it. Stop servers and watchers you no longer need: a session runs a limited number of jobs.
"""


@dataclass(frozen=True)
class JobKillParams:
    job_id: str = param("The job's id (from bash run_in_background)", minLength=1)


class JobKillTool(Tool):
    name = "job_kill"
    title = "Stop a background job"
    description = DESCRIPTION
    Params = JobKillParams
    idempotent = True

    async def run(self, params: JobKillParams, ctx: ProcessServices) -> ToolResponse:
        job = ctx.jobs.get(params.job_id)
        job.kill()
        finished = await job.finished(KILL_GRACE_S + REAP_TIMEOUT_S + 1)
        text, metadata = report(job, job.read_delta())
        if not finished:
            text += "\n\n(The job did not confirm its end in time; job_output tells when it does.)"
        return ToolResponse(text, metadata=metadata)


TOOL = JobKillTool()
