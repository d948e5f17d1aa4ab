"""The card seals the manifest: README.md's front matter carries the sha256 of build.json.

build.json lists the sha256 of every other file, README.md included; the card in turn names
the digest of build.json, so editing any file, the manifest included, is detected. To break
the circle, README.md's hash in build.json is taken over the card *without* its digest line
(`unsealed`). The stage writes the seal (`seal_card`), publishing re-seals a finalized card,
and `nabench validate` checks both directions.
"""

from __future__ import annotations

import hashlib
import re

DIGEST_KEY = "nabench_build_sha256"
_FRONT = re.compile(r"\A---\n(?P<meta>.*?\n)?---\n", re.S)
_LINE = re.compile(rf"^{DIGEST_KEY}: ['\"]?(?P<sha>[0-9a-f]{{64}})['\"]?[ \t]*\n", re.M)


def _front(readme: str) -> re.Match[str] | None:
    return _FRONT.match(readme)


def unsealed(readme: str) -> str:
    """The card without its digest line (what build.json's README.md hash covers)."""
    match = _front(readme)
    if match is None or match.group("meta") is None:
        return readme
    meta = _LINE.sub("", match.group("meta"))
    return f"---\n{meta}---\n{readme[match.end() :]}" if meta else readme[match.end() :]


def card_digest(readme: str) -> str | None:
    """The build.json digest a card names, or None."""
    match = _front(readme)
    if match is None or match.group("meta") is None:
        return None
    line = _LINE.search(match.group("meta"))
    return line.group("sha") if line else None


def seal_card(readme: str, manifest: bytes) -> str:
    """The card with the sha256 of `manifest` (build.json's bytes) as its last metadata line."""
    line = f"{DIGEST_KEY}: {hashlib.sha256(manifest).hexdigest()}\n"
    text = unsealed(readme)
    match = _front(text)
    if match is None:
        return f"---\n{line}---\n{text}"
    meta = match.group("meta") or ""
    return f"---\n{meta}{line}---\n{text[match.end() :]}"


def card_sha256(readme: bytes) -> str:
    """build.json's hash of README.md: sha256 of the unsealed card."""
    return hashlib.sha256(unsealed(readme.decode("utf-8")).encode("utf-8")).hexdigest()


__all__ = ["DIGEST_KEY", "card_digest", "card_sha256", "seal_card", "unsealed"]
