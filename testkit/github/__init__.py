"""A stateful stand-in for GitHub, served over real HTTP on 127.0.0.1.

Theory of operation
-------------------
Tests (in-process with pytest-twisted, or a Buildbot master running as a
separate process) talk to this server exactly as they would talk to
``https://api.github.com``: real sockets, JSON bodies, ``Authorization:
Bearer`` tokens.  The server runs in its own thread (a stdlib
``ThreadingHTTPServer``) so it works whichever reactor the test runs.

It keeps the state a revert needs -- one repository with commits, trees,
blobs, refs, pull requests, issue comments and labels -- and it holds itself
to GitHub's published descriptions, vendored in ``descriptions/``:

* every REST response body is validated against the documented response
  schema of the operation (OpenAPI 3.0 ``nullable`` translated to JSON
  Schema), every JSON request body against the documented request schema;
* every GraphQL document is parsed and validated against ``schema.graphql``
  and executed against it, so the answer has the shape the schema says.

A violation is recorded, answered with a 500 so the client notices, and
raised again by :meth:`GitHubStandIn.check` (the fixture calls it at
teardown) so the test fails loudly even if the client swallowed the error.

Faults are queued per method and path (:meth:`GitHubStandIn.inject`): plain
5xx statuses, primary and secondary rate limits, a response delayed past the
client's timeout (the write still happens), a write whose response is lost
(connection closed after the write), and a corrupted body (to test the
validator itself).

The modules, from the bottom up: ``state`` (the repository), ``openapi``
(the REST description: operations and validation), ``shapes`` (the JSON of
each REST schema), ``rest_routes`` and ``graphql_api`` (answering), ``faults``,
``server`` (HTTP), ``standin`` (what tests use, re-exported here), and
``token_file`` (the token as a master's secret).
"""

from testkit.github.faults import SECONDARY_RATE_LIMIT_MESSAGE, Fault
from testkit.github.standin import DEFAULT_TOKEN, FastClock, GitHubStandIn, running
from testkit.github.state import Comment
from testkit.github.token_file import token_secret_config

__all__ = [
    "DEFAULT_TOKEN",
    "SECONDARY_RATE_LIMIT_MESSAGE",
    "Comment",
    "FastClock",
    "Fault",
    "GitHubStandIn",
    "running",
    "token_secret_config",
]
