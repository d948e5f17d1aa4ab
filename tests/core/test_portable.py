"""The one rule for a location: a local folder, or a Hub id `ORG/NAME`."""

from __future__ import annotations

from pathlib import Path

import pytest

from nabench.core.portable import hub_miss_note


@pytest.mark.parametrize(
    ("value", "noted"),
    [("build/nope", True), ("other/nope", False), ("build/a/b", False), ("build", False)],
)
def test_a_hub_miss_names_the_local_folder_only_beside_one(
    value: str, noted: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only `ORG/NAME` whose ORG is a folder here gets the note: an id read from the Hub
    that may have been a mistyped path."""
    (tmp_path / "build").mkdir()
    monkeypatch.chdir(tmp_path)
    note = hub_miss_note(value)
    assert bool(note) is noted
    if noted:
        assert note == f" (read as a Hub id: there is no folder {value!r} here either)"
