"""The dependency helper: fails under CI, skips locally, returns the module when present."""

from __future__ import annotations

import pytest
from testdeps import require


def test_require_fails_under_ci_and_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="no_such_module_nabench"):
        require("no_such_module_nabench")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no_such_module_nabench"):
        require("no_such_module_nabench")
    assert require("json").dumps([1]) == "[1]"
