"""The reports: the analysis' results gathered once, then rendered in every format.

``model`` gathers what a backtest or a sweep report shows (the report
model); ``text`` (JSON and terminal text), ``markdown`` and ``html`` (with
``charts`` and ``html_text``) render only that model; ``render`` picks the
renderer for a ``--format``.
"""
