"""Registry of measured systems: name -> "module:Class".

Adding a system is one module in this package and one line here.  Modules
are imported only when their system is run, so a missing optional
dependency of one system never stops the others.
"""
from __future__ import annotations

from importlib import import_module

SYSTEMS: dict[str, str] = {
    "lmdb": "lakebench.systems.lmdb:LmdbSystem",
    "lmdb-nosync": "lakebench.systems.lmdb:LmdbNosyncSystem",
    "memory": "lakebench.systems.memory:MemorySystem",
    "oxigraph": "lakebench.systems.oxigraph:OxigraphSystem",
    "fcrepo": "lakebench.systems.fcrepo:FcrepoSystem",
    "fcrepo6": "lakebench.systems.fcrepo:Fcrepo6System",
    "lakesuperior": "lakebench.systems.lakesuperior:LakesuperiorSystem",
    "ldp": "lakebench.systems.ldp:LdpSystem",
    "lmdb-http": "lakebench.systems.lmdb_http:LmdbHttpSystem",
    "lmdb-http-nosync": "lakebench.systems.lmdb_http:LmdbHttpNosyncSystem",
}


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
