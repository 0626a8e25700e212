"""job_input: type into a background job's stdin (or terminal), return what it printed."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...errors import ToolError
from ...shell.job import Job
from ...shell.job_report import MAX_WAIT_MS, report
from .command_call import authorize_job_input
from .context import ProcessServices
from .contract import Tool, ToolResponse
from .params import param

#: Default wait for the job's answer.
DEFAULT_WAIT_MS = 1_000
#: Once the job printed something, this much silence ends the wait early.
QUIET_MS = 50
#: Text larger than this is refused: write a file and have the job read it.
MAX_INPUT_BYTES = 64 * 1024
#: A job that does not read its input gets this long before the rest is dropped.
WRITE_TIMEOUT_S = 5.0

DESCRIPTION = f"""Sends text to a background job's input and returns what it printed within `wait_ms`
(default {DEFAULT_WAIT_MS}, max {MAX_WAIT_MS}), the way a person types into a program.

- Include "\\n" to press Enter. Control characters pass through: "\\u0003" is Ctrl-C (interrupts a job
  started with tty: true), "\\u0004" is Ctrl-D (end of input; exits a REPL).
- Use it to answer prompts ([y/N], a REPL's >>>) of a job started by bash with run_in_background
  (with tty: true for programs that need a terminal, such as `python3 -i`).
- Text for a shell job (bash, sh) is checked like a bash command; code for an interpreter job
  (python, node, ...) asks permission like a command would.
- Returns early once the job printed something and paused for {QUIET_MS} ms, or ended.
"""


@dataclass(frozen=True)
class JobInputParams:
    job_id: str = param("The job's id (from bash run_in_background)", minLength=1)
    text: str = param("The text to send; include \\n to press Enter")
    wait_ms: int = param("How long to wait for the job's answer", DEFAULT_WAIT_MS, minimum=0, maximum=MAX_WAIT_MS)


class JobInputTool(Tool):
    name = "job_input"
    title = "Type into a background job"
    description = DESCRIPTION
    Params = JobInputParams
    open_world = True

    async def run(self, params: JobInputParams, ctx: ProcessServices) -> ToolResponse:
        job = ctx.jobs.get(params.job_id)
        if not job.running:
            text, metadata = report(job, job.read_delta())
            raise ToolError(f"Job {job.id} is not running: nothing was sent.\n\n{text}", metadata, code="job_ended")
        data = params.text.encode("utf-8", "surrogateescape")
        if len(data) > MAX_INPUT_BYTES:
            raise ToolError(
                f"The input is {len(data)} bytes, over the {MAX_INPUT_BYTES}-byte limit. Write it to a file with the "
                "write tool and have the job read the file.",
                code="input_too_large",
            )
        await authorize_job_input(job, params.text, ctx, tool=self.name)
        before, printed_before = job.version, job.total_bytes
        written = job.write(data, WRITE_TIMEOUT_S)
        if params.wait_ms:
            await _wait_for_answer(job, before, printed_before, data, params.wait_ms / 1000)
        text, metadata = report(job, job.read_delta())
        metadata["written_bytes"] = written
        if written < len(data):
            text = (
                f"(Only {written} of {len(data)} bytes were sent: the job is not reading its input, or closed it.)\n\n"
                + text
            )
        return ToolResponse(text, metadata=metadata)


async def _wait_for_answer(job: Job, since: int, printed_before: int, data: bytes, timeout_s: float) -> None:
    """Until the job answered and paused, ended, or ``timeout_s``. A terminal echoes the input
    at once (newlines as CRLF); that echo alone is not the answer, so the wait goes on."""
    deadline = time.monotonic() + timeout_s
    await job.wait_output(since, timeout_s, QUIET_MS / 1000)
    echo = len(data) + data.count(b"\n") if job.tty else 0
    while job.running and job.total_bytes - printed_before <= echo:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        await job.wait_output(job.version, left, QUIET_MS / 1000)


TOOL = JobInputTool()
