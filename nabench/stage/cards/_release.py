"""Release-dependent parts of a card: metadata merge, loading snippet, changelog.

A card carries two marked sections that depend on where and as which version it is
published. `finalize_card` rewrites them (idempotently) at build time from the previous
build in the output folder and again at publish time from the target's current card, so a
release's card always names its own tag and carries the changelog of every earlier release.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from packaging.version import Version

from nabench.core.card_seal import DIGEST_KEY
from nabench.core.version import version_order
from nabench.schemas.manifest import Manifest
from nabench.stage.cards.front_matter import split_front_matter, with_front_matter

LOADING = ("<!-- nabench:loading:start -->", "<!-- nabench:loading:end -->")
CHANGELOG = ("<!-- nabench:changelog:start -->", "<!-- nabench:changelog:end -->")
_ENTRY = re.compile(r"^### v(\S+)\s*$", re.M)


def merge_metadata(
    previous: Mapping[str, Any], new: Mapping[str, Any], previous_build: Manifest | None = None
) -> dict[str, Any]:
    """distilabel-style: the previous card's hand-added metadata is kept, nabench's replaced.

    Every key a kind always writes is the new card's. What a build writes only sometimes is
    dropped where `previous_build` (the manifest the previous card was built with) shows
    nabench wrote it: selfknow's `license` (its recipe's `publish.license`) and, among the
    tags, the source's name. Any other key or tag of the previous card (`paperswithcode_id`,
    a license or tag a maintainer set) was added by hand and is kept, tags after the new
    card's own; without `previous_build`, nothing of the previous card's is taken for nabench's.
    """
    ours_keys, ours_tags = {DIGEST_KEY}, set()
    if previous_build is not None:
        if (previous_build.recipe.get("publish") or {}).get("license"):
            ours_keys.add("license")
        if previous_build.source is not None:
            ours_tags.add(previous_build.source.dataset)
    merged: dict[str, Any] = {k: v for k, v in previous.items() if k not in ours_keys}
    merged.update(new)
    old = previous.get("tags")
    hand = (
        [t for t in old if isinstance(t, str) and t not in ours_tags]
        if isinstance(old, list)
        else []
    )
    if hand:
        merged["tags"] = list(dict.fromkeys([*(merged.get("tags") or []), *hand]))
    return merged


def _section(body: str, markers: tuple[str, str]) -> tuple[int, int] | None:
    start = body.find(markers[0])
    end = body.find(markers[1], start + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        return None
    return start + len(markers[0]), end


def parse_changelog(readme: str | None) -> dict[str, str]:
    """{version: entry markdown (without its heading)} of a card's changelog section."""
    if not readme:
        return {}
    span = _section(readme, CHANGELOG)
    if span is None:
        return {}
    text = readme[span[0] : span[1]]
    heads = list(_ENTRY.finditer(text))
    out: dict[str, str] = {}
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        out[head.group(1)] = text[head.end() : end].strip("\n")
    return out


def changelog_entry(
    version: str, manifest: Manifest, previous: Manifest | None, *, first: bool = True
) -> str:
    """What this release changes relative to the previous release's manifest. Without one,
    a `first` release says so; a later one gives its own counts, compared with nothing."""
    lines = [
        f"- Built with nabench {manifest.nabench_version} from recipe "
        f"`{manifest.recipe_name}` v{manifest.recipe_version} (seed {manifest.seed})."
    ]
    if previous is None:
        if first:
            lines.append("- First release.")
            return "\n".join(lines)
        for cfg, splits in manifest.counts.items():
            lines += [f"- `{cfg}/{split}`: {n} rows." for split, n in splits.items()]
        lines.append(
            "- Changes not compared with the previous release: its build.json is not at hand."
        )
        return "\n".join(lines)
    old, new = previous.counts, manifest.counts
    added = [c for c in new if c not in old]
    removed = [c for c in old if c not in new]
    if added:
        lines.append("- Configs added: " + ", ".join(f"`{c}`" for c in added) + ".")
    if removed:
        lines.append("- Configs removed: " + ", ".join(f"`{c}`" for c in removed) + ".")
    for cfg in new:
        if cfg not in old:
            continue
        for split, n in new[cfg].items():
            before = old[cfg].get(split)
            if before != n:
                lines.append(
                    f"- `{cfg}/{split}`: {before if before is not None else 0} → {n} rows."
                )
    changed = sorted(
        p
        for p, h in manifest.files.items()
        if p.endswith(".parquet") and previous.files.get(p) not in (None, h)
    )
    if changed:
        lines.append("- Data files changed: " + ", ".join(f"`{p}`" for p in changed) + ".")
    if (previous.seed, previous.recipe_version) != (manifest.seed, manifest.recipe_version):
        lines.append(
            f"- Previous release: recipe v{previous.recipe_version}, seed {previous.seed}."
        )
    if len(lines) == 1:
        lines.append("- No change to the data.")
    return "\n".join(lines)


def _order(version: str) -> tuple[int, Version]:
    """Newest first by SemVer precedence; an entry whose heading is no version sorts last."""
    try:
        return (1, version_order(version))
    except ValueError:
        return (0, Version("0"))


def render_changelog(entries: Mapping[str, str]) -> str:
    ordered = sorted(entries.items(), key=lambda kv: _order(kv[0]), reverse=True)
    return "\n\n".join(f"### v{v}\n\n{text}" for v, text in ordered)


def loading_snippet(repo_id: str, version: str, config: str, split: str) -> str:
    return (
        "```python\n"
        "from datasets import load_dataset\n\n"
        f'ds = load_dataset("{repo_id}", "{config}", split="{split}", revision="v{version}")\n'
        "```"
    )


def _replace(body: str, markers: tuple[str, str], content: str) -> str:
    span = _section(body, markers)
    block = f"\n{content}\n"
    if span is None:
        return f"{body.rstrip()}\n\n{markers[0]}{block}{markers[1]}\n"
    return body[: span[0]] + block + body[span[1] :]


def finalize_card(
    readme: str,
    *,
    version: str,
    repo_id: str,
    manifest: Manifest,
    previous_readme: str | None = None,
    previous_manifest: Manifest | None = None,
) -> str:
    """The card as published for `version` at `repo_id` on top of the previous release."""
    metadata, body = split_front_matter(readme)
    return finalize_parts(
        metadata,
        body,
        version=version,
        repo_id=repo_id,
        manifest=manifest,
        previous_readme=previous_readme,
        previous_manifest=previous_manifest,
    )


def finalize_parts(
    metadata: Mapping[str, Any],
    body: str,
    *,
    version: str,
    repo_id: str,
    manifest: Manifest,
    previous_readme: str | None = None,
    previous_manifest: Manifest | None = None,
    previous_build: Manifest | None = None,
) -> str:
    """`finalize_card` for a card still in parts (metadata, body): no YAML round trip.
    `previous_manifest` is the release the changelog compares with; `previous_build` the
    manifest the previous card was built with, where that is not it (a rebuild of this
    version in `out`)."""
    metadata = dict(metadata)
    previous_build = previous_build or previous_manifest
    if previous_readme:
        previous_meta, _ = split_front_matter(previous_readme, "the target's previous card")
        metadata = merge_metadata(previous_meta, metadata, previous_build)
    counts = manifest.counts
    config = next((c for c in counts if c.startswith("na_keyed")), next(iter(counts), "default"))
    split = next(iter(counts.get(config, {"test": 0})), "test")
    body = _replace(body, LOADING, loading_snippet(repo_id, version, config, split))

    entries = parse_changelog(body)
    if version != manifest.recipe_version:
        # the build wrote its own entry under its recipe version: released as another
        # version, that entry names a release that does not exist ("First release.")
        entries.pop(manifest.recipe_version, None)
    for old_version, text in parse_changelog(previous_readme).items():
        if old_version != version:  # the target's history, not this build's idea of it
            entries[old_version] = text
        else:
            entries.setdefault(old_version, text)
    # This version's entry is this build's: written against the previous card's release (its
    # manifest: a build of another version in `out`, the target's build.json) where that is
    # known, from this build alone where it is not. A previous card's entry for it is never
    # kept: it describes the build this one replaces. Only this card's own (written by the
    # build when its baseline was at hand) stands when there is no previous card at all.
    # A rebuild of this version with the same facts keeps its entry (and the comparison in it).
    keep = previous_build is not None and _same_facts(previous_build, manifest)
    if version not in entries or (not keep and (previous_manifest is not None or previous_readme)):
        first = all(v == version for v in entries)
        entries[version] = changelog_entry(version, manifest, previous_manifest, first=first)
    body = _replace(body, CHANGELOG, render_changelog(entries))
    return with_front_matter(metadata, body)


def _same_facts(previous: Manifest, manifest: Manifest) -> bool:
    """Whether `previous` is a build of the same version whose changelog entry says what one
    of `manifest` would: same nabench and recipe version, seed and counts."""
    keys = ("nabench_version", "recipe_version", "seed", "counts")
    return all(getattr(previous, k) == getattr(manifest, k) for k in keys)
