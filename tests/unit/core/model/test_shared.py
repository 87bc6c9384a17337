"""One object per value many parsed objects hold alike, in a table that cannot grow without bound."""

from kai.core.model.shared import SharedValues


def test_the_first_value_of_a_key_is_the_one_everyone_gets() -> None:
    table: SharedValues[tuple[str, float], dict[str, float]] = SharedValues(10)
    first = {"cpu": 1.0}
    assert table.one(("cpu", 1.0), first) is first
    assert table.one(("cpu", 1.0), {"cpu": 1.0}) is first
    assert table.find(("cpu", 1.0)) is first
    assert table.find(("cpu", 2.0)) is None


def test_a_full_table_is_emptied_and_fills_again() -> None:
    table: SharedValues[int, list[int]] = SharedValues(3)
    kept = [table.one(i, [i]) for i in range(3)]
    assert all(table.find(i) is kept[i] for i in range(3))
    newest = table.one(3, [3])  # the table held 3 keys: emptied first
    assert table.find(0) is None and table.find(3) is newest
    again = [0]
    assert table.one(0, again) is again  # what lives on keeps its value; the next of a shape is shared again


def test_a_cleared_table_keeps_nothing() -> None:
    table: SharedValues[str, str] = SharedValues(10)
    table.one("a", "first")
    table.clear()
    assert table.find("a") is None and table.one("a", "second") == "second"
