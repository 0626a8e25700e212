"""The files the dynamic loader reads to start an executable: its interpreter and the shared
libraries it needs, transitively (read from the ELF headers, resolved as the loader would on
this system's usual library directories).

A process confined to reading the workspace (:mod:`.landlock`) must still be allowed to read
these, or it cannot start. When anything is not understood (not a 64-bit little-endian ELF, a
library not found where looked) the answer is None and the caller does not confine.
"""

from __future__ import annotations

import functools
import os
import struct
import sys
import sysconfig
from pathlib import Path

_PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 2, 3
_DT_NULL, _DT_NEEDED, _DT_STRTAB, _DT_RPATH, _DT_RUNPATH = 0, 1, 5, 15, 29
#: The longest library name, interpreter path or search path read from an ELF file.
MAX_NAME_BYTES = 4096
#: The loader's cache of library locations (read before the directories are searched).
LOADER_CACHE = Path("/etc/ld.so.cache")


def loader_files(executable: str) -> list[Path] | None:
    """Real paths of the interpreter and every library ``executable`` needs (none for a static
    executable), plus the loader's cache; None when they cannot all be found."""
    return _loader_files(os.path.realpath(executable))


@functools.cache
def _loader_files(executable: str) -> list[Path] | None:
    headers = _read_headers(executable)
    if headers is None:
        return None
    interpreter, needed, search = headers
    if interpreter is None:
        return []
    found = {Path(os.path.realpath(interpreter))}
    directories = [*search, *_system_dirs(interpreter)]
    pending = list(needed)
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        library = next((d / name for d in directories if (d / name).is_file()), None)
        if library is None:
            return None
        found.add(Path(os.path.realpath(library)))
        more = _read_headers(str(library))
        if more is None:
            return None
        pending += more[1]
    if LOADER_CACHE.is_file():
        found.add(LOADER_CACHE)
    return sorted(found)


def _system_dirs(interpreter: str) -> list[Path]:
    # The interpreter's own multiarch tuple when it has one: sysconfig's variables take ~1 ms to
    # load, and a CLI call confines rg once per process.
    multiarch = getattr(sys.implementation, "_multiarch", None) or sysconfig.get_config_var("MULTIARCH") or ""
    dirs = [Path(os.path.realpath(interpreter)).parent, Path(interpreter).parent]
    for base in ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib"):
        dirs += [Path(base) / multiarch] if multiarch else []
        dirs.append(Path(base))
    return dirs


def _read_headers(path: str) -> tuple[str | None, list[str], list[Path]] | None:
    """(interpreter, DT_NEEDED names, RPATH/RUNPATH directories) of the ELF file ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _headers(fd, path)
    except (OSError, struct.error, ValueError):
        return None
    finally:
        os.close(fd)


def _headers(fd: int, path: str) -> tuple[str | None, list[str], list[Path]] | None:
    head = os.pread(fd, 64, 0)
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:  # 64-bit, little-endian only
        return None
    (phoff,) = struct.unpack_from("<Q", head, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
    table = os.pread(fd, phentsize * phnum, phoff)
    segments = []
    for index in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", table, index * phentsize)
        segments.append((p_type, p_offset, p_vaddr, p_filesz))
    interpreter = next((_c_string(fd, off) for kind, off, _, _ in segments if kind == _PT_INTERP), None)
    dynamic = next(((off, size) for kind, off, _, size in segments if kind == _PT_DYNAMIC), None)
    if dynamic is None:
        return interpreter, [], []
    entries = list(struct.iter_unpack("<qQ", os.pread(fd, dynamic[1] - dynamic[1] % 16, dynamic[0])))
    strtab_address = next((value for tag, value in entries if tag == _DT_STRTAB), None)
    strtab = next((off + strtab_address - vaddr for kind, off, vaddr, filesz in segments
                   if kind == _PT_LOAD and strtab_address is not None and vaddr <= strtab_address < vaddr + filesz),
                  None)  # fmt: skip
    if strtab is None:
        return None
    needed, search = [], []
    for tag, value in entries:
        if tag == _DT_NULL:
            break
        if tag == _DT_NEEDED:
            needed.append(_c_string(fd, strtab + value))
        elif tag in (_DT_RPATH, _DT_RUNPATH):
            origin = str(Path(path).parent)
            search += [Path(d.replace("$ORIGIN", origin)) for d in _c_string(fd, strtab + value).split(":") if d]
    return interpreter, needed, search


def _c_string(fd: int, offset: int) -> str:
    data = os.pread(fd, MAX_NAME_BYTES, offset)
    end = data.find(b"\0")
    if end < 0:
        raise ValueError("unterminated name")
    return data[:end].decode("utf-8", "surrogateescape")
