"""HTML to what a model reads: markdown (markdownify), or block-aware plain text.

Run as a script (``python html.py FORMAT BASE_URL INPUT``) it converts the page in INPUT and
prints ``{"text": ..., "note": ...}`` as JSON: web/convert.py runs big pages that way, in a child
process a timeout can kill. The module imports only the standard library at the top, so the
script needs no package context.

Markdown keeps structure and links (made absolute against the page's final URL). Plain text
keeps the reading order a person sees: paragraphs and headings separated by blank lines, list
items one per line with their bullet, table cells on one row, ``pre`` blocks verbatim — and
nothing else on a line of its own. Scripts, styles, navigation and footers are dropped.

Large or pathological pages stay cheap: over MAX_MARKDOWN_CHARS the page is converted to plain
text by a streaming, non-recursive parser (constant stack, linear time), and a page nested
deeper than the markdown converter can recurse falls back to it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin

#: Elements whose content is never page text.
DROPPED_ELEMENTS = ("script", "style", "noscript", "nav", "footer", "iframe", "svg", "template", "head")
#: Pages longer than this (characters of HTML) are converted to plain text, not markdown.
MAX_MARKDOWN_CHARS = 1_000_000

_PARAGRAPHS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "ul", "ol", "dl", "table", "figure", "hr",
     "section", "article", "main", "header", "aside", "details", "form", "fieldset", "address"}
)  # fmt: skip
_LINES = frozenset({"div", "li", "tr", "dt", "dd", "figcaption", "caption", "summary", "thead", "tbody", "tfoot"})
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"})
_SPACES = re.compile(r"\s+")
#: The streaming parser is fed this many characters at a time, with a stop check between.
FEED_CHARS = 16_384

Check = Callable[[], None]


def _no_check() -> None:
    return None


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []  # finished lines; "" marks a paragraph break
        self.line: list[str] = []
        self.skipping = 0
        self.pre = 0
        self.lists: list[int | None] = []  # None: bullet list, n: next number of an ordered list
        self.cells = 0
        self.prefix = ""  # a list item's indentation and bullet, for the line it starts

    def _end_line(self) -> None:
        text = "".join(self.line)
        self.line = []
        if self.pre:
            self.blocks.append(text)
        elif text.strip():
            self.blocks.append(self.prefix + text.strip())
            self.prefix = ""

    def _paragraph(self) -> None:
        self._end_line()
        if self.blocks and self.blocks[-1] != "":
            self.blocks.append("")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in DROPPED_ELEMENTS:
            self.skipping += tag not in _VOID
            return
        if self.skipping:
            return
        nested_list = tag in ("ul", "ol") and bool(self.lists)
        if tag == "br" or nested_list or tag in _LINES:
            self._end_line()
        elif tag in _PARAGRAPHS:
            self._paragraph()
        if tag in ("ul", "ol"):
            self.lists.append(1 if tag == "ol" else None)
        elif tag == "li":
            depth = max(len(self.lists) - 1, 0)
            number = self.lists[-1] if self.lists else None
            self.prefix = "  " * depth + (f"{number}. " if number is not None else "- ")
            if number is not None:
                self.lists[-1] = number + 1
        elif tag == "pre":
            self.pre += 1
        elif tag == "tr":
            self.cells = 0
        elif tag in ("td", "th"):
            if self.cells:
                self.line.append(" | ")
            self.cells += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in DROPPED_ELEMENTS:
            self.skipping = max(self.skipping - (tag not in _VOID), 0)
            return
        if self.skipping:
            return
        if tag == "pre":
            self._end_line()
            self.pre = max(self.pre - 1, 0)
        if tag in ("ul", "ol") and self.lists:
            self.lists.pop()
        if tag in _LINES or (tag in ("ul", "ol") and self.lists):
            self._end_line()
        elif tag in _PARAGRAPHS:
            self._paragraph()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if self.pre:
            lines = data.split("\n")
            self.line.append(lines[0])
            for line in lines[1:]:
                self._end_line()
                self.line.append(line)
            return
        text = _SPACES.sub(" ", data)
        if text == " " and (not self.line or self.line[-1].endswith(" ")):
            return
        if self.line and self.line[-1].endswith(" ") and text.startswith(" "):
            text = text[1:]
        self.line.append(text)

    def text(self) -> str:
        self._end_line()
        while self.blocks and self.blocks[-1] == "":
            self.blocks.pop()
        return "\n".join(line.rstrip() for line in self.blocks)


def to_text(html: str, check: Check = _no_check) -> str:
    """Block-aware plain text (see the module docstring); ``check()`` runs between chunks."""
    parser = _Text()
    for start in range(0, len(html), FEED_CHARS):
        check()
        parser.feed(html[start : start + FEED_CHARS])
    parser.close()
    return parser.text()


def to_markdown(html: str, base_url: str, check: Check = _no_check) -> tuple[str, str]:
    """Markdown and a note for the model ("" when nothing needs saying). ``check()`` runs
    between elements of the conversion (the HTML parse itself is one step)."""
    if len(html) > MAX_MARKDOWN_CHARS:
        note = f"(The page is over {MAX_MARKDOWN_CHARS} characters of HTML: shown as plain text.)"
        return to_text(html, check), note
    try:
        return _markdown(html, base_url, check), ""
    except RecursionError:
        return to_text(html, check), "(The page is nested too deeply to convert to markdown: shown as plain text.)"


def convert(html: str, fmt: str, base_url: str, check: Check = _no_check) -> tuple[str, str]:
    """``html`` as ``fmt`` ("text" or "markdown") and a note ("" when nothing needs saying)."""
    if fmt == "text":
        return to_text(html, check), ""
    return to_markdown(html, base_url, check)


def _markdown(html: str, base_url: str, check: Check) -> str:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    # process_tag runs once per element; its stub is not in markdownify's published types.
    process_tag: Callable[..., Any] = vars(MarkdownConverter)["process_tag"]

    class CheckedConverter(MarkdownConverter):
        def process_tag(self, node: Any, *args: Any, **kwargs: Any) -> Any:
            check()
            return process_tag(self, node, *args, **kwargs)

    check()
    soup = BeautifulSoup(html, "html.parser")
    check()
    for element in soup(list(DROPPED_ELEMENTS)):
        element.decompose()
    for attribute, tags in (("href", ("a", "link")), ("src", ("img", "source"))):
        for element in soup.find_all(list(tags)):
            value = element.get(attribute)
            if isinstance(value, str) and value and not value.startswith("#"):
                element[attribute] = urljoin(base_url, value)
    markdown: str = CheckedConverter(heading_style="ATX").convert_soup(soup)
    lines = (line.rstrip() for line in markdown.strip().splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def _main(argv: list[str]) -> int:
    import json
    import sys

    fmt, base_url, source = argv
    with open(source, encoding="utf-8") as handle:
        html = handle.read()
    text, note = convert(html, fmt, base_url)
    sys.stdout.write(json.dumps({"text": text, "note": note}))
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(_main(sys.argv[1:]))
