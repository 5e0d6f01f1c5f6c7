"""The view's rows kept from view to view (anvilfs/web/rows.py): the same view as one made afresh,
whatever changed; unchanged rows not made again; rows of lines gone forgotten."""

from __future__ import annotations

import json
import random

from anvilfs.web import view
from anvilfs.web.rows import Rows

IDS = [f"b-{i:02d}" for i in range(12)]  # few ids: lines of the same id meet (twice in a file, in both files)
SESSIONS = ["s1", "s2", "s3", "s4"]


def graph_line(rng: random.Random, ident: str = "") -> str:
    title = rng.choice(["Do it", "Do it  <- b-03", "Other", ""])
    arrow = rng.choice(["", f"  <- {rng.choice(IDS)}", f"  <- {rng.choice(IDS)} {rng.choice(IDS)}"])
    bead = f"  {ident or rng.choice(IDS)} {rng.choice(['pending', 'completed'])}  {title}{arrow}"
    return bead if ident else rng.choice([bead, rng.choice(["wave 1", "wave 2", "done", "blocked (a cycle)", ""])])


def list_line(rng: random.Random, ident: str = "") -> str:
    return (f"{ident or rng.choice(IDS)} {rng.choice(['pending', 'in_progress', 'broken'])} {rng.choice(['dev', '-'])} "
            f"{rng.choice(SESSIONS + ['-'])} {rng.choice(['Do it', 'Do it  <- b-03', 'Other', 'not TOML: line 3'])}")


def usage_line(rng: random.Random) -> str:
    return (f"{rng.choice(IDS + SESSIONS + ['c-1', '(total)'])} turns={rng.randint(0, 2)} input_tokens={rng.randint(0, 2000)} "
            f"cost_usd={rng.choice(['unknown', '0.25', '0.000100'])} unpriced_turns={rng.randint(0, 1)}")


def session_line(rng: random.Random) -> str:
    return (f"{rng.choice(SESSIONS)} {rng.choice(['sim', 'claude'])} {rng.choice(['idle', 'busy'])} - "
            f"/home/{rng.choice(['a', 'not simulated'])}{rng.choice(['', ' simulated'])}")


def convoy_line(rng: random.Random) -> str:
    return f"c-{rng.randint(1, 3)} in_progress {rng.choice(['1/3', '0/0', 'x/y'])} s1 Convoy {rng.randint(1, 2)}"


MAKERS = {"beads/graph": graph_line, "beads/list": list_line, "beads/usage": usage_line, "usage": usage_line,
          "convoys/usage": usage_line, "list": session_line, "convoys/list": convoy_line}


def well_made(rng: random.Random) -> dict[str, list[str]]:
    """Files with no id twice in beads/graph or beads/list, a heading first (as the server writes them)."""
    files = {path: [make(rng) for _ in range(rng.randint(0, 15))] for path, make in MAKERS.items()}
    ids = rng.sample(IDS, rng.randint(0, len(IDS)))
    files["beads/graph"] = ["wave 1", *(graph_line(rng, i) for i in ids[:5]), "done", *(graph_line(rng, i) for i in ids[5:])]
    files["beads/list"] = [list_line(rng, i) for i in rng.sample(IDS, rng.randint(0, len(IDS)))]
    return files


def well_made_change(files: dict[str, list[str]], rng: random.Random) -> None:
    """A bead's line changed, removed or added (a new id) in beads/graph or beads/list, or a cell changed."""
    path = rng.choice(["beads/graph", "beads/list", "beads/usage"])
    lines, make = files[path], MAKERS[path]
    beads = [at for at, line in enumerate(lines) if path != "beads/graph" or line.startswith("  ")]
    ident = lambda line: line.split()[0]  # noqa: E731
    how = rng.choice(["replace", "remove", "add"]) if beads else "add"
    if how == "add":
        unused = sorted(set(IDS) - {ident(line) for line in lines if line.strip() and (path != "beads/graph" or line[:2] == "  ")})
        if unused:
            lines.insert(rng.randint(1 if path == "beads/graph" else 0, len(lines)),
                         make(rng, rng.choice(unused)) if path != "beads/usage" else usage_line(rng))
        return
    at = rng.choice(beads)
    if how == "remove":
        del lines[at]
    elif path == "beads/usage":
        lines[at] = usage_line(rng)
    else:
        lines[at] = make(rng, ident(lines[at]))


def change(files: dict[str, list[str]], rng: random.Random) -> None:
    """One line of one file replaced, removed, added or copied."""
    lines, how = files[rng.choice(list(files))], rng.choice(["replace", "remove", "add", "copy"])
    at = rng.randrange(len(lines)) if lines else 0
    if how == "remove" and lines:
        del lines[at]
    elif how == "copy" and lines:
        lines.insert(rng.randrange(len(lines) + 1), lines[at])
    else:
        made = MAKERS[next(path for path, kept in files.items() if kept is lines)](rng)
        lines[at:at + (how == "replace")] = [made]


def shown(files: dict[str, list[str]], kept: view.Reading) -> dict:
    texts = {path: "".join(line + "\n" for line in lines) for path, lines in files.items()}
    queues, last = {"s1": 1, "s2": 0, "s3": 4}, {"s1": "09:00:01 await"}
    return view.shown(texts | {"human/approvals": "", "inbox": {}}, queues, last, {"sim": True, "claude": False}, kept)


def test_a_kept_view_is_the_view_made_afresh_whatever_changed() -> None:
    rng = random.Random(32)
    views = [0, 0]  # views made, views made through every line
    for trial in range(40):
        if trial % 2:  # any lines at all: ids twice, beads before a heading
            files = {path: [make(rng) for _ in range(rng.randint(0, 15))] for path, make in MAKERS.items()}
            files["beads/graph"].insert(0, "wave 1")
        else:  # as the server writes them, now and then a line of any kind
            files = well_made(rng)
        kept = view.Reading()
        for _ in range(30):
            again = shown(files, kept)
            fresh = shown(files, view.Reading())
            assert again == fresh, files
            assert json.dumps(again) == json.dumps(fresh), files  # the keys in the same order too
            views[0] += 1
            for _ in range(rng.randint(1, 3)):
                (change if trial % 2 or rng.random() < 0.05 else well_made_change)(files, rng)
        views[1] += kept.rows.bead_waves.whole_views
    # both ways were compared: through every line, and only the changed beads (waves.py)
    assert 0 < views[1] < views[0] * 0.9, views


GRAPH = "wave 1\n  a-001 pending  A\n  b-002 pending  B  <- a-001\ndone\n  c-003 completed  C\n"
BEADS = "a-001 pending dev - A\nb-002 pending dev - B\nc-003 completed dev s1 C\nd-004 pending dev - D\n"


def test_a_bead_unchanged_is_not_made_again_and_the_changed_one_is() -> None:
    rows = Rows()
    first = {b["id"]: b for g in rows.waves(GRAPH, BEADS, {}) for b in g["beads"]}
    claimed = BEADS.replace("a-001 pending dev -", "a-001 in_progress dev s2")
    second = {b["id"]: b for g in rows.waves(GRAPH.replace("a-001 pending", "a-001 in_progress"), claimed,
                                             {"c-003": "$0.25"}) for b in g["beads"]}
    assert second["b-002"] is first["b-002"] and second["d-004"] is first["d-004"]
    assert second["a-001"] is not first["a-001"] and second["a-001"]["assigned_to"] == "s2"
    assert second["c-003"] is not first["c-003"] and second["c-003"]["spent"] == "$0.25"  # its cell changed
    assert first["c-003"]["spent"] == "-"  # the earlier view's row is left as it was


def test_rows_of_lines_gone_are_forgotten() -> None:
    reading, files = view.Reading(), {path: [] for path in MAKERS}
    files["beads/graph"] = ["wave 1"] + [f"  t-{i:03d} pending  Task {i}" for i in range(100)]
    files["beads/list"] = [f"t-{i:03d} pending dev - Task {i}" for i in range(100)] + ["odd-1 broken - - bad"]
    files["list"] = [f"s{i} sim idle - /" for i in range(1, 4)]
    files["convoys/list"] = ["c-1 planning 0/2 s1 One", "c-2 planning 0/2 s1 Two"]
    shown(files, reading)
    assert len(reading.rows) == 101 + 3 + 2  # beads (one not in the graph), sessions, convoys
    files["beads/graph"] = files["beads/graph"][:11]
    files["beads/list"] = files["beads/list"][:10]
    files["list"], files["convoys/list"] = files["list"][:1], []
    shown(files, reading)
    assert len(reading.rows) == 10 + 1


def test_the_groups_are_the_last_views_while_the_beads_files_and_cells_stay() -> None:
    rows, cells = Rows(), {"a-001": "$0.25"}
    first = rows.waves(GRAPH, BEADS, cells)
    assert rows.waves(GRAPH, BEADS, dict(cells)) is first  # no pass over the lines: a session's event only
    assert rows.waves(GRAPH, BEADS, {"a-001": "$0.50"}) is not first


def test_the_last_of_an_ids_list_lines_counts_whichever_comes_last() -> None:
    rows, graph = Rows(), "wave 1\n  a-001 pending  A\n"
    rows.waves(graph, "a-001 pending dev - A\n", {})
    for listing in ("a-001 pending dev s1 A\na-001 pending dev s2 A\n", "a-001 pending dev s2 A\na-001 pending dev s1 A\n"):
        assert rows.waves(graph, listing, {}) == Rows().waves(graph, listing, {})  # the same lines, not the same last


def chain_files(beads: int, waves: int) -> tuple[list[str], list[str]]:
    """beads/graph and beads/list as the server writes them: `waves` chains side by side, bead i waiting on
    bead i - waves."""
    graph, listing = [], []
    for wave in range(1, beads // waves + 1):
        graph.append(f"wave {wave}")
        for i in range((wave - 1) * waves, wave * waves):
            arrow = f"  <- t-{i - waves:04d}" if i >= waves else ""
            graph.append(f"  t-{i:04d} pending  Task {i}{arrow}")
            listing.append(f"t-{i:04d} pending dev - Task {i}")
    return graph, listing


def test_claims_remake_only_their_beads_rows_and_a_moved_wave_goes_through_every_line() -> None:
    """What `anvilfs web` sees most: a claim or unclaim changes one bead's line in each file. Each view is
    the one made afresh; only the claimed bead's row is new; no view but the first and the one where a
    bead left its wave goes through every line."""
    graph, listing = chain_files(400, 40)
    rows, cells = Rows(), {}
    text = lambda lines: "".join(line + "\n" for line in lines)  # noqa: E731
    before = {b["id"]: b for g in rows.waves(text(graph), text(listing), cells) for b in g["beads"]}
    rng = random.Random(6)
    for step in range(60):
        i = rng.randrange(40)  # a bead of the first wave: claimed, unclaimed, or its cell changed
        how = rng.choice(["claim", "unclaim", "cell"])
        if how == "cell":
            cells = dict(cells, **{f"t-{i:04d}": f"${step}.00"})
        else:
            status, who = ("in_progress", "s1") if how == "claim" else ("pending", "-")
            graph[1 + i] = f"  t-{i:04d} {status}  Task {i}"
            listing[i] = f"t-{i:04d} {status} dev {who} Task {i}"
        groups = rows.waves(text(graph), text(listing), cells)
        assert groups == Rows().waves(text(graph), text(listing), cells), step
        now = {b["id"]: b for g in groups for b in g["beads"]}
        assert [ident for ident in now if now[ident] is not before[ident]] in ([], [f"t-{i:04d}"]), step
        before = now
    assert rows.bead_waves.whole_views == 1
    del graph[1]  # t-0000 completes: it leaves wave 1 for `done`
    graph.append("done")
    graph.append("  t-0000 completed  Task 0")
    listing[0] = "t-0000 completed dev s1 Task 0"
    assert rows.waves(text(graph), text(listing), cells) == Rows().waves(text(graph), text(listing), cells)
    assert rows.bead_waves.whole_views == 2
