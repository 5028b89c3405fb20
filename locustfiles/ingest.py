"""Ingest the lakebench workload into an LDP server, with Locust.

    locust -f locustfiles/ingest.py --host http://127.0.0.1:8080/rest/ --headless -u 4 -r 4 \\
        --children 1000 [--parent NAME] [--server-pid PID --data-dir DIR] [--lakebench-out out.json]

``--host`` is the server's base URL; the parent container ``{host}{parent}``
must not exist yet.  The test stops by itself after exactly ``--children``
PUTs and the three timed retrievals of the parent.  All logic is in
:mod:`lakebench.locust`; see docs/locust.rst.
"""
from locust import events

from lakebench.locust.ingest import IngestUser, install_ingest  # noqa: F401  (Locust runs IngestUser)

install_ingest(events)
