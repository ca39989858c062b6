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


def test_a_selection_can_exclude_tags():
    # CPython builds PRs on builders tagged stable too: leave them out.
    branches = BuilderSelection(tags=frozenset({"stable"}), exclude_tags=frozenset({"PullRequest"}))
    assert branches.keeps("AMD64 Ubuntu 3.x", ["stable", "tier-1"])
    assert not branches.keeps("AMD64 Ubuntu PR", ["stable", "tier-1", "PullRequest"])
    assert not branches.keeps("AMD64 Arch 3.x", ["unstable"])
    # Excluded tags alone, no required ones.
    no_prs = BuilderSelection(exclude_tags=frozenset({"PullRequest", "unstable"}))
    assert no_prs.keeps("x86 Gentoo", [])
    assert not no_prs.keeps("AMD64 Arch 3.x", ["unstable"])


def test_a_selection_can_be_a_list_of_names():
    # CPython's github_status_builders: a list, not a pattern.
    listed = BuilderSelection(names=frozenset({"AMD64 Ubuntu 3.x", "AMD64 Windows11 3.13"}))
    assert listed.keeps("AMD64 Ubuntu 3.x", ["stable"])
    assert listed.keeps("AMD64 Windows11 3.13", [])
    # A name is matched whole, never as a pattern or a prefix.
    assert not listed.keeps("AMD64 Ubuntu 3.x PR", ["stable"])
    assert not listed.keeps("AMD64 Ubuntu", ["stable"])
    # Names, pattern and tags all hold together.
    both = BuilderSelection(
        re.compile("Windows"), names=listed.names, exclude_tags=frozenset({"x"})
    )
    assert both.keeps("AMD64 Windows11 3.13", [])
    assert not both.keeps("AMD64 Ubuntu 3.x", [])
    assert not both.keeps("AMD64 Windows11 3.13", ["x"])
    # An empty list selects nothing; no list selects every name.
    assert not BuilderSelection(names=frozenset()).keeps("AMD64 Ubuntu 3.x", [])
