"""A read mix against an existing LDP repository, with Locust.

    locust -f locustfiles/retrieve.py --host http://127.0.0.1:8080/rest/ --headless -u 4 -r 4 -t 30s \\
        [--parent NAME] [--children N] [--parent-ratio 0.05] [--parent-variant full]

Random children mostly, the parent now and then; children are discovered
from the parent's ``ldp:contains`` triples, or given by ``--children``.
Bounded by ``--run-time`` as usual.  Logic in :mod:`lakebench.locust`.
"""
from locust import events

from lakebench.locust.retrieve import ReadUser, install_retrieve  # noqa: F401  (Locust runs ReadUser)

install_retrieve(events)
