"""Where the GitHub token may go: the configured API origin, and nowhere else.

An *origin* is a URL's scheme, host and port (RFC 6454), the unit a browser
trusts with a credential.  The token is sent only to the origin of the
configured ``api_url``: :meth:`Origin.holds` is what the transport asks of
every URL before it attaches the ``Authorization`` header, whether the URL is
a path under ``api_url``, an absolute URL GitHub handed back (a redirect's
``Location``, a pagination ``next`` link) or a caller's.

:func:`api_url_problem` is the configuration's rule: ``https`` always,
except for a loopback host (127.0.0.0/8, ``::1``, ``localhost``), where a
test's stand-in or a local proxy may speak plain ``http`` because nothing on
the wire leaves the machine.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


class OriginError(ValueError):
    """A URL that has no origin the token could be sent to (the text names no secret)."""


@dataclass(frozen=True)
class Origin:
    """A scheme, a host (lower case) and a port: whom a URL talks to."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of an absolute ``http(s)`` URL; :class:`OriginError` otherwise."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise OriginError("not a URL with a valid host and port") from None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise OriginError("not an absolute http(s) URL")
        return cls(scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme])

    def holds(self, url: str) -> bool:
        """Whether ``url`` is on this origin (same scheme, host and port)."""
        try:
            return Origin.of(url) == self
        except OriginError:
            return False

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine: ``localhost``, 127.0.0.0/8 or ``::1``."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def api_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be the API's base URL, in one sentence; None when it can."""
    try:
        origin = Origin.of(url)
    except OriginError as exc:
        return str(exc)
    if origin.scheme != "https" and not is_loopback(origin.host):
        # Plain http would carry the token readable by anyone on the path.
        return "must be https (plain http only for a loopback host such as 127.0.0.1)"
    return None
