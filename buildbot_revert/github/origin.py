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
the wire leaves the machine (:func:`plain_http_problem`, which the webhooks'
URLs follow too); and no ``user:password@`` (:func:`has_userinfo`): the token
is given with ``token=``, and a URL's userinfo would be a second credential
that messages echoing the URL would leak.
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


def has_userinfo(url: str) -> bool:
    """Whether ``url``'s authority holds a ``user@`` or ``user:password@`` part.

    Asked before anything else parses the URL, so that no later message
    (an invalid port, plain http) can echo a URL holding a password.
    """
    try:
        return "@" in urlsplit(url).netloc
    except ValueError:
        # urlsplit refuses a malformed [IPv6] authority; look at it by hand.
        return "@" in url.partition("://")[2].split("/", 1)[0]


def plain_http_problem(origin: Origin) -> str | None:
    """Why ``origin`` may not carry a credential, in one clause; None when it may."""
    if origin.scheme != "https" and not is_loopback(origin.host):
        # Plain http would carry the credential readable by anyone on the path.
        return "must be https (plain http only for a loopback host such as 127.0.0.1)"
    return None


def api_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be the API's base URL, in one sentence; None when it can.

    The sentence never holds the URL's userinfo: a caller may echo ``url``
    itself only when :func:`has_userinfo` is false.
    """
    if has_userinfo(url):
        return "must not hold a user name or password before its host; give the token with token="
    try:
        origin = Origin.of(url)
    except OriginError as exc:
        return str(exc)
    return plain_http_problem(origin)
