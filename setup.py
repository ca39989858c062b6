"""Packaging for buildbot-revert: the reporter plugin and the backtest simulator."""

import re
from pathlib import Path

from setuptools import find_packages, setup


def _version() -> str:
    """The version from ``buildbot_revert/__init__.py``, the one place it is written."""
    text = (Path(__file__).parent / "buildbot_revert" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if found is None:
        raise RuntimeError("buildbot_revert/__init__.py does not set __version__")
    return found.group(1)


setup(
    name="buildbot-revert",
    version=_version(),
    description=(
        "A Buildbot reporter that proposes revert pull requests for changes that "
        "clearly broke a builder, and a simulator that backtests the policy."
    ),
    # The README is the package's page on an index (twine check renders it).
    long_description=(Path(__file__).parent / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    # Loaded into Buildbot (GPLv2): see LICENSE.
    license="GPL-2.0-or-later",
    license_files=["LICENSE"],
    python_requires=">=3.11",
    packages=find_packages(
        include=["buildbot_revert", "buildbot_revert.*", "simulator", "simulator.*"]
    ),
    # Data beside the modules that read it, which a plain (non-editable)
    # install must ship too: the dashboard's page template, the calibration
    # figures beside the module that measures them, and the reports' schemas.
    package_data={
        "buildbot_revert.dashboard": ["templates/*.html"],
        "simulator.analysis": ["calibration.toml"],
        # The JSON Schemas of `simulate --format json` (the report, the sweep).
        "simulator.reports.schemas": ["*.json"],
        # The zstd dictionary the stored log tails are packed with.
        "simulator.history": ["log_tails.zdict"],
    },
    install_requires=[
        "click>=8.1",
        # Where the shipped history and pulled histories live per user
        # (XDG on Linux, ~/Library on macOS, %LOCALAPPDATA% on Windows).
        "platformdirs>=3",
        "sqlite-utils>=3.36",
        # The log tails of a history file, packed with a shared dictionary:
        # the shipped year's 323 MB of tails in 25 MB (docs/history-schema.md).
        "zstandard>=0.22",
    ],
    extras_require={
        # `simulate --github`: a blocking client whose own retry waits out
        # GitHub's primary and secondary rate limits (simulator/outcomes), and
        # its transport, whose exceptions simulator/outcomes/client.py names.
        # An extra: a backtest needs neither, and installing them (with
        # cryptography and PyNaCl) was a tenth of README command 1.
        "github": ["PyGithub>=2.3", "requests>=2.28"],
        # The plugin runs inside a Buildbot master; the simulator does not need one.
        "plugin": [
            "buildbot>=4.0,<5",
            # The web UI and the REST API `simulate --master` reads.
            "buildbot-www>=4.0,<5",
            "treq>=23.11",
            "Twisted>=23.10",
        ],
        # The page in the web UI (buildbot_revert.dashboard): Buildbot's glue that
        # serves WSGI apps inside the master, and the template engine whose
        # autoescape keeps untrusted titles text (Buildbot already needs it).
        "dashboard": [
            "buildbot-wsgi-dashboards>=4.0,<5",
            "Jinja2>=3.0",
        ],
        "test": [
            "PyGithub>=2.3",
            "requests>=2.28",
            "buildbot[bundle]>=4.0,<5",
            "buildbot-wsgi-dashboards>=4.0,<5",
            "Jinja2>=3.0",
            "buildbot-worker>=4.0,<5",
            "treq>=23.11",
            "Twisted>=23.10",
            "pytest>=8",
            "pytest-twisted>=1.14",
            # Two processes: the live tests mostly wait on real masters.
            "pytest-xdist>=3.5",
            "hypothesis>=6.100",
            "graphql-core>=3.2",
            # Also validates the JSON reports against their shipped schemas.
            "jsonschema>=4.21",
            "psycopg2-binary>=2.9",
            # The masters' WAMP message queue (c['mq'] type 'wamp') for the
            # tests of several masters; the router, Crossbar.io, is not a
            # dependency: it pins packages of its own (see .ci/run).
            "autobahn>=23.1",
            "ruff>=0.6",
            "mypy>=1.10",
            "import-linter>=2.0",
            # The documentation site, built with warnings as errors (docs/, mkdocs.yml).
            "mkdocs>=1.6",
            # The sdist and wheel that CI builds, checks and installs from.
            "build>=1.0",
            "twine>=5.0",
        ],
    },
    entry_points={
        "console_scripts": ["simulate=simulator.cli:run"],
        "buildbot.reporters": ["RevertReporter=buildbot_revert.plugin.reporter:RevertReporter"],
        # master.cfg: c['www']['plugins']['wsgi_dashboards'] = [util.RevertDashboard()]
        "buildbot.util": ["RevertDashboard=buildbot_revert.dashboard.app:dashboard"],
    },
)
