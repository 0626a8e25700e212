"""File-system mechanisms shared by the tools: text IO, atomic writes, locks, path rules."""
