"""The reference: a real Fedora Commons repository over LDP.

lakebench downloads Fedora (4.7.5 by default, ModeShape) and Jetty from
Maven Central, starts the JVM on a free loopback port with every file under
the run's data directory (:mod:`lakebench.systems.fcrepo.server`), drives
it with the generic LDP client, watches the JVM and the repository's home
directory, and stops it afterwards.  Given ``--system-url`` it uses that running Fedora instead;
memory and disk are then unknown.
"""
from __future__ import annotations

from lakebench.systems.fcrepo.install import DEFAULT_VERSION, JETTY_RUNNER_VERSION
from lakebench.systems.fcrepo.server import start
from lakebench.systems.ldp import LdpSystem
from lakebench.durability import Durability


class FcrepoSystem(LdpSystem):
    name = "fcrepo"
    # Fedora's own persistence settings decide; lakebench does not change them.
    durability = Durability.SERVER_DEFAULT
    version = DEFAULT_VERSION

    def start_server(self) -> str:
        self.fedora = None
        if self.options.get("system_url"):
            return self.options["system_url"]
        self.fedora = start(
            version=self.options.get("fcrepo_version") or self.version,
            data_dir=self.data_dir / "fcrepo",
            heap=self.options.get("fcrepo_heap", "2g"),
        )
        self.server_pid = self.fedora.pid
        return self.fedora.base_url

    def disk_path(self):
        return self.fedora.home if self.fedora is not None else None

    def version_text(self) -> str | None:
        if self.fedora is None:  # a Fedora of the user's (--system-url): what it says it is
            return super().version_text()
        version = self.options.get("fcrepo_version") or self.version
        heap = self.options.get("fcrepo_heap", "2g")
        return f"Fedora {version} (jetty-runner {JETTY_RUNNER_VERSION}, heap {heap})"

    def close(self) -> None:
        super().close()
        if self.fedora is not None:
            self.fedora.stop()


class Fcrepo6System(FcrepoSystem):
    """Fedora 6.1.0, the current OCFL-based line, as a second reference."""

    name = "fcrepo6"
    version = "6.1.0"
