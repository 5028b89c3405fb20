"""Moved to :mod:`lakebench.systems.lakesuperior`; this name stays only while
:mod:`lakebench.report.seed` imports it.  Delete it once that import is changed."""
from lakebench.systems.lakesuperior import *  # noqa: F401,F403
