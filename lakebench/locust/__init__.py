"""The lakebench workload as a Locust load test against any LDP server.

``locustfiles/ingest.py`` and ``locustfiles/retrieve.py`` are thin: the
logic lives here, so that lakebench's runner can drive the very same user
class through Locust as a library (:func:`lakebench.locust.driver.ingest_with_locust`).
One module per concern:

* :mod:`~lakebench.locust.dispensing`: which child indices exist, and who
  may send which (pure Python);
* :mod:`~lakebench.locust.coordination`: the dispenser's owner in each
  process (local runner, master, worker) and the messages between them;
* :mod:`~lakebench.locust.ingest`, :mod:`~lakebench.locust.retrieve`: the
  users and the event hooks of the two locustfiles;
* :mod:`~lakebench.locust.options`: their command-line options and the
  ingest's configuration;
* :mod:`~lakebench.locust.ldp_requests`: the HTTP requests and their Locust names;
* :mod:`~lakebench.locust.record`: the ``--lakebench-out`` record;
* :mod:`~lakebench.locust.monitoring`: the resource monitor under gevent;
* :mod:`~lakebench.locust.driver`: Locust as a library, for lakebench's runner;
* :mod:`~lakebench.locust.mixed`: the ``mixed`` workload's users (weighted
  creates, PATCHes, GETs), through the runner only.

**Monkey-patching.**  Importing :mod:`locust` monkey-patches the process with
gevent (sockets, threads, ``time.sleep``...).  These modules therefore
import Locust only when a Locust-based object is first used: the user
classes (``IngestUser``, ``ReadUser``, through their modules'
``__getattr__``) and :func:`~lakebench.locust.driver.ingest_with_locust`.
Importing any module of this package is harmless.  Call the Locust entry
points in a process of their own (lakebench's runner uses a fresh worker
process per measurement): after them, the process stays patched.
"""


class LoadTestError(RuntimeError):
    """The load test cannot start or went wrong (parent exists, bad reply...)."""
