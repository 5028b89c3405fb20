"""How LAKEsuperior is run: its configuration written into the data directory.

:func:`configure` writes ``etc/`` (prod mode, message queue route off,
loopback only, ``workers`` gunicorn sync workers) and ``gunicorn.conf.py``;
:func:`bootstrap` creates a new repository.  The data directory's layout is
in :mod:`lakebench.systems.lakesuperior`.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lakebench import argtypes
from lakebench.systems.lakesuperior.install import Installation, LakesuperiorError, clean_env

#: gunicorn sync workers by default: one, so that memory compares with a
#: single-process server (LAKEsuperior's own default is 2 x CPUs + 1).
DEFAULT_WORKERS = 1
#: gunicorn workers ``lakebench lakesuperior start --workers`` accepts.
WORKERS = argtypes.Bounded(int, 1, 64)

GUNICORN_CONF = "gunicorn.conf.py"
ETC_DIR = "etc"
REPOSITORY_DIR = "repository"
SERVER_DIR = "server"


#: Run by LAKEsuperior's Python: the package's etc.defaults, with the settings
#: lakebench needs, into etc/ (PyYAML is in that virtualenv, not in lakebench's).
_CONFIGURE = r"""
import json, os, shutil, sys, yaml
import lakesuperior
etc, settings = sys.argv[1], json.loads(sys.argv[2])
shutil.copytree(os.path.join(lakesuperior.basedir, "etc.defaults"), etc, dirs_exist_ok=True)
for name, changes in settings.items():
    path = os.path.join(etc, name)
    with open(path) as f:
        config = yaml.safe_load(f) or {}
    for key, value in changes.items():
        target = config
        *parents, last = key.split(".")
        for part in parents:
            target = target[part]
        target[last] = value
    with open(path, "w") as f:
        f.write("# Written by lakebench from LAKEsuperior's etc.defaults.\n")
        yaml.safe_dump(config, f, default_flow_style=False, sort_keys=False)
"""

_GUNICORN_CONF = """\
# Written by lakebench.  LAKEsuperior's own gunicorn settings (lakesuperior.wsgi,
# which reads etc/gunicorn.yml: bind, workers, pid file, logs), with one change:
# in prod mode it would daemonize; here gunicorn stays in the foreground, so
# the process lakebench started is the master of every worker.
from lakesuperior.wsgi import *  # noqa: F401,F403

daemon = False
"""


def configure(inst: Installation, data_dir: Path, port: int, workers: int) -> dict:
    """Write etc/ and gunicorn.conf.py for a server on 127.0.0.1:``port``; returns the settings."""
    settings = {
        "application.yml": {
            "app_mode": "prod",
            "data_dir": str(data_dir / REPOSITORY_DIR),
            # The default route publishes every change to a STOMP broker on
            # 127.0.0.1:61613; there is none, and the seed ran without one.
            "messaging.routes": [],
        },
        "gunicorn.yml": {
            "data_dir": str(data_dir / SERVER_DIR),
            "listen_addr": "127.0.0.1",
            "listen_port": port,
            "workers": workers,
        },
        "logging.yml": {
            "handlers.logfile.filename": str(data_dir / SERVER_DIR / "log" / "lakesuperior.log"),
        },
    }
    (data_dir / SERVER_DIR / "log").mkdir(parents=True, exist_ok=True)
    (data_dir / REPOSITORY_DIR).mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(inst.python), "-c", _CONFIGURE, str(data_dir / ETC_DIR), json.dumps(settings)],
                          capture_output=True, text=True, env=clean_env(), cwd=data_dir)
    if done.returncode != 0:
        raise LakesuperiorError(f"writing LAKEsuperior's configuration failed:\n{done.stderr.strip()}")
    (data_dir / GUNICORN_CONF).write_text(_GUNICORN_CONF)
    return settings


def bootstrap(inst: Installation, data_dir: Path) -> None:
    """``lsup-admin bootstrap`` (it asks for confirmation on stdin) on a new repository."""
    env = clean_env(FCREPO_CONFIG_DIR=str(data_dir / ETC_DIR))
    done = subprocess.run([str(inst.lsup_admin), "bootstrap"], input="yes\n", capture_output=True,
                          text=True, env=env, cwd=data_dir, timeout=120)
    # It prints an empty "Error in sys.excepthook" at exit, with exit code 0.
    store = data_dir / REPOSITORY_DIR / "ldprs_store" / "data.mdb"
    if done.returncode != 0 or not store.exists():
        raise LakesuperiorError(f"lsup-admin bootstrap failed (exit code {done.returncode}):\n"
                                f"{(done.stdout + done.stderr).strip()[-2000:]}")
