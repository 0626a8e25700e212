"""Toolsmith to MCP: a tool's listing, a call's result, its progress as notifications, the
client's roots as directories, and the question tool's questions as an elicitation."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..fsutil.uris import is_file_uri, uri_to_path
from ..logs import logger
from .sdk import HANDSHAKE_PROTOCOL_VERSIONS, ServerRequestContext, types

if TYPE_CHECKING:
    from ..llm.tools.contract import FileAttachment, ToolInfo, ToolResponse
    from ..permission import Answers, QuestionRequest

log = logger("toolsmith")

#: How long a call waits for the client's roots before going on without them.
ROOTS_TIMEOUT_S = 5.0
#: The ``_meta`` key of a result that carries the tool's metadata (a prefixed name, as the MCP
#: spec asks of implementation-specific ``_meta`` keys).
META_KEY = "toolsmith/metadata"


class ProgressReporter:
    """Turns the tool's progress callbacks into ``notifications/progress``, in order, with
    increasing ``progress`` values. A no-op when the call carried no progress token."""

    def __init__(self, ctx: ServerRequestContext[Any]) -> None:
        meta: Any = ctx.meta or {}
        self._session = ctx.session
        self._wanted = meta.get("progress_token", meta.get("progressToken")) is not None
        self._queue: asyncio.Queue[tuple[float, float | None, str] | None] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send_all()) if self._wanted else None
        self._progress = 0.0

    def report(self, kind: str, data: dict[str, Any]) -> None:
        if not self._wanted:
            return
        total: float | None = None
        size = data.get("bytes")
        if kind == "download" and isinstance(size, int) and size > self._progress:
            self._progress = float(size)  # fetch: bytes so far, of the total when known
            total = float(data["total"]) if isinstance(data.get("total"), int) else None
            message = f"{size} bytes downloaded"
        else:
            self._progress += 1  # output chunks and other events: counted
            message = str(data.get("text", kind))
        self._queue.put_nowait((self._progress, total, message))

    async def _send_all(self) -> None:
        while (item := await self._queue.get()) is not None:
            progress, total, message = item
            try:
                await self._session.report_progress(progress, total, message)
            except Exception as exc:  # a client that went away must not fail the call
                log.info("progress notification not sent: %s", exc)

    async def drain(self) -> None:
        """Send what is queued before the result goes out."""
        if self._sender is not None:
            self._queue.put_nowait(None)
            await self._sender

    def close(self) -> None:
        if self._sender is not None and not self._sender.done():
            self._sender.cancel()


def mcp_tool(info: ToolInfo) -> types.Tool:
    annotations = types.ToolAnnotations(
        title=info.title,
        read_only_hint=info.read_only,
        destructive_hint=info.destructive,
        idempotent_hint=info.idempotent,
        open_world_hint=info.open_world,
    )
    return types.Tool(
        name=info.name, title=info.title, description=info.description, input_schema=info.parameters,
        annotations=annotations,
    )  # fmt: skip


def call_result(response: ToolResponse) -> types.CallToolResult:
    """:func:`call_result_wire` as the SDK's typed result."""
    return types.CallToolResult.model_validate(call_result_wire(response))


def call_result_wire(response: ToolResponse) -> dict[str, Any]:
    """A call's result as it goes on the wire: text first, images after, then attached files (an
    embedded resource with the content, or a resource link to the file); the metadata in
    ``_meta``, never as ``structuredContent`` (which the spec pairs with a declared
    ``outputSchema`` and which some hosts show instead of content)."""
    content: list[dict[str, Any]] = []
    if response.content or not response.images:
        content.append({"type": "text", "text": response.content})
    content += [{"type": "image", "data": i.data_base64, "mimeType": i.media_type} for i in response.images]
    content += [_attached(f).model_dump(mode="json", by_alias=True, exclude_none=True) for f in response.files]
    return {"_meta": {META_KEY: response.metadata}, "content": content, "isError": response.is_error}


def _attached(file: FileAttachment) -> Any:
    resource: Any
    if file.text is not None:
        resource = types.TextResourceContents(uri=file.uri, mime_type=file.media_type, text=file.text)
    elif file.data_base64 is not None:
        resource = types.BlobResourceContents(uri=file.uri, mime_type=file.media_type, blob=file.data_base64)
    else:
        return types.ResourceLink(uri=file.uri, name=file.name, mime_type=file.media_type, size=file.size)
    return types.EmbeddedResource(resource=resource)


async def client_roots(ctx: ServerRequestContext[Any]) -> list[Path]:
    """The client's file:// roots, when it offers roots (a deprecated capability, still the only
    way a handshake-era client names its folders)."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            listed = await asyncio.wait_for(ctx.session.list_roots(), ROOTS_TIMEOUT_S)
    except Exception as exc:  # no roots is a fine answer: the workspace alone
        log.info("the client's roots could not be listed: %s", exc)
        return []
    roots = []
    for root in listed.roots:
        uri = str(root.uri)
        if is_file_uri(uri) and str(uri_to_path(uri)) not in ("", "."):
            roots.append(Path(os.path.realpath(uri_to_path(uri))))
    return roots


# --- the question tool: its questions as an elicitation form, the form's answers as Answers ----

#: What the question tool's form calls its free-text companion of a choice question.
OTHER_SUFFIX = "_other"


def can_elicit_form(ctx: ServerRequestContext[Any]) -> bool:
    """The client declared form elicitation (an empty ``elicitation`` capability means form)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def question_form(request: QuestionRequest) -> tuple[str, dict[str, Any]]:
    """The message and the requested schema of one elicitation for ``request``'s questions: one
    property per question (``q1``, ``q2``, ...), a choice question also ``qN_other`` for an answer
    in the user's own words. Nothing is required: the user may leave a question blank."""
    properties: dict[str, Any] = {}
    lines = []
    for number, question in enumerate(request.questions, 1):
        key = f"q{number}"
        title = question.header or f"Question {number}"
        lines.append(f"{number}. {question.text}" if len(request.questions) > 1 else question.text)
        meanings = "; ".join(f"{c.label}: {c.description}" for c in question.choices if c.description)
        described = f"{question.text} ({meanings})" if meanings else question.text
        labels = [choice.label for choice in question.choices]
        if not labels:
            properties[key] = {"type": "string", "title": title, "description": described}
            continue
        if question.multi_select:
            properties[key] = {"type": "array", "title": title, "description": described,
                               "items": {"type": "string", "enum": labels}}  # fmt: skip
        else:
            properties[key] = {"type": "string", "title": title, "description": described, "enum": labels}
        properties[key + OTHER_SUFFIX] = {
            "type": "string", "title": f"{title}: other", "description": "Or answer in your own words",
        }  # fmt: skip
    return "\n".join(lines), {"type": "object", "properties": properties}


def form_answers(request: QuestionRequest, result: types.ElicitResult) -> Answers:
    """The user's answers in an elicitation result (declined when they declined or dismissed it)."""
    from ..permission import Answer, Answers

    if result.action != "accept":
        return Answers(declined=True)
    content = result.content or {}
    answers = []
    for number, question in enumerate(request.questions, 1):
        value = content.get(f"q{number}")
        other = content.get(f"q{number}{OTHER_SUFFIX}")
        own = other.strip() if isinstance(other, str) else ""
        if not question.choices:
            answers.append(Answer((), value if isinstance(value, str) else ""))
        elif isinstance(value, list):
            answers.append(Answer(tuple(str(v) for v in value), own))
        else:
            answers.append(Answer((value,) if isinstance(value, str) and value else (), own))
    return Answers(tuple(answers))


#: The key of the question tool's one input request in a 2026-07-28 call's round trip.
QUESTION_INPUT_KEY = "question"


async def elicit_answers(
    ctx: ServerRequestContext[Any], request: QuestionRequest, responses: Mapping[str, Any] | None = None
) -> Answers:
    """Ask the user through the client. A client that did not declare form elicitation cannot be
    asked: CannotAsk at once, never a request it would not answer. Over a handshake-era protocol
    the question is an ``elicitation/create`` request; over 2026-07-28 (no server-initiated
    requests) the call answers with the same request embedded (InputRequired), and the client
    calls again with the user's answer in ``responses``."""
    from ..errors import CannotAsk, InputRequired

    if not can_elicit_form(ctx):
        raise CannotAsk(
            "This MCP client cannot ask the user questions (it did not declare the elicitation capability). "
            "Decide with your best judgement and say in your reply what you assumed, or ask in your reply."
        )
    message, schema = question_form(request)
    if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        return form_answers(request, result)
    answered = (responses or {}).get(QUESTION_INPUT_KEY)
    if answered is None:
        asked = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
        raise InputRequired({QUESTION_INPUT_KEY: asked.model_dump(mode="json", by_alias=True, exclude_none=True)})
    result = answered if isinstance(answered, types.ElicitResult) else types.ElicitResult.model_validate(answered)
    return form_answers(request, result)


def input_required_result(metadata: dict[str, Any]) -> types.InputRequiredResult:
    """The answer to a 2026-07-28 call whose tool needs the user's input (see elicit_answers)."""
    requests = {key: types.ElicitRequest.model_validate(value) for key, value in metadata["input_requests"].items()}
    return types.InputRequiredResult(input_requests=requests)  # type: ignore[arg-type]
