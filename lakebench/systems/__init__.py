"""Registry of measured systems: name -> "module:Class"; and of the external servers
lakebench installs and runs: command name -> "module:COMMAND".

Adding a system is one module in this package and one line here.  An
external server is a folder (see :mod:`lakebench.systems.external`) whose
``server.py`` holds its ``COMMAND``: the folder alone gives it its
``lakebench NAME fetch|start|stop|status``.  Modules are imported only when
their system is run, so a missing optional dependency of one system never
stops the others.
"""
from __future__ import annotations

import argparse
from importlib import import_module
from pathlib import Path

SYSTEMS: dict[str, str] = {
    "lmdb": "lakebench.systems.lmdb:LmdbSystem",
    "lmdb-nosync": "lakebench.systems.lmdb:LmdbNosyncSystem",
    "memory": "lakebench.systems.memory:MemorySystem",
    "oxigraph": "lakebench.systems.oxigraph:OxigraphSystem",
    "fcrepo": "lakebench.systems.fcrepo.system:FcrepoSystem",
    "fcrepo6": "lakebench.systems.fcrepo.system:Fcrepo6System",
    "lakesuperior": "lakebench.systems.lakesuperior.system:LakesuperiorSystem",
    "ldp": "lakebench.systems.ldp:LdpSystem",
    "lmdb-http": "lakebench.systems.lmdb_http:LmdbHttpSystem",
    "lmdb-http-nosync": "lakebench.systems.lmdb_http:LmdbHttpNosyncSystem",
}



def _server_folders() -> dict[str, str]:
    """Each folder of this package with a ``server.py``: its name -> ``"module:COMMAND"`` (found on
    disk, nothing imported).

    >>> _server_folders()["fcrepo"]
    'lakebench.systems.fcrepo.server:COMMAND'
    """
    here = Path(__file__).parent
    return {folder.name: f"{__name__}.{folder.name}.server:COMMAND"
            for folder in sorted(here.iterdir()) if (folder / "server.py").is_file()}


#: ``lakebench NAME fetch|start|stop|status``: a :class:`lakebench.systems.external.Command` each.
SERVERS: dict[str, str] = _server_folders()


def target(name: str) -> str:
    """The ``"module:Class"`` registered as ``name``."""
    try:
        return SYSTEMS[name]
    except KeyError:
        raise KeyError(f"unknown system {name!r}; known: {', '.join(SYSTEMS)}") from None


def load_target(spec: str):
    """The class a ``"module:Class"`` string names."""
    module, _, cls = spec.partition(":")
    return getattr(import_module(module), cls)


def load(name: str):
    """The System class registered as ``name``."""
    return load_target(target(name))


def parse_options(names: list[str], given: list[tuple[str, str]]) -> dict:
    """``--system-option`` ``(key, text)`` pairs for systems ``names``, each read by the type
    the systems that take it declare (``System.OPTIONS``); ValueError, in one line, for a
    key none of them takes, a key given twice, or a value out of range.

    >>> parse_options(["lmdb-http", "lmdb"], [("worker_class", "gthread"), ("client_timeout", "5")])
    Traceback (most recent call last):
    ...
    ValueError: --system-option for lmdb-http: client_timeout applies to the gevent worker, not gthread
    >>> parse_options(["lmdb-http", "lmdb"], [("worker_class", "gevent"), ("server_workers", "2")])
    {'worker_class': 'gevent', 'server_workers': 2}
    >>> parse_options(["lmdb"], [("worker_class", "sync")])
    Traceback (most recent call last):
    ...
    ValueError: --system-option worker_class: no system of lmdb takes it (lmdb takes no option)
    """
    classes = {name: load(name) for name in names}
    values: dict = {}
    for key, text in given:
        takers = [cls for cls in classes.values() if key in cls.OPTIONS]
        if not takers:
            taken = "; ".join(f"{name}: {', '.join(cls.OPTIONS)}" for name, cls in classes.items() if cls.OPTIONS)
            raise ValueError(f"--system-option {key}: no system of {', '.join(names)} takes it ("
                             + (f"options taken: {taken}" if taken else
                                f"{'they take' if len(names) > 1 else f'{names[0]} takes'} no option") + ")")
        if key in values:
            raise ValueError(f"--system-option {key} is given twice")
        try:
            values[key] = takers[0].OPTIONS[key].type(text)
            for cls in takers[1:]:  # the same key may mean the same to several systems, each checks it
                cls.OPTIONS[key].type(text)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise ValueError(f"--system-option {key}={text}: {exc}") from None
    for name, cls in classes.items():
        try:
            cls.check_options({key: value for key, value in values.items() if key in cls.OPTIONS})
        except ValueError as exc:
            raise ValueError(f"--system-option for {name}: {exc}") from None
    return values


def options_help() -> str:
    """Every system's ``--system-option`` keys, as ``lakebench run --help`` lists them."""
    by_key: dict[str, tuple[object, list[str]]] = {}
    for name in SYSTEMS:
        try:
            cls = load(name)
        except ImportError:  # a system whose optional dependency is missing
            continue
        for key, option in cls.OPTIONS.items():
            by_key.setdefault(key, (option, []))[1].append(name)
    return "; ".join(f"{key}: [{', '.join(names)}] {option.describe()}" for key, (option, names) in by_key.items())
