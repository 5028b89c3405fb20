"""``lakebench report``: a results directory as a page of the Sphinx site.

``lakebench report RESULTS_DIR`` reads ``results.json`` and ``latencies.csv``
(never re-measuring) and writes, into ``--out`` (default
``docs/performance``), ``index.rst`` (the report: command, environment,
data set, result tables, charts, conclusions) and one image per chart.
``docs/performance.rst`` points at that page.  With ``--html`` it then
builds the Sphinx site that contains ``--out`` (warnings are errors) and
prints where the pages are.

Modules: :mod:`~lakebench.report.data` (reading), :mod:`~.charts` (the chart
registry), :mod:`~.pages` (the reStructuredText), :mod:`~.conclusions`
(sentences from the numbers), :mod:`~.fmt` (units and markup).
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

from lakebench.report.data import ReportData, ReportError

__all__ = ["ReportData", "ReportError", "add_parser", "build_html", "build_report", "main"]

DEFAULT_OUT = Path("docs/performance")
DEFAULT_TITLE = "Performance report"


def build_report(results_dir: Path, out: Path = DEFAULT_OUT, *, benchmarks=(), image_format: str = "svg",
                 title: str = DEFAULT_TITLE, report_command: str | None = None) -> Path:
    """Write the report page and its figures into ``out``; returns the page's path.

    Raises :class:`ReportError` when the results or a benchmark file cannot be
    read, or ``out`` cannot be written (a file, no permission, a full disk).
    """
    from lakebench.report import charts, pages

    data = ReportData.load(results_dir, benchmarks)  # reading raises ReportError, never OSError
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ReportError(f"cannot write the report to {out}: not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        figures = charts.render(data, out, image_format)
        index = out / "index.rst"
        index.write_text(pages.page(data, figures, title, report_command), encoding="utf-8")
    except OSError as exc:
        where = exc.filename if exc.filename and Path(exc.filename) != out else None
        raise ReportError(f"cannot write the report to {out}: {exc.strerror or exc}"
                          + (f" ({where})" if where else "")) from None
    return index


def docs_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` holding a Sphinx ``conf.py``."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents):
        if (candidate / "conf.py").is_file():
            return candidate
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
        description="Write OUT/index.rst (command, environment, data set, result tables, charts, "
        "conclusions) and one image per chart from RESULTS_DIR/results.json and latencies.csv; "
        "docs/performance.rst links to it. Nothing is measured again.",
    )
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR",
                        help="a directory written by 'lakebench run'")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where the page and figures go, inside the Sphinx docs tree (default: {DEFAULT_OUT})")
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
    parts = ["lakebench", "report", str(args.results_dir)]
    if args.out != DEFAULT_OUT:
        parts += ["--out", str(args.out)]
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
    out = Path(getattr(args, "out", None) or DEFAULT_OUT)
    html = getattr(args, "html", False)
    source = docs_root(out) if html else None
    if html and source is None:
        print(f"lakebench report: error: --html needs OUT inside a Sphinx docs tree "
              f"(no conf.py at or above {out})", file=sys.stderr)
        return 2
    try:
        index = build_report(
            args.results_dir, out,
            benchmarks=getattr(args, "benchmarks", None) or [],
            image_format=getattr(args, "image_format", "svg"),
            title=getattr(args, "title", DEFAULT_TITLE),
            report_command=_command_line(args),
        )
    except ReportError as exc:
        print(f"lakebench report: error: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # matplotlib comes with the docs extra
        print(f"lakebench report: error: {exc.name or exc} is not installed "
              "(pip install 'lakebench[docs]')", file=sys.stderr)
        return 2
    print(f"Report: {index}  (figures alongside)")
    if not html:
        return 0
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
