"""rg's ``--null`` output parsed as it streams: every record whole, whatever the chunking, for
paths holding newlines, ``:``, ``|`` and any Unicode, and texts holding ``\\r`` or bad UTF-8."""

from __future__ import annotations

from agent_toolsmith.ripgrep.output import OutputParser
from agent_toolsmith.ripgrep.query import Match
from hypothesis import given
from hypothesis import strategies as st

paths = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), min_size=1, max_size=12)
texts = st.binary(max_size=20).filter(lambda b: b"\n" not in b)
Record = tuple[str, int, bool, bytes]
records = st.lists(st.tuples(paths, st.integers(1, 10**6), st.booleans(), texts), max_size=25)


def _serialise(items: list[tuple[str, int, bool, bytes]]) -> bytes:
    return b"".join(
        p.encode() + b"\0" + str(n).encode() + (b"-" if context else b"|") + t + b"\n" for p, n, context, t in items
    )


def _expected(items: list[tuple[str, int, bool, bytes]]) -> list[Match]:
    out = []
    for p, n, context, t in items:
        text = t[:-1] if t.endswith(b"\r") else t
        out.append(Match(p, n, text.decode("utf-8", "replace"), context))
    return out


def _feed(data: bytes, cuts: list[int]) -> list[Match]:
    """``data`` fed in pieces cut at ``cuts``."""
    parser = OutputParser("search", 10**9)
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        parser.feed(data[start:cut])
        start = max(start, cut)
    parser.feed(data[start:])
    return parser.result.matches


@given(records, st.lists(st.integers(0, 10**6), max_size=6))
def test_every_record_parses_whole_whatever_the_chunks(items: list[Record], cuts: list[int]) -> None:
    assert _feed(_serialise(items), cuts) == _expected(items)


def test_the_match_limit_stops_at_the_limit_and_keeps_context() -> None:
    items = [("a", 1, False, b"x"), ("a", 2, True, b"ctx"), ("a", 3, False, b"y"), ("b", 1, False, b"z")]
    parser = OutputParser("search", 2)
    assert parser.feed(_serialise(items)) is False
    assert parser.result.matches == _expected(items[:3])
