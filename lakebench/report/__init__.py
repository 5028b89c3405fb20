"""``lakebench report``: results directories as pages of the Sphinx site.

``lakebench report RESULTS_DIR`` reads ``results.json`` and ``latencies.csv``
(never re-measuring) and writes, into ``--out`` (default
``RESULTS_DIR/report``: each run's report beside its results, so no report
replaces another's), ``index.rst`` (the report: the summary first, then
result tables, operations, what was sent and held, charts, conclusions, and
how it was measured) and one image per chart.  ``--out docs/performance``
makes it the page ``docs/performance.rst`` points at.  Several RESULTS_DIRs (one per workload) make one such page each,
in ``OUT/WORKLOAD/``, and ``OUT/index.rst`` linking them.  ``--compare BASE``
adds a page of the ratios ``lakebench compare BASE RESULTS_DIR`` prints.
With ``--html`` it then builds the Sphinx site that contains ``--out``
(warnings are errors), or, outside any docs tree, a site of the report alone
(a ``conf.py`` of its own in ``--out``), and prints where the pages are.

Modules, each importing only those below it: :mod:`~.pages` (the seed's
page) over :mod:`~.sections` (what every workload's page holds, the page
frame, and the other workloads' page), :mod:`~.comparison` (the comparison
page), :mod:`~.summary` (the first screen: the systems ranked),
:mod:`~.conclusions` (sentences from the numbers), :mod:`~.seed` (the seed
report reproduced), :mod:`~.charts` (the chart registry below one module per
chart family), :mod:`~.data` (reading) and :mod:`~.fmt` (units and markup).
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from lakebench import compare, results
from lakebench.report.data import ReportData, ReportError

__all__ = ["ReportData", "ReportError", "add_parser", "build_html", "build_report", "build_site", "main"]

#: The Sphinx documentation's performance page (``--out docs/performance``).
DOCS_OUT = Path("docs/performance")
#: The default ``--out``, inside the (first) results directory.
REPORT_DIR = "report"
DEFAULT_TITLE = "Performance report"

#: ``conf.py`` of a report built outside the docs tree: the report alone.
STANDALONE_CONF = '''"""Sphinx configuration of one lakebench report (written by 'lakebench report')."""
project = "lakebench report"
copyright = "2026, the lakebench developers"
html_theme = "furo"
html_title = "lakebench report"
exclude_patterns = ["_build"]
# Only the pages 'lakebench report' wrote: never another .rst that came with a shared directory.
include_patterns = ["index.rst", "compare.rst", "*/index.rst", "*/compare.rst", "results.rst", "workload.rst"]
# Options stay as typed: "--binary-size", not an en dash.
smartquotes = False
import lakebench.report
from pathlib import Path
html_static_path = [str(Path(lakebench.report.__file__).parent / "static")]
html_css_files = ["lakebench.css"]
'''


def default_out(results_dir: Path) -> Path:
    """Where a report goes without ``--out``: beside its results."""
    return Path(results_dir) / REPORT_DIR


def build_report(results_dir: Path, out: Path | None = None, *, benchmarks=(), image_format: str = "svg",
                 title: str = DEFAULT_TITLE, report_command: str | None = None, compare_with: Path | None = None,
                 threshold: float | None = None) -> Path:
    """Write the report page and its figures into ``out``; returns the page's path.

    The page is the seed's (:mod:`~.pages`) for a ``flat`` run, the
    workload's (:mod:`~.sections`) otherwise, whose title then names the
    workload.  With ``compare_with`` (BASE, another results directory of the
    same workload), ``out/compare.rst`` holds the ratios of this run to
    BASE's, linked from the page.  Raises :class:`ReportError` when the
    results or a benchmark file cannot be read, or ``out`` cannot be
    written (a file, no permission, a full disk).
    """
    data = ReportData.load(results_dir, benchmarks)  # reading raises ReportError, never OSError
    if data.workload != "flat" and title == DEFAULT_TITLE:
        title = f"{title}: {data.workload} workload"
    out = default_out(results_dir) if out is None else out
    return _write(data, Path(out), image_format, title, report_command, _base(compare_with, data), threshold)


def _base(path: Path | None, data: ReportData) -> tuple[Path, dict] | None:
    """BASE's results document, checked to be of ``data``'s workload."""
    if path is None:
        return None
    try:
        base = results.load(Path(path))
    except results.ResultsError as exc:
        raise ReportError(str(exc)) from None
    workload = results.get_path(base, "workload.name") or "flat"
    if workload != data.workload:
        raise ReportError(f"--compare {path}: a run of the {workload} workload, not of {data.workload}")
    return Path(path), base


def _write(data: ReportData, out: Path, image_format: str, title: str, report_command: str | None,
           base: tuple[Path, dict] | None, threshold: float | None) -> Path:
    from lakebench.report import charts, comparison, pages, sections

    _refuse_links(out)
    if out.exists() and not out.is_dir():
        raise ReportError(f"cannot write the report to {out}: not a directory")
    _refuse_foreign(out / "index.rst")
    try:
        out.mkdir(parents=True, exist_ok=True)
        data.page_dir = out
        sections.copy_raw_files(data.results_dir, out)
        text = None
        compared = out / f"{comparison.PAGE}.rst"
        if base is not None:  # before the figures: a comparison that cannot be made stops here
            text = comparison.page(base[0], base[1], data, threshold or compare.DEFAULT_THRESHOLD)
        figures = charts.render(data, out, image_format)
        index = out / "index.rst"
        draw = pages.page if data.workload == "flat" else sections.workload_page
        page = draw(data, figures, title, report_command)
        if text is not None:
            compared.write_text(text, encoding="utf-8")
            page += "\n" + comparison.section()
        elif _generated(compared):
            compared.unlink()  # an earlier report's: no longer in any toctree
        source = str(Path(data.results_dir).resolve())
        replaced = _source_of(index)
        if replaced is not None and replaced != source:  # never silently
            print(f"lakebench report: replacing the report in {out} (it was {replaced}'s)", file=sys.stderr)
        note = f".. {GENERATED} from {source}: edits are overwritten.\n"
        index.write_text(page.replace(sections.GENERATED_NOTE, note, 1), encoding="utf-8")
    except OSError as exc:
        where = exc.filename if exc.filename and Path(exc.filename) != out else None
        raise ReportError(f"cannot write the report to {out}: {exc.strerror or exc}"
                          + (f" ({where})" if where else "")) from None
    return index


GENERATED = "Generated by 'lakebench report'"
#: What every file this command writes says on its first line (``lakebench report --compare`` too).
GENERATED_MARK = "Generated by 'lakebench report"


def _written_files() -> list[str]:
    """The names of every file this command writes into ``--out`` (and removes, for a chart no longer drawn)."""
    from lakebench.report import charts, comparison, sections

    return ["index.rst", f"{comparison.PAGE}.rst", "conf.py", *sections.DEFINITION_PAGES, *sections.RAW_FILES,
            *(f"{c.name}.{suffix}" for c in charts.CHARTS for suffix in charts.FORMATS)]


def _refuse_links(out: Path) -> None:
    """ReportError if ``out``, or a file this command would write into it, is a symbolic link.

    Writing a file follows a link to wherever it points, dangling or not; a
    results directory from someone else may hold ``report/index.rst`` linking to
    ``~/.bashrc``, and ``report/`` is where ``lakebench report DIR`` writes by
    default.  This command makes no link, so it follows none, and removes none
    either: the user looks at it first.
    """
    for path in (out, *(out / name for name in _written_files())):
        if path.is_symlink():
            raise ReportError(f"{path} is a symbolic link, and lakebench report writes through none: "
                              "remove it or give another --out")


def _refuse_foreign(index: Path) -> None:
    """ReportError if ``index`` exists and this command did not write it (a page written by hand)."""
    if index.exists() and not _generated(index):
        raise ReportError(f"{index} was not written by lakebench report: give another --out")


def _source_of(index: Path) -> str | None:
    """The results directory a page this command wrote was made from, or None."""
    if not _generated(index):
        return None
    first = index.read_text(encoding="utf-8").splitlines()[0]
    head, sep, rest = first.partition(f"{GENERATED} from ")
    return rest.rsplit(": edits are overwritten.", 1)[0] if sep else None


def _generated(path: Path) -> bool:
    """Whether ``path`` is a page (or conf.py) this command wrote (so it may replace or remove it)."""
    try:
        return path.is_file() and GENERATED_MARK in path.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, UnicodeDecodeError, IndexError):  # IndexError: an empty file
        return False


def build_site(results_dirs: list[Path], out: Path | None = None, *, benchmarks=(), image_format: str = "svg",
               title: str = DEFAULT_TITLE, report_command: str | None = None, compare_with=(),
               threshold: float | None = None) -> Path:
    """One page per results directory (one workload each) in ``out/WORKLOAD/``, and ``out/index.rst``
    linking them; returns the index's path.

    Each ``compare_with`` BASE goes with the directory of its workload.  The
    ``--benchmarks`` tables go on the first page.
    """
    from lakebench.report import fmt, sections

    loaded = [ReportData.load(d, benchmarks if i == 0 else ()) for i, d in enumerate(results_dirs)]
    names: list[str] = []
    for data in loaded:  # two runs of one workload: flat, flat-2
        stem = _directory_name(data.workload)
        name, n = stem, 2
        while name in names:
            name, n = f"{stem}-{n}", n + 1
        names.append(name)
    bases: dict[int, tuple[Path, dict]] = {}
    for path in compare_with:
        try:
            document = results.load(Path(path))
        except results.ResultsError as exc:
            raise ReportError(str(exc)) from None
        workload = results.get_path(document, "workload.name") or "flat"
        matches = [i for i, data in enumerate(loaded) if data.workload == workload]
        if len(matches) != 1:
            given = "none" if not matches else f"{len(matches)}"
            raise ReportError(f"--compare {path}: a run of the {workload} workload, and {given} of the results "
                              "directories given is one (it must be exactly one)")
        bases[matches[0]] = (Path(path), document)
    out = Path(out)
    _refuse_links(out)
    rows = [["workload", "systems", "results directory", "started"]]
    for i, (data, name) in enumerate(zip(loaded, names)):
        _write(data, out / name, image_format, f"{title}: {data.workload} workload", report_command,
               bases.get(i), threshold)
        rows.append([f":doc:`{_directory_name(data.workload)} <{name}/index>`",
                     fmt.escape(", ".join(dict.fromkeys(e["name"] for e in data.systems))),
                     fmt.literal(str(data.results_dir)), fmt.escape(data.document.get("started") or "?")])
    from lakebench.report import charts

    for c in charts.CHARTS:  # a single-directory report's figures, earlier in the same place
        for suffix in charts.FORMATS:
            (out / f"{c.name}.{suffix}").unlink(missing_ok=True)
    # Pages of workloads no longer given, which this site's last index listed: no toctree would hold
    # them.  Only those: a page another report wrote beside them (docs/performance/NAME, make docs) stays.
    for old in _site_pages(out / "index.rst"):
        page = out / old
        if old not in names and page.is_dir() and not page.is_symlink() and _generated(page / "index.rst"):
            shutil.rmtree(page)
    lines = [sections.GENERATED_NOTE, fmt.heading(title, "=", overline=True),
             "One page per workload, each from one results directory (one ``lakebench run --workload NAME``)."
             + (f" This index was generated by {fmt.literal(report_command)}." if report_command else "") + "\n"]
    for workload in dict.fromkeys(data.workload for data in loaded):
        described = sections.workload_description(workload)
        lines.append(f"- {fmt.literal(workload)}: {fmt.escape(described or 'not a workload this lakebench knows')}")
    lines += ["", fmt.list_table(rows, "Workloads", stub_columns=0),
              ".. toctree::\n   :maxdepth: 1\n\n" + "\n".join(f"   {name}/index" for name in names) + "\n"]
    index = out / "index.rst"
    _refuse_foreign(index)
    try:
        index.write_text("\n".join(lines), encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    return index


def _site_pages(index: Path) -> list[str]:
    """The page directories the site index ``index`` (one lakebench wrote) lists in its toctree."""
    if not _generated(index):
        return []
    entries = re.findall(r"^   ([A-Za-z0-9_-]+)/index$", index.read_text(encoding="utf-8"), flags=re.M)
    return [name for name in entries if name not in (".", "..")]


def _directory_name(workload: str) -> str:
    """The directory (and toctree entry) of a workload's page in a site: the workload's name, which
    comes from a results file, kept to letters, digits, ``-`` and ``_``: never a path, nor ``..``.

    >>> _directory_name("flat"), _directory_name("../x y/"), _directory_name("..")
    ('flat', 'x-y', 'workload')
    """
    return re.sub(r"[^A-Za-z0-9_-]+", "-", workload).strip("-") or "workload"


def docs_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a Sphinx ``conf.py``."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents):
        if (candidate / "conf.py").is_file():
            return candidate
    return None


def _within(path: Path, directories) -> bool:
    """Whether ``path`` is one of ``directories`` or inside one."""
    path = Path(path).resolve()
    return any(path == d or d in path.parents for d in (Path(x).resolve() for x in directories))


def _link_under(directory: Path) -> Path | None:
    """The first symbolic link at or under ``directory``, or None (none there, or no such directory)."""
    if directory.is_symlink():
        return directory
    for root, subdirectories, files in os.walk(directory):  # os.walk does not follow linked directories
        for name in subdirectories + files:
            if (Path(root) / name).is_symlink():
                return Path(root) / name
    return None


def build_html(source: Path, dest: Path) -> subprocess.CompletedProcess:
    """``sphinx-build -W --keep-going -b html SOURCE DEST`` in this interpreter."""
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(source), str(dest)]
    return subprocess.run(command, capture_output=True, text=True)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``report`` sub-command to ``lakebench``'s sub-parsers."""
    parser = subparsers.add_parser(
        "report",
        help="write the report (tables, charts, conclusions) of a results directory for the docs",
        description="Write OUT/index.rst (the summary first: systems ranked, durability, parent read "
        "first and steady; then result tables, operations, what was sent and held, charts, conclusions, and "
        "how it was measured) and one image per chart from RESULTS_DIR/results.json and latencies.csv. OUT "
        "defaults to RESULTS_DIR/report, beside the results; --out docs/performance makes it the "
        "documentation's page. With several RESULTS_DIRs (one per workload), one such page each in "
        "OUT/WORKLOAD/ and OUT/index.rst linking them. Nothing is measured again.",
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR",
                        help="a directory written by 'lakebench run'")
    parser.add_argument("more_results", type=Path, nargs="*", metavar="RESULTS_DIR",
                        help="more of them, typically one per workload: a page each")
    parser.add_argument("--compare", dest="compare_with", type=Path, action="append", default=[],
                        metavar="BASE", help="also write a page of the ratios of RESULTS_DIR's figures to BASE's "
                        "(as 'lakebench compare BASE RESULTS_DIR') and the verdict; with several RESULTS_DIRs, "
                        "BASE goes with the one of its workload (repeatable)")
    parser.add_argument("--threshold", type=compare.threshold_ratio, default=compare.DEFAULT_THRESHOLD, metavar="R",
                        help="for --compare: largest acceptable ratio NEW/BASE, at least 1 "
                        f"(default: {compare.DEFAULT_THRESHOLD})")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where the page and figures go (default: RESULTS_DIR/{REPORT_DIR}, beside the results, so "
                        f"no report replaces another's); --out {DOCS_OUT} makes it the documentation's "
                        "performance page")
    parser.add_argument("--html", action="store_true",
                        help="then build the Sphinx site containing OUT with sphinx-build -W "
                        "into its _build/html, and print where the pages are")
    parser.add_argument("--benchmarks", type=Path, action="append", default=[], metavar="JSON",
                        help="a pytest --benchmark-json file whose groups are tabulated too "
                        "(repeatable)")
    parser.add_argument("--format", dest="image_format", choices=("svg", "png"), default="svg",
                        help="image format of the charts (default: svg)")
    parser.add_argument("--title", default=DEFAULT_TITLE, help=f"title of the page (default: {DEFAULT_TITLE!r})")
    parser.set_defaults(func=main)
    return parser


def _command_line(args) -> str:
    parts = ["lakebench", "report", str(args.results_dir), *map(str, getattr(args, "more_results", None) or [])]
    if getattr(args, "out", None) is not None:
        parts += ["--out", str(args.out)]
    for path in getattr(args, "compare_with", None) or []:
        parts += ["--compare", str(path)]
    threshold = getattr(args, "threshold", compare.DEFAULT_THRESHOLD)
    if threshold != compare.DEFAULT_THRESHOLD:
        parts += ["--threshold", f"{threshold:g}"]
    for path in getattr(args, "benchmarks", None) or []:
        parts += ["--benchmarks", str(path)]
    if getattr(args, "image_format", "svg") != "svg":
        parts += ["--format", args.image_format]
    if getattr(args, "title", DEFAULT_TITLE) != DEFAULT_TITLE:
        parts += ["--title", args.title]
    if getattr(args, "html", False):
        parts.append("--html")
    return shlex.join(parts)


def main(args: argparse.Namespace) -> int:
    """Run ``lakebench report``: 0 on success, 2 on unreadable input, 1 if the HTML build fails."""
    dirs = [args.results_dir, *(getattr(args, "more_results", None) or [])]
    out = Path(getattr(args, "out", None) or default_out(dirs[0]))
    html = getattr(args, "html", False)
    bases = getattr(args, "compare_with", None) or []
    options = dict(benchmarks=getattr(args, "benchmarks", None) or [],
                   image_format=getattr(args, "image_format", "svg"), title=getattr(args, "title", DEFAULT_TITLE),
                   report_command=_command_line(args), threshold=getattr(args, "threshold", None))
    try:
        if len(dirs) > 1:
            index = build_site(dirs, out, compare_with=bases, **options)
        else:
            if len(bases) > 1:
                raise ReportError("one RESULTS_DIR takes one --compare BASE")
            index = build_report(dirs[0], out, compare_with=bases[0] if bases else None, **options)
    except ReportError as exc:
        print(f"lakebench report: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # matplotlib comes with the docs extra
        print(f"lakebench report: error: {exc.name or exc} is not installed "
              "(pip install 'lakebench[docs]')", file=sys.stderr)
        return 2
    print(f"Report: {index}  (" + ("a page per workload in its own directory)" if len(dirs) > 1
                                   else "figures alongside)"))
    if bases and len(dirs) == 1:
        print(f"Comparison: {Path(index).parent / (comparison.PAGE + '.rst')}")
    if not html:
        return 0
    source = docs_root(out)
    alone = source is None or source == out.resolve() and _generated(out / "conf.py")
    if not alone and _within(source, dirs):  # sphinx-build runs conf.py: not one that came with the results
        print(f"lakebench report: error: {source / 'conf.py'} is inside the results directory and was not "
              "written by lakebench report: not running it; give an --out outside the results", file=sys.stderr)
        return 2
    if alone:
        linked = _link_under(out / "_build")
        if linked is not None:  # sphinx-build would write its pages wherever the link points
            print(f"lakebench report: error: {linked} is a symbolic link, and lakebench report writes through "
                  "none: remove it or give another --out", file=sys.stderr)
            return 2
        try:  # outside any docs tree: the report is a site of its own, with the definitions its pages link to
            (out / "conf.py").write_text(f"# {GENERATED}\n" + STANDALONE_CONF, encoding="utf-8")
            for name, text in sections.definition_pages().items():
                (out / name).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"lakebench report: error: cannot write {out / 'conf.py'}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        source = out.resolve()
    dest = source / "_build" / "html"
    try:
        import sphinx  # noqa: F401
    except ImportError:
        print("lakebench report: error: sphinx is not installed (pip install 'lakebench[docs]')",
              file=sys.stderr)
        return 2
    done = build_html(source, dest)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        print(f"lakebench report: error: sphinx-build failed (exit code {done.returncode})", file=sys.stderr)
        return 1
    page = dest / index.resolve().relative_to(source).with_suffix(".html")
    print(f"HTML: {dest / 'index.html'}\n      {page}")
    return 0
