"""Notifications: announce proposals, filed reverts and stand-downs on webhooks.

One module per target's format (:mod:`.discord`, :mod:`.slack`,
:mod:`.zulip`, :mod:`.plain` for a plain JSON webhook), each a pure
``render(notice, mention) -> Message`` that escapes the untrusted text
(commit titles, author names, builder names) for its markup and makes sure
nothing in it can ping a channel or a person (``@everyone``, ``@here``,
``<@id>``, ``<!channel>``, Zulip's ``@**all**``); the one mention allowed is
the change's author, and only where the webhook's configuration maps the
author's GitHub login to the target's own id for them.  :mod:`.sender`
delivers them through the master's HTTP client (treq, as the GitHub
transport does), one queue per webhook, rate-limited, retried a bounded
number of times, and never in the way of filing: :meth:`Notifier.notify`
returns at once.  :mod:`.settings` reads the ``webhooks=`` option.
"""

from buildbot_revert.plugin.notify.notice import Notice, NoticeKind
from buildbot_revert.plugin.notify.sender import Notifier, Webhook
from buildbot_revert.plugin.notify.settings import WebhookSpec, parse_webhooks

__all__ = ["Notice", "NoticeKind", "Notifier", "Webhook", "WebhookSpec", "parse_webhooks"]
