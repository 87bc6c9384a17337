"""The cyclic GC held off while a process loads the cluster in bulk, and what it loaded frozen out of it after.

An informer's first list and a component's state built from it (``KubeCluster.subscribe``'s replay) create most of
what the process will hold for its life (140,000 pods: some 20 million objects). With the GC on, every full
collection meanwhile walks all that was loaded so far again, and the full collections come as the heap grows by a
quarter: at that size the GC was ~40% of the CPU of a scheduler's start (docs/architecture.md §7). Nothing loaded
holds a reference cycle (JSON has none; the model's are few and live as long), so nothing is lost by not collecting;
at the end ``gc.freeze`` moves what was loaded out of later collections' way. Garbage with cycles that other threads
made meanwhile is frozen with it: a bounded cost, once per bulk load.

Loads overlap (each kind's informer lists on its own, components subscribe from their own threads), so collections
are held off until the last one ends.
"""

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_loading = 0
_was_enabled = True


@contextmanager
def bulk_load() -> Iterator[None]:
    """No automatic collection while the body runs (nor while another bulk load does); then a freeze."""
    global _loading, _was_enabled
    with _lock:
        if _loading == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _loading += 1
    try:
        yield
    finally:
        with _lock:
            _loading -= 1
            if _loading == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()
