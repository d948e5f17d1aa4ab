"""One version rule for recipes, publish tags and card changelogs (SemVer shape and precedence,
parsed by packaging). The cases are the ones the three former checks disagreed on."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from nabench.core.version import release_version, version_order
from nabench.publish.plan import PublishError, resolve_version
from nabench.schemas.recipe import SemVer
from nabench.stage.cards._release import render_changelog


@pytest.mark.parametrize(
    "text", ["1.0.0", "0.1.0", "1.2.3-rc.1", "1.2.3-alpha", "1.0.0+build.5", "2.0.0-beta.2+abc"]
)
def test_accepted_everywhere(text: str) -> None:
    assert release_version(text)
    assert TypeAdapter(SemVer).validate_python(text) == text  # recipes used to refuse +build
    assert resolve_version({}, text) == text


@pytest.mark.parametrize(
    "text", ["1.0", "1.0.0.0", "01.0.0", "1.0.0-", "1.0.0+", "v1.0.0x", "1.0.0-x.7.z", "latest"]
)
def test_refused_everywhere(text: str) -> None:
    with pytest.raises(ValueError, match="not semantic"):
        release_version(text)
    with pytest.raises(ValidationError):
        TypeAdapter(SemVer).validate_python(text)
    with pytest.raises(PublishError, match="not semantic"):
        resolve_version({}, text)


def test_precedence_is_semver() -> None:
    ordered = ["1.0.0-rc.2", "1.0.0-rc.10", "1.0.0", "1.0.1", "1.10.0"]
    assert sorted(reversed(ordered), key=version_order) == ordered
    # build metadata never orders: the two are the same release
    assert version_order("1.2.3+build.9") == version_order("1.2.3")


def test_changelog_newest_first_with_prereleases_and_build() -> None:
    text = render_changelog(
        {"1.0.0-rc.2": "a", "1.0.0-rc.10": "b", "1.0.0": "c", "0.9.0+b1": "d", "notes": "e"}
    )
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    assert headings == [
        "### v1.0.0",
        "### v1.0.0-rc.10",
        "### v1.0.0-rc.2",
        "### v0.9.0+b1",
        "### vnotes",
    ]
