"""What a simulation reports about its input: objects skipped (errors) and objects used with a warning.

Every problem names the object, the field and what is allowed (docs/architecture.md §8); the tables and ``--json`` show
the same list.
"""

from dataclasses import dataclass

from kai.core.model.errors import InvalidObject

ERROR = "error"
"""The object cannot be used: it is skipped and everything else goes on."""
WARNING = "warning"
"""The object is used (as the message says) but something in it is ignored or questionable."""


@dataclass(frozen=True, slots=True)
class Problem:
    severity: str
    kind: str
    name: str
    field: str
    problem: str
    """What is wrong with the field and what is allowed."""
    message: str
    """The whole sentence: object, field, problem."""

    @classmethod
    def of(cls, severity: str, kind: str, name: str, error: InvalidObject) -> "Problem":
        return cls(severity, kind, name, error.field, error.problem, str(error))
