"""Which shell command lines are banned, which are safe to run without asking.

Every simple command of a line is checked — pipeline stages, ``&&``/``||``/``;`` lists,
subshells, loops and conditionals, ``$(…)`` and backtick substitutions, the string given to
``bash -c``/``sh -c``/``eval``, and the command behind wrappers such as ``env``, ``xargs``,
``timeout`` or ``find -exec`` — by the basename of its first word (``/usr/bin/curl`` is curl).

Parsing uses bashlex, a real bash grammar (``shlex`` cannot see inside ``$(…)``). Where bashlex
cannot parse a line, a conservative tokenizer splits it on every operator and substitution
opener instead, and the line never counts as safe.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from ..vocabulary import tool_name

#: Network fetchers and browsers, privilege escalation, system package managers and
#: system administration: never run by an agent.
BANNED_COMMANDS = frozenset(
    {
        # network
        "curl", "wget", "aria2c", "axel", "nc", "ncat", "netcat", "telnet", "ssh", "scp", "sftp",
        "lynx", "links", "w3m", "http", "https", "httpie", "http-prompt", "xh", "curlie",
        "chrome", "chromium", "firefox", "safari",
        # privilege escalation
        "sudo", "su", "doas", "pkexec",
        # system package managers
        "apt", "apt-get", "aptitude", "apt-cache", "dpkg", "yum", "dnf", "rpm", "pacman", "yay", "paru",
        "zypper", "apk", "emerge", "portage", "pkg", "pkg_add", "pkg_delete", "opkg", "makepkg",
        "snap", "flatpak", "port", "home-manager", "nix-env",
        # system administration
        "systemctl", "service", "chkconfig", "mount", "umount", "fdisk", "parted", "mkfs",
        "crontab", "at", "batch", "iptables", "ufw", "firewall-cmd", "pfctl", "ifconfig", "ip",
        "route", "netstat", "shutdown", "reboot", "halt", "poweroff",
    }
)  # fmt: skip

#: Commands banned only with these arguments: global installs outside the project.
BANNED_ARGS: dict[str, list[tuple[str, ...]]] = {
    "npm": [("install", "-g"), ("install", "--global"), ("i", "-g"), ("uninstall", "-g")],
    "pnpm": [("add", "-g"), ("add", "--global")],
    "yarn": [("global",)],
    "pip": [("install", "--user")],
    "pip3": [("install", "--user")],
    "cargo": [("install",)],
    "go": [("install",)],
    "gem": [("install",)],
    "brew": [("install",), ("upgrade",)],
}

#: Read-only commands that need no permission (when every part of the line is one of them and
#: none uses a flag from UNSAFE_FLAGS / breaks a rule in _safe_command).
SAFE_COMMANDS = frozenset(
    {
        "ls", "pwd", "echo", "printf", "cat", "head", "tail", "wc", "which", "whoami", "date", "env",
        "printenv", "uname", "true", "false", "id", "hostname", "grep", "egrep", "fgrep", "rg", "tree",
        "stat", "file", "du", "df", "sort", "uniq", "diff", "cut", "basename", "dirname", "realpath",
        "readlink", "type", "nl", "cmp", "md5sum", "sha256sum", "test", "[",
    }
)  # fmt: skip
#: Flags that make an otherwise read-only command write a file or run a program.
UNSAFE_FLAGS: dict[str, tuple[str, ...]] = {
    "sort": ("-o", "--output"),
    "rg": ("--pre", "--pre-glob", "-z", "--search-zip"),
    "tree": ("-o",),
    "file": ("-C", "--compile"),
    "date": ("-s", "--set"),
    "git": ("--output", "--ext-diff", "-c", "--config-env", "--exec-path", "--upload-pack", "-C", "--git-dir",
            "--work-tree"),
}  # fmt: skip
SAFE_GIT = frozenset({"status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "describe", "shortlog"})
#: Programs that wait for a terminal (there is none), and the flag that makes them batch-safe.
INTERACTIVE: dict[str, str | None] = {
    "vi": None, "vim": None, "nvim": None, "view": None, "vimdiff": None, "nano": None, "pico": None,
    "emacs": "--batch", "joe": None, "micro": None, "mcedit": None, "less": "-F", "most": None,
    "top": "-b", "htop": None, "watch": None, "tmux": None, "screen": None,
}  # fmt: skip
#: find actions that change or execute things.
UNSAFE_FIND_ARGS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls"})

#: Commands that run the command given in their arguments.
WRAPPERS = frozenset({"env", "nohup", "nice", "ionice", "time", "timeout", "command", "exec", "xargs",
                      "stdbuf", "setsid", "builtin", "watch", "strace", "chroot", "flock"})  # fmt: skip
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})


@dataclass
class LineReport:
    """What a command line runs."""

    commands: list[list[str]] = field(default_factory=list)
    writes_files: bool = False
    parsed: bool = True


def _basename(word: str) -> str:
    return os.path.basename(word)


#: Wrapper options that take a value (``timeout -k 5``, ``xargs -n 1``, ``nice -n 5``).
_WRAPPER_OPTIONS_WITH_VALUE = frozenset({"-n", "-c", "-s", "-k", "-I", "-L", "-P", "-i", "-o", "-e", "-u"})
#: Wrappers whose first operand is not the command (a duration, a lock file, a new root).
_WRAPPERS_WITH_OPERAND = frozenset({"timeout", "flock", "chroot"})


def _skip_wrapper_args(name: str, words: list[str]) -> list[str]:
    """The command a wrapper runs: ``timeout 5 x`` → ``x``; ``env A=1 x`` → ``x``."""
    rest = words[1:]
    while rest and (rest[0].startswith("-") or re.match(r"^\w+=", rest[0])):
        flag = rest.pop(0)
        if flag in _WRAPPER_OPTIONS_WITH_VALUE and rest:
            rest.pop(0)
    if name in _WRAPPERS_WITH_OPERAND and rest:
        rest = rest[1:]
    return rest


def _expand(words: list[str], report: LineReport, depth: int) -> None:
    """Record ``words`` and whatever command they run in turn."""
    while words and "=" in words[0] and not words[0].startswith("=") and re.match(r"^\w+=", words[0]):
        words = words[1:]  # leading assignments
    if not words or depth > 8:
        return
    report.commands.append(words)
    name = _basename(words[0])
    if name in WRAPPERS:
        _expand(_skip_wrapper_args(name, words), report, depth + 1)
    elif name in SHELLS or name == "eval":
        script = _script_argument(name, words)
        if script is not None:
            _merge(analyse(script, depth + 1), report)
    elif name == "find":
        for i, word in enumerate(words):
            if word in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(words):
                _expand(words[i + 1 :], report, depth + 1)


def _script_argument(name: str, words: list[str]) -> str | None:
    if name == "eval":
        return " ".join(words[1:])
    for i, word in enumerate(words[1:], start=1):
        if word == "-c" or (word.startswith("-") and "c" in word[1:] and not word.startswith("--")):
            return words[i + 1] if i + 1 < len(words) else None
    return None


def _merge(inner: LineReport, outer: LineReport) -> None:
    outer.commands += inner.commands
    outer.writes_files |= inner.writes_files
    outer.parsed &= inner.parsed


def _walk(node: Any, report: LineReport, depth: int) -> None:
    kind = getattr(node, "kind", None)
    if kind == "command":
        words = [p.word for p in node.parts if getattr(p, "kind", None) in ("word", "assignment")]
        _expand(words, report, depth)
    if kind == "redirect":
        target = getattr(node, "output", None)
        target_word = getattr(target, "word", None) if target is not None else None
        harmless = target_word in ("/dev/null", "1", "2", "&1", "&2", None) or isinstance(target, int)
        if node.type in (">", ">>", ">|", "&>", ">&") and not harmless:
            report.writes_files = True
    for attr in ("parts", "list"):
        for child in getattr(node, attr, None) or []:
            _walk(child, report, depth)
    for attr in ("command", "output"):
        child = getattr(node, attr, None)
        if child is not None and hasattr(child, "kind"):
            _walk(child, report, depth)


_SPLIT = re.compile(r"\$\(|`|\|\||&&|[;&|()\n{}]|<\(|>\(")


def _fallback(line: str, report: LineReport, depth: int) -> None:
    """Every segment between operators is a command; the line is never safe."""
    report.parsed = False
    for segment in _SPLIT.split(line):
        try:
            words = shlex.split(segment, posix=True)
        except ValueError:
            words = segment.split()
        _expand(words, report, depth)
    if re.search(r"(?<![0-9&])>{1,2}(?!\s*/dev/null)(?!&)", line):
        report.writes_files = True


#: A line made only of words (no expansion, redirection, operator, grouping, glob bracket or
#: comment) is split by shlex exactly as bash would split it. Such lines skip bashlex (whose import,
#: even with its tables cached by .bashlex_tables, costs a few milliseconds).
_PLAIN_LINE = re.compile(r"^[^$`;&|<>(){}\[\]\n\r\\#!*?~]*$")


def analyse(line: str, depth: int = 0) -> LineReport:
    report = LineReport()
    if _PLAIN_LINE.match(line):
        try:
            words = shlex.split(line, posix=True)
        except ValueError:  # an unclosed quote: let the full parser report it
            words = None
        if words is not None:
            _expand(words, report, depth)
            return report
    try:
        from .bashlex_tables import import_bashlex

        trees = import_bashlex().parse(line)
    except Exception:  # bashlex raises many types for syntax it does not know
        _fallback(line, report, depth)
        return report
    for tree in trees:
        _walk(tree, report, depth)
    return report


def banned_reason(line: str) -> str | None:
    """Why ``line`` must not run, or None."""
    for words in analyse(line).commands:
        name = _basename(words[0])
        if name in BANNED_COMMANDS:
            return f"'{name}' is not allowed"
        for pattern in BANNED_ARGS.get(name, []):
            if all(arg in words[1:] for arg in pattern) and words[1] == pattern[0]:
                return f"'{name} {' '.join(pattern)}' is not allowed (installs outside the project)"
    return None


def interactive_reason(line: str) -> str | None:
    """Why ``line`` would sit waiting for a terminal, or None."""
    for words in analyse(line).commands:
        name = _basename(words[0])
        if name not in INTERACTIVE:
            continue
        batch_flag = INTERACTIVE[name]
        if batch_flag is not None and any(w == batch_flag or w.startswith(batch_flag + "=") for w in words[1:]):
            continue
        writers = " or ".join(dict.fromkeys((tool_name("edit"), tool_name("write"))))
        return (
            f"'{name}' is interactive and waits for a terminal, which this tool does not have. Use the "
            f"{tool_name('view')} tool to read files and {writers} to change them."
        )
    return None


def is_safe(line: str) -> bool:
    """True when every command of the line is read-only and nothing is written to a file."""
    report = analyse(line)
    if not report.parsed or report.writes_files or not report.commands:
        return False
    return all(_safe_command(words) for words in report.commands)


def _uses_flag(words: list[str], flags: tuple[str, ...]) -> bool:
    for word in words[1:]:
        for flag in flags:
            if word == flag or (flag.startswith("--") and word.startswith(flag + "=")):
                return True
            short = not flag.startswith("--") and word.startswith("-") and not word.startswith("--")
            if short and (word.startswith(flag) or flag[1] in word[1:]):
                return True  # -ofile, -sDATE, or inside a cluster such as -uo
    return False


def _positionals(words: list[str]) -> list[str]:
    return [w for w in words[1:] if not w.startswith("-") or w == "-"]


def _safe_command(words: list[str]) -> bool:
    name = _basename(words[0])
    if _uses_flag(words, UNSAFE_FLAGS.get(name, ())):
        return False
    if name == "git":
        sub = next((w for w in words[1:] if not w.startswith("-")), None)
        return sub in SAFE_GIT
    if name == "uniq":  # uniq IN OUT writes OUT
        return len(_positionals(words)) <= 1
    if name == "date":  # date MMDDhhmm sets the clock; only +FORMAT operands read
        return all(w.startswith("+") for w in _positionals(words))
    if name == "hostname":  # hostname NAME sets it
        return not _positionals(words)
    if name == "find":
        return not any(w in UNSAFE_FIND_ARGS for w in words)
    if name in ("env", "printenv"):
        return len(words) == 1 or all(w.startswith("-") for w in words[1:])
    return name in SAFE_COMMANDS
