"""What a look into a directory found, confirmed next time by stats alone.

A one-level listing shows a subdirectory when a file the full listing shows lies somewhere below
it (directories.py), which takes reading into it. Its answer is kept with a *proof*: the
signature (device, inode, size, modification and change times) of every directory the answer
rests on, and of the ignore files in them, with the rules in force above. While a directory's
signature is the same its entries are the same names for the same inodes — adding, removing or
renaming an entry sets its times, and a change time cannot be set back — so:

- shown: the directory, each directory on the way to the file that showed it (the *witness*) and
  their ignore files unchanged mean the witness is still there, a regular file, not ignored;
- not shown: every directory the look read and their ignore files unchanged mean there is still
  no file to show (the subdirectories it did not read are ignored by rules that did not change).

An ignore file edited in place changes its own signature. A path reached through a symlink swapped
in has another inode, so no proof holds through it. Changes made within :data:`RACY_NS` of a look
are not trusted to show up (the kernel's clock for file times is coarse: two changes in one tick
leave the same times), and are not kept; on a file system that stamps whole seconds, changes
within :data:`WHOLE_SECOND_RACY_NS` (:func:`settled`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from .fallback import IGNORE_FILES

#: How recent a change may be for its stat to prove nothing (a file-time tick is up to 10 ms).
RACY_NS = 100_000_000
#: The same where both times are whole seconds: a file system that stamps whole seconds (ext4
#: with 128-byte inodes, ext3, HFS+) or every two (FAT) gives a change up to two seconds later
#: the same times.
WHOLE_SECOND_RACY_NS = 2_000_000_000 + RACY_NS
_SECOND_NS = 1_000_000_000
#: A not-shown answer resting on more directories than this is not kept: looking again costs
#: what it costs, and a proof that long would cost a stat for each.
MAX_PROOF_DIRECTORIES = 64
#: Proofs kept (one per directory), the oldest dropped first.
PROOFS_KEPT = 4096

#: (device, inode, size, modification time, change time): an entry as it was.
Signature = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Proof:
    """A kept answer (``shown``) for a directory, under the rules ``rules_key``, resting on the
    entries of ``stats`` (the directory's own first)."""

    rules_key: object
    shown: bool
    stats: tuple[tuple[str, Signature], ...]


_proofs: dict[str, Proof] = {}


def signature(st: os.stat_result) -> Signature:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def settled(st: os.stat_result, started: int) -> bool:
    """Whether an entry's last change (its stat ``st``) was long enough before ``started`` (ns)
    that any change from then on must give it other times."""
    whole_seconds = st.st_mtime_ns % _SECOND_NS == 0 and st.st_ctime_ns % _SECOND_NS == 0
    window = WHOLE_SECOND_RACY_NS if whole_seconds else RACY_NS
    return max(st.st_mtime_ns, st.st_ctime_ns) < started - window


def proof_says(directory: str, st: os.stat_result, rules_key: object) -> bool | None:
    """The kept answer for ``directory`` (its lstat is ``st``) when its proof still holds under
    ``rules_key``, else None (look again)."""
    proof = _proofs.get(directory)
    if proof is None or proof.rules_key != rules_key or proof.stats[0][1] != signature(st):
        return None
    for path, expected in proof.stats[1:]:
        try:
            if signature(os.stat(path, follow_symlinks=False)) != expected:
                return None
        except OSError:
            return None
    return proof.shown


def keep_proof(directory: str, rests_on: list[str], rules_key: object, shown: bool, started: int) -> None:
    """Keep ``shown`` for ``directory``, resting on the directories ``rests_on`` (``directory``
    first) and their ignore files, as a look that began at ``started`` (ns) found them; not when
    one of them changed too recently, or is not what it was read as."""
    _proofs.pop(directory, None)
    if len(rests_on) > MAX_PROOF_DIRECTORIES:
        return
    stats: list[tuple[str, Signature]] = []
    for path in rests_on:
        for entry in (path, *(f"{path}/{name}" for name in IGNORE_FILES)):
            try:
                st = os.stat(entry, follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError:
                return
            kind_ok = stat.S_ISDIR(st.st_mode) if entry == path else stat.S_ISREG(st.st_mode)  # a link proves nothing
            if not kind_ok or not settled(st, started):
                return
            stats.append((entry, signature(st)))
    if len(_proofs) >= PROOFS_KEPT:
        del _proofs[next(iter(_proofs))]
    _proofs[directory] = Proof(rules_key, shown, tuple(stats))
