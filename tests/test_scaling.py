"""The knee of a users sweep (lakebench.results.stats.knee) and the sweeps read from synthetic records
(lakebench.results.scaling): which cases make a sweep, its highest throughput, its knee."""
from __future__ import annotations

import pytest

from lakebench.results import stats
from lakebench.results.scaling import other_variant, users_sweeps


@pytest.mark.parametrize("points, expected", [
    # Doubling from 4 to 8 adds 5%: the knee is 4.
    ([(1, 100.0), (2, 195.0), (4, 380.0), (8, 399.0), (16, 400.0)], 4),
    # Exactly 10% more is still a gain worth the users; just under it is not.
    ([(1, 100.0), (2, 110.0), (4, 120.9)], 2),
    # Throughput falling once past the knee: the knee is where it stopped growing.
    ([(1, 100.0), (2, 180.0), (4, 150.0), (8, 120.0)], 2),
    # Still growing at the largest count: no knee.
    ([(1, 100.0), (2, 190.0), (4, 300.0), (8, 420.0)], None),
    # Counts that are not doublings: the gain is per doubling (1 -> 8: x1.2 over three doublings, x1.06 each).
    ([(1, 100.0), (8, 120.0)], 1),
    ([(1, 100.0), (3, 200.0), (9, 240.0)], None),  # 3 -> 9: x1.2 over 1.58 doublings, x1.12 each
    ([(1, 100.0), (3, 200.0), (9, 220.0)], 3),  # x1.1 over 1.58 doublings: x1.06 each
    # One point, or nothing: no knee.
    ([(4, 100.0)], None),
    ([], None),
    # A case that completed nothing has no gain to measure; the next pair decides.
    ([(1, 0.0), (2, 100.0), (4, 104.0)], 2),
    # The points may come in any order.
    ([(8, 399.0), (1, 100.0), (4, 380.0), (2, 195.0)], 4),
])
def test_knee(points, expected):
    assert stats.knee(points) == expected


def _entry(name: str, users: int, throughput: float | None, variant: str | None = None, status: str = "ok",
           children: int = 1000) -> dict:
    return {"name": name, "status": status, "children": children, "children_requested": children,
            "literal_length": 64, "users": users, "variant": variant if variant is not None else f"users={users}",
            **({"load": {"users": users, "throughput_per_s": throughput}} if status == "ok" else {})}


def test_sweeps_group_one_system_and_case_by_users():
    entries = [
        _entry("a", 1, 100.0), _entry("b", 1, 50.0),
        _entry("a", 2, 190.0), _entry("b", 2, 99.0),
        _entry("a", 4, 200.0), _entry("b", 4, 150.0, status="failed"),  # a failed case is no point
        _entry("a", 8, 198.0), _entry("b", 8, 160.0),
    ]
    a, b = users_sweeps(entries)
    assert (a.name, a.case, [u for u, _ in a.points]) == ("a", "", [1, 2, 4, 8])
    assert a.knee == 2 and a.knee_entry["users"] == 2
    assert a.best["users"] == 4 and a.best["load"]["throughput_per_s"] == 200.0
    assert (b.name, [u for u, _ in b.points], b.knee, b.best["users"]) == ("b", [1, 2, 8], None, 8)


def test_the_other_swept_options_make_separate_sweeps():
    entries = [_entry("a", users, 100.0 * users, f"parents={parents},users={users}")
               for parents in ("shared", "per-user") for users in (1, 2)]
    entries += [_entry("a", 1, 10.0, children=50), _entry("a", 2, 20.0, children=50)]
    cases = [(s.case, [u for u, _ in s.points]) for s in users_sweeps(entries)]
    assert cases == [("1,000 children, parents=shared", [1, 2]), ("1,000 children, parents=per-user", [1, 2]),
                     ("50 children", [1, 2])]


def test_one_user_count_is_no_sweep():
    assert users_sweeps([_entry("a", 4, 100.0, variant=""), _entry("b", 4, 90.0, variant="")]) == []
    assert other_variant("binary_size=1024,users=4") == "binary_size=1024"
