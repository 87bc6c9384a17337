"""Errors for objects the scheduler cannot use: they name the object, the field and what is allowed."""


class InvalidObject(ValueError):
    """A Kubernetes object has a field the scheduler cannot use; names the object, the field and what is allowed."""

    def __init__(self, obj: str, field: str, problem: str) -> None:
        super().__init__(f"{obj}: field {field}: {problem}")
        self.obj = obj
        self.field = field
        self.problem = problem
