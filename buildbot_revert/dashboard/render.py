"""The dashboard's page as HTML (Jinja2, autoescaped) and as JSON.

Every value reaches the HTML through Jinja2's autoescape, so a commit title
like ``<script>...`` is text, never markup; the only values written
unescaped are the template's own.  Before that, every value printed loses
its control and bidi characters (:func:`page_text`, the environment's
``finalize``), so a title cannot show in another order than it is read.
Links go through :func:`href`, which lets only ``http``/``https``
addresses through (a ``javascript:`` URL from a hostile record becomes no
link).  The page holds no script: it works with
JavaScript off, and inside Buildbot's web UI, which inserts it into the
page as HTML (where scripts would not run anyway).
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from buildbot_revert.core.untrusted import for_page
from buildbot_revert.dashboard.model import BLIND_SPOT_DAYS, METRIC_WEEKS, Page


def page_text(value: Any) -> Any:
    """A value the template prints, its text without control or bidi characters.

    Markup (a macro's output, already escaped and already filtered) stays
    Markup, so that autoescape does not escape it twice.
    """
    if isinstance(value, Markup):
        return Markup(for_page(str(value)))
    if isinstance(value, str):
        return for_page(value)
    return value


_ENV = Environment(
    finalize=page_text,
    loader=PackageLoader("buildbot_revert.dashboard", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def href(url: str | None) -> str:
    """``url`` if it is an http(s) address, else an empty link (no ``javascript:``)."""
    if not url:
        return ""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return ""
    return url if scheme in ("http", "https") else ""


def when(ts: float | None) -> str:
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def duration(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def ago(ts: float, now: float) -> str:
    return f"{duration(now - ts)} ago" if now >= ts else f"in {duration(ts - now)}"


def until(ts: float, now: float) -> str:
    return f"in {duration(ts - now)}" if ts > now else f"passed {duration(now - ts)} ago"


def short(revision: str | None) -> str:
    return (revision or "")[:12]


_ENV.filters.update(href=href, when=when, duration=duration, ago=ago, until=until, short=short)
_TEMPLATE = _ENV.get_template("dashboard.html")


def render_html(page: Page) -> str:
    fields = {f: getattr(page, f) for f in page.__dataclass_fields__}
    return _TEMPLATE.render(**fields, days=BLIND_SPOT_DAYS, metric_weeks=METRIC_WEEKS)


def render_json(page: Page) -> str:
    return json.dumps(page.as_json(), indent=1, sort_keys=False)
