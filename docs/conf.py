"""Sphinx configuration of the lakebench documentation."""
import re
from pathlib import Path

project = "lakebench"
author = "lakebench developers"
# Without it the theme's footer reads "Copyright ©" and nothing more.
copyright = "2026, the lakebench developers"
extensions = []
html_theme = "furo"
exclude_patterns = ["_build"]
# The report's stylesheet (tables that scroll with the system column in view), one file for
# the docs site and for a report built alone.
import lakebench.report  # noqa: E402 - the docs are built with lakebench installed

html_static_path = [str(Path(lakebench.report.__file__).parent / "static")]
html_css_files = ["lakebench.css"]

#: The performance reports, written by 'lakebench report' (not kept by hand): ``make bench``'s
#: (performance/index.rst) and ``make docs``'s, one per run kept in docs/runs (performance/NAME/index.rst).
DOCS = Path(__file__).resolve().parent
REPORT = DOCS / "performance" / "index.rst"


def _list_report_once_made(app, docname, source):
    """performance.rst lists a report in its toctree only once it exists,
    so the site builds (with -W) before the first report too."""
    if docname == "performance":
        source[0] = re.sub(r"^   (performance/(?:[A-Za-z0-9_-]+/)?index)\n",
                           lambda m: m.group(0) if (DOCS / f"{m.group(1)}.rst").exists() else "",
                           source[0], flags=re.M)


def setup(app):
    app.connect("source-read", _list_report_once_made)
    # Read performance.rst again on every build: whether the report exists may have changed.
    app.connect("env-get-outdated", lambda app, env, added, changed, removed: ["performance"])
# Options stay as typed: "--binary-size", not an en dash.
smartquotes = False
