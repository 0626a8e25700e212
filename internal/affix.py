"""Where two texts (or byte strings) start and stop differing, at memcmp speed.

Equal chunks are skipped by slice comparison, then the differing chunk is bisected: bounded
slices, never a whole-text copy. The diffs for tool results and the syntax gate's changed range
both start here. Kept free of imports so the CLI's read paths pay nothing for it.
"""

from __future__ import annotations

from typing import AnyStr

#: Characters (or bytes) compared per step before bisecting.
SCAN_CHUNK = 64 * 1024


def common_prefix_length(x: AnyStr, y: AnyStr) -> int:
    """How many leading characters (or bytes) ``x`` and ``y`` share: equal chunks skipped at
    memcmp speed, then the differing chunk bisected (bounded slices, no whole-text copies)."""
    limit = min(len(x), len(y))
    at = 0
    while at < limit and x[at : at + SCAN_CHUNK] == y[at : at + SCAN_CHUNK]:
        at += SCAN_CHUNK
    # The first difference is inside x[at : at + SCAN_CHUNK]: halve the span by slice compares
    # (memcmp speed) instead of stepping character by character.
    low, high = at, min(at + SCAN_CHUNK, limit)
    while low < high:
        middle = (low + high + 1) // 2
        if x[low:middle] == y[low:middle]:
            low = middle
        else:
            high = middle - 1
    return min(low, limit)


def common_suffix_length(x: AnyStr, y: AnyStr, limit: int) -> int:
    """How many trailing characters (or bytes) ``x`` and ``y`` share, at most ``limit``."""
    count = 0
    while count < limit:
        take = min(SCAN_CHUNK, limit - count)
        if x[len(x) - count - take : len(x) - count] != y[len(y) - count - take : len(y) - count]:
            break
        count += take
    low, high = count, min(count + SCAN_CHUNK, limit)  # as above, from the end
    while low < high:
        middle = (low + high + 1) // 2
        if x[len(x) - middle : len(x) - low] == y[len(y) - middle : len(y) - low]:
            low = middle
        else:
            high = middle - 1
    return low
