"""Each profile's words (vocabulary.py): which of its tools does what an engine tool does, and
what it calls the engine's parameters. Messages the engine builds while a profile's tool runs
take their names from here, so they name only that profile's tools."""

from __future__ import annotations

from ...vocabulary import Vocabulary

CLAUDE = Vocabulary(
    name="claude",
    tools={
        "view": "Read", "read_many": "Read", "write": "Write", "edit": "Edit", "multiedit": "Edit",
        "notebook_edit": "NotebookEdit", "glob": "Glob", "grep": "Grep", "bash": "Bash", "job_kill": "TaskStop",
        "fetch": "WebFetch", "plan": "TodoWrite", "question": "AskUserQuestion", "job_output": "Read", "ls": "Glob",
    },
    params={
        ("grep", "include"): "glob", ("grep", "case_insensitive"): "-i", ("grep", "after"): "-A",
        ("grep", "before"): "-B", ("job_kill", "job_id"): "task_id", ("notebook_edit", "file_path"): "notebook_path",
        ("glob", "path"): "path",
    },
    one_based=frozenset({("view", "offset")}),
    lacks=frozenset({("grep", "literal_text")}),
    background="start it with run_in_background: true and read its output file with Read.",
)  # fmt: skip

CODEX = Vocabulary(
    name="codex",
    tools={
        "patch": "apply_patch", "edit": "apply_patch", "multiedit": "apply_patch", "write": "apply_patch",
        "bash": "exec_command", "job_output": "write_stdin", "job_input": "write_stdin", "view": "read_file",
        "ls": "list_dir", "grep": "grep_files", "plan": "update_plan", "question": "request_user_input",
        "job_kill": "write_stdin", "glob": "list_dir", "read_many": "read_file",
    },
    params={
        ("patch", "patch_text"): "input", ("job_output", "job_id"): "session_id", ("job_input", "job_id"): "session_id",
        ("job_input", "text"): "chars", ("ls", "path"): "dir_path", ("bash", "command"): "cmd",
        ("grep", "head_limit"): "limit",
    },
    one_based=frozenset({("view", "offset")}),
    edits_need_read=False,
    lacks=frozenset({("grep", "literal_text"), ("edit", "replace_all")}),
    background="run it with exec_command: it keeps running as a session that write_stdin reads.",
)  # fmt: skip

GEMINI = Vocabulary(
    name="gemini",
    tools={
        "view": "read_file", "write": "write_file", "edit": "replace", "multiedit": "replace", "glob": "glob",
        "grep": "grep_search", "ls": "list_directory", "read_many": "read_many_files", "bash": "run_shell_command",
        "fetch": "web_fetch", "plan": "write_todos", "question": "ask_user", "job_output": "read_file",
        "job_kill": "run_shell_command", "job_input": "run_shell_command",
    },
    params={
        ("view", "offset"): "start_line", ("edit", "replace_all"): "allow_multiple", ("grep", "path"): "dir_path",
        ("glob", "path"): "dir_path", ("ls", "path"): "dir_path", ("grep", "include"): "include_pattern",
        ("bash", "run_in_background"): "is_background", ("grep", "literal_text"): "fixed_strings",
        ("grep", "head_limit"): "total_max_matches", ("read_many", "paths"): "include",
    },
    one_based=frozenset({("view", "offset")}),
    edits_need_read=False,
    background="start it with is_background: true and read its output file with read_file.",
)  # fmt: skip
