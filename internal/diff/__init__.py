"""Unified diff generation and trimming; the Codex patch format lives in ``patch``."""

from .diff import diff_metadata, generate_diff, span_diff_metadata, trim_diff

__all__ = ["diff_metadata", "generate_diff", "span_diff_metadata", "trim_diff"]
