"""``binaries``: N binaries (LDP NonRDFSources) PUT under one container, then read back.

Binary ``k`` of seed ``s`` is ``--binary-size`` bytes, the same for every
system and run: SHAKE-256 of ``lakebench:binary:{s}:{k}`` extended to the
size (:func:`binary_bytes`, about 500 MB/s on one core), built before the
clock starts and dropped once sent, so memory holds one binary at a time
whatever N and the size.

Timed, one operation at a time:

* ``put binary``: each ``PUT {parent}/b{k:08d}`` (``application/octet-stream``),
  the workload's primary kind;
* ``get binary``: a seeded sample of up to :data:`SAMPLE` of the binaries
  sent, read back; the SHA-256 of each body is compared, after the clock,
  with that of the bytes sent (a refused GET is counted, not raised);
* ``get parent``: the container's listing, as every workload ends.

In-process systems store no binaries: they are "not applicable".
"""
from __future__ import annotations

import hashlib
import random

from lakebench.argtypes import ByteSize, size_text
from lakebench.figures import DASH
from lakebench.results import stats
from lakebench.workloads.base import Outcome, Param, Workload, count_containment

#: The largest ``--binary-size``: one binary is held in memory while it is sent.
MAX_BINARY_SIZE = 256 << 20
BINARY_SIZE = ByteSize(1, MAX_BINARY_SIZE)
#: Binaries read back and verified (fewer when fewer were sent).
SAMPLE = 100
CONTENT_TYPE = "application/octet-stream"
PUT, GET = "put binary", "get binary"
#: Building a binary (and, for a sampled one, its digest): timed to be reported
#: as ``generate_seconds``, never part of an operation's figures.
_GENERATE = "generate binary"
MB = 1e6


def binary_bytes(seed: int, index: int, size: int) -> bytes:
    """The ``size`` bytes of binary ``index`` of ``seed``: random-looking, deterministic, fast.

    >>> binary_bytes(0, 1, 8).hex()
    '460fd03d120e4c03'
    >>> binary_bytes(0, 1, 4096) == binary_bytes(0, 1, 4096), binary_bytes(0, 2, 8) == binary_bytes(0, 1, 8)
    (True, False)
    """
    return hashlib.shake_256(f"lakebench:binary:{seed}:{index}".encode("ascii")).digest(size)


def sample_indices(seed: int, count: int, k: int = SAMPLE) -> list[int]:
    """The binaries read back: ``k`` of ``count`` (all when fewer), chosen by ``seed``, in order.

    >>> sample_indices(0, 5)
    [0, 1, 2, 3, 4]
    >>> len(sample_indices(0, 10_000)), sample_indices(0, 10_000) == sample_indices(0, 10_000)
    (100, True)
    """
    return sorted(random.Random(f"lakebench:binaries:{seed}").sample(range(count), min(k, count)))


def mb_per_s(size: int, seconds: float) -> float | None:
    """``size`` bytes over ``seconds`` in MB/s (10^6 bytes), None without time.

    >>> mb_per_s(2_000_000, 0.5), mb_per_s(10, 0.0)
    (4.0, None)
    """
    return stats.rate(size, seconds, 3, unit=MB)


def binaries_note(label: str, binaries: dict) -> str:
    """The ``binaries`` workload's figures of one entry: MB/s each way, and what was read back.

    >>> print(binaries_note("a", {"size_bytes": 1024, "count": 20, "put_mb_per_s": 0.32, "get_mb_per_s": 1.9,
    ...                           "sampled": 20, "verified": 20, "mismatched": 0}))
    a: 20 binaries of 1,024 B: PUT 0.32 MB/s, GET 1.9 MB/s; 20 of 20 read back verified, 0 mismatched
    """
    def rate(value):
        return DASH if value is None else f"{value:.3g} MB/s"

    return (f"{label}: {binaries['count']:,} binaries of {binaries['size_bytes']:,} B: "
            f"PUT {rate(binaries.get('put_mb_per_s'))}, GET {rate(binaries.get('get_mb_per_s'))}; "
            f"{binaries.get('verified', 0)} of {binaries.get('sampled', 0)} read back verified, "
            f"{binaries.get('mismatched', 0)} mismatched")


class Binaries(Workload):
    name = "binaries"
    RECORD = ("binaries", "Binaries")
    ingests = False  # no children through driver.ingest: no checkpoints
    primary = PUT
    needs = ("create_binary", "get_binary")
    PARAMETERS = {
        "binary_size": Param(
            default=64 << 10, parse=BINARY_SIZE, sweep=True, metavar="SIZE",
            help=f"bytes per binary, {BINARY_SIZE.range}, e.g. 1K, 64K, 1M, 16M (powers of 1024) or plain "
                 "bytes; comma-separated sizes sweep, one case each; --children is the number of binaries"),
    }

    def path(self, index: int) -> str:
        """Where binary ``index`` is PUT, relative to the base: a child of the parent container."""
        return f"{self.dataset.parent}/b{index:08d}"

    def run(self, system, driver) -> Outcome:
        outcome = driver.outcome
        size, count, seed = self.params["binary_size"], self.dataset.children, self.dataset.seed
        sampled = set(sample_indices(seed, count))
        expected: dict[int, bytes] = {}  # sampled index -> SHA-256 of the bytes sent
        budget = driver.budget_seconds
        put_seconds = 0.0

        def build(index: int) -> bytes:
            data = binary_bytes(seed, index, size)
            if index in sampled:
                expected[index] = hashlib.sha256(data).digest()
            return data

        driver.phase("ingest")
        bar = driver.progress(count, f"put {size_text(size)} binaries", "binary")
        for index in range(count):
            data = driver.time(_GENERATE, build, index)
            driver.time(PUT, system.create_binary, self.path(index), data, CONTENT_TYPE)
            del data  # one binary in memory at a time
            put_seconds += outcome.last(PUT)
            if bar is not None:
                bar.update(1)
            if budget is not None and put_seconds >= budget and index + 1 < count:
                outcome.budget_exhausted = True
                break
        if bar is not None:
            bar.close()
        generated = outcome.times.pop(_GENERATE, [])
        outcome.generation = {"generation": "inline", "generate_seconds": round(sum(generated), 6)}
        outcome.ingest_wall += put_seconds + sum(generated)  # the loop is these two and nothing else

        driver.phase("verify")
        verified = mismatched = received = 0
        for index in sorted(expected):  # the sampled binaries that were sent (a budget may stop short)
            body = driver.attempt(GET, system.get_binary, self.path(index))
            if body is None:
                continue  # refused: counted under "get binary" errors, neither verified nor mismatched
            received += len(body)
            if hashlib.sha256(body).digest() == expected[index]:
                verified += 1
            else:
                mismatched += 1
            del body
        outcome.details = {"sampled": len(expected), "verified": verified, "mismatched": mismatched,
                           "received_bytes": received}
        driver.read_parent(system)
        return outcome

    @classmethod
    def notes(cls, entries: list[dict], label) -> list[str]:
        return [binaries_note(label(e), e["binaries"]) for e in entries if e.get("binaries")]

    def record(self, outcome: Outcome, system) -> dict:
        size = self.params["binary_size"]
        puts, put_seconds = outcome.count(PUT), outcome.total_seconds(PUT)
        details = outcome.details
        return {
            # The container's children are the binaries: the table's running time and
            # children are theirs (the seed's graphs were not sent).
            "children": puts,
            "ingest_seconds": round(put_seconds, 6),
            "binaries": {
                "size_bytes": size,
                "count": puts,
                "put_mb_per_s": mb_per_s(puts * size, put_seconds),
                "get_mb_per_s": mb_per_s(details["received_bytes"], outcome.total_seconds(GET)),
                "sampled": details["sampled"],
                "verified": details["verified"],
                "mismatched": details["mismatched"],
            },
            # The sample read back is sent as much as the binaries: held "verified" below it is data lost.
            "sent": {"binaries": puts, "bytes": puts * size, "verified": details["sampled"]},
            "held": {"binaries": count_containment(outcome.retrieval), "verified": details["verified"]},
        }
