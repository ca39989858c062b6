"""The Markdown report: GitHub tables that untrusted text cannot break or ping from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from buildbot_revert.core.policy import Policy
from simulator.analysis.evaluation import evaluate, guard_table
from simulator.analysis.replay import Selection, replay
from simulator.history.store import HistoryStore
from simulator.reports.markdown import render_markdown
from simulator.reports.model import ReportContext, gather
from simulator.reports.text import to_json
from tests.simulator.reports_fixtures import CONTROL_AUTHOR, MISSED_BUILDER, make_history

# What GitHub would turn into a notification: "@" starting a login or team.
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
# A real Markdown link: an unescaped "](".
LINK = re.compile(r"(?<!\\)\]\(")


def _render(tmp_path: Path, **kw: bool) -> tuple[str, ReportContext]:
    store = HistoryStore(make_history(tmp_path / "h.sqlite", **kw))
    result = replay(store, Policy(), Selection())
    ev = evaluate(result, store.labels()) if store.has_labels() else None
    ctx = gather(store, result, ev)
    store.close()
    return render_markdown(ctx), ctx


def _cells(line: str) -> list[str]:
    # A cell boundary is a pipe not escaped with a backslash.
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


@pytest.mark.parametrize("guarded", [False, True])
def test_tables_hold_their_shape_and_nobody_is_pinged(tmp_path: Path, guarded: bool) -> None:
    md, _ = _render(tmp_path, guarded=guarded)
    assert not MENTION.search(md)
    assert "<script>" not in md and "<img" not in md
    assert not LINK.search(md.replace("](https://", ""))
    widths: list[int] = []
    for line in md.splitlines():
        if line.startswith("|"):
            if set(line) <= set("|-:"):
                continue
            cells = _cells(line)
            if widths and len(cells) != widths[-1] and not line.startswith("| filed"):
                pytest.fail(f"row with {len(cells)} cells after {widths[-1]}: {line}")
            widths.append(len(cells))
        else:
            widths = []


def test_sections_and_numbers(tmp_path: Path) -> None:
    md, ctx = _render(tmp_path)
    for heading in (
        "# Revert policy backtest",
        "## Proposed reverts per month",
        "## Verdicts",
        "## Proposed reverts",
        "## Blind spots",
    ):
        assert f"\n{heading}\n" in f"\n{md}"
    assert "| 2024-01 | 3 | ███ |" in md
    assert "| right / wrong reverts (labels) | 1 / 2 |" in md
    assert "estimated precision, strict" in md
    assert "| builders red at the end | 3 (1 caught) |" in md
    # Links to commits and pull requests, from the store's meta.
    assert "(https://github.com/python/cpython/pull/101)" in md
    # Builds link to the master's web UI by the builder ids the store keeps.
    assert ctx.build_url("AMD64 Ubuntu", 2) == "https://buildbot.example.org/#/builders/10/builds/2"


def test_no_links_when_the_history_does_not_say_where(tmp_path: Path) -> None:
    md, ctx = _render(tmp_path, meta=False, labels=False)
    assert not LINK.search(md)
    assert "history says (estimate)" in md
    assert "reverted later" in md and "fixed in same files" in md


def test_build_links_from_meta_and_builder_ids(tmp_path: Path) -> None:
    _, ctx = _render(tmp_path)
    ctx.builder_ids = {"AMD64 Ubuntu": 12}
    assert ctx.build_url("AMD64 Ubuntu", 7) == "https://buildbot.example.org/#/builders/12/builds/7"
    ctx.build_url_template = "{master}/builders/{builder}/builds/{number}"
    assert ctx.build_url("a b/c", 3) == "https://buildbot.example.org/builders/a%20b%2Fc/builds/3"


def _table(md: str, heading: str) -> list[list[str]]:
    """The rows (header first) of the first table under ``heading``."""
    section = md.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [_cells(line) for line in lines if not set(line) <= set("|-:")]


def test_guard_table_is_the_json_one(tmp_path: Path) -> None:
    md, ctx = _render(tmp_path, guarded=True)
    assert ctx.evaluation is not None
    doc = to_json(ctx)
    header, *rows = _table(md, "## Evidence guards")
    assert [c.strip() for c in header] == [
        "guard",
        "on",
        "declined",
        "cost: real breakages",
        "saved: flakes or infra",
    ]
    shown = {c[0].strip().strip("`"): [c.strip() for c in c[1:]] for c in rows}
    expected = {
        name: [
            "yes" if g["enabled"] else "no",
            str(g["declined"]),
            str(g["true_breakages"]),
            str(g["flakes_or_infra"]),
        ]
        for name, g in doc["guards"].items()
    }
    assert shown == expected
    # The fixture's two guarded streaks: a real breakage (what the generic
    # guard cost) and a failed checkout (what the infra guard saved).
    assert shown["generic-failure"] == ["yes", "1", "1", "0"]
    assert shown["infra"] == ["yes", "1", "0", "1"]


def test_guard_table_without_labels_has_no_cost_columns(tmp_path: Path) -> None:
    md, ctx = _render(tmp_path, guarded=True, labels=False)
    header, *rows = _table(md, "## Evidence guards")
    assert [c.strip() for c in header] == ["guard", "on", "declined"]
    assert ["`infra`", "yes", "1"] in [[c.strip() for c in r] for r in rows]
    assert "cost" not in md.split("## Evidence guards")[1].split("##")[0]
    # No labels, no missed breakages to tell.
    assert "## Missed breakages" not in md


def test_gather_takes_the_guard_rows_it_is_given(tmp_path: Path) -> None:
    store = HistoryStore(make_history(tmp_path / "h.sqlite", guarded=True))
    result = replay(store, Policy(), Selection())
    labels = store.labels()
    ev = evaluate(result, labels)
    rows = guard_table(result, labels)
    assert gather(store, result, ev, rows).guards is rows
    # Computed when not given: the same table, with the labels' columns.
    assert gather(store, result, ev).guards == rows
    store.close()


def test_missed_breakages_are_the_json_ones(tmp_path: Path) -> None:
    md, ctx = _render(tmp_path, guarded=True)
    ev = ctx.evaluation
    assert ev is not None
    missed = to_json(ctx)["evaluation"]["missed_revisions"]
    assert missed == ["m" * 40] and ev.missed == 1 and ev.attributable == 2
    section = md.split("\n## Missed breakages\n", 1)[1].split("\n## ", 1)[0]
    assert "did not propose (labels): 1 of 2." in section
    header, *rows = _table(md, "## Missed breakages")
    assert [c.strip() for c in header] == [
        "broke",
        "change",
        "PR",
        "author",
        "title",
        "builds",
        "verdict",
    ]
    assert len(rows) == len(missed)
    (row,) = rows
    assert row[1].strip() == f"[mmmmmmmmmm](https://github.com/python/cpython/commit/{'m' * 40})"
    assert row[3].strip() == "mallory"  # CONTROL_AUTHOR without its controls
    assert f"[{MISSED_BUILDER} #2](" in row[5]
    assert row[6].strip().startswith("`generic-failure`: the failing builds show only generic")
    (told,) = ev.missed_breakages
    assert (told.revision, told.builder, told.author) == ("m" * 40, MISSED_BUILDER, CONTROL_AUTHOR)


def test_every_attributable_breakage_caught_says_so(tmp_path: Path) -> None:
    md, ctx = _render(tmp_path)
    section = md.split("\n## Missed breakages\n", 1)[1].split("\n## ", 1)[0]
    assert "did not propose (labels): 0 of 0." in section
    assert "The other 1 of the 1 labelled breakages" in section
    assert "| broke |" not in section


def test_the_precision_figures_say_why_they_differ(tmp_path: Path) -> None:
    md, _ = _render(tmp_path)
    summary = md.split("\n## ", 1)[0]
    assert "| precision (labels) | 33.3% |" in summary
    assert "estimated precision, strict" in summary
    (note,) = [line for line in summary.splitlines() if line.startswith("The labelled precision")]
    assert "ground truth" in note and "only if a later commit reverts that change" in note
    assert "fixed forward" in note and "(here 1 of the 3 were fixed in the same files" in note
    # Without labels, the same sentence about the estimates alone.
    (tmp_path / "unlabelled").mkdir()
    md, _ = _render(tmp_path / "unlabelled", labels=False)
    summary = md.split("\n## ", 1)[0]
    assert "The labelled precision" not in summary
    assert "The estimates use no labels, only the history itself: the strict one" in summary


def test_control_and_bidi_characters_never_reach_the_report(tmp_path: Path) -> None:
    md, _ = _render(tmp_path, guarded=True)
    assert not re.search(
        "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", md
    )
    # The title of change m: U+202E, U+0007, an escape sequence and <script>.
    assert "| gh-400: txt.exe \\[31m &lt;script&gt;alert(4)&lt;/script&gt; x |" in md
    assert "<script>" not in md
