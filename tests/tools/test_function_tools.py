"""Function tools: an embedder's Python functions as tools, through Session.run and the providers."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from agent_toolsmith import CancelToken, Decision, PermissionRequest, Tool, ToolError, ToolPolicy, ToolResponse, tool
from agent_toolsmith.llm.providers import PROVIDERS, check_declaration, declarations
from agent_toolsmith.llm.tools.function_tools import MAX_RESULT_CHARS
from agent_toolsmith.session import Session
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import make_session

#: How long a cancelled call may take to answer (generous: the machine is shared).
ANSWER_WITHIN_S = 5.0


def add(a: int, b: int = 2) -> int:
    """Adds two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def run(session: Session, name: str, params: Any, **kwargs: Any) -> ToolResponse:
    return asyncio.run(session.run(name, params, **kwargs))


def info(session: Session, name: str) -> Any:
    (found,) = [i for i in session.tools() if i.name == name]
    return found


def test_a_plain_function_runs_declares_integers_and_refuses_bad_parameters(workspace: Path) -> None:
    session = make_session(workspace, tools=[add])
    ran = run(session, "add", {"a": 40})
    assert (ran.is_error, ran.content, ran.metadata["result"]) == (False, "42", 42)
    (declared,) = declarations("anthropic", [info(session, "add")])
    assert declared["name"] == "add" and declared["description"] == "Adds two integers."
    assert declared["input_schema"] == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend."},
            "b": {"type": "integer", "description": "The second addend.", "default": 2},
        },
        "additionalProperties": False,
        "required": ["a"],
    }
    for bad, named in [({"a": "forty"}, "'a' must be an integer"), ({}, "'a' is required"),
                       ({"a": 1, "c": 2}, "unknown field 'c'"), ("[1]", "must be a JSON object")]:  # fmt: skip
        refused = run(session, "add", bad)
        assert refused.is_error and refused.metadata["error"] == "invalid_params", refused
        assert named in refused.content and refused.content.startswith("Invalid parameters for add:")


def test_every_provider_declares_a_function_tool_within_its_rules(workspace: Path) -> None:
    def search(query: str, limit: int = 10, kinds: list[Literal["a", "b"]] | None = None, exact: bool = False) -> str:
        """Searches the notes."""
        return query

    session = make_session(workspace, tools=[add, search])
    infos = [info(session, "add"), info(session, "search")]
    for provider in PROVIDERS:
        exported = declarations(provider, infos)
        assert exported and all(check_declaration(provider, d) == [] for d in exported), provider
    (openai,) = [d for d in declarations("openai", infos) if d["name"] == "add"]
    assert openai["strict"] is True and openai["parameters"]["properties"]["b"]["type"] == ["integer", "null"]
    gemini = declarations("gemini", infos)[0]["functionDeclarations"][0]
    assert gemini["parameters"]["properties"]["a"]["type"] == "INTEGER"


def test_the_decorator_names_describes_and_keeps_the_function_callable(workspace: Path) -> None:
    @tool(name="sum_two", description="Sums two numbers, for the model.", read_only=True)
    def plain(x: Annotated[float, "the first"], y: float) -> float:
        """The docstring the override replaces."""
        return x + y

    @tool
    async def shout(text: str) -> str:
        """Shouts.

        Use it sparingly: the user hears it."""
        return text.upper()

    assert plain(1, 2) == 3 and isinstance(plain, Tool) and asyncio.run(shout("a")) == "A"
    session = make_session(workspace, tools=[plain, shout])
    described = info(session, "sum_two")
    assert described.description == "Sums two numbers, for the model." and described.read_only
    assert described.parameters["properties"]["x"] == {"type": "number", "description": "the first"}
    assert info(session, "shout").description == "Shouts.\n\nUse it sparingly: the user hears it."
    assert run(session, "sum_two", {"x": 1, "y": 0.5}).content == "1.5"
    assert run(session, "shout", {"text": "hi"}).content == "HI"


def test_results_become_text_json_or_the_response_itself(workspace: Path) -> None:
    @dataclass
    class Point:
        x: int
        y: int

    def nothing() -> None:
        """Does nothing."""

    def point() -> Point:
        """A point."""
        return Point(1, 2)

    def custom() -> ToolResponse:
        """Answers itself."""
        return ToolResponse("mine", metadata={"k": 1})

    def huge() -> str:
        """Says a lot."""
        return "\n".join(f"line {i}" for i in range(20_000))

    session = make_session(workspace, tools=[nothing, point, custom, huge])
    assert run(session, "nothing", {}).content == "(no output)"
    pointed = run(session, "point", {})
    assert pointed.content == '{"x": 1, "y": 2}' and pointed.metadata["result"] == {"x": 1, "y": 2}
    mine = run(session, "custom", {})
    assert mine.content == "mine" and mine.metadata["k"] == 1
    long = run(session, "huge", {})
    assert long.metadata["truncated"] and len(long.content) < MAX_RESULT_CHARS + 500
    assert "lines truncated" in long.content and "line 19999" in long.content
    spilled = Path(long.metadata["full_output_path"]).read_text()
    assert spilled.count("\n") == 19_999


def test_an_exception_is_function_error_and_a_tool_error_keeps_its_code(workspace: Path) -> None:
    def broken(n: int) -> int:
        """Fails."""
        raise ZeroDivisionError("division by zero")

    def careful(n: int) -> int:
        """Refuses."""
        raise ToolError(f"{n} is not allowed here; give an even number.", code="odd_number")

    session = make_session(workspace, tools=[broken, careful])
    failed = run(session, "broken", {"n": 1})
    assert failed.is_error and failed.metadata["error"] == "function_error"
    assert failed.content == "broken failed: ZeroDivisionError: division by zero"
    refused = run(session, "careful", {"n": 3})
    assert refused.is_error and refused.metadata["error"] == "odd_number" and "give an even number" in refused.content


def test_a_function_tool_asks_permission_unless_read_only_and_a_read_only_session_refuses_it(
    workspace: Path,
) -> None:
    asked: list[PermissionRequest] = []

    async def deny(request: PermissionRequest) -> Decision:
        asked.append(request)
        return Decision.DENY

    @tool(read_only=True)
    def peek(key: str) -> str:
        """Reads a setting."""
        return key

    session = make_session(workspace, tools=[add, peek], asker=deny)
    denied = run(session, "add", {"a": 1, "b": 2})
    assert denied.is_error and denied.metadata["error"] == "denied"
    assert [(r.tool, r.action, r.target, r.params) for r in asked] == [("add", "call", "add", {"a": 1, "b": 2})]
    assert run(session, "peek", {"key": "k"}).content == "k" and len(asked) == 1  # read-only: no ask
    read_only = make_session(workspace, tools=[add, peek], tool_policy=ToolPolicy(read_only=True))
    assert "peek" in [i.name for i in read_only.tools()] and "add" not in [i.name for i in read_only.tools()]
    refused = run(read_only, "add", {"a": 1})
    assert refused.metadata["error"] == "tool_not_offered"
    assert not info(make_session(workspace, tools=[add]), "add").read_only


def test_an_async_function_is_cancelled_by_the_token_and_by_the_task(workspace: Path) -> None:
    ended: list[str] = []

    async def wait_long(seconds: float) -> str:
        """Waits."""
        try:
            await asyncio.sleep(seconds)
            return "slept"
        except asyncio.CancelledError:
            ended.append("cancelled")
            raise

    session = make_session(workspace, tools=[wait_long])

    async def by_token() -> tuple[ToolResponse, float]:
        token = CancelToken()
        asyncio.get_running_loop().call_later(0.2, token.cancel)
        started = time.monotonic()
        response = await session.run("wait_long", {"seconds": 60}, cancel=token)
        return response, time.monotonic() - started

    response, took = asyncio.run(by_token())
    assert response.is_error and response.metadata.get("aborted") and took < ANSWER_WITHIN_S
    assert ended == ["cancelled"]

    async def by_task() -> None:
        call = asyncio.ensure_future(session.run("wait_long", {"seconds": 60}))
        await asyncio.sleep(0.2)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(call, ANSWER_WITHIN_S)

    asyncio.run(by_task())
    assert ended == ["cancelled", "cancelled"]


def test_a_sync_function_gets_the_token_and_reports_progress_on_the_loop(workspace: Path) -> None:
    stopped = threading.Event()

    def count(up_to: int, cancel: CancelToken, progress: Callable[[str], None] | None = None) -> int:
        """Counts slowly."""
        for i in range(up_to):
            if cancel.cancelled:
                stopped.set()
                return i
            if progress is not None:
                progress(f"at {i}")
            time.sleep(0.01)
        return up_to

    session = make_session(workspace, tools=[count])
    assert set(info(session, "count").parameters["properties"]) == {"up_to"}  # injected ones are not declared
    reports: list[tuple[str, dict[str, Any], int]] = []

    async def main() -> tuple[ToolResponse, ToolResponse, int]:
        loop_thread = threading.get_ident()
        def report(kind: str, data: dict[str, Any]) -> None:
            reports.append((kind, data, threading.get_ident()))

        done = await session.run("count", {"up_to": 3}, progress=report)
        token = CancelToken()
        asyncio.get_running_loop().call_later(0.2, token.cancel)
        aborted = await session.run("count", {"up_to": 100_000}, cancel=token)
        return done, aborted, loop_thread

    done, aborted, loop_thread = asyncio.run(main())
    assert done.content == "3"
    assert [(kind, data["text"]) for kind, data, _ in reports] == [("progress", f"at {i}") for i in range(3)]
    assert {thread for _, _, thread in reports} == {loop_thread}
    assert aborted.is_error and aborted.metadata.get("aborted")
    assert stopped.wait(ANSWER_WITHIN_S)


def test_an_embedder_tool_replaces_the_built_in_of_its_name(workspace: Path) -> None:
    def view(file_path: str) -> str:
        """Shows a file from the embedder's store."""
        return f"stored: {file_path}"

    session = make_session(workspace, tools=[view])
    assert run(session, "view", {"file_path": "x"}).content == "stored: x"
    assert [i.name for i in session.tools()].count("view") == 1


def _no_doc(a: int) -> int:
    return a


def _untyped(a):  # type: ignore[no-untyped-def]
    """Untyped."""
    return a


def _star(*values: int) -> int:
    """Sums."""
    return sum(values)


def _set(values: set[int]) -> int:
    """Takes a set."""
    return len(values)


@pytest.mark.parametrize(
    ("given_tools", "error", "said"),
    [
        ([_no_doc], TypeError, "no description"),
        ([_untyped], TypeError, "has no type annotation"),
        ([_star], TypeError, "*args and **kwargs"),
        ([_set], TypeError, "unsupported parameter type"),
        ([lambda a: a], TypeError, "needs @tool(name=...)"),
        ([add, tool(name="add", description="Again.")(_no_doc)], ValueError, "two tools are named 'add'"),
        ([42], TypeError, "tools takes functions and Tool objects"),
    ],
)
def test_a_function_that_cannot_be_a_tool_is_refused_when_the_session_is_made(
    workspace: Path, given_tools: list[Any], error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=re_escape(said)):
        make_session(workspace, tools=given_tools)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)


@given(params=st.dictionaries(st.sampled_from(["a", "b", "c"]), JSON, max_size=3) | JSON)
def test_any_json_gets_a_sum_or_invalid_params_never_an_exception(workspace: Path, params: Any) -> None:
    response = run(make_session(workspace, tools=[add]), "add", params)
    if response.is_error:
        assert response.metadata["error"] == "invalid_params"
    else:
        assert isinstance(params, dict) and response.metadata["result"] == params["a"] + (params.get("b") or 2)


def test_numpy_and_rest_docstrings_describe_the_parameters(workspace: Path) -> None:
    def scale(value: float, factor: float = 2.0) -> float:
        """Scales a value.

        Parameters
        ----------
        value : float
            The value to scale.
        factor : float
            How much to scale it by.

        Returns
        -------
        float
        """
        return value * factor

    def shift(value: int, by: int) -> int:
        """Shifts a value.

        :param value: The value to shift.
        :param int by: How far,
            in units.
        :returns: the shifted value
        """
        return value + by

    session = make_session(workspace, tools=[scale, shift])
    scaled, shifted = info(session, "scale"), info(session, "shift")
    assert scaled.description == "Scales a value." and shifted.description == "Shifts a value."
    assert {k: v.get("description") for k, v in scaled.parameters["properties"].items()} == {
        "value": "The value to scale.", "factor": "How much to scale it by.",
    }  # fmt: skip
    assert {k: v.get("description") for k, v in shifted.parameters["properties"].items()} == {
        "value": "The value to shift.", "by": "How far, in units.",
    }  # fmt: skip
