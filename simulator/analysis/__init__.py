"""What a replay of a history shows: the simulator's analysis, free of any rendering.

``replay`` feeds a stored history through the decision core's tracker and
collects its verdicts; ``grace`` applies a grace period to a replay;
``sweep`` replays every combination of some settings and scores each;
``evaluation`` scores a replay against a history's labels (and tells what
each evidence guard declined); ``confirm`` estimates precision from the
history itself when it has no labels; ``blindspots`` groups what the policy
declined and lists the builders red at the end.  Their results are rendered
by :mod:`simulator.reports`.
"""
