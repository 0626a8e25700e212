"""patch with unified hunks that carry no line numbers — ``@@ ... @@`` and ``@@ @@``, aider's udiff
format, also inside fenced ```diff blocks: located by their context alone, refused when it matches
more than one place."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_toolsmith.llm.tools.contract import ToolResponse

from tests.conftest import make_session

APP = """from flask import Flask

app = Flask(__name__)


class MathWeb:
    def __init__(self):
        self.cache = {}

    def factorial(self, n):
        if n == 0:
            return 1
        return n * self.factorial(n - 1)


@app.route("/fact/<int:n>")
def fact(n):
    web = MathWeb()
    return str(web.factorial(n))


if __name__ == "__main__":
    app.run()
"""

THREE_HUNKS = """--- a/app.py
+++ b/app.py
@@ ... @@
-from flask import Flask
+import math
+
+from flask import Flask
@@ ... @@
     def factorial(self, n):
-        if n == 0:
-            return 1
-        return n * self.factorial(n - 1)
+        return math.factorial(n)
@@ ... @@
 if __name__ == "__main__":
-    app.run()
+    app.run(debug=True)
"""

APPLIED = (
    APP.replace("from flask import Flask\n", "import math\n\nfrom flask import Flask\n", 1)
    .replace(
        "        if n == 0:\n            return 1\n        return n * self.factorial(n - 1)\n",
        "        return math.factorial(n)\n",
    )
    .replace("    app.run()\n", "    app.run(debug=True)\n")
)


def patch(workspace: Path, text: str, read: list[str]) -> ToolResponse:
    async def main() -> ToolResponse:
        session = make_session(workspace)
        for name in read:
            r = await session.run("view", {"file_path": name})
            assert not r.is_error, r.content
        return await session.run("patch", {"patch_text": text})

    return asyncio.run(main())


def test_three_hunks_without_line_numbers_apply(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    r = patch(workspace, THREE_HUNKS, ["app.py"])
    assert not r.is_error, r.content
    assert (workspace / "app.py").read_text() == APPLIED
    assert r.content.startswith("Patch applied: 1 file changed")


def test_bare_at_at_headers_and_an_aider_fenced_block_with_prose(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    text = (
        "Here are the changes:\n\n```diff\n"
        + THREE_HUNKS.replace("@@ ... @@", "@@ @@")
        + "```\n\nThis uses math.factorial instead of recursion.\n"
    )
    r = patch(workspace, text, ["app.py"])
    assert not r.is_error, r.content
    assert (workspace / "app.py").read_text() == APPLIED


def test_aider_blocks_for_two_files_and_a_new_file(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    (workspace / "README.md").write_text("# MathWeb\n\nComputes factorials.\n")
    text = (
        "```diff\n--- app.py\n+++ app.py\n@@ ... @@\n-    app.run()\n+    app.run(port=8080)\n```\n\n"
        "```diff\n--- README.md\n+++ README.md\n@@ ... @@\n # MathWeb\n \n-Computes factorials.\n"
        "+Computes factorials on port 8080.\n```\n\n"
        "```diff\n--- /dev/null\n+++ tests/test_app.py\n@@ ... @@\n+def test_fact():\n+    assert True\n```\n"
    )
    r = patch(workspace, text, ["app.py", "README.md"])
    assert not r.is_error, r.content
    assert (workspace / "app.py").read_text() == APP.replace("app.run()", "app.run(port=8080)")
    assert (workspace / "README.md").read_text() == "# MathWeb\n\nComputes factorials on port 8080.\n"
    assert (workspace / "tests" / "test_app.py").read_text() == "def test_fact():\n    assert True\n"


def test_context_matching_several_places_is_refused_naming_them(workspace: Path) -> None:
    source = "def a():\n    return None\n\n\ndef b():\n    return None\n"
    (workspace / "m.py").write_text(source)
    text = "--- a/m.py\n+++ b/m.py\n@@ ... @@\n-    return None\n+    return 0\n"
    r = patch(workspace, text, ["m.py"])
    assert r.is_error and r.metadata["error"] == "ambiguous_match"
    assert r.metadata["lines"] == [2, 6] and "(lines 2, 6)" in r.content
    assert (workspace / "m.py").read_text() == source
    # Context that only one of them has places it.
    text = "--- a/m.py\n+++ b/m.py\n@@ ... @@\n def b():\n-    return None\n+    return 0\n"
    r = patch(workspace, text, ["m.py"])
    assert not r.is_error, r.content
    assert (workspace / "m.py").read_text() == source[: source.rindex("None")] + "0\n"


def test_context_is_matched_with_the_codex_fuzz(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    # The context lost its indentation (fuzz 2): applied, and the fuzz is reported.
    text = "--- a/app.py\n+++ b/app.py\n@@ ... @@\n def fact(n):\n-web = MathWeb()\n+    web = MathWeb()  # one\n"
    r = patch(workspace, text, ["app.py"])
    assert not r.is_error, r.content
    assert "fuzz 2" in r.content
    assert (workspace / "app.py").read_text() == APP.replace("    web = MathWeb()\n", "    web = MathWeb()  # one\n")


def test_hunks_out_of_order_are_refused_like_codex_chunks(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    hunks = THREE_HUNKS.split("@@ ... @@\n")
    text = hunks[0] + "@@ ... @@\n" + hunks[3] + "@@ ... @@\n" + hunks[1]  # the last hunk, then the first
    r = patch(workspace, text, ["app.py"])
    assert r.is_error and "before an earlier chunk" in r.content
    assert (workspace / "app.py").read_text() == APP


def test_numbered_and_numberless_hunks_mixed(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    text = THREE_HUNKS.replace("@@ ... @@", "@@ -1,1 +1,3 @@", 1)
    r = patch(workspace, text, ["app.py"])
    assert not r.is_error, r.content
    assert (workspace / "app.py").read_text() == APPLIED


def test_not_found_hunk_shows_the_closest_region(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    text = "--- a/app.py\n+++ b/app.py\n@@ ... @@\n-    app.run(host='0.0.0.0')\n+    app.run()\n"
    r = patch(workspace, text, ["app.py"])
    assert r.is_error and r.metadata["error"] == "no_match"
    assert "Closest region" in r.content and (workspace / "app.py").read_text() == APP


def test_codex_chunk_with_a_unified_style_bare_header(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    text = "*** Begin Patch\n*** Update File: app.py\n@@ ... @@\n-    app.run()\n+    app.run(debug=True)\n"
    text += "*** End Patch"
    r = patch(workspace, text, ["app.py"])
    assert not r.is_error, r.content
    assert (workspace / "app.py").read_text() == APP.replace("app.run()", "app.run(debug=True)")


def test_several_aider_blocks_for_one_file_are_one_update(workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    hunks = THREE_HUNKS.split("@@ ... @@\n")
    text = "".join(f"```diff\n--- app.py\n+++ app.py\n@@ ... @@\n{hunk}```\n\n" for hunk in hunks[1:])
    r = patch(workspace, text, ["app.py"])
    assert not r.is_error, r.content
    assert (workspace / "app.py").read_text() == APPLIED and "1 file changed" in r.content
