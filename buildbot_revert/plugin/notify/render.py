"""A rendered notification: the bytes to POST and their content type."""

from __future__ import annotations

from typing import NamedTuple


class Message(NamedTuple):
    body: bytes
    content_type: str
