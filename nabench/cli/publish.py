"""`nabench publish DIR`: stage -> plan -> push, to the Hub or to a local git repository."""

from __future__ import annotations

from pathlib import Path

import click
from huggingface_hub import HfApi

from nabench.pipelines.rebuild import REBUILDABLE, compare_with_rebuild, local_source
from nabench.publish.git import plan_for_git, publish_to_git
from nabench.publish.hub import push
from nabench.publish.plan import (
    PublishError,
    PublishPlan,
    RemoteState,
    check_publishable,
    make_plan,
    parse_target,
    read_manifest,
)
from nabench.publish.preflight import hub_identity, resolve_repo_id
from nabench.schemas.manifest import Manifest


def check_push_target(to: str | None) -> None:
    """`build --push`: fail before building when the Hub push could not happen."""
    kind, _ = parse_target(to) if to else ("hub", "")
    if kind == "hub":
        hub_identity(HfApi())


def publish_build(
    out_dir: Path,
    repo_id: str | None,
    version: str | None = None,
    private: bool = False,
    dry_run: bool = False,
    to: str | None = None,
    compare: bool = True,
    source: str | None = None,
) -> PublishPlan:
    """Publish a staged build folder (what `nabench build ... --push` calls after building).

    `to` is None (the Hub) or `git:PATH`. With `dry_run`, prints the plan and returns it:
    nothing is written and, for the Hub, no network call is made. The Hub repository is
    --repo-id, else the recipe's if the token may write there, else the token owner's.
    """
    out_dir = Path(out_dir)
    manifest = read_manifest(out_dir)
    if compare and not dry_run:
        check_against_source(out_dir, manifest, source)
    kind, target = parse_target(to) if to else ("hub", "")
    if kind == "git":
        repo_id = repo_id or _recipe_repo_id(manifest)
        if dry_run:
            plan = plan_for_git(out_dir, Path(target), repo_id, version=version)
            click.echo(plan.render())
            return plan
        result = publish_to_git(out_dir, Path(target), repo_id, version=version)
        click.echo(result.plan.render())
        click.echo(f"committed {result.commit} on {target}, tagged {result.tag}")
        return result.plan
    if dry_run:
        name = manifest.recipe_name or out_dir.name
        repo_id = repo_id or _recipe_repo_id(manifest, f"YOUR-NAMESPACE/{name}")
        plan = make_plan(out_dir, repo_id, version=version, remote=RemoteState(known=False))
        click.echo(plan.render())
        return plan
    api = HfApi()
    repo_id = resolve_repo_id(repo_id, manifest, hub_identity(api))
    pushed = push(out_dir, repo_id, version=version, private=private, api=api)
    click.echo(pushed.plan.render())
    click.echo(f"committed {pushed.commit} to {repo_id}, tagged {pushed.tag}")
    return pushed.plan


def check_against_source(out_dir: Path, manifest: Manifest, given: str | None = None) -> None:
    """Compare the build with a rebuild from `given` (`publish --source`), else from its
    recorded source when that is a path on this machine (a forgery with recomputed hashes
    fails here); say so when there is none. A build records a local source as
    `local:<name>` (no path of the building machine is published), so `--source` names it."""
    check_publishable(out_dir, manifest)  # a build that fails validation is refused as such
    source = given or local_source(manifest)
    location = manifest.location
    if source is None or manifest.kind not in REBUILDABLE:
        why = "needs its models" if source is not None else f"source {location!r} is not here"
        click.echo(
            f"note: {out_dir} was not compared with a rebuild ({why}); "
            f"`nabench publish {out_dir} --source PATH` compares it",
            err=True,
        )
        return
    differences = compare_with_rebuild(out_dir, str(source))
    if differences:
        raise PublishError(
            f"{out_dir}: differs from a rebuild from {source} ({len(differences)} "
            f"difference(s), first: {differences[0]}); nothing was published"
        )
    click.echo(f"compared every row with a rebuild from {source}: identical")


def _recipe_repo_id(manifest: Manifest, default: str | None = None) -> str:
    repo_id = manifest.repo_id or default
    if not repo_id:
        raise PublishError("no repository: the recipe has no publish.repo_id; pass --repo-id")
    return repo_id


@click.command("publish")
@click.argument("directory", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--repo-id",
    help="ORG/NAME of the dataset repository [the recipe's publish.repo_id if the token may "
    "write there, else TOKEN_OWNER/<recipe>].",
)
@click.option("--version", help="Release version X.Y.Z (tag vX.Y.Z) [recipe version].")
@click.option("--private", is_flag=True, help="Create the Hub repository as private.")
@click.option("--dry-run", is_flag=True, help="Print the plan; write nothing, no network call.")
@click.option("--to", "to", metavar="git:PATH", help="Publish to a local git repository instead.")
@click.option(
    "--source",
    metavar="LOCATION",
    help="The build's source (path or Hub id): every row is compared with a rebuild from it "
    "before anything is published [the recorded source, when it is a path here].",
)
def publish(
    directory: Path,
    repo_id: str | None,
    version: str | None,
    private: bool,
    dry_run: bool,
    to: str | None,
    source: str | None,
) -> None:
    """Publish a built folder as a tagged release (the Hub, or --to git:PATH)."""
    publish_build(directory, repo_id, version, private, dry_run, to, source=source)
