"""What a run measured, as files: the printed table and the report read them and never re-measure.

A results directory holds:

* ``results.json``: environment, workload, and one entry per system
  (means over repeated runs, their standard deviations, each run's record,
  and the monitor's series);
* ``latencies.csv``: ``system,children,literal_length,variant,run,index,seconds``
  for every operation of the workload's primary kind (``flat``: every child created).

docs/results.rst documents both.  The modules, each importing only those above it:

* :mod:`~lakebench.results.stats`: every statistic over measured times (percentiles, means, rates);
* :mod:`~lakebench.results.schema`: the layout of results.json (:data:`FIELDS`, :func:`validate`);
* :mod:`~lakebench.results.aggregate`: a system entry from its runs, the comparison with the reference;
* :mod:`~lakebench.results.files`: :func:`write`, :func:`load` (checked), :func:`load_latencies`.

Their public names are here too:

>>> from lakebench import results
>>> results.get_path(results.latency_summary([0.001, 0.003]), "per_resource_ms.p50")
2.0
"""
from lakebench.results import stats
from lakebench.results.aggregate import BUDGET_RAN_OUT, NOT_ENOUGH_DISK, aggregate, compare_with_reference, skipped_entry
from lakebench.results.files import load, load_latencies, write
from lakebench.results.schema import (COMPARED, FIELDS, LATENCY_COLUMNS, SCHEMA_VERSION, Field, ResultsError,
                                      case_children, case_label, case_of, held_triples, get_path, latency_key, retrievals, validate)
from lakebench.results.stats import latency_summary, operations_summary, percentile

__all__ = [
    "BUDGET_RAN_OUT", "COMPARED", "FIELDS", "LATENCY_COLUMNS", "NOT_ENOUGH_DISK", "SCHEMA_VERSION", "Field", "ResultsError", "aggregate",
    "case_children", "case_label", "case_of", "held_triples", "compare_with_reference", "get_path", "latency_key", "latency_summary",
    "load", "load_latencies", "operations_summary", "percentile", "retrievals", "skipped_entry", "stats", "validate",
    "write",
]
