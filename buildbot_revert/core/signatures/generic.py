"""The lines that say something failed without saying what.

No reader looks for these: a tail in which no reader finds an identifier is
generic whatever it holds.  :data:`GENERIC_PATTERNS` is the catalogue of the
lines known to identify nothing (``make: *** [...] Error 2``, ``program
finished with exit code 2``, a lost worker, the summaries that only count
link errors or failed tests), and the tests hold the readers to it: each of
these lines is recognised here and yields a generic signature, and none of
them matches a line that does identify a failure.
"""

from __future__ import annotations

import re

#: Lines that say something failed without saying what.
GENERIC_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"\bmake(?:\[\d+\])?: \*\*\* .*Error \d+",
        r"^\*\*\* Error code \d+",
        r"\bmake(?:\[\d+\])?: stopped in ",
        r"\bprogram finished with exit code -?\d+",
        r"\bProcess completed with exit code -?\d+",
        r"\bcommand timed out: \d+ seconds (?:without output|elapsed)",
        r"\bprocess killed by signal \d+",
        r"\b(?:remote: )?(?:slave|worker) lost\b",
        r"Connection to the other side was lost",
        r"\berror: Build failed\b",
        r"\bcollect2: error: ld returned \d+ exit status",
        r"\bclang(?:-\d+)?: error: linker command failed with exit code \d+",
        r"\bld: symbol\(s\) not found for architecture",
        r"\bfatal error LNK1120: \d+ unresolved externals",
        r"\berror MSB\d+:",
        r"^\s*Build FAILED\.",
        r"^FAILED \((?:failures|errors|skipped|expected failures)=\d+",
        r"^=+ (?:\d+ (?:failed|passed|errors?|skipped|warnings?|deselected)(?:, )?)+ in [\d.]+s",
    )
)
