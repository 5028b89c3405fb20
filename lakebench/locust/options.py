"""What a Locust run is told: the locustfiles' options, and the ingest's configuration.

Locust's ``--help`` does not list these options (it is printed before the
locustfile is read); docs/locust.rst lists them all.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from lakebench.locust import LoadTestError
from lakebench.locust.ldp_requests import GET_NAMES
from lakebench.dataset import DEFAULT_PARENT, DataSet
from lakebench.systems.base import NO_ACCESS, HttpAccess, refuse_userinfo


@dataclass
class IngestConfig:
    """What an ingest run needs besides Locust's own options."""

    base_url: str
    dataset: DataSet
    server_pid: int | None = None
    data_dir: str | None = None
    out: str | None = None
    monitor_interval: float = 0.5
    monitor_tail: float = 0.0
    block_cap: int = 0  # largest block a worker may get (0: guided only)
    first_alone: bool = True  # the first PUT is sent before any other (see Ledger)
    #: Stop dispensing children once the ingest time reaches this many seconds
    #: (the sum of the PUTs' times with one user, the wall time with several).
    budget_seconds: float | None = None
    #: ``shared``: every user PUTs into the one parent (the seed's shape: contention on one container);
    #: ``per-user``: each of ``users`` users into a parent of its own (:attr:`parent_names`).
    parents: str = "shared"
    users: int = 1
    #: Credentials and CA bundle (:class:`~lakebench.systems.base.HttpAccess`); never in the record.
    access: HttpAccess = field(default=NO_ACCESS, repr=False)

    def __post_init__(self) -> None:
        if self.parents not in PARENTS:
            raise LoadTestError(f"parents must be {' or '.join(PARENTS)}, got {self.parents!r}")
        if not self.base_url:
            raise LoadTestError("no base URL: give the LDP server's base with --host, e.g. http://127.0.0.1:8080/rest/")
        try:  # the URL goes into the record: no password in it
            refuse_userinfo(self.base_url, "--host")
        except ValueError as exc:
            raise LoadTestError(str(exc)) from None
        if not self.base_url.endswith("/"):
            self.base_url += "/"

    @property
    def parent_names(self) -> list[str]:
        """The parents the users PUT into: the data set's, or with ``per-user`` one per user.

        >>> IngestConfig("http://x/", DataSet(), parents="per-user", users=2).parent_names
        ['parent-u1', 'parent-u2']
        """
        if self.parents == "shared":
            return [self.dataset.parent]
        return [per_user_parent(self.dataset.parent, k) for k in range(1, self.users + 1)]

    @property
    def parent_urls(self) -> list[str]:
        return [self.base_url + name for name in self.parent_names]

    @property
    def parent_url(self) -> str:
        """The parent read at the end (the first user's, with ``per-user``)."""
        return self.parent_urls[0]

    @classmethod
    def from_options(cls, options: Any, host: str | None) -> "IngestConfig":
        dataset = DataSet(
            children=options.children,
            triples=options.graph_size,
            literal_length=options.literal_length,
            seed=options.seed,
            parent=options.parent,
        )
        return cls(
            base_url=host or "",
            dataset=dataset,
            server_pid=options.server_pid,
            data_dir=options.data_dir,
            out=options.lakebench_out,
            monitor_interval=options.monitor_interval,
            monitor_tail=options.monitor_tail,
            block_cap=options.index_block,
            first_alone=options.first_alone,
            access=access_from_options(options, host),
        )


#: The shapes of a Locust ingest: one parent for every user, or one each.
PARENTS = ("shared", "per-user")


def per_user_parent(parent: str, user: int) -> str:
    """The name of user ``user``'s parent (from 1) with ``per-user`` parents: beside the shared one's name.

    >>> per_user_parent("parent", 3)
    'parent-u3'
    """
    return f"{parent}-u{user}"


def access_from_options(options: Any, host: str | None) -> HttpAccess:
    """The access the locustfiles' options and the environment give (``--system-netrc``,
    ``--system-ca``, ``--system-insecure-http``, ``LAKEBENCH_SYSTEM_USER`` and
    ``LAKEBENCH_SYSTEM_PASSWORD``), as ``lakebench run`` reads them; LoadTestError, in one line."""
    if not host:
        raise LoadTestError("no base URL: give the LDP server's base with --host, e.g. http://127.0.0.1:8080/rest/")
    try:
        return HttpAccess.resolve(host, netrc_file=getattr(options, "system_netrc", None),
                                  ca_file=getattr(options, "system_ca", None),
                                  insecure_http=bool(getattr(options, "system_insecure_http", False)))
    except ValueError as exc:
        raise LoadTestError(str(exc).replace("--system-url", "--host")) from None


def add_access_arguments(parser: argparse.ArgumentParser) -> None:
    """How the server at ``--host`` is reached: the options ``lakebench run`` has for ``--system-url``."""
    group = parser.add_argument_group(
        "lakebench access", "credentials (HTTP Basic, from LAKEBENCH_SYSTEM_USER and LAKEBENCH_SYSTEM_PASSWORD "
        "or a netrc file, never the command line) and TLS verification")
    group.add_argument("--system-netrc", default=None, metavar="FILE",
                       help="read the credentials from this netrc file's entry for --host's host (mode 600)")
    group.add_argument("--system-ca", default=None, metavar="FILE",
                       help="PEM bundle of the CAs that verify an https:// --host (default: the system's)")
    group.add_argument("--system-insecure-http", action="store_true", default=False,
                       help="let credentials go over plain http:// to a host other than loopback")


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    """The ingest locustfile's options (Locust's ``init_command_line_parser``)."""
    group = parser.add_argument_group("lakebench ingest", "the workload, and what to monitor")
    group.add_argument("--children", type=int, default=10_000, help="children to create in total (default 10000)")
    group.add_argument("--graph-size", type=int, default=200, help="triples per child (default 200)")
    group.add_argument("--literal-length", type=int, default=64, help="characters per literal (default 64)")
    group.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    group.add_argument("--parent", default=DEFAULT_PARENT, help="parent container name; must not exist yet (default parent)")
    group.add_argument("--server-pid", type=int, default=None, help="process to sample (CPU, RSS, VMS) with its children")
    group.add_argument("--data-dir", default=None, help="directory whose size is sampled")
    group.add_argument("--lakebench-out", default=None, help="write monitor samples, retrievals and per-PUT latencies here (JSON)")
    group.add_argument("--monitor-interval", type=float, default=0.5, help="seconds between samples (default 0.5)")
    group.add_argument("--monitor-tail", type=float, default=0.0,
                       help="keep sampling this many seconds after the retrievals before quitting (default 0)")
    group.add_argument("--first-alone", action=argparse.BooleanOptionalAction, default=True,
                       help="send the first PUT before all others, so a fresh server's first-use work "
                            "(Fedora 4 registers namespace prefixes) is not raced (default: yes)")
    group.add_argument("--index-block", type=int, default=0,
                       help="distributed runs: most indices a worker gets at once (default 0: guided by what is left)")
    add_access_arguments(parser)


def add_retrieve_arguments(parser: argparse.ArgumentParser) -> None:
    """The read-mix locustfile's options."""
    group = parser.add_argument_group("lakebench retrieve", "what to read")
    group.add_argument("--parent", default=DEFAULT_PARENT, help="parent container name (default parent)")
    group.add_argument("--children", type=int, default=0,
                       help="read children c00000000.. of this count (default 0: discover them from the parent's ldp:contains)")
    group.add_argument("--parent-ratio", type=float, default=0.05, help="share of requests that GET the parent (default 0.05)")
    group.add_argument("--parent-variant", choices=sorted(GET_NAMES), default="full",
                       help="how the parent is read (default full)")
    add_access_arguments(parser)

