"""Random draws that several parts of the synthetic fleet share."""

from __future__ import annotations

import math
import random


def lognormal_seconds(rng: random.Random, median_h: float, sigma: float, cap_h: float) -> float:
    """A duration in seconds: lognormal around ``median_h`` hours, at most ``cap_h`` hours."""
    return min(cap_h, median_h * math.exp(rng.gauss(0.0, sigma))) * 3600.0
