"""Which tree-sitter grammar reads a file: by its name's extension (no content sniffing)."""

from __future__ import annotations

from pathlib import PurePath

#: Extension (lower case, with the dot) → grammar name in tree-sitter-language-pack.
LANGUAGE_BY_EXTENSION: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".css": "css",
    ".html": "html",
}


#: The languages outline and symbol_edit read symbols of, as their descriptions name them.
OUTLINED_LANGUAGES = ", ".join(sorted({"Python", "JavaScript", "TypeScript/TSX", "Go", "Rust", "Java", "C", "C++"}))


def language_for(path: str | PurePath) -> str | None:
    """The grammar for ``path``, or None when no supported grammar reads it."""
    return LANGUAGE_BY_EXTENSION.get(PurePath(path).suffix.lower())
