"""The `openai` backend's request bounds (`_http_limits.Limits`) for Ray's HTTP stage.

Ray Data's HTTP request stage opens an `aiohttp.ClientSession` from a `session_factory`;
this one carries the connect and per-attempt deadlines (`ClientTimeout`: `total` covers the
whole body, so a dripping server is cut too) and a response class that refuses a body over
the size cap while it streams in. The factory is a plain picklable object: Ray ships it to
its workers and calls it there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BoundedSessionFactory"]


@dataclass(frozen=True)
class BoundedSessionFactory:
    connect_s: float
    attempt_s: float
    max_response_bytes: int

    def __call__(self) -> Any:
        import aiohttp

        cap = self.max_response_bytes

        class CappedResponse(aiohttp.ClientResponse):
            async def read(self) -> bytes:
                if self._body is None:
                    chunks, size = [], 0
                    async for chunk in self.content.iter_chunked(65536):
                        size += len(chunk)
                        if size > cap:
                            self.close()
                            raise aiohttp.ClientPayloadError(
                                f"response over the {cap // 2**20} MiB cap: refused"
                            )
                        chunks.append(chunk)
                    self._body = b"".join(chunks)
                return self._body

        timeout = aiohttp.ClientTimeout(
            total=self.attempt_s, connect=min(self.connect_s, self.attempt_s)
        )
        return aiohttp.ClientSession(timeout=timeout, response_class=CappedResponse)
