"""A reason tree, depth first: each reason, then the facts it rests on."""

from collections.abc import Iterator

from kai.core.state.reasons import Reason


def walk(reasons: tuple[Reason, ...]) -> Iterator[Reason]:
    for reason in reasons:
        yield reason
        yield from walk(reason.children)
