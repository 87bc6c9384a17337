"""QueueInfo: a queue of the hierarchy as the cycle sees it (children derived from the parent links)."""

from kai.core.model.objects import Queue


class QueueInfo:
    __slots__ = ("children", "creation_ts", "name", "parent", "priority", "queue", "uid")

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        self.uid = queue.name
        self.name = queue.display_name or queue.name
        self.parent = queue.parent
        self.priority = queue.priority
        self.creation_ts = queue.meta.creation_ts
        self.children: list[str] = []

    @property
    def is_leaf(self) -> bool:
        return not self.children
