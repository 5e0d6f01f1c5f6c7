"""What one durable write costs on the disk under a directory: the floor of issue 9's reaction.

    python3 benchmarks/fsync_floor.py [DIR] [--samples 400]

Appends 100 bytes and fdatasyncs them, --samples times, 2 ms apart, alone on
the disk (run it on a quiet machine), and prints the median, p90, p99 and
max. A conductor's reaction has at least one such write on its path (the
server answers a prompt once its record is on disk) and here two (the
conductor records its step first), so its p99 cannot be below this p99.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", nargs="?", default=tempfile.gettempdir())
    p.add_argument("--samples", type=int, default=400)
    args = p.parse_args()
    fd, path = tempfile.mkstemp(dir=args.dir, prefix="fsync_floor.")
    try:
        times = []
        for _ in range(args.samples):
            began = time.perf_counter()
            os.write(fd, b"x" * 100)
            os.fdatasync(fd)
            times.append((time.perf_counter() - began) * 1000)
            time.sleep(0.002)
    finally:
        os.close(fd)
        os.unlink(path)
    times.sort()
    at = lambda q: times[min(len(times) - 1, int(q * len(times)))]  # noqa: E731
    print(f"fdatasync of a 100-byte append under {args.dir}, {len(times)} samples: median {at(0.5):.2f} ms, "
          f"p90 {at(0.9):.2f} ms, p99 {at(0.99):.2f} ms, max {times[-1]:.2f} ms "
          f"(load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
