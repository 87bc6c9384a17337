"""The one table style of kai's reports (``kai simulate``, the what-if runs, ``kai queues``, ``kai explain``):
borderless, a space between columns, so that a table fits a 100-column terminal where a boxed one wraps."""

from collections.abc import Collection

from rich import box
from rich.table import Table


def plain_table(*columns: str, title: str = "", keep: int | Collection[int] = 1) -> Table:
    """The columns ``keep`` names (its first ``keep``, or those indexes: names, numbers) are never cut or wrapped:
    the others wrap to fit the width (a word longer than the column is folded, not cut). It is at least as wide as
    its title where the width allows (a narrow table's title would wrap)."""
    kept = range(keep) if isinstance(keep, int) else keep
    table = Table(
        min_width=len(title),
        title=title or None,
        title_justify="left",
        title_style="bold",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=0,
        expand=False,
    )
    for index, column in enumerate(columns):
        table.add_column(column, no_wrap=index in kept, overflow="ellipsis" if index in kept else "fold")
    return table
