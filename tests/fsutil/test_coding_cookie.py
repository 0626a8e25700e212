"""PEP 263 coding cookies decide the decoding before any guess."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_toolsmith.fsutil.textio import declared_encoding, decode_bytes

from tests.conftest import Runner

CP1251 = "# -*- coding: cp1251 -*-\n# Привет, мир\nname = 'Съешь же ещё этих мягких французских булок'\n"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"# -*- coding: cp1251 -*-\n", "cp1251"),
        (b"#!/usr/bin/env python\n# vim: set fileencoding=koi8-r :\n", "koi8-r"),
        (b"# coding=latin-1\n", "iso8859-1"),
        (b"x = 1\n# coding: cp1251\n", None),  # not a comment on line 1: no cookie on line 2
        (b"# coding: no-such-codec\n", None),
    ],
)
def test_declared_encoding(head: bytes, expected: str | None) -> None:
    assert declared_encoding(head + b"pass\n") == expected


def test_cp1251_file_with_cookie_views_and_edits_byte_exactly(workspace: Path, run: Runner) -> None:
    data = CP1251.encode("cp1251")
    assert decode_bytes(data).encoding == "cp1251"
    f = workspace / "ru.py"
    f.write_bytes(data)
    r = run("view", {"file_path": "ru.py"})
    assert not r.is_error and "Привет, мир" in r.content and "булок" in r.content
    r = run("edit", {"file_path": "ru.py", "old_string": "Привет, мир", "new_string": "Здравствуй, мир"})
    assert not r.is_error, r.content
    assert f.read_bytes() == CP1251.replace("Привет", "Здравствуй").encode("cp1251")
