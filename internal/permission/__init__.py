"""The permission service: every action with side effects asks it first.

A request names the tool, the action and what it touches. The answer is allow once, allow for
the rest of the session (remembered here), or deny. Policies decide without asking anyone
(the CLI allows everything; :func:`read_only_policy` refuses every mutating action); an
embedder passes its own ``asker`` to put a human in the loop.

The same service carries the other kind of question a tool puts to the user: the question tool's
(:class:`QuestionRequest`, answered by the host's ``ask_user`` with :class:`Answers`). A host
without one cannot ask, and the call says so at once (:class:`~..errors.CannotAsk`), never waits.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from ..errors import CannotAsk, Denied, NoAnswer, ToolError

#: How long a question waits for the user's answer before the call gives up (and says so).
MAX_QUESTION_WAIT_S = 30 * 60


class Decision(enum.Enum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    DENY = "deny"


@dataclass(frozen=True)
class PermissionRequest:
    """One action a tool asks to take: the asker sees it, a session-wide answer covers its
    ``session_key``."""

    tool: str
    action: str
    #: The file or directory acted on, or the command line for bash, or the URL for fetch.
    target: str
    description: str = ""
    params: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def session_key(self) -> tuple[str, str, str]:
        return (self.tool, self.action, self.target)


Asker = Callable[[PermissionRequest], Awaitable[Decision]]


@dataclass(frozen=True)
class Choice:
    """One answer a question offers: its label, and what choosing it means."""

    label: str
    description: str = ""


@dataclass(frozen=True)
class Question:
    """One question for the user. No ``choices``: the answer is free text; with choices the user
    picks one (several with ``multi_select``) or writes their own answer instead."""

    text: str
    header: str = ""
    choices: tuple[Choice, ...] = ()
    multi_select: bool = False


@dataclass(frozen=True)
class QuestionRequest:
    """The questions one call puts to the user, answered together."""

    tool: str
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Answer:
    """The user's answer to one question: the labels chosen, and any words of their own."""

    selected: tuple[str, ...] = ()
    text: str = ""


@dataclass(frozen=True)
class Answers:
    """One answer per question, in order; ``declined`` when the user dismissed the questions."""

    answers: tuple[Answer, ...] = ()
    declined: bool = False


UserAsker = Callable[[QuestionRequest], Awaitable[Answers]]

#: Tools that change nothing except through a "write" ask (lsp's rename); :func:`read_only_policy`
#: allows only these, and never a write.
READ_ONLY_TOOLS = frozenset({"view", "read_many", "attach", "glob", "grep", "ls", "lsp", "fetch", "skill"})


async def allow_all(request: PermissionRequest) -> Decision:
    return Decision.ALLOW_ONCE


async def read_only_policy(request: PermissionRequest) -> Decision:
    allowed = request.tool in READ_ONLY_TOOLS and request.action != "write"
    return Decision.ALLOW_ONCE if allowed else Decision.DENY


def refusing_writes(asker: Asker) -> Asker:
    """``asker`` for a read-only session: a "write" ask (lsp's rename, offered there for its
    navigation) is refused without asking."""

    async def ask(request: PermissionRequest) -> Decision:
        return Decision.DENY if request.action == "write" else await asker(request)

    return ask


class PermissionService:
    """Asks ``asker`` unless an earlier answer covers the request for this session."""

    def __init__(self, asker: Asker = allow_all, ask_user: UserAsker | None = None) -> None:
        self._asker = asker
        self._ask_user = ask_user
        self._granted: set[tuple[str, str, str]] = set()

    @property
    def can_ask_user(self) -> bool:
        return self._ask_user is not None

    async def ask_user(self, request: QuestionRequest) -> Answers:
        """The user's answers. Raises :class:`CannotAsk` at once when the host has no way to ask
        (or its way failed), :class:`NoAnswer` after ``MAX_QUESTION_WAIT_S`` without one."""
        if self._ask_user is None:
            raise CannotAsk(
                "This host cannot ask the user questions. Decide with your best judgement and say in your "
                "reply what you assumed, or ask the question in your reply."
            )
        import asyncio  # only a session that asks a question pays for it

        try:
            answers = await asyncio.wait_for(self._ask_user(request), MAX_QUESTION_WAIT_S)
        except TimeoutError:
            minutes = MAX_QUESTION_WAIT_S // 60
            raise NoAnswer(
                f"The user did not answer within {minutes} minutes. Go on with your best judgement and say "
                "what you assumed, or ask again later.",
                {"timeout_s": MAX_QUESTION_WAIT_S},
            ) from None
        except ToolError:  # the host's own outcome (an MCP round trip's InputRequired, say): as it is
            raise
        except Exception as exc:  # the host's way of asking failed: the model must not wait on it
            raise CannotAsk(
                f"The question could not be put to the user ({type(exc).__name__}: {exc}). Decide with your "
                "best judgement and say in your reply what you assumed, or ask the question in your reply."
            ) from exc
        if not isinstance(answers, Answers):
            raise CannotAsk(f"The host answered the question with {type(answers).__name__}, not Answers.")
        return answers

    async def ask(self, request: PermissionRequest) -> Decision:
        if request.session_key in self._granted:
            return Decision.ALLOW_SESSION
        decision = await self._asker(request)
        if decision is Decision.ALLOW_SESSION:
            self._granted.add(request.session_key)
        return decision

    def allows_without_asking(self, request: PermissionRequest) -> bool:
        """True when :meth:`require` would allow ``request`` without asking anyone: allowed for
        the session already, or every request is allowed (:func:`allow_all`). A caller in a worker
        thread can then skip the hop to the event loop that asking takes."""
        return request.session_key in self._granted or self._asker is allow_all

    async def require(self, request: PermissionRequest) -> None:
        """Raise :class:`Denied` unless the request is allowed."""
        if await self.ask(request) is Decision.DENY:
            what = request.description or f"{request.action} {request.target}"
            raise Denied(f"Permission denied: the user refused to let {request.tool} {what}.")


@dataclass(frozen=True)
class ToolPolicy:
    """Which tools a session offers (and runs): a backend's subset.

    ``read_only`` keeps only tools that change nothing; ``allow`` (when given) names the tools
    offered; ``deny`` names tools never offered — deny wins over allow. Names that are no tool
    are fine (a custom tool may come and go).
    """

    read_only: bool = False
    allow: Collection[str] | None = None
    deny: Collection[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.allow, str) or isinstance(self.deny, str):
            raise TypeError("ToolPolicy allow/deny take a collection of tool names, not one string")
        object.__setattr__(self, "allow", None if self.allow is None else frozenset(self.allow))
        object.__setattr__(self, "deny", frozenset(self.deny))

    def permits(self, tool: str, read_only: bool) -> bool:
        return self.refusal(tool, read_only) is None

    def refusal(self, tool: str, read_only: bool) -> str | None:
        """Why ``tool`` is not offered, or None when it is."""
        if tool in self.deny:
            return "it is denied in this session"
        if self.allow is not None and tool not in self.allow:
            return "it is not among the tools this session allows"
        if self.read_only and not read_only:
            return "this session is read-only"
        return None
