"""Before a Hub push: is there a token, is the Hub reachable, whose namespace is it.

Each failure is one line naming what is missing and how to fix it, before any build output
is sent (and, for `build --push`, before the build starts). The token itself is never read
into a message: `huggingface_hub` finds it (`HF_TOKEN` or the `hf auth login` file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nabench.core.console import say
from nabench.publish.plan import PublishError
from nabench.schemas.manifest import Manifest


@dataclass(frozen=True)
class HubIdentity:
    """The token owner and the organisations it may write to."""

    name: str
    orgs: tuple[str, ...] = ()

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (self.name, *self.orgs)


def hub_error(exc: BaseException, endpoint: str, doing: str) -> PublishError:
    """One line for a failed Hub call: an HTTP status, or a network failure, and the fix."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(exc, OfflineModeIsEnabled):
        return PublishError(offline_message())
    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if status == 401:
            return PublishError(
                f"{endpoint} rejected the Hugging Face token (HTTP 401) while {doing}: set a "
                "valid HF_TOKEN or run `hf auth login`"
            )
        if status == 403:
            return PublishError(
                f"{endpoint} refused {doing} (HTTP 403): the token needs write access to that "
                "namespace (pass --repo-id YOUR_NAME/NAME)"
            )
        return PublishError(
            f"{endpoint} answered HTTP {status} while {doing}; nothing was tagged: retry later "
            "(or check HF_ENDPOINT)"
        )
    return PublishError(
        f"cannot reach the Hub at {endpoint} while {doing} ({type(exc).__name__}): check the "
        "network or HF_ENDPOINT, or publish later with `nabench publish DIR`"
    )


def offline_message() -> str:
    return (
        "HF_HUB_OFFLINE=1 is set, so the Hub cannot be reached: unset it to push, or build "
        "without --push and publish later with `nabench publish DIR`"
    )


def hub_identity(api: Any) -> HubIdentity:
    """Who the token belongs to; PublishError (one line) when offline, tokenless or unreachable."""
    import httpx2
    from huggingface_hub import constants, get_token
    from huggingface_hub.errors import HfHubHTTPError

    if constants.is_offline_mode():
        raise PublishError(offline_message())
    if get_token() is None:
        raise PublishError(
            "no Hugging Face token for --push: set HF_TOKEN or run `hf auth login` "
            "(a token with write access)"
        )
    endpoint = str(getattr(api, "endpoint", constants.ENDPOINT))
    try:
        info: Mapping[str, Any] = api.whoami()
    except (HfHubHTTPError, httpx2.TransportError, OSError) as exc:
        raise hub_error(exc, endpoint, "checking the token (whoami)") from None
    orgs = tuple(str(o.get("name")) for o in info.get("orgs") or [] if o.get("name"))
    return HubIdentity(str(info.get("name")), orgs)


def resolve_repo_id(explicit: str | None, manifest: Manifest, identity: HubIdentity) -> str:
    """--repo-id, else the recipe's `publish.repo_id` if the token may write there, else
    `<token owner>/<recipe name>`: never an organisation the user does not belong to."""
    if explicit:
        return explicit
    wanted = manifest.repo_id or ""
    if wanted and wanted.split("/", 1)[0] in identity.namespaces:
        return wanted
    repo_id = f"{identity.name}/{manifest.recipe_name or 'nabench-build'}"
    if wanted:
        say(
            f"the recipe's publish.repo_id {wanted} is not in a namespace of {identity.name}; "
            f"publishing to {repo_id} (pass --repo-id to choose)"
        )
    else:
        say(f"publishing to {repo_id}, the token owner's namespace (pass --repo-id to choose)")
    return repo_id
