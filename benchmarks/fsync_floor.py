"""What one durable write costs on the disk under a directory: the floor of issue 9's reaction.

    python3 benchmarks/fsync_floor.py [DIR] [--samples 400]

Appends 100 bytes and fdatasyncs them, --samples times, 2 ms apart, alone on
the disk (run it on a quiet machine), and prints the median, p90, p99 and
max (report.FlushProbe; conductor.py runs the same probe during its runs,
and measure() alone after them, for its target). A
conductor's reaction has one such write on its path (the server answers a
prompt once its record is on disk; the conductor's own record is written
beside it, on the same disk), so its p99 cannot be below this p99.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from report import FlushProbe  # benchmarks/, the script's own directory


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dir", nargs="?", default=tempfile.gettempdir())
    p.add_argument("--samples", type=int, default=400)
    args = p.parse_args()
    probe = measure(args.dir, args.samples)
    print(f"fdatasync of a 100-byte append under {args.dir}: {probe.summary()} (load {os.getloadavg()[0]:.2f})")


def measure(where: str | os.PathLike, samples: int = 400) -> FlushProbe:
    """`samples` appends and fdatasyncs under `where`, 2 ms apart, with nothing else of ours running."""
    with FlushProbe(where, every=0.002) as probe:
        while len(probe.times) < samples:
            time.sleep(0.05)  # the probe's thread takes the samples; this only waits for enough of them
    return probe


if __name__ == "__main__":
    main()
