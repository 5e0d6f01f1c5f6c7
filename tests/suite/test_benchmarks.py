"""benchmarks/speed.py stays runnable: its C client compiles cleanly and its --help works.

The benchmark itself is run by hand (benchmarks/README.md), never here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anvilfs.client import Client
from anvilfs.ninep import Dialect

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


@pytest.mark.parametrize("dialect", [Dialect.P2000, Dialect.P2000L])
def test_the_floor_server_answers_a_status_read(tmp_path, dialect):
    """benchmarks/floor_server.py, the minimal server speed.py --floor measures, serves what the C client reads."""
    sock_path = tmp_path / "sock"
    proc = subprocess.Popen([sys.executable, str(BENCHMARKS / "floor_server.py"), str(sock_path), "s0001", "s0002"],
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not sock_path.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "floor_server.py did not start"
            time.sleep(0.01)  # poll interval, bounded by the deadline
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        sock.connect(str(sock_path))
        with Client(sock, dialect=dialect) as client:
            assert client.read_file("s0002/status") == b"idle simulated\n"
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_the_flush_probe_times_durable_writes(tmp_path):
    """benchmarks/fsync_floor.py (report.FlushProbe, which conductor.py also runs) takes its samples and
    leaves no file behind."""
    proc = subprocess.run([sys.executable, str(BENCHMARKS / "fsync_floor.py"), str(tmp_path), "--samples", "5"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert " samples, median " in proc.stdout and " p99 " in proc.stdout, proc.stdout
    assert list(tmp_path.iterdir()) == []


def run_with_its_servers(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """A benchmark that starts servers, run in a process group of its own: on a timeout the group is killed,
    its servers with it (subprocess.run's timeout kills the benchmark alone, and its servers outlived it)."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=BENCHMARKS.parent, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{args[0]} did not end within {timeout} s:\n{out}{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_restarts_runs_on_a_small_tree_and_places_each_restart_against_the_hosts_speed():
    """benchmarks/restarts.py end to end: a tree of 40 beads built, two restarts measured (figures not checked)."""
    proc = run_with_its_servers([str(BENCHMARKS / "restarts.py"), "--beads", "40", "--convoys", "4", "--sessions", "3",
                                 "--count", "2"], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for words in ("restart   1: ", "restart   2: ", "ms before, ", "2 restarts: median ", "restart under 2 s: "):
        assert words in proc.stdout, proc.stdout


def test_reads_runs_on_a_small_tree_and_reads_the_servers_own_stall_log():
    """benchmarks/reads.py end to end on a tree of 40 beads, without the web (its figures are not checked)."""
    proc = run_with_its_servers([str(BENCHMARKS / "reads.py"), "--beads", "40", "--convoys", "4", "--sessions", "3",
                                 "--no-web"], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for words in ("built 3 sessions, 4 convoys, 40 beads", "restart:", "beads/graph", "longest stall of the server's loop",
                  "host speed: a fixed Python workload took", "ms before,"):  # benchmarks/host.py's lines
        assert words in proc.stdout, proc.stdout
