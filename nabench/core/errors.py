"""User-facing errors: the CLI prints them as one readable line and exits non-zero."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none): what a
    one-line error quotes of a library's multi-line one."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class NabenchError(Exception):
    """An error caused by the user's input (recipe, data, flags), not by a bug."""

    exit_code = 2


class RecipeError(NabenchError):
    """A recipe failed validation."""


class SourceError(NabenchError):
    """A source dataset could not be loaded or is malformed."""


class ValidationFailed(NabenchError):
    """Invariants or schema checks failed on built data."""

    exit_code = 1
