"""The documentation is held to the code, and the README's links resolve.

The site is built as CI builds it (``mkdocs build --strict``: every warning,
a broken cross-reference included, fails), and its generated tables are read
back from the HTML: the verdict table must be the ``Reason`` enum with its
meanings, in order; the lifecycle table the core's moves of a revert; the
option table ``RevertReporter``'s settings with their defaults; the CLI
reference what ``--help`` prints. A page with a broken link
must fail the build. The README, the project's front door, stays short, and
every link in it reaches a file of the repository (and a heading of it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

import buildbot_revert.core
from buildbot_revert.core.verdicts import MEANINGS, Reason
from buildbot_revert.plugin.options import BUILDBOT_OPTIONS, declared
from simulator.cli import main as simulate

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# Markdown links and images: [text](target) and ![alt](target).
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


class Tables(HTMLParser):
    """Every table of an HTML page, as rows of cell texts (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.pres: list[str] = []
        self._cell: list[str] | None = None
        self._pre: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "pre":
            self._pre = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "pre" and self._pre is not None:
            self.pres.append("".join(self._pre))
            self._pre = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._pre is not None:
            self._pre.append(data)


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation built as CI builds it."""
    out = tmp_path_factory.mktemp("site")
    built = _mkdocs(ROOT / "mkdocs.yml", out)
    assert built.returncode == 0, built.stderr
    return out


def _page(site: Path, name: str) -> Tables:
    parser = Tables()
    parser.feed((site / name).read_text(encoding="utf-8"))
    return parser


def _table(site: Path, page: str, first_header: str) -> list[list[str]]:
    """The rows (without the header) of the table whose first column is ``first_header``."""
    found = [t for t in _page(site, page).tables if t and t[0] and t[0][0] == first_header]
    assert len(found) == 1, f"{page}: {len(found)} tables headed {first_header!r}"
    return found[0][1:]


def test_the_verdict_table_is_the_reason_enum_with_its_meanings(site: Path) -> None:
    assert set(MEANINGS) == set(Reason), "every reason has a meaning, and nothing else does"
    rows = _table(site, "policy.html", "reason")
    assert [row[0] for row in rows] == [r.value for r in Reason]
    assert [row[2] for row in rows] == [MEANINGS[r].replace("`", "") for r in Reason]


def test_the_option_table_is_the_reporters_settings(site: Path) -> None:
    rows = _table(site, "install.html", "option")
    options = declared()
    assert [row[0] for row in rows] == [*(o.name for o in options), *BUILDBOT_OPTIONS]
    defaults = {o.name: "(none)" if o.default is None else repr(o.default) for o in options}
    assert {row[0]: row[1] for row in rows[: len(options)]} == defaults
    assert [row[2] for row in rows[: len(options)]] == [
        re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", o.doc).replace("`", "") for o in options
    ]


def test_the_lifecycle_table_is_the_cores_moves(site: Path) -> None:
    from buildbot_revert.core.lifecycle import TABLE, State, StepTaken

    rows = _table(site, "post-verdict.html", "state")
    assert rows == [
        [state.value, event.__name__, ", ".join(sorted(s.value for s in move.to))]
        for (state, event), move in TABLE.items()
    ]
    # A waiting row may be filed; a filed one moves no more.
    assert [State.PENDING.value, StepTaken.__name__] == rows[2][:2]
    assert State.FILING.value in rows[2][2]
    assert State.FILED.value not in {row[0] for row in rows}


def test_the_cli_reference_is_what_help_prints(site: Path) -> None:
    pres = _page(site, "cli.html").pres
    for args in (["--help"], ["pull", "--help"]):
        result = CliRunner().invoke(simulate, args, terminal_width=100, prog_name="simulate")
        assert result.exit_code == 0
        assert result.output.rstrip() + "\n" in [p if p.endswith("\n") else p + "\n" for p in pres]


def test_the_schemas_are_published_with_the_site(site: Path) -> None:
    for name in ("report.schema.json", "sweep.schema.json"):
        shipped = ROOT / "simulator" / "reports" / "schemas" / name
        assert (site / "schemas" / name).read_bytes() == shipped.read_bytes()


def test_a_broken_cross_reference_fails_the_build(tmp_path: Path) -> None:
    """The strict build refuses a link to a page that is not there, and a missing anchor."""
    for target in ("no-such-page.md", "policy.md#no-such-heading"):
        copy = tmp_path / target.replace("#", "_")
        for part in ("docs", "history", "simulator/reports/schemas"):
            shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("*.sqlite*"))
        for name in ("mkdocs.yml", "CHANGELOG.md"):
            shutil.copy(ROOT / name, copy / name)
        index = copy / "docs" / "index.md"
        index.write_text(
            index.read_text(encoding="utf-8") + f"\n[gone]({target})\n", encoding="utf-8"
        )
        built = _mkdocs(copy / "mkdocs.yml", copy / "site")
        assert built.returncode != 0, target
        warnings = [line for line in built.stderr.splitlines() if line.startswith("WARNING")]
        assert len(warnings) == 1 and target.split("#")[-1] in warnings[0], built.stderr


def _anchors(markdown: str) -> set[str]:
    """The anchors MkDocs gives a page's headings (its toc's slugify)."""
    slugs = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, re.MULTILINE):
        text = re.sub(r"[`*]", "", heading).strip().lower()
        text = re.sub(r"[^\w\s-]", "", text)
        slugs.add(re.sub(r"[-\s]+", "-", text).strip("-"))
    return slugs


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250


def test_every_link_in_the_readme_resolves() -> None:
    text = README.read_text(encoding="utf-8")
    # Code blocks hold commands, not links.
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    links = LINK.findall(prose)
    assert len(links) >= 10, "the README links into the documentation"
    for link in links:
        assert not re.match(r"[a-z]+:", link), f"{link}: the README links into the repository only"
        path, _, anchor = link.partition("#")
        target = (README.parent / path).resolve()
        assert target.is_relative_to(ROOT) and target.exists(), f"{link}: no such file"
        if anchor:
            headings = _anchors(target.read_text(encoding="utf-8"))
            assert anchor in headings, f"{link}: no such heading"


def test_the_cores_order_of_checks_names_only_real_reasons() -> None:
    """The theory of operation lists the checks in order; a renamed reason fails here."""
    doc = buildbot_revert.core.__doc__ or ""
    table = doc.split("The order of checks", 1)[1].split("After the verdict", 1)[0]
    named = re.findall(r"^``([a-z-]+)``", table, re.MULTILINE)
    assert len(named) >= 15
    assert set(named) <= {r.value for r in Reason}
