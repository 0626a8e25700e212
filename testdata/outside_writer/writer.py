"""An outside writer: a program that saves a file over and over without our lock, and counts
the saves of its own that something else made disappear.

Usage: python3 writer.py PATH STOP MODE HZ
  MODE: rename    — a temp file renamed over the name (how most editors save)
        in_place  — open for read+write, write, truncate (vim's default, many scripts)
        truncate  — open with O_TRUNC, then write (a shell redirection: readers may see it empty)
        chunked   — in place, written in two pieces CHUNK_PAUSE_S apart (a large file written as
                    it is produced: the file is open for writing for longer, and half-written)

Each save writes ``save N``. Before each save it reads the file: ``edited K`` with K older than its
own last save means an edit made from save K replaced a newer save of its own — a lost save.
Prints ``ready`` once, and ``SAVES LOST`` when the file STOP appears.
"""

import os
import sys
import time

#: The pause between a chunked save's two pieces.
CHUNK_PAUSE_S = 0.002


def lost_one(path: str, last: int) -> bool:
    try:
        with open(path) as handle:
            current = handle.read().split()
    except FileNotFoundError:
        return False
    return len(current) == 2 and current[0] == "edited" and int(current[1]) < last


def save(path: str, mode: str, data: str) -> None:
    if mode == "rename":
        with open(path + ".w", "w") as handle:
            handle.write(data)
        os.replace(path + ".w", path)
    elif mode == "in_place":
        with open(path, "r+") as handle:
            handle.write(data)
            handle.truncate()
    elif mode == "chunked":
        with open(path, "r+", buffering=1) as handle:
            handle.write(data[:3])
            handle.flush()
            time.sleep(CHUNK_PAUSE_S)
            handle.write(data[3:])
            handle.truncate()
    else:
        with open(path, "w") as handle:
            handle.write(data)


def main() -> None:
    path, stop, mode, hz = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    last = saves = lost = 0
    print("ready", flush=True)
    while not os.path.exists(stop):
        lost += lost_one(path, last)
        last += 1
        save(path, mode, f"save {last}\n")
        saves += 1
        time.sleep(1 / hz)  # pacing the saves, not synchronisation
    lost += lost_one(path, last)
    print(saves, lost, flush=True)


if __name__ == "__main__":
    main()
