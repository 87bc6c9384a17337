"""Errors for objects the scheduler cannot use: they name the object, the field and what is allowed."""


class InvalidObject(ValueError):
    """A Kubernetes object has a field the scheduler cannot use; names the object, the field and what is allowed.

    ``kai`` is KAI's own message for the same problem, where KAI has one: it comes first (KAI's tests and users'
    scripts match it), kai's explanation after it in parentheses."""

    def __init__(self, obj: str, field: str, problem: str, *, kai: str = "") -> None:
        explained = f"{obj}: field {field}: {problem}"
        super().__init__(f"{kai} ({explained})" if kai else explained)
        self.obj = obj
        self.field = field
        self.problem = problem
        self.kai = kai
