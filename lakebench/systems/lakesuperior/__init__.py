"""LAKEsuperior 1.0.0a21, the seed report's second system: installed, run and stopped by lakebench.

LAKEsuperior is a Python LDP repository on LMDB (Flask under gunicorn).

* :mod:`~lakebench.systems.lakesuperior.install`: the sdist, SHA-256
  checked, built into a virtualenv of its own in the cache, with the pinned
  runtime of ``requirements.txt`` and its C adapted to Python 3.11 by
  :mod:`~lakebench.systems.lakesuperior.py311`;
* :mod:`~lakebench.systems.lakesuperior.config`: its configuration in the
  data directory, and the repository's bootstrap;
* :mod:`~lakebench.systems.lakesuperior.server`: :func:`start`,
  :func:`status`, :func:`stop` and ``lakebench lakesuperior fetch|start|stop|status``;
* :mod:`~lakebench.systems.lakesuperior.system`: the ``lakesuperior``
  system the runner measures.

Layout of a data directory::

    lakesuperior.json   state file: pid, port, workers, base URL (while running)
    lakesuperior.log    stdout + stderr of gunicorn (this start only)
    gunicorn.conf.py    LAKEsuperior's own gunicorn settings, kept in the foreground
    etc/                the configuration (FCREPO_CONFIG_DIR): the package's
                        etc.defaults with application.yml and gunicorn.yml set here
    repository/         the repository: ldprs_store/ (LMDB), ldpnr_store/ (binaries)
    server/             gunicorn's run/fcrepo.pid and log/ (access, error, application)

``repository/`` is what the repository costs on disk; the logs are not part
of it.  This package's names are the modules' own, gathered.
"""
from lakebench.systems.lakesuperior.config import (DEFAULT_WORKERS, ETC_DIR, GUNICORN_CONF, REPOSITORY_DIR,
                                                   SERVER_DIR, WORKERS, bootstrap, configure)
from lakebench.systems.lakesuperior.install import (PYTHON, READY_MARKER, REQUIREMENTS, SDIST_NAME, SDIST_SHA256,
                                                    VERSION, Installation, LakesuperiorError, clean_env, fetch,
                                                    install_root, installed, sha256_of)
from lakebench.systems.lakesuperior.server import (COMMAND, LDP_ROOT, LOG_FILE, STATE_FILE, LakesuperiorProcess,
                                                   start, status, stop)

#: ``lakebench lakesuperior``: ``add_parser(subparsers)``; ``main(args)`` runs it.
add_parser = COMMAND.add_parser
main = COMMAND
