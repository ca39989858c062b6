"""Which builders propose: one rule for the plugin's settings and the simulator's flags."""

from __future__ import annotations

import re

from buildbot_revert.core.selection import BuilderSelection


def test_a_builder_is_selected_by_name_and_by_every_tag():
    everything = BuilderSelection()
    assert everything.keeps("x86 Gentoo", [])
    amd64_stable = BuilderSelection(re.compile("^AMD64"), frozenset({"stable"}))
    assert amd64_stable.keeps("AMD64 Fedora", ["stable", "tier-1"])
    assert not amd64_stable.keeps("AMD64 Fedora", ["tier-1"])
    assert not amd64_stable.keeps("x86 Gentoo", ["stable"])
