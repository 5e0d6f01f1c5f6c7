"""benchmarks/speed.py stays runnable: its C client compiles cleanly and its --help works.

The benchmark itself is run by hand (benchmarks/README.md), never here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.needs("gcc")
def test_the_c_client_compiles_without_warnings(tmp_path):
    proc = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(tmp_path / "ninep_bench"),
                           str(BENCHMARKS / "ninep_bench.c")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_speed_help_lists_its_sections():
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "speed.py"), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--sections" in proc.stdout and "poll100" in proc.stdout and "--anvilfs-cmd" in proc.stdout
