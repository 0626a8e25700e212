"""The one conversion from the ``file://`` URIs servers speak to local paths."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit


def uri_to_path(uri: str) -> Path:
    """The local path a ``file://`` URI names, percent-escapes decoded."""
    return Path(unquote(urlsplit(uri).path))


def is_file_uri(uri: str) -> bool:
    return urlsplit(uri).scheme == "file"
