"""Moved to :mod:`lakebench.systems.fcrepo`; this name stays only while
:mod:`lakebench.report.seed` imports it.  Delete it once that import is changed."""
from lakebench.systems.fcrepo import *  # noqa: F401,F403
