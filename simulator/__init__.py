"""The backtest simulator: replay a build history through the decision core.

``history/`` reads and writes history files (and imports them from a
Buildbot master), ``synthetic/`` generates the shipped CPython-shaped year,
``analysis/`` replays and scores, ``reports/`` renders, ``cli.py`` is the
``simulate`` command.  See docs/architecture.md.
"""
