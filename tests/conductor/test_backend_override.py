"""`run --backend`: a workflow's sessions made on other backends than the file declares, kept for a resume;
and sessions found already there held against what the run makes them on.

A real server (the fakes of review_cycle.py's config beside the built-in `sim`), the conductor as a process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.server import REPO_ROOT
from review_cycle import TIMEOUT, prompts, review_server, run_conductor
from sim_flow import prompted, session_file

HEAD = "[conductor one run t1 step ask]"


def test_backend_name_makes_every_session_on_it_and_old_new_maps_each_backend() -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    mapped = prompted(base, {"a": "claude", "b": "codex"}, name="mapped")
    every = prompted(base, {"c": "claude", "d": "codex"}, name="every")
    with review_server(base) as srv:
        done = run_conductor(srv, mapped, base / "s", "--backend", "claude=sim", "--backend", "codex=reviewer")
        assert (done.returncode, done.stdout) == (0, "done: all steps of mapped done\n"), done
        assert session_file(srv, "a", "backend") == "sim simulated\n"
        assert session_file(srv, "b", "backend") == "reviewer\n"
        assert "[fake reviewer b] answering: [conductor mapped run t1 step ask]" in session_file(srv, "b", "out")
        done = run_conductor(srv, every, base / "s", "--backend", "sim")
        assert (done.returncode, done.stdout) == (0, "done: all steps of every done\n"), done
        assert [session_file(srv, n, "backend") for n in "cd"] == ["sim simulated\n"] * 2
        assert "made session c (sim)" in done.stderr and "made session d (sim)" in done.stderr


@pytest.mark.parametrize("values, said", [
    (["cluade=sim"], "--backend cluade=sim: no session of workflow 'one' is declared on cluade (its backends: claude)"),
    (["sim", "claude=sim"], "--backend sim --backend claude=sim: give either one --backend NAME"),
    (["sim", "codex"], "give either one --backend NAME (every session) or --backend OLD=NEW"),
    (["claude=sim", "claude=codex"], "--backend 'claude=codex': claude is mapped twice (to sim and to codex)"),
    (["claude="], "--backend 'claude=': give NAME (every session) or OLD=NEW"),
    (["a b"], "--backend 'a b': give NAME (every session) or OLD=NEW"),
])
def test_a_bad_backend_override_is_refused_before_anything_is_done(values: list[str], said: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    argv = [sys.executable, "-m", "conductor", "run", "-a", f"unix!{base}/none", "--state", str(base / "s")]
    argv += [word for value in values for word in ("--backend", value)] + [str(prompted(base, {"a": "claude"}))]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, timeout=TIMEOUT)
    assert done.returncode == 2 and done.stdout == "" and said in done.stderr, done
    assert not (base / "s").exists(), "a refused override made a record"


def test_a_run_resumed_with_other_backends_is_refused_and_with_the_same_ones_goes_on() -> None:
    """Killed after its first prompt went and its step's record (crash point 4), the run is refused with
    other backends, since the sessions made so far are on the first ones; `--backend sim` makes the same
    sessions as `--backend claude=sim`, so it resumes, and the prompt is not sent again."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    path, state = prompted(base, {"a": "claude"}), base / "s"
    with review_server(base) as srv:
        killed = run_conductor(srv, path, state, "--backend", "claude=sim", env={"ANVILFS_CONDUCTOR_CRASH_AT": "4"})
        # points 2-4 are the prompt's send and its step's record, which go side by side: all three passed
        assert killed.returncode == -signal.SIGKILL and "(record: begin ask)" in killed.stderr, killed.stderr
        other = run_conductor(srv, path, state, "--backend", "reviewer")
        assert other.returncode == 2 and other.stdout == "", other
        assert "began with --backend claude=sim, making its sessions on a=sim; this one (with --backend reviewer) " \
               "would make them on a=reviewer. Give the same --backend to resume it, or --again" in other.stderr
        same = run_conductor(srv, path, state, "--backend", "sim")
        assert (same.returncode, same.stdout) == (0, "done: all steps of one done\n"), same
        assert prompts(srv, ["a"]) == {"a": [HEAD]}, same.stderr
        # a new run on other backends: the session a is there on sim, and is not taken for a reviewer
        again = run_conductor(srv, path, state, "--backend", "reviewer", "--again")
        assert again.returncode == 2, again
        assert again.stdout.startswith("refused: session a (on sim, not reviewer) exists on another backend than "
                                       "the workflow makes it on (with --backend reviewer)"), again
        assert prompts(srv, ["a"]) == {"a": [HEAD]}, "a refused run sent a prompt"


def test_a_session_there_in_another_cwd_is_used_with_a_warning_and_on_another_backend_refused() -> None:
    """Made by hand before the run: a in another directory than the workflow declares (said on stderr,
    naming both, then used), b on another backend (the run is refused before anything is sent, and the
    conductor's own session is not even made)."""
    base = Path(tempfile.mkdtemp(prefix="cond."))
    (base / "elsewhere").mkdir()
    path = prompted(base, {"a": "claude"})
    with review_server(base) as srv, srv.connect("test", timeout=TIMEOUT) as client:
        client.write_file("ctl", f"new sim {base / 'elsewhere'} name=a\n".encode())
        client.write_file("ctl", f"new reviewer {base} name=b\n".encode())
        done = run_conductor(srv, path, base / "s1", "--backend", "sim")
        assert (done.returncode, done.stdout) == (0, "done: all steps of one done\n"), done
        assert f"conductor: session a exists with cwd {base / 'elsewhere'}, not {base} as the workflow declares: " \
               f"it is used as it is (its agent works in {base / 'elsewhere'})\n" in done.stderr, done.stderr
        assert prompts(srv, ["a"]) == {"a": [HEAD]}
        refused = run_conductor(srv, prompted(base, {"b": "claude"}, name="two"), base / "s2", "--backend", "sim")
        assert refused.returncode == 2, refused
        assert refused.stdout == "refused: session b (on reviewer, not sim) exists on another backend than the " \
               "workflow makes it on (with --backend sim): a prompt meant for one agent would go to another. " \
               "Remove what is in the way (write stop, then remove, to SESSION/ctl) and run again, or give a " \
               "--backend that matches\n", refused
        assert prompts(srv, ["b"]) == {"b": []} and "conductor-two" not in session_list(client)
        # without the override the file's own backend is no match either: the same refusal, no --backend named
        plain = run_conductor(srv, prompted(base, {"b": "claude"}, name="two"), base / "s2")
        assert plain.returncode == 2 and "session b (on reviewer, not claude) exists" in plain.stdout, plain
        assert "(with --backend" not in plain.stdout, plain


def session_list(client) -> list[str]:
    return [line.split()[0] for line in client.read_file("list").decode().splitlines()]
