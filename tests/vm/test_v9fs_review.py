"""scripts/review-cycle.sh -m through a Linux v9fs mount in a QEMU guest: `cat r1/wait`, `echo ... > r1/in`.

The guest has only busybox, so the script runs there under busybox `sh` (it is written in POSIX sh
for this; bash is not shipped into the guest): the snippet writes the script's own text to /tmp and
runs `sh /tmp/review-cycle.sh -m $V9_MNT MAX`. The server and the agents it runs are on the host
(tests/harness/review.py: the fake review agents on command backends), so the sessions' cwd is a
host directory. One boot runs the cycle twice: MAX=3 ends clean after round 2 (status 0), then
MAX=1 on the same sessions runs one more round with issues (status 1).
"""

from __future__ import annotations

import pytest

from harness.review import DEVELOPER, REVIEWERS, SCRIPT_SH, prompts, review_server, reviewer_prompt
from harness.vm import ensure_assets, run_in_guest, sections

pytestmark = pytest.mark.vm

SNIPPET = r"""
cat > /tmp/review-cycle.sh <<'REVIEW_CYCLE_SCRIPT'
{script}
REVIEW_CYCLE_SCRIPT
export BACKEND=reviewer DEV_BACKEND=developer CWD={work}
echo "@@ clean";  sh /tmp/review-cycle.sh -m "$V9_MNT" 3 2>&1; echo "rc=$?"
echo "@@ again";  sh /tmp/review-cycle.sh -m "$V9_MNT" 1 2>&1; echo "rc=$?"
echo "@@ list";   cat list
echo "@@ end"
"""


def test_the_bash_script_drives_the_cycle_through_a_linux_mount():
    ensure_assets()
    with review_server() as (srv, work):
        script = SCRIPT_SH.read_text()
        assert "REVIEW_CYCLE_SCRIPT" not in script  # the here-document's end marker
        r = run_in_guest(srv.socket, SNIPPET.replace("{script}", script).replace("{work}", str(work)), timeout=300)
        why = f"{r}\n{srv.trace_tail()}"
        assert r.mounted and r.returncode == 0, why
        s = sections(r.output)
        assert s["clean"] == (["review-cycle: round 1: issues from r1 r2 r3 r4 r5", "review-cycle: round 2: no issues"], 0), why
        assert s["again"] == (["review-cycle: round 1: issues from r1 r2 r3 r4 r5", "review-cycle: 1 rounds, and still issues"], 1), why
        assert sorted(line.split()[0] for line in s["list"][0]) == sorted((*REVIEWERS, DEVELOPER)), why
        for name in REVIEWERS:  # each prompt once: rounds 1 and 2, then round 1 of the second run
            log = prompts(srv.run_cli("read", f"agent/{name}/log").stdout)
            assert log == [reviewer_prompt(1, work), reviewer_prompt(2, work), reviewer_prompt(1, work)], (name, log, why)
        developer = prompts(srv.run_cli("read", f"agent/{DEVELOPER}/log").stdout)
        assert [p.splitlines()[0] for p in developer] == ["round 1: fix what the reviewers found:"] * 2, (developer, why)
        assert all(f"ISSUE: {name} found a problem in round 1 (fake)." in developer[0] for name in REVIEWERS), developer
