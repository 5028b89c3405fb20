"""Fedora Commons, the benchmark's reference: fetched, run and stopped by lakebench.

* :mod:`~lakebench.systems.fcrepo.install`: the war and a Jetty runner from
  Maven Central into the cache, SHA-1 checked;
* :mod:`~lakebench.systems.fcrepo.config`: the JVM's command line and the
  files written beside the repository (loopback-only ActiveMQ, logging);
* :mod:`~lakebench.systems.fcrepo.server`: :func:`start`, :func:`status`,
  :func:`stop` and ``lakebench fcrepo fetch|start|stop|status``;
* :mod:`~lakebench.systems.fcrepo.system`: the ``fcrepo`` and ``fcrepo6``
  systems the runner measures.

Layout of a data directory::

    fcrepo.log      stdout + stderr of the JVM (this start only)
    fedora.json     state file: pid, port, version, base URL (while running)
    activemq.xml    loopback-safe ActiveMQ broker configuration (4.x only)
    logging.properties  java.util.logging settings that mute a known harmless warning
    home/           the repository itself (fcrepo.home and all its stores)
    tmp/            java.io.tmpdir: Jetty's unpacked war, scratch; emptied at start

``home/`` is what the repository costs on disk; ``tmp/`` is not part of it.
This package's names are the modules' own, gathered.
"""
from lakebench.systems.external import default_cache_dir
from lakebench.systems.fcrepo.config import (ACTIVEMQ_FILE, HOME_DIR, JAVA_INSTALL_HINT, JUL_CONFIG, JUL_FILE,
                                             TMP_DIR, find_java, java_command, write_activemq_config)
from lakebench.systems.fcrepo.install import (DEFAULT_VERSION, JETTY_RUNNER_VERSION, MAVEN_CENTRAL, PINNED_SHA1,
                                              FedoraArtifacts, FedoraError, download, fetch, maven_url,
                                              prepare_webapp, sha1_of)
from lakebench.systems.fcrepo.server import COMMAND, LOG_FILE, STATE_FILE, FedoraProcess, start, status, stop

#: ``lakebench fcrepo``: ``add_parser(subparsers)``; ``main(args)`` runs it.
add_parser = COMMAND.add_parser
main = COMMAND
