"""The Markdown report: GitHub tables that untrusted text cannot break or ping from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from buildbot_revert.policy import Policy
from simulator.evaluation import evaluate
from simulator.markdown_report import render_markdown
from simulator.replay import Selection, replay
from simulator.report_context import ReportContext, gather
from simulator.store import HistoryStore

from .reports_fixtures import make_history

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
    return render_markdown(result, ev, ctx), ctx


def _cells(line: str) -> list[str]:
    # A cell boundary is a pipe not escaped with a backslash.
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def test_tables_hold_their_shape_and_nobody_is_pinged(tmp_path: Path) -> None:
    md, _ = _render(tmp_path)
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
