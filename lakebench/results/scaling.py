"""A users sweep read from a results document: each system's throughput against its Locust users, its
highest throughput, its knee (:func:`lakebench.results.stats.knee`) and its latency there.

``lakebench run --driver locust --users 1,2,4,8`` measures one case per user
count; each entry's ``load`` record holds that case's throughput, latency
percentiles, errors and CPU (docs/results.rst).  :func:`users_sweeps`
gathers the cases of one system that differ in their users alone; the
terminal table (:mod:`lakebench.table`) and the report
(:mod:`lakebench.report.scaling`, its charts) read them from here, so both
name the same knee.

>>> def entry(users, throughput):
...     return {"name": "a", "status": "ok", "children_requested": 100, "literal_length": 64,
...             "variant": f"users={users}", "load": {"users": users, "throughput_per_s": throughput}}
>>> (sweep,) = users_sweeps([entry(1, 100.0), entry(2, 190.0), entry(4, 200.0)])
>>> sweep.points, sweep.knee, sweep.best["load"]["users"]
([(1, 100.0), (2, 190.0), (4, 200.0)], 2, 4)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from lakebench import figures
from lakebench.results import stats
from lakebench.results.schema import case_children, get_path

#: How a users sweep names a case's users in its ``variant``: ``users=8``.
USERS_PREFIX = "users="


@dataclass
class UsersSweep:
    """One system's cases that differ in their users alone, by users ascending (each with a throughput)."""

    name: str
    case: str  # what else names the case ("1,000 children, parents=per-user"), "" when nothing else does
    entries: list[dict]

    @property
    def points(self) -> list[tuple[int, float]]:
        """(users, throughput) of each case."""
        return [(users(e), e["load"]["throughput_per_s"]) for e in self.entries]

    @property
    def best(self) -> dict:
        """The case of the highest throughput (the fewest users, on a tie)."""
        return max(self.entries, key=lambda e: (e["load"]["throughput_per_s"], -users(e)))

    @property
    def knee(self) -> int | None:
        """The user count after which no step to the next count adds 10% throughput per doubling, or None."""
        return stats.knee(self.points)

    @property
    def knee_entry(self) -> dict | None:
        return next((e for e in self.entries if users(e) == self.knee), None)


def users(entry: dict) -> int | None:
    """The Locust users of an entry's case: its load record's, else the entry's own."""
    value = get_path(entry, "load.users")
    return value if isinstance(value, int) else entry.get("users")


def users_text(count: int | None) -> str:
    """``1 user``, ``8 users``.

    >>> users_text(1), users_text(8)
    ('1 user', '8 users')
    """
    return f"{count} user{'' if count == 1 else 's'}"


def other_variant(variant: str) -> str:
    """A case's variant without its users: what the cases of one sweep share.

    >>> other_variant("parents=per-user,users=8"), other_variant("users=2"), other_variant("binary_size=1024")
    ('parents=per-user', '', 'binary_size=1024')
    """
    return ",".join(part for part in variant.split(",") if part and not part.startswith(USERS_PREFIX))


def users_sweeps(entries: list[dict]) -> list[UsersSweep]:
    """Each system's measured cases that differ in their users alone, where there are at least two,
    in the order the entries first name them.  A case with no throughput (nothing completed) is left out."""
    groups: dict[tuple, list[dict]] = {}
    for e in entries:
        if e.get("status") != "ok" or get_path(e, "load.throughput_per_s") is None or users(e) is None:
            continue
        key = (e["name"], case_children(e), e.get("literal_length"), other_variant(e.get("variant", "")))
        groups.setdefault(key, []).append(e)
    sizes, lengths = {key[1] for key in groups}, {key[2] for key in groups}
    sweeps = []
    for (name, children, length, rest), group in groups.items():
        if len({users(e) for e in group}) < 2:
            continue
        words = [f"{children:,} children"] if len(sizes) > 1 and children is not None else []
        words += [f"{length:,}-char literals"] if len(lengths) > 1 and length is not None else []
        words += [rest] if rest else []
        sweeps.append(UsersSweep(name, ", ".join(words), sorted(group, key=users)))
    return sweeps


def knee_words(sweep: UsersSweep, millis: Callable[[float | None], str],
               strong: Callable[[str], str] = lambda text: text) -> str:
    """Where the sweep stopped scaling, in the words the terminal and the report both use:
    ``knee at 4 users, latency p95 10.9 ms there`` (``strong`` marks its first part), or that it never
    did.  ``millis`` writes the latency as its caller writes times."""
    at_knee = sweep.knee_entry
    if at_knee is None:
        return (f"no {figures.KNEE.name}: the last step, to {users_text(sweep.points[-1][0])}, still added 10% "
                "or more per doubling")
    p95 = get_path(at_knee, "load.latency_ms.p95")
    return (strong(f"{figures.KNEE.name} at {users_text(sweep.knee)}")
            + f", {figures.LATENCY_P95.name} {millis(p95)} there")


def label(sweep: UsersSweep) -> str:
    """The system's name, with what else names its sweep's cases.

    >>> label(UsersSweep("a", "parents=per-user", [])), label(UsersSweep("a", "", []))
    ('a (parents=per-user)', 'a')
    """
    return f"{sweep.name} ({sweep.case})" if sweep.case else sweep.name
