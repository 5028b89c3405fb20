"""``lakebench`` command line: run | report | check | compact | serve | fcrepo | lakesuperior.

Every user mistake (unknown system, a number outside the range its --help
states, unwritable output, a damaged results directory) is one line on
stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from lakebench import __version__, dataset, results, systems, table, workloads
from lakebench.argtypes import JVM_HEAP, Bounded, BoundedList, Duration, duration_text, http_url
from lakebench.runspec import DEFAULT_PAGE_SIZE, DEFAULT_RETRIEVALS
from lakebench.server.headers import MAX_PAGE_SIZE


class UsageError(Exception):
    """A mistake in the command line: reported in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + message
        raise UsageError(f"{self.prog}: error: {message} (see --help)")


# The ranges of run's numeric options; each option's --help states its range.
CHILDREN = Bounded(int, 1, dataset.MAX_CHILDREN)
TRIPLES = Bounded(int, 4, dataset.MAX_TRIPLES)
LITERAL_LENGTH = Bounded(int, 1, dataset.MAX_LITERAL_LENGTH)
SEED = Bounded(int, 0, 2**63 - 1)
REPEAT = Bounded(int, 1, 1_000)
RETRIEVALS = Bounded(int, 1, 1_000)
PAGE_SIZE = Bounded(int, 0, MAX_PAGE_SIZE)
USERS = Bounded(int, 1, 1_000)
TAIL_SECONDS = Bounded(float, 0, 3_600)
#: Below 10 ms the monitor thread would spend the CPU it is there to measure.
INTERVAL = Bounded(float, 0.01, 60)
#: A week is more than any session; under a second is a typing mistake.
BUDGET = Duration(1, 7 * 86_400)


def _checkpoints(text: str) -> str | list[int] | None:
    """``auto``, ``none``, or a comma-separated list of children counts."""
    word = text.strip().lower()
    if word in ("auto", "none"):
        return None if word == "none" else "auto"
    try:
        return BoundedList(CHILDREN)(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (expected auto, none, or children counts such as "
                                         "1000,5000)") from None


def _system_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no system named")
    unknown = [n for n in names if n not in systems.SYSTEMS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown system {', '.join(map(repr, unknown))}; known: {', '.join(systems.SYSTEMS)}"
        )
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"a system is named twice: {text}")
    return names


def _system_url(text: str) -> str:
    """``--system-url``: an http(s) URL without credentials in it (refused in words that do not repeat them)."""
    from lakebench.systems.base import refuse_userinfo

    try:
        refuse_userinfo(text, "the URL")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return http_url(text)


DEFAULT_SYSTEMS = "lmdb-nosync,lmdb,oxigraph,memory"
WIDE_HELP = ("every column of the summary table; without it, the columns that fit the terminal (COLUMNS, "
             "else its width, else 100), the most telling first")


def _system_option(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``--system-option``."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.replace("-", "_"), value.strip()


class _SystemOptions(argparse._AppendAction):
    """``--system-option``: its --help ends with every system's options, loaded only when shown
    (every system's module imported would slow each start of the command, serve's too)."""

    @property
    def help(self) -> str:
        return self._help + systems.options_help()

    @help.setter
    def help(self, text: str) -> None:
        self._help = text


def _workload_parameters() -> dict[str, tuple[object, list[str]]]:
    """Every workload's options: name -> (its Param, the workloads that take it)."""
    found: dict[str, tuple[object, list[str]]] = {}
    for name in workloads.WORKLOADS:
        for key, param in workloads.load(name).PARAMETERS.items():
            found.setdefault(key, (param, []))[1].append(name)
    return found


def _add_workload_options(run: argparse.ArgumentParser) -> None:
    lines = "; ".join(f"{name}: {line}" for name, line in workloads.summaries().items())
    run.add_argument("--workload", choices=list(workloads.WORKLOADS), default=workloads.DEFAULT,
                     metavar="NAME", help=f"what is done to each system ({lines}) (default: {workloads.DEFAULT})")
    group = run.add_argument_group("workload options (each applies to the workloads it names)")
    for key, (param, names) in _workload_parameters().items():
        default = ",".join(map(str, param.default)) if isinstance(param.default, (list, tuple)) else param.default
        group.add_argument(param.option(key), dest=f"workload_{key}", type=param.argument_type(), default=None,
                           metavar=param.metavar, help=f"[{', '.join(names)}] {param.help} (default: {default})")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="lakebench",
        description="Performance comparator for RDF repositories: N children PUT under one "
        "parent container, then the parent retrieved; time, memory and disk compared with a "
        "reference system.",
    )
    parser.add_argument("--version", action="version", version=f"lakebench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    run = sub.add_parser(
        "run",
        help="measure systems side by side and write results",
        description="Measure each system in its own fresh process and data directory: run the "
        "workload (flat by default: create N children, each timed alone), check what the system "
        "holds against what it was sent, retrieve the parent, sample CPU/RSS/VMS/disk every "
        "interval (also for --tail-seconds after the load). Writes OUT/results.json and "
        "OUT/latencies.csv and prints the summary table.",
    )
    run.add_argument("--systems", type=_system_list, default=_system_list(DEFAULT_SYSTEMS),
                     help=f"comma-separated systems to measure, from: {', '.join(systems.SYSTEMS)} "
                     f"(default: {DEFAULT_SYSTEMS})")
    run.add_argument("--children", type=BoundedList(CHILDREN), default=[10_000],
                     help=f"children created under the parent, {CHILDREN.range}; comma-separated values "
                     "sweep the size, one case each (default: 10000)")
    run.add_argument("--triples", type=TRIPLES, default=200,
                     help=f"triples per child, {TRIPLES.range}, split 1:1:2 external/internal/literal "
                     "(default: 200)")
    run.add_argument("--literal-length", type=BoundedList(LITERAL_LENGTH), default=[64],
                     help=f"characters per random literal, {LITERAL_LENGTH.range}, and at most "
                     f"{dataset.MAX_LITERAL_CHARS:,} literal characters per child (literal triples, half "
                     "of --triples, x length); comma-separated values sweep the payload size, e.g. "
                     "1,64,1024,65536 (default: 64)")
    run.add_argument("--seed", type=SEED, default=0, help=f"workload seed, {SEED.range} (default: 0)")
    run.add_argument("--repeat", type=REPEAT, default=1,
                     help=f"runs per system, {REPEAT.range}, interleaved; the table shows mean ± std "
                     "(default: 1)")
    run.add_argument("--reference",
                     help="system whose figures are 100%% (default: fcrepo if measured, else the first of --systems)")
    run.add_argument("--parent", default="parent",
                     help="name of the parent container, relative to the base URL (default: parent)")
    run.add_argument("--system-url", type=_system_url, metavar="URL",
                     help="base URL of a running LDP server: required by the ldp system; for fcrepo "
                     "or lakesuperior, use that server (e.g. http://host:8080/rest/, "
                     "http://host:8000/ldp/) instead of starting one. Its HTTP Basic credentials, if it "
                     "needs any, come from the environment variables LAKEBENCH_SYSTEM_USER and "
                     "LAKEBENCH_SYSTEM_PASSWORD or from --system-netrc, never from the command line (a URL "
                     "with user:password@ is refused); they are written nowhere")
    run.add_argument("--system-netrc", type=Path, metavar="FILE",
                     help="read --system-url's credentials from this netrc file (as curl --netrc-file: the "
                     "entry 'machine HOST login USER password PASSWORD' of the URL's host, else its "
                     "'default'); refused if others may read it (chmod 600)")
    run.add_argument("--system-ca", type=Path, metavar="FILE",
                     help="PEM bundle of the CA certificates that verify an https:// --system-url (as curl "
                     "--cacert: these alone are trusted); default: the system's trusted CAs. Verification "
                     "is never off")
    run.add_argument("--system-insecure-http", action="store_true",
                     help="let credentials go over plain http:// to a --system-url host other than loopback "
                     "(refused without it: anyone on the way reads them)")
    run.add_argument("--system-option", type=_system_option, action=_SystemOptions, default=[], metavar="KEY=VALUE",
                     help="an option of the chosen systems, repeatable; each applies to the systems that "
                     "take it; a key none of --systems takes, or a value out of range, is an error; "
                     "recorded in each entry's system_options. The options: ")
    run.add_argument("--fcrepo-version", default=None,
                     help="Fedora version lakebench starts for the fcrepo system (default: 4.7.5; "
                     "the fcrepo6 system is 6.1.0)")
    run.add_argument("--fcrepo-heap", type=JVM_HEAP, default="2g",
                     help=f"maximum JVM heap of that Fedora, as for java -Xmx, {JVM_HEAP.range} (default: 2g)")
    run.add_argument("--out", type=Path, default=None,
                     help="results directory (default: results/run-YYYYmmdd-HHMMSS)")
    run.add_argument("--budget", type=BUDGET, default=None, metavar="DURATION",
                     help=f"ingest time allowed to each system and case, e.g. 90s, 20m, 1h30m or seconds, "
                     f"{BUDGET.range}: the ingest stops once the sum of the timed calls reaches it, the "
                     "parent is still retrieved at the size reached, and the row says 'stopped at N "
                     "children after T'; a larger case of that system is then not run (default: none)")
    run.add_argument("--checkpoints", type=_checkpoints, default="auto", metavar="auto|none|N,N,...",
                     help="children counts at which the ingest pauses to retrieve the parent (as at the "
                     "end) and measure the disk, outside the ingest's time; those below each case's "
                     "size are used. auto: 1000, 2000, 5000, 10000, 20000, ... (default: auto)")
    run.add_argument("--retrievals", type=RETRIEVALS, default=DEFAULT_RETRIEVALS,
                     help=f"timed retrievals of the parent in all, {RETRIEVALS.range}: 'GET parent first' "
                     f"is the first, 'GET parent steady' the median of the ones after it (default: {DEFAULT_RETRIEVALS})")
    run.add_argument("--page-size", type=PAGE_SIZE, default=DEFAULT_PAGE_SIZE, metavar="N",
                     help=f"after the retrievals, walk the parent once in pages of N children, {PAGE_SIZE.range}, "
                     "as a client that pages asks (LDP Paging 1.0: Prefer: return=representation; "
                     "max-member-count=\"N\"), with the client driver: 'first page' is the request and the "
                     "first page it is sent to, 'paged walk' the requests of every page; a system that answers "
                     f"with the whole parent is shown as 'not paged'; 0: no walk (default: {DEFAULT_PAGE_SIZE})")
    run.add_argument("--cold", action="store_true",
                     help="drop the OS page cache before each parent retrieval (needs root; otherwise "
                     "the retrievals stay warm and the results say so)")
    run.add_argument("--tail-seconds", type=TAIL_SECONDS, default=3.0,
                     help=f"keep monitoring this long after the load, {TAIL_SECONDS.range} s (default: 3)")
    run.add_argument("--interval", type=INTERVAL, default=0.5,
                     help=f"monitor sampling interval, {INTERVAL.range} s (default: 0.5)")
    run.add_argument("--driver", choices=("client", "locust"), default=None,
                     help="how HTTP systems are driven: lakebench's own client, one child at a time, "
                     "or Locust as a library, which also reads the parent in its three Prefer variants "
                     "(default: client, or locust for a workload that runs with Locust only)")
    run.add_argument("--users", type=BoundedList(USERS), default=[1], metavar="N[,N...]",
                     help=f"concurrent Locust users with --driver locust, {USERS.range}; comma-separated values "
                     "sweep the load, one case each (e.g. 1,2,4,8,16,32): each case records its throughput, "
                     "latency p50/p95/p99/max, errors by kind and the CPU of the system and of the load "
                     "generator, and the table names each system's highest throughput and its knee, the users "
                     "after which no step to the next count adds 10%% or more per doubling (default: 1)")
    _add_workload_options(run)
    run.add_argument("--keep-data", action="store_true",
                     help="keep each system's data directory under OUT/data")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.add_argument("--wide", action="store_true", help=WIDE_HELP)
    run.set_defaults(func=cmd_run)

    show = sub.add_parser("table", help="print the summary table of a results directory")
    show.add_argument("results_dir", type=Path, help="a directory written by 'lakebench run'")
    show.add_argument("--wide", action="store_true", help=WIDE_HELP)
    show.set_defaults(func=cmd_table)

    check = sub.add_parser(
        "check", help="verify an LMDB store: indices agree, every id resolves, counts match",
        description="Open the LMDB store in DIR read-only and verify it: every quad index holds the "
        "same quads, every term id resolves, hashes and counts agree, the write-ahead log decodes. "
        "Before mapping data.mdb, its two LMDB meta pages are read and the file must hold the pages "
        "they describe (but for pages its free-page tree lists as free); the walk itself runs in a child process, so a crash inside liblmdb on a "
        "damaged page is reported, not suffered. Exit 0 when consistent; 1 with the problems "
        "listed, or with one line 'store damaged: ...' when the file is damaged.")
    check.add_argument("store_dir", type=Path, metavar="DIR", help="store directory (holds data.mdb)")
    check.set_defaults(func=cmd_check)

    compact = sub.add_parser(
        "compact", help="rewrite an LMDB store without its free pages, its term ids numbered afresh",
        description="Rewrite the LMDB store in DIR with only what its quads use. Unused terms are "
        "removed at each commit, but LMDB never gives pages back to the file system (a store that "
        "once held much more keeps its size) and term ids are never reused (31 bits for literals). "
        "The live quads are copied into a new store (checked as "
        "'lakebench check' does, and counted), which then replaces data.mdb in one atomic rename; a "
        "crash leaves the old store or the new one. The store must not be served meanwhile (refused "
        "if a server has it open). Exit 0 when compacted, 1 when refused (nothing changed).")
    compact.add_argument("store_dir", type=Path, metavar="DIR", help="store directory (holds data.mdb)")
    compact.set_defaults(func=cmd_compact)

    from lakebench import compare, report, server

    compare.add_parser(sub)
    for command in systems.SERVERS.values():  # fcrepo, lakesuperior: fetch|start|stop|status
        systems.load_target(command).add_parser(sub)
    report.add_parser(sub)
    server.add_parser(sub)
    return parser


def cmd_run(args) -> int:
    from lakebench.runner import RunConfig, check_writable, run
    from lakebench.systems.base import HttpSystem

    if args.reference is not None and args.reference not in args.systems:
        raise UsageError(f"lakebench run: error: --reference {args.reference!r} is not among "
                         f"--systems ({', '.join(args.systems)})")
    try:  # what the option types cannot see alone: the parent's name, a child's total size
        for children in args.children:
            for length in args.literal_length:
                dataset.DataSet(children=children, triples=args.triples, literal_length=length,
                                  parent=args.parent)
    except ValueError as exc:
        raise UsageError(f"lakebench run: error: {exc}") from None
    workload_class = workloads.load(args.workload)
    if args.driver is None:  # the workload's own driver: client, or locust for a Locust-only workload
        args.driver = workload_class.drivers[0]
    # A workload that also runs with the client refuses in-process systems under Locust; one that runs
    # under Locust only records them "not applicable", like any system lacking what a workload needs.
    if args.driver == "locust" and "client" in workload_class.drivers:
        in_process = [n for n in args.systems if not issubclass(systems.load(n), HttpSystem)]
        if in_process:
            raise UsageError(f"lakebench run: error: --driver locust drives HTTP systems only, not "
                             f"{', '.join(in_process)}")
    params = _chosen_workload_parameters(args)
    if args.users != [1] and args.driver != "locust":  # lakebench's own client is one user
        users = ",".join(map(str, args.users))
        with_locust = [name for name in workloads.WORKLOADS if "locust" in workloads.load(name).drivers]
        if "locust" in workload_class.drivers:
            raise UsageError(f"lakebench run: error: --users {users} needs the Locust driver (--driver locust); "
                             "lakebench's own client is one user")
        raise UsageError(f"lakebench run: error: --users {users} needs the Locust driver, and the "
                         f"{args.workload} workload runs with lakebench's own client only (one user); the "
                         f"workloads Locust runs: {', '.join(with_locust)}")
    try:
        system_options = systems.parse_options(args.systems, args.system_option)
    except ValueError as exc:
        raise UsageError(f"lakebench run: error: {exc}") from None
    if "ldp" in args.systems and not args.system_url:
        raise UsageError("lakebench run: error: the ldp system needs --system-url")
    access = _system_access(args)
    out = args.out or Path("results") / datetime.now().strftime("run-%Y%m%d-%H%M%S")
    try:
        check_writable(out)
    except OSError as exc:
        raise UsageError(f"lakebench run: error: cannot write results to {out}: "
                         f"{exc.strerror or exc}") from None
    config = RunConfig(
        systems=args.systems,
        children=args.children,
        triples=args.triples,
        literal_length=args.literal_length,
        seed=args.seed,
        parent=args.parent,
        repeat=args.repeat,
        reference=args.reference,
        out=out,
        retrievals=args.retrievals,
        page_size=args.page_size,
        tail_seconds=args.tail_seconds,
        interval=args.interval,
        keep_data=args.keep_data,
        progress=not args.quiet,
        cold=args.cold,
        driver=args.driver,
        users=args.users,
        budget_seconds=args.budget,
        checkpoints=args.checkpoints,
        command=" ".join(["lakebench", *sys.argv[1:]]),
        options={
            **system_options,
            "system_url": args.system_url,
            "fcrepo_version": args.fcrepo_version,
            "fcrepo_heap": args.fcrepo_heap,
        },
        workload=args.workload,
        workload_params=params,
        access=access,
    )
    document = run(config)
    print()
    sizes = ",".join(f"{n}" for n in args.children)
    lengths = ",".join(f"{n}" for n in args.literal_length)
    given = "".join(f", {key.replace('_', '-')} {_shown(value)}" for key, value in params.items())
    print(f"Workload: {args.workload}{given}.  Data set: {sizes} children x {args.triples} triples, "
          f"{lengths}-character literals, seed {args.seed}.  Reference: {document['reference']} "
          "(relative columns, per case)."
          + (f"  Budget: {duration_text(args.budget)} of ingest per system and case."
             if args.budget is not None else "")
          + (f"  Locust users: {_shown(args.users)}." if args.driver == "locust" else ""))
    print(table.text(document, wide=args.wide))
    print(f"\nResults: {out / 'results.json'}  (per-operation latencies: {out / 'latencies.csv'})")
    for line in table.generation_lines(document):  # the harness's own share, when it is large
        print(line)
    failed = [s["name"] for s in document["systems"] if s["status"] == "failed"]  # skipped is not a failure
    return 1 if failed else 0


def _system_access(args):
    """The credentials and CA bundle for ``--system-url`` (none without it: the environment's
    credential variables then do not apply, and the options that need it are refused)."""
    from lakebench.systems.base import NO_ACCESS, HttpAccess

    if not args.system_url:
        given = [flag for flag, value in (("--system-netrc", args.system_netrc), ("--system-ca", args.system_ca),
                                          ("--system-insecure-http", args.system_insecure_http)) if value]
        if given:
            raise UsageError(f"lakebench run: error: {given[0]} applies to --system-url, which is not given")
        return NO_ACCESS
    try:
        return HttpAccess.resolve(args.system_url, netrc_file=args.system_netrc, ca_file=args.system_ca,
                                  insecure_http=args.system_insecure_http)
    except ValueError as exc:
        raise UsageError(f"lakebench run: error: {exc}") from None


def _shown(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _chosen_workload_parameters(args) -> dict:
    """The options given for ``--workload``; an option of another workload is a usage error."""
    workload_class = workloads.load(args.workload)
    chosen = {}
    for key, (param, names) in _workload_parameters().items():
        value = getattr(args, f"workload_{key}")
        if value is None:
            continue
        if key not in workload_class.PARAMETERS:
            raise UsageError(f"lakebench run: error: {param.option(key)} applies to the "
                             f"{', '.join(names)} workload(s), not to {args.workload}")
        param = workload_class.PARAMETERS[key]
        if param.drivers and args.driver not in param.drivers:
            raise UsageError(f"lakebench run: error: {param.option(key)} applies with --driver "
                             f"{' or '.join(param.drivers)}, not {args.driver}")
        chosen[key] = value
    try:  # options that are each in range but not together (deep: depth x fan-out)
        workload_class.check({**{key: p.default for key, p in workload_class.PARAMETERS.items()}, **chosen})
    except ValueError as exc:
        raise UsageError(f"lakebench run: error: {exc}") from None
    if args.driver not in workload_class.drivers:
        raise UsageError(f"lakebench run: error: the {args.workload} workload runs with --driver "
                         f"{' or '.join(workload_class.drivers)}, not {args.driver}")
    return chosen


def cmd_table(args) -> int:
    try:
        document = results.load(args.results_dir)
    except results.ResultsError as exc:
        raise UsageError(f"lakebench table: error: {exc}") from None
    print(table.text(document, wide=args.wide))
    return 0


def cmd_check(args) -> int:
    from lakebench.store import StoreDamaged, StoreError
    from lakebench.store.verify import check_isolated

    if not (args.store_dir / "data.mdb").is_file():
        raise UsageError(f"lakebench check: error: no LMDB store in {args.store_dir} (no data.mdb)")
    try:
        problems = check_isolated(args.store_dir)  # a crash in liblmdb is an error, not our death
    except StoreDamaged as exc:  # names the file already
        print(f"lakebench check: {exc}", file=sys.stderr)
        return 1
    except (StoreError, OSError) as exc:
        print(f"lakebench check: {args.store_dir}: {exc}", file=sys.stderr)
        return 1
    counts = {k: v for k, v in problems.summary.items() if isinstance(v, int) and not isinstance(v, bool)}
    summary = ", ".join(f"{k} {v:,}" for k, v in counts.items())
    for problem in problems:
        print(f"problem: {problem}")
    print(f"{args.store_dir}: {'consistent' if not problems else f'{len(problems)} problem(s)'}; {summary}")
    if problems.summary.get("commit_cut"):
        print(f"{args.store_dir}: its last batch commit was cut before its flush was confirmed: the next "
              "writable open goes back to the snapshot before it and replays the log (this check read "
              "the cut commit's snapshot)")
    return 1 if problems else 0


def cmd_compact(args) -> int:
    from lakebench.store import LogError, StoreError
    from lakebench.store.compact import compact

    if not (args.store_dir / "data.mdb").is_file():
        raise UsageError(f"lakebench compact: error: no LMDB store in {args.store_dir} (no data.mdb)")
    try:
        done = compact(args.store_dir, progress=None)
    except (StoreError, LogError, OSError) as exc:
        print(f"lakebench compact: {args.store_dir}: {exc}", file=sys.stderr)
        return 1
    print(f"{args.store_dir}: {done.quads:,} quads; terms {done.terms_before:,} -> {done.terms_after:,}; "
          f"data.mdb {done.bytes_before:,} -> {done.bytes_after:,} bytes; consistent")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.func(args)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lakebench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
