"""File enumeration and content search: rg when available, a Python fallback otherwise."""

from .confine import confinable
from .query import AUTO_IGNORED, FileQuery, Match, SearchQuery, SearchResult
from .runner import find_rg, list_files, newest_first, search

__all__ = [
    "AUTO_IGNORED",
    "FileQuery",
    "Match",
    "SearchQuery",
    "SearchResult",
    "confinable",
    "find_rg",
    "list_files",
    "newest_first",
    "search",
]
