"""Secrets never reach a written file: key-like option values and URL credentials are masked.

`redact` walks a JSON-like value (a manifest, a summary) and returns a copy where
- the value of every key whose name looks like a credential (`api_key`, `*token*`,
  `*secret*`, `password`, ...) is replaced by `MASK`, and
- every `scheme://user:password@host` URL inside a string loses its user info, and a
  key-like query parameter (`?api_key=...`) its value;
plus the set of secret strings it removed, so text written beside the manifest (the card)
can be scrubbed of the same values (`scrub`). Every JSON record nabench writes
(`run.json`, summaries, stats) passes `redact` on its way to disk (`llm.write_json_atomic`);
a backend shows its endpoint only through `mask_url`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MASK = "***"
# Key names that hold credentials (matched case-insensitively against the whole name).
SECRET_KEY = re.compile(
    r"api_?key|token|secret|passw(or)?d|passphrase|credential|authorization|^auth$|"
    r"^key$|private_?key|access_?key|cookie",
    re.IGNORECASE,
)
# Names that contain `token` but count or configure tokens (`max_tokens`, `tokenizer`).
NOT_SECRET = re.compile(r"tokens$|^tokeniz", re.IGNORECASE)
# `scheme://user[:password]@` in any string.
URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<info>[^/@\s:]*(:[^/@\s]*)?)@")
# A URL query parameter (`?api_key=...`, `&token=...`): masked when its name is key-like.
URL_PARAM = re.compile(r"(?P<lead>[?&])(?P<name>[^=&#\s]+)=(?P<value>[^&#\s]*)")


@dataclass(frozen=True)
class Redacted:
    value: Any
    secrets: frozenset[str]


def is_secret_key(name: str) -> bool:
    """Whether a mapping key names a credential (`api_key`, `HF_TOKEN`, `db-password`)."""
    norm = name.replace("-", "_")
    return bool(SECRET_KEY.search(norm)) and not NOT_SECRET.search(norm)


def _mask_urls(text: str, found: set[str]) -> str:
    def repl(match: re.Match[str]) -> str:
        user, _, password = match.group("info").partition(":")
        # `https://TOKEN@host` carries the token as the user name.
        secret = password or (user if len(user) >= 8 else "")
        if len(secret) >= 4:
            found.add(secret)
        return f"{match.group('scheme')}{MASK}@"

    def param(match: re.Match[str]) -> str:
        value = match.group("value")
        if not is_secret_key(match.group("name")) or not value:
            return match.group(0)
        if len(value) >= 4:
            found.add(value)
        return f"{match.group('lead')}{match.group('name')}={MASK}"

    return URL_PARAM.sub(param, URL_USERINFO.sub(repl, text))


def _walk(value: Any, found: set[str], by_key: bool = True) -> Any:
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if (
                by_key
                and isinstance(key, str)
                and is_secret_key(key)
                and item not in (None, "", False)
            ):
                if isinstance(item, str) and len(item) >= 4:
                    found.add(item)
                out[key] = MASK
            else:
                out[key] = _walk(item, found, by_key)
        return out
    if isinstance(value, list | tuple):
        return [_walk(v, found, by_key) for v in value]
    if isinstance(value, str):
        return _mask_urls(value, found)
    return value


def redact(value: Any, by_key: bool = True) -> Redacted:
    """A copy of `value` with credentials masked, and the secret strings that were removed.

    `by_key=False` masks only URL credentials: for records whose keys are nabench's own
    (a summary's `selected_token_confidence` is a number, not a token)."""
    found: set[str] = set()
    clean = _walk(value, found, by_key)
    return Redacted(clean, frozenset(found))


def mask_url(url: str) -> str:
    """`url` without its `user:password@` part: the form every record and message shows."""
    return _mask_urls(url, set())


def url_secrets(url: str) -> frozenset[str]:
    """The credential strings inside `url` (to scrub from error texts that quote them)."""
    found: set[str] = set()
    _mask_urls(url, found)
    return frozenset(found)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with URL credentials and every one of `secrets` replaced by `MASK`."""
    text = _mask_urls(text, set())
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
