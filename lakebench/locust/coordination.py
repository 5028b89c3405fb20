"""Who owns the dispenser in each Locust process, and the messages between master and workers.

Each process has one coordinator, reached by its users as
``environment.lakebench`` (:func:`make_coordinator`, at Locust's ``init``):

* in a local run (and in :func:`lakebench.locust.driver.ingest_with_locust`)
  a :class:`LocalCoordinator` holds the :class:`~lakebench.locust.dispensing.Ledger`;
* in a distributed run the :class:`MasterCoordinator` holds it and hands out
  blocks of indices to the workers (custom messages ``lakebench:take`` /
  ``lakebench:block``); each :class:`WorkerCoordinator` reports every
  completed PUT back (``lakebench:done``).

Once the last creation completes, the local runner (or the master) waits
until Locust's statistics hold every PUT, then GETs the parent in three
variants, each its own request name
(:data:`~lakebench.locust.ldp_requests.GET_NAMES`), writes the
``--lakebench-out`` JSON, and quits the runner.
"""
from __future__ import annotations

import logging
import time

from lakebench.locust import LoadTestError
from lakebench.locust.dispensing import BlockQueue, Ledger
from lakebench.locust.ldp_requests import GET_NAMES, PUT_NAME, create_parent, retrieve_parent, stats_session
from lakebench.locust.monitoring import ThreadPoolMonitor
from lakebench.locust.options import IngestConfig
from lakebench.locust.record import log_summary, summarize, write_record
from lakebench.dataset import DataSet

log = logging.getLogger("lakebench.locust")

MSG_TAKE = "lakebench:take"    # worker -> master: {"want": n}
MSG_BLOCK = "lakebench:block"  # master -> worker: {"start": a, "stop": b}; empty range: no more
MSG_DONE = "lakebench:done"    # worker -> master: {"records": [...]}


class Coordinator:
    """Per-process ingest state, reached by users as ``environment.lakebench``."""

    role = "?"

    def __init__(self, environment):
        self.environment = environment
        self.config: IngestConfig | None = None

    # called by users
    @property
    def dataset(self) -> DataSet:
        return self.config.dataset

    def user_dataset(self) -> DataSet:
        """The data set a user starting now builds its children from: its parent is the one it PUTs into."""
        return self.dataset

    def next_index(self) -> int | None:
        raise NotImplementedError

    def next_block(self, want: int) -> list[int]:
        """Up to ``want`` indices for one user to send (empty: none left)."""
        index = self.next_index()
        return [] if index is None else [index]

    def completed(self, record: dict) -> None:
        raise NotImplementedError

    def idle(self) -> None:
        """Nothing left to create here: wait for the runner to stop this user."""
        import gevent

        gevent.sleep(1.0)

    # called by events
    def test_start(self, config: IngestConfig) -> None:
        self.config = config

    def quitting(self) -> None:
        pass


class LocalCoordinator(Coordinator):
    """The dispenser in this process: a local run, or the library entry point."""

    role = "local"

    def __init__(self, environment, quit_when_done: bool = True):
        super().__init__(environment)
        self.quit_when_done = quit_when_done
        self.ledger: Ledger | None = None
        self.monitor: ThreadPoolMonitor | None = None
        self.retrievals: dict[str, dict] = {}
        self.error: str | None = None
        self.result: dict | None = None
        self._finisher = None
        self._ingest_start = time.perf_counter()  # reset once the parent exists (test_start)
        self._put_seconds = 0.0  # the completed PUTs' summed time: the budget's measure with one user
        self._users_started = 0  # users given their parent so far (per-user parents)

    def user_dataset(self) -> DataSet:
        """With ``per-user`` parents, each user in turn gets the next parent as its data set's (the
        children's links then name that parent and its children); else the shared one."""
        import dataclasses

        names = self.config.parent_names
        if len(names) == 1:
            return self.dataset
        name = names[self._users_started % len(names)]
        self._users_started += 1
        return dataclasses.replace(self.dataset, parent=name)

    def test_start(self, config: IngestConfig) -> None:
        """Create the parent and start the monitor; on failure abort the run."""
        super().test_start(config)
        import gevent.event

        self.ledger = Ledger(config.dataset.children, cap=config.block_cap, first_alone=config.first_alone)
        self._progress = gevent.event.Event()  # set at each completion
        self.retrievals = {}
        self.result = None
        self.error = None
        self.monitor = ThreadPoolMonitor(config.server_pid, config.data_dir, config.monitor_interval)
        self.monitor.set(phase="setup")
        self.monitor.start()
        self._users_started = 0
        try:
            for url in config.parent_urls:
                create_parent(url, config.access)
        except LoadTestError as exc:
            self.abort(str(exc))
            return
        self.monitor.set(phase="ingest")
        self._ingest_start = time.perf_counter()
        self._put_seconds = 0.0

    def _budget_spent(self) -> bool:
        """Whether the ingest time has reached the budget: the PUTs' summed time with one user
        (as the runner counts its ingest), the wall time since the parent was created with several."""
        budget = self.config.budget_seconds
        if budget is None:
            return False
        users = getattr(self.environment.runner, "target_user_count", None) or 1
        spent = self._put_seconds if users == 1 else time.perf_counter() - self._ingest_start
        return spent >= budget

    def abort(self, reason: str) -> None:
        import gevent

        self.error = reason
        self.ledger.abort(reason)
        log.error("lakebench: %s", reason)
        self.environment.process_exit_code = 1
        if self.monitor:
            self.monitor.stop()
        if self.quit_when_done:
            gevent.spawn(self._quit)

    def next_index(self) -> int | None:
        if self.ledger is None:
            return None
        while True:
            block = self.ledger.grant(1)
            if block is not None:
                return block[0] if block else None
            self._progress.clear()
            self._progress.wait(timeout=1.0)

    def next_block(self, want: int) -> list[int]:
        if self.ledger is None:
            return []
        users = max(1, getattr(self.environment.runner, "user_count", 1) or 1)
        while True:
            block = self.ledger.grant(want, consumers=users)
            if block is not None:
                return list(block)
            self._progress.clear()
            self._progress.wait(timeout=1.0)

    def completed(self, record: dict) -> None:
        self._complete(record)

    def _complete(self, record: dict) -> None:
        import gevent

        last = self.ledger.complete(record)
        self._put_seconds += record["seconds"]
        if not last and not self.ledger.stopped_early and self._budget_spent():
            last = self.ledger.stop_early()  # the PUTs already granted still complete
        self._progress.set()
        self.monitor.set(children=self.ledger.created)  # a refused PUT made no child
        if last and self._finisher is None:
            self._finisher = gevent.spawn(self._finish)

    def _wait_for_stats(self) -> None:
        """Locally every PUT is in the stats already."""

    def _finish(self) -> None:
        cfg = self.config
        try:
            self._wait_for_stats()
            self.monitor.set(phase="retrieve")
            session = stats_session(self.environment, cfg.base_url, cfg.access)
            for variant in GET_NAMES:
                self.retrievals[variant] = retrieve_parent(session, cfg.parent_url, variant)
            self.monitor.set(phase="after")
            import gevent
            gevent.sleep(max(cfg.monitor_tail, self._csv_grace()))
        except Exception as exc:  # report, and still quit
            log.exception("lakebench: retrieval failed")
            self.error = f"retrieval failed: {type(exc).__name__}: {exc}"
            self.environment.process_exit_code = 1
        finally:
            self.monitor.stop()
            self.result = self.build_result(complete=True)
            log_summary(self.result)
            self.write_out()
            self._finisher = None
            if self.quit_when_done:
                self._quit()

    def _csv_grace(self) -> float:
        """Seconds to let Locust's CSV writer (it rewrites the files every second) see the last requests."""
        options = self.environment.parsed_options
        if options is None or not getattr(options, "csv_prefix", None):
            return 0.0
        from locust import stats

        return stats.CSV_STATS_INTERVAL_SEC + 0.25

    def _quit(self) -> None:
        runner = self.environment.runner
        options = self.environment.parsed_options
        if options is None or getattr(options, "headless", True):
            runner.quit()
        else:
            runner.stop()  # web UI: stop the test, keep the UI

    def build_result(self, complete: bool) -> dict:
        from locust import __version__ as locust_version

        records = sorted(self.ledger.records, key=lambda r: r["end"]) if self.ledger else []
        runner = self.environment.runner
        result = {
            "tool": f"locust {locust_version}",
            "client": "FastHttpUser",
            "mode": self.role,
            "base_url": self.config.base_url,
            "parent_url": self.config.parent_url,
            "parents": self.config.parents,
            "parent_urls": self.config.parent_urls,
            "workload": self.config.dataset.describe(),
            "users": getattr(runner, "target_user_count", None),
            "first_alone": self.config.first_alone,
            "complete": complete and self.error is None and bool(self.ledger and self.ledger.finished),
            "budget_exhausted": bool(self.ledger and self.ledger.stopped_early),
            "error": self.error,
            **summarize(records),
            "latencies": [r["seconds"] for r in records],
            "requests": records,
            "failures": [r for r in records if not r["ok"]],
            "retrievals": dict(self.retrievals),
            "samples": list(self.monitor.samples) if self.monitor else [],
        }
        return result

    def write_out(self) -> None:
        if self.config and self.config.out and self.result is not None:
            write_record(self.result, self.config.out)

    def quitting(self) -> None:
        """Locust is quitting: keep a partial record if the run did not finish."""
        if self.result is None and self.config is not None and self.ledger is not None:
            if self.monitor:
                self.monitor.stop()
            self.result = self.build_result(complete=False)
            self.write_out()


class MasterCoordinator(LocalCoordinator):
    """The dispenser on the master; workers take blocks and report completions."""

    role = "master"

    def __init__(self, environment):
        super().__init__(environment)
        self._pending: list[tuple[str, int]] = []  # takes deferred while the first PUT is out alone
        runner = environment.runner
        runner.register_message(MSG_TAKE, self._on_take)
        runner.register_message(MSG_DONE, self._on_done)

    def _on_take(self, environment, msg, **_kw) -> None:
        self._serve(msg.node_id, int(msg.data.get("want", 1)))

    def _serve(self, node_id: str, want: int) -> None:
        runner = self.environment.runner
        if self.ledger is None:
            block = range(0)  # no test started (should not happen: spawn follows test_start)
        else:
            block = self.ledger.grant(want, consumers=max(1, runner.worker_count))
        if block is None:
            self._pending.append((node_id, want))
            return
        runner.send_message(MSG_BLOCK, {"start": block.start, "stop": block.stop}, client_id=node_id)

    def _on_done(self, environment, msg, **_kw) -> None:
        for record in msg.data["records"]:
            record["node"] = msg.node_id
            try:
                self._complete(record)
            except LoadTestError as exc:
                log.error("lakebench: %s", exc)
                self.error = str(exc)
                self.environment.process_exit_code = 1
        pending, self._pending = self._pending, []
        for node_id, want in pending:
            self._serve(node_id, want)

    def _wait_for_stats(self) -> None:
        """Wait until the workers' reports hold every PUT (they come every few seconds)."""
        import gevent
        from locust import runners

        deadline = time.monotonic() + 3 * runners.WORKER_REPORT_INTERVAL + 2
        stats = self.environment.runner.stats
        while stats.get(PUT_NAME, "PUT").num_requests < self.ledger.total and time.monotonic() < deadline:
            gevent.sleep(0.1)
        got = stats.get(PUT_NAME, "PUT").num_requests
        if got != self.ledger.total:
            log.warning("lakebench: Locust's stats hold %d of %d PUTs after waiting for the workers' reports",
                        got, self.ledger.total)


class WorkerCoordinator(Coordinator):
    """A worker's share: blocks of indices asked from the master as needed."""

    role = "worker"

    def __init__(self, environment):
        super().__init__(environment)
        import gevent.event

        self.queue = BlockQueue()
        self._arrived = gevent.event.Event()
        self._asking = False
        environment.runner.register_message(MSG_BLOCK, self._on_block)

    def test_start(self, config: IngestConfig) -> None:
        super().test_start(config)
        self.queue = BlockQueue()
        self._asking = False

    def _on_block(self, environment, msg, **_kw) -> None:
        self.queue.add(range(msg.data["start"], msg.data["stop"]))
        self._asking = False
        self._arrived.set()

    def next_index(self) -> int | None:
        runner = self.environment.runner
        while True:
            index = self.queue.pop()
            if index is not None or self.queue.exhausted:
                return index
            if not self._asking:
                self._asking = True
                self._arrived.clear()
                runner.send_message(MSG_TAKE, {"want": max(1, runner.user_count)})
            if not self._arrived.wait(timeout=10.0):
                self._asking = False  # no answer: ask again

    def next_block(self, want: int) -> list[int]:
        first = self.next_index()  # waits for the master if need be; the rest only if already here
        if first is None:
            return []
        block = [first]
        while len(block) < want and (index := self.queue.pop()) is not None:
            block.append(index)
        return block

    def completed(self, record: dict) -> None:
        self.environment.runner.send_message(MSG_DONE, {"records": [record]})


def make_coordinator(environment, runner) -> Coordinator:
    """The coordinator of this process, by the kind of its Locust runner."""
    from locust.runners import MasterRunner, WorkerRunner

    if isinstance(runner, MasterRunner):
        return MasterCoordinator(environment)
    if isinstance(runner, WorkerRunner):
        return WorkerCoordinator(environment)
    return LocalCoordinator(environment)

