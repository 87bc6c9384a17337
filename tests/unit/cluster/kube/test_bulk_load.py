"""The GC is held off while loads overlap, and is as it was once the last one ends."""

import gc
import threading

from kai.cluster.kube.bulk_load import bulk_load


def test_no_collection_while_loads_overlap_then_what_they_loaded_is_frozen():
    gc.unfreeze()
    assert gc.isenabled()
    first_done, second_started = threading.Event(), threading.Event()
    during: list[bool] = []

    def second() -> None:
        with bulk_load():
            second_started.set()
            first_done.wait(5)
            during.append(gc.isenabled())
            loaded.append([{"pod": i} for i in range(100)])

    loaded: list[object] = []
    other = threading.Thread(target=second)
    with bulk_load():
        other.start()
        second_started.wait(5)
        during.append(gc.isenabled())
    during.append(gc.isenabled())  # the other load still runs
    first_done.set()
    other.join()
    try:
        assert during == [False, False, False]
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0
        assert not any(obj is loaded[0] for obj in gc.get_objects()), "frozen: no collection walks it"
    finally:
        gc.unfreeze()


def test_a_failed_load_still_ends_and_a_process_that_had_the_gc_off_keeps_it_off():
    gc.disable()
    try:
        try:
            with bulk_load():
                raise ValueError("the list failed")
        except ValueError:
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
    try:
        with bulk_load():
            raise ValueError("the list failed")
    except ValueError:
        pass
    assert gc.isenabled()
    gc.unfreeze()
