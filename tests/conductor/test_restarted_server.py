"""The beads example resumes across a clean server restart mid-run, blocking on `wait` or polling.

Issue 32, item 7: the restart came while the developer had the run's prompt
queued behind a turn. A server restarted as it is keeps the (per-turn)
session where it was: the lost turn ends error, the queue runs, the bead
stays held. One restarted `--paused` brings the session back exited with
its queue, which released its bead: the conductor restarts the session
(polling too, where it used to wait for ever) and claims the bead again for
it, so that `complete` is not refused. Either way the run ends done, each
bead completed and each prompt sent once.

And when the turn the stop cut short is the run's own (the developer's
build prompt), the conductor asks it again: the server does not run it
again unasked, and the step waits for its answer.

The developer session is made by the test before the run, with a first
turn (`hold FIFO`, tests/fakes/review_agent.py) that runs until the server
stops: the run's prompt queues behind it, where the restart finds it. So
it works in the example's directory itself, not in a worktree (the example
without `worktree` and its merge step): a worktree session's bead is not
claimed for it during a turn, and the run's prompt would never queue.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from harness.server import start_server
from review_cycle import TIMEOUT, Events, conductor_argv, prompts, review_server
from sim_flow import Watched
from test_beads_flow import PROMPTS, ROLES, WANT, fake_example, outcome


def held(base: Path) -> Path:
    """A FIFO: a fake agent's turn whose prompt has a line `hold FIFO` waits on it (tests/fakes/review_agent.py)."""
    fifo = base / "hold"
    os.mkfifo(fifo)
    return fifo


def restart(srv, base: Path, paused: bool) -> None:
    """A clean stop (SIGTERM) of the server, and a start on the same state; the hold is gone meanwhile."""
    srv.stop()
    (base / "hold").unlink()
    args = ["--config", str(base / "config.toml"), *(["--paused"] if paused else [])]
    srv.proc = start_server(base, namespace=srv.namespace, state=srv.state, extra_args=args,
                            log_name="server2.trace").proc


def hold_dev(srv, base: Path) -> None:
    """Session dev on the fake developer, in the example's cwd, in a turn that does not end by itself."""
    fifo = held(base)
    with srv.connect("test", timeout=TIMEOUT) as client:
        client.write_file("ctl", f"new developer {base / 'work'} name=dev\n".encode())
        client.write_file("dev/in", f"hold {fifo}\n".encode())


def done_across_a_restart(srv, base: Path, events: Events, workflow: Path, *, paused: bool, poll: bool,
                          mid_run: str) -> str:
    """A conductor run of `workflow` through a restart of the server once `mid_run` comes in `events`: it must
    end done, with the example's beads and mail, the released bead (paused) claimed again. Its stderr."""
    run = Watched(conductor_argv(srv, workflow, base / "conductor", *(["--poll", "1"] if poll else [])))
    try:
        events.until(mid_run)
        restart(srv, base, paused)
        status, out, err = run.finish()
    finally:
        run.proc.kill()
    why = f"{out}{err}"
    assert status == 0 and out.startswith("done:"), why
    found = outcome(srv)
    assert sorted(found["beads"]) == sorted(WANT["beads"]) and found["mail"] == WANT["mail"], why
    assert ("claiming it again for dev" in err) == paused, why
    return err


@pytest.mark.parametrize("poll", [False, True], ids=["wait", "poll"])
@pytest.mark.parametrize("paused", [False, True], ids=["as-it-was", "paused"])
def test_the_beads_example_resumes_after_a_clean_server_restart_mid_run(paused: bool, poll: bool) -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        workflow = fake_example(base, worktree=False)
        events = Events(srv)
        hold_dev(srv, base)
        events.until("dev running")  # the held turn began: the run's prompt will queue behind it
        err = done_across_a_restart(srv, base, events, workflow, paused=paused, poll=poll,
                                    mid_run="dev prompt queued (1 waiting)")  # the build prompt of round 1
        assert prompts(srv, list(ROLES)) == PROMPTS | {"dev": [f"hold {base / 'hold'}", *PROMPTS["dev"]]}, err
        with srv.connect("test", timeout=TIMEOUT) as client:
            log = client.read_file("dev/log").decode()
        assert ": lost: the server stopped during the turn" in log and log.count("\nhold ") == 1, log


@pytest.mark.parametrize(("paused", "poll"), [(False, False), (True, False), (False, True)],
                         ids=["as-it-was-wait", "paused-wait", "as-it-was-poll"])  # the fourth adds nothing new
def test_a_prompt_of_the_run_whose_turn_the_restart_cut_short_is_asked_again(paused: bool, poll: bool) -> None:
    base = Path(tempfile.mkdtemp(prefix="cond."))
    with review_server(base) as srv:
        fifo = held(base)
        workflow = fake_example(base, worktree=False)
        text = workflow.read_text().replace("Implementation round {round}: {bead.impl.title}.\n",
                                            f"Implementation round {{round}}: {{bead.impl.title}}.\nhold {fifo}\n")
        workflow.write_text(text)
        err = done_across_a_restart(srv, base, Events(srv), workflow, paused=paused, poll=poll,
                                    mid_run="dev running")  # the build prompt of round 1, held
        first, second = PROMPTS["dev"]
        assert prompts(srv, list(ROLES)) == PROMPTS | {"dev": [first, first, second]}, err  # once lost, once answered
        assert "dev: the turn on [conductor beads run t1 round 1 step build] was cut short by a server stop: " \
               "asking again" in err, err
