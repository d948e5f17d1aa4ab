"""One Ray cluster and one llama.cpp server (SmolLM2, loopback) for the engine tests that
run every model job with `--engine ray`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from testdeps import require

from nabench.llm import local_server


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """A 2-CPU Ray cluster owned by this test process (`ray.shutdown` ends only it); the
    commands join it with `--ray-address` instead of each starting its own."""
    ray: Any = require("ray", "pip install 'ray[data,llm]' for --engine ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


@pytest.fixture(scope="session")
def server() -> Iterator[str]:
    with local_server(n_threads=1) as url:
        yield url
