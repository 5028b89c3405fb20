"""The ``mixed`` workload's Locust users: weighted creates, PATCHes and GETs for a while.

After the initial ingest (:func:`lakebench.locust.driver.ingest_with_locust`)
the children ``0..N-1`` exist; the users of :func:`run_mixed` then pick a
task by its weight, over and over:

* ``create``: PUT child ``N``, ``N+1``, ... (one dispenser, so each index is
  sent once whatever the users: :class:`~lakebench.locust.dispensing.IndexDispenser`);
* ``patch``: a SPARQL Update PATCH of a created child that no other user is
  patching, replacing the first literal it holds by a new one; the value it
  holds is tracked (:class:`MixedState`), so the check afterwards knows what
  each patched child must hold;
* ``get``: GET a created child;
* ``parent``: GET the parent (its whole representation).

Every operation first takes a ticket (:meth:`MixedState.take`): with an
operation count exactly that many run; with a duration none starts after it,
and the ones under way finish before the users stop, so nothing the server
was sent goes uncounted.  Locust's request events are the clock: each
request's ``response_time``, by its name (:data:`KINDS`).

Nothing here imports Locust at module level (see :mod:`lakebench.locust`).
"""
from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass, field

from lakebench.locust.dispensing import IndexDispenser
from lakebench.locust.ldp_requests import CREATED, PUT_HEADERS, TURTLE
from lakebench.dataset import MAX_CHILDREN, RECENT_CHILDREN, DataSet

#: The tasks, in the order ``--weights`` names them, and the operation kind each is filed under.
TASKS = {"create": "create child", "patch": "patch child", "get": "get child", "parent": "get parent (mixed)"}
#: Locust request name of each task (its statistics, CSV, HTML report) -> operation kind.
KINDS = {"PUT child (mixed)": "create child", "PATCH child": "patch child", "GET child (mixed)": "get child",
         "GET parent (mixed)": "get parent (mixed)"}
_NAME = {kind: name for name, kind in KINDS.items()}
GET_HEADERS = {"Accept": TURTLE, "Accept-Encoding": "identity"}
PATCH_HEADERS = {"Content-Type": "application/sparql-update", "Accept-Encoding": "identity"}


def parse_weights(text: str) -> dict[str, int]:
    """``"create=4,patch=2,get=3,parent=1"`` -> the weight of each task; a task not named weighs 0.

    >>> parse_weights("create=4, get=1")
    {'create': 4, 'patch': 0, 'get': 1, 'parent': 0}
    >>> parse_weights("create=0")
    Traceback (most recent call last):
    ValueError: no task has a weight above 0
    """
    weights = dict.fromkeys(TASKS, 0)
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in TASKS:
            raise ValueError(f"expected TASK=WEIGHT with TASK one of {', '.join(TASKS)}, got {item!r}")
        try:
            weight = int(value)
        except ValueError:
            raise ValueError(f"the weight of {name} must be a whole number from 0 to 1000, got {value.strip()!r}") from None
        if not 0 <= weight <= 1000:
            raise ValueError(f"the weight of {name} must be from 0 to 1000, got {weight}")
        weights[name] = weight
    if not any(weights.values()):
        raise ValueError("no task has a weight above 0")
    return weights


def first_literal(child) -> tuple[str, str]:
    """``(predicate IRI, value)`` of the first literal ``child`` holds: the one a PATCH replaces.

    >>> p, v = first_literal(DataSet(children=2).child(1))
    >>> p.endswith("lit#p0"), v == DataSet(children=2).child(1).literal_values[0]
    (True, True)
    """
    return next((p, o) for p, o, is_iri in child.triples if not is_iri)


@dataclass
class MixedState:
    """What the users share in this process: tickets, created children, patched values, times.

    One process, gevent's cooperative scheduling: no lock is needed between
    a check and its update (no request is sent in between).

    >>> s = MixedState(DataSet(children=3), "http://x/", existing=3, operations=2)
    >>> s.take(), s.take(), s.take(), s.done.is_set() if s.done else None
    (True, True, False, None)
    """

    dataset: DataSet
    base_url: str
    existing: int = 0  # children 0..existing-1 are there before the users start
    operations: int = 0  # 0: until stop()
    created: list[int] = field(default_factory=list)  # children that exist (PUT acknowledged), in order
    values: dict[int, tuple[str, str]] = field(default_factory=dict)  # child -> (predicate, value it holds now)
    patches: dict[int, int] = field(default_factory=dict)  # child -> PATCHes acknowledged
    busy: set = field(default_factory=set)  # children a PATCH is under way on
    times: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    #: One record per request as the load test counts it (``ok``, ``seconds``, ``start``, ``end``,
    #: ``kind``, ``error``): :func:`lakebench.locust.record.load_record` of the mixed phase.
    records: list[dict] = field(default_factory=list)
    first_error: str | None = None
    started: int = 0
    in_flight: int = 0
    stopping: bool = False
    done: object = None  # a gevent Event once run_mixed starts: every operation has finished
    users: int = 1
    wall_seconds: float = 0.0  # from the users' start to the end of the last operation

    def __post_init__(self) -> None:
        self.created = list(range(self.existing))
        # New children follow the data set's: graph k is the same whatever the count, so the data
        # set is grown to the largest, and indices are dispensed from its end on, once each.
        self.grown = dataclasses.replace(self.dataset, children=MAX_CHILDREN)
        self.dispenser = IndexDispenser(MAX_CHILDREN, start=self.dataset.children)

    # -- tickets: how many operations run ---------------------------------
    def take(self) -> bool:
        """Whether another operation may start (it must then call :meth:`release`)."""
        if self.stopping or (self.operations and self.started >= self.operations):
            return False
        self.started += 1
        self.in_flight += 1
        return True

    def release(self) -> None:
        self.in_flight -= 1
        if self.operations and self.started >= self.operations:
            self.stopping = True
        if self.stopping and self.in_flight == 0 and self.done is not None:
            self.done.set()

    def stop(self) -> None:
        """Start no more operations; :attr:`done` is set once those under way finish."""
        self.stopping = True
        if self.in_flight == 0 and self.done is not None:
            self.done.set()

    # -- Locust's request events: the clock ---------------------------------
    def on_request(self, name, response_time, exception, start_time=None, **_kw) -> None:
        kind = KINDS.get(name)
        if kind is None:
            return
        seconds = response_time / 1000.0
        start = start_time if start_time is not None else time.time() - seconds  # the event fires at the end
        record = {"kind": kind, "ok": exception is None, "seconds": seconds, "start": start, "end": start + seconds}
        if exception is None:
            self.times.setdefault(kind, []).append(seconds)
        else:
            record["error"] = str(exception)
            self.errors[kind] = self.errors.get(kind, 0) + 1
            if self.first_error is None:
                self.first_error = f"{kind}: {exception}"
        self.records.append(record)

    def url(self, index: int) -> str:
        return f"{self.base_url}{self.dataset.parent}/c{index:08d}"


def _send(user, method: str, url: str, kind: str, ok: tuple[int, ...], **kwargs) -> bool:
    """One timed request, a failure unless its status is in ``ok``; whether it succeeded."""
    try:
        with user.client.request(method, url, name=_NAME[kind], catch_response=True, **kwargs) as resp:
            if resp.status_code in ok:
                resp.success()
                return True
            body = (resp.content or b"")[:200].decode("utf-8", "replace").strip()
            resp.failure(f"HTTP {resp.status_code}: {body}" if resp.status_code else
                         f"no response: {getattr(resp, 'error', None)!r}")
    except Exception as exc:  # noqa: BLE001 - not the server's answer: counted here, the run goes on
        state = user.state
        state.errors[kind] = state.errors.get(kind, 0) + 1
        state.first_error = state.first_error or f"{kind}: {type(exc).__name__}: {exc}"
    return False


def create(user) -> None:
    state: MixedState = user.state
    taken = state.dispenser.take(1)
    if not taken:
        raise RuntimeError(f"no child index left to create (the largest is {MAX_CHILDREN - 1:,})")
    index = taken[0]
    # Built before the clock: its links are this user's newest children, else the first ones.
    child = state.grown.child(index, recent=user.recent[:RECENT_CHILDREN] or state.created[:RECENT_CHILDREN])
    if _send(user, "PUT", state.url(index), "create child", CREATED, data=child.turtle, headers=PUT_HEADERS):
        state.created.append(index)
        user.recent.insert(0, index)
        del user.recent[RECENT_CHILDREN:]


def patch(user) -> None:
    """Replace the literal a created child holds now; the new value is tracked once acknowledged."""
    import gevent

    state: MixedState = user.state
    while True:
        free = [k for k in (user.random.choice(state.created) for _ in range(8)) if k not in state.busy]
        if free:
            index = free[0]
            break
        gevent.sleep(0.001)  # every child tried is being patched by another user (few children, many users)
    if index not in state.values:
        state.values[index] = first_literal(state.grown.child(index))
    predicate, old = state.values[index]
    new = f"mixed {index} #{state.patches.get(index, 0) + 1}"
    from lakebench.systems.ldp import sparql_update

    state.busy.add(index)
    try:
        if _send(user, "PATCH", state.url(index), "patch child", (200, 204),
                 data=sparql_update([(predicate, old, new)]), headers=PATCH_HEADERS):
            state.values[index] = (predicate, new)
            state.patches[index] = state.patches.get(index, 0) + 1
    finally:
        state.busy.discard(index)


def get(user) -> None:
    state: MixedState = user.state
    _send(user, "GET", state.url(user.random.choice(state.created)), "get child", (200,), headers=GET_HEADERS)


def get_parent(user) -> None:
    state: MixedState = user.state
    _send(user, "GET", state.base_url + state.dataset.parent, "get parent (mixed)", (200,), headers=GET_HEADERS)


_TASK_CALLS = {"create": create, "patch": patch, "get": get, "parent": get_parent}


def mixed_user_class(weights: dict[str, int], state: MixedState) -> type:
    """A Locust user class whose tasks are ``weights``' (a task of weight 0 never runs)."""
    from locust import constant

    from lakebench.locust.ldp_requests import access_user_class

    def ticketed(name, call):
        def task(user) -> None:
            if not state.take():
                import gevent

                gevent.sleep(0.05)  # the phase is ending: wait for the runner to stop this user
                return
            try:
                call(user)
            except Exception as exc:  # noqa: BLE001 - counted as a failed operation of its kind; the run goes on
                kind = TASKS[name]
                state.errors[kind] = state.errors.get(kind, 0) + 1
                state.first_error = state.first_error or f"{kind}: {type(exc).__name__}: {exc}"
            finally:
                state.release()

        task.__name__ = name
        return task

    class MixedUser(access_user_class()):
        wait_time = constant(0)
        network_timeout = 600.0
        connection_timeout = 30.0
        max_retries = 0  # a failed request is a result, never silently repeated
        tasks = {ticketed(name, _TASK_CALLS[name]): weight for name, weight in weights.items() if weight > 0}

        def on_start(self) -> None:
            self.state = state
            self.recent: list[int] = []
            self.random = random.Random()

    MixedUser.__module__ = __name__
    return MixedUser


def run_mixed(base_url: str, dataset: DataSet, weights: dict[str, int], existing: int, users: int = 1,
              duration: float | None = None, operations: int = 0, access=None) -> MixedState:
    """Run the mixed users against the server at ``base_url`` whose parent holds ``dataset``'s
    children ``0..existing-1``.

    Stops after ``operations`` operations, or else ``duration`` seconds;
    returns the state (times, errors, created children, patched values) with
    ``state.wall_seconds``, from the users' start to the last operation's end.
    ``access``: the credentials and CAs of the users' requests
    (:class:`~lakebench.systems.base.HttpAccess`; default none, TLS verified).
    Imports Locust (gevent's monkey-patching): call it in a fresh process.
    """
    import gevent
    import gevent.event
    from locust.env import Environment

    base_url = base_url if base_url.endswith("/") else base_url + "/"
    state = MixedState(dataset, base_url, existing=existing, operations=operations, users=users)
    state.done = gevent.event.Event()
    environment = Environment(user_classes=[mixed_user_class(weights, state)], host=base_url)
    environment.lakebench_access = access
    environment.events.request.add_listener(state.on_request)
    runner = environment.create_local_runner()
    t0 = time.perf_counter()
    try:
        runner.start(users, users)
        if not operations:
            gevent.sleep(duration)
            state.stop()
        state.done.wait()
        state.wall_seconds = time.perf_counter() - t0
    finally:
        runner.quit()
        gevent.sleep(0)
    return state
