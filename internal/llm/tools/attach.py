"""attach: hand a file to the user — an image, a document, a log — as an attachment of the result.

The file is read as view reads it (the same path resolution, the same read permission outside
the workspace, the same check that the file opened is the one approved) and goes back with the
response: an image as an image attachment, a PDF or a text file embedded in a
:class:`FileAttachment`, anything larger than its cap (or another binary) as a link to the file.
Each front door delivers it in its own way: MCP as an image, an embedded resource or a resource
link; the providers' formats as image and document blocks (llm/providers).
"""

from __future__ import annotations

import base64
import mimetypes
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cancel import in_thread
from ...errors import IsDirectory, ToolError
from ...fsutil.paths import open_regular_file, read_error
from ...fsutil.textio import BINARY_SNIFF_BYTES, decode_bytes, detect_bom, looks_binary
from ..pages import IMAGE_TYPES, MAX_IMAGE_BYTES
from .context import PathServices
from .contract import FileAttachment, ImageAttachment, Tool, ToolResponse
from .params import param

#: Images up to this size are attached (the providers' own per-image limit is about 5 MB);
#: larger ones go as a link.
MAX_ATTACH_IMAGE_BYTES = MAX_IMAGE_BYTES
#: PDFs up to this size are embedded; larger ones go as a link.
MAX_ATTACH_PDF_BYTES = 10 * 1024 * 1024
#: Text files (logs, reports, data) up to this size are embedded; the model reads what is
#: embedded too, so the cap is kept low. Larger ones go as a link.
MAX_ATTACH_TEXT_BYTES = 256 * 1024
#: The one-line caption for the user is cut here.
MAX_CAPTION_CHARS = 500
PDF_TYPE = "application/pdf"

DESCRIPTION = f"""Attaches a file to your answer so the user sees it: a screenshot or chart, a PDF, a report or log.

- `file_path`: absolute, or relative to the workspace root; read like the view tool reads (outside the
  workspace only with the user's permission).
- `caption`: one line telling the user what the file is (optional).
- Images (png, jpg, gif, webp) up to {MAX_ATTACH_IMAGE_BYTES // (1024 * 1024)} MiB, PDFs up to
  {MAX_ATTACH_PDF_BYTES // (1024 * 1024)} MiB and text files up to {MAX_ATTACH_TEXT_BYTES // 1024} KiB are sent
  with their content; larger files and other binary files are sent as a link to the file.
- Use it to show the user something you made or found; to read a file yourself, use view.
"""


@dataclass(frozen=True)
class AttachParams:
    file_path: str = param("The file to attach (absolute or relative to the workspace root)", minLength=1)
    caption: str | None = param("One line for the user: what the file is", None)


class AttachTool(Tool):
    name = "attach"
    title = "Attach a file for the user"
    description = DESCRIPTION
    Params = AttachParams
    read_only = True
    needs_event_loop = False

    async def run(self, params: AttachParams, ctx: PathServices) -> ToolResponse:
        path = ctx.resolve(params.file_path)
        approved = await ctx.require_read_permission(self.name, path)
        if path.is_dir():
            raise IsDirectory(f"Path is a directory, not a file: {path}. Attach a file (list the directory with ls).")
        allowed = ctx.read_guard(approved)
        attached = await in_thread(lambda check: _read_attachment(path, allowed), ctx.cancel)
        caption = " ".join((params.caption or "").split())[:MAX_CAPTION_CHARS]
        return _response(path, attached, caption)


@dataclass(frozen=True)
class _Attached:
    media_type: str
    size: int
    #: The content, when it is sent along; None: a link only, and why.
    image: ImageAttachment | None = None
    file: FileAttachment | None = None
    why_link: str = ""


def _read_attachment(path: Path, allowed: Callable[[Path], bool]) -> _Attached:
    fd, st = open_regular_file(path, "attach sends regular files only.", allowed=allowed)
    try:
        size = st.st_size
        head = os.pread(fd, BINARY_SNIFF_BYTES, 0)
        media_type = _media_type(path, head)
        cap = _cap(media_type)
        link = FileAttachment(path.name, media_type, path.as_uri(), size)
        if cap is None:
            return _Attached(media_type, size, file=link, why_link="a binary file is sent as a link")
        data = _read_up_to(fd, cap) if size <= cap else None
    except OSError as exc:
        raise read_error(exc, path) from None
    finally:
        os.close(fd)
    if data is None:
        return _Attached(media_type, size, file=link, why_link=f"over the {cap} byte limit for its content")
    encoded = base64.b64encode(data).decode("ascii")
    if media_type in IMAGE_TYPES.values():
        return _Attached(media_type, len(data), image=ImageAttachment(media_type, encoded))
    if media_type == PDF_TYPE:
        return _Attached(media_type, len(data), file=FileAttachment(path.name, media_type, link.uri, len(data),
                                                                    data_base64=encoded))  # fmt: skip
    try:
        text = decode_bytes(data, path=str(path)).text
    except ToolError:  # not text after all (a mixed encoding): the user still gets the file
        return _Attached(media_type, size, file=link, why_link="its text could not be decoded")
    return _Attached(media_type, len(data), file=FileAttachment(path.name, media_type, link.uri, len(data), text=text))


def _media_type(path: Path, head: bytes) -> str:
    """The file's media type: images and PDFs by name (and a PDF by its magic too), text files by
    their name's type when it is a text type, else ``text/plain``; other binaries by name."""
    suffix = path.suffix.lower()
    if suffix in IMAGE_TYPES:
        return IMAGE_TYPES[suffix]
    if suffix == ".pdf" or head.startswith(b"%PDF-"):
        return PDF_TYPE
    guessed = mimetypes.guess_type(path.name)[0]
    _, bom_encoding = detect_bom(head)  # UTF-16/32 text is full of NULs: not binary for that
    if bom_encoding is None and looks_binary(head):
        return guessed or "application/octet-stream"
    text_like = guessed is not None and (guessed.startswith("text/") or guessed.endswith(("+json", "+xml", "/json",
                                                                                           "/xml")))  # fmt: skip
    return guessed if text_like and guessed is not None else "text/plain"


def _cap(media_type: str) -> int | None:
    """How large a file of ``media_type`` may be to go with its content; None: never (a binary)."""
    if media_type in IMAGE_TYPES.values():
        return MAX_ATTACH_IMAGE_BYTES
    if media_type == PDF_TYPE:
        return MAX_ATTACH_PDF_BYTES
    if media_type.startswith("text/") or media_type.endswith(("json", "xml")):
        return MAX_ATTACH_TEXT_BYTES
    return None


def _read_up_to(fd: int, cap: int) -> bytes | None:
    """The whole file if it holds at most ``cap`` bytes; None once more arrive. Unlike
    fsutil.paths.read_opened (a whole file, however much it grew since its stat), this stops
    at the cap: a log being written while it is attached must not be read without end."""
    chunks: list[bytes] = []
    read = 0
    while chunk := os.read(fd, min(64 * 1024, cap + 1 - read)):
        chunks.append(chunk)
        read += len(chunk)
        if read > cap:
            return None
    return b"".join(chunks)


def _response(path: Path, attached: _Attached, caption: str) -> ToolResponse:
    how = "with its content" if attached.image or (attached.file and attached.file.embedded) else (
        f"as a link ({attached.why_link})")  # fmt: skip
    content = f"Attached {path} ({attached.media_type}, {attached.size} bytes) for the user, {how}."
    if caption:
        content += f"\nCaption: {caption}"
    metadata: dict[str, Any] = {
        "file_path": str(path), "media_type": attached.media_type, "size": attached.size,
        "embedded": attached.image is not None or bool(attached.file and attached.file.embedded),
        "uri": path.as_uri(), "caption": caption or None,
    }  # fmt: skip
    return ToolResponse(
        content,
        metadata=metadata,
        images=[attached.image] if attached.image else [],
        files=[attached.file] if attached.file else [],
    )


TOOL = AttachTool()
