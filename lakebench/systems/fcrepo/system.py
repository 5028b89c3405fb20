"""The reference: a real Fedora Commons repository over LDP.

lakebench downloads Fedora (4.7.5 by default, ModeShape) and Jetty from
Maven Central, starts the JVM on a free loopback port with every file under
the run's data directory (:mod:`lakebench.systems.fcrepo.server`), drives
it with the generic LDP client, watches the JVM and the repository's home
directory, and stops it afterwards.  Given ``--system-url`` it uses that running Fedora instead;
memory and disk are then unknown.
"""
from __future__ import annotations

from lakebench.argtypes import Choice
from lakebench.durability import Durability
from lakebench.systems.base import Option
from lakebench.systems.fcrepo.install import DEFAULT_VERSION, JETTY_RUNNER_VERSION
from lakebench.systems.fcrepo.server import start
from lakebench.systems.ldp import LabelledVersions, LdpSystem
from lakebench.work import KEPT, NONE, ON_REQUEST, PER_CHANGE


class FcrepoSystem(LabelledVersions, LdpSystem):
    name = "fcrepo"
    # Fedora's own persistence settings decide; lakebench does not change them.
    durability = Durability.SERVER_DEFAULT
    version = DEFAULT_VERSION
    # Fedora 4: versions on request (POST to fcr:versions); a JMS message per change (its
    # in-VM broker stays, without network connectors); a deleted resource leaves a tombstone.
    WORK = {"versions": ON_REQUEST, "events": PER_CHANGE, "tombstones": KEPT}
    DISK_PER_TRIPLE = 900  # 779-816 B at 2,000 children (docs/runs/users), 887 at 3,000 (docs/runs/http)

    def start_server(self) -> str:
        self.fedora = None
        if self.options.get("system_url"):
            return self.options["system_url"]
        self.fedora = start(
            version=self.options.get("fcrepo_version") or self.version,
            data_dir=self.data_dir / "fcrepo",
            heap=self.options.get("fcrepo_heap", "2g"),
            **self.start_options(),
        )
        self.server_pid = self.fedora.pid
        return self.fedora.base_url

    def start_options(self) -> dict:
        """What else :func:`~lakebench.systems.fcrepo.server.start` is given (this class's options)."""
        return {}

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
    # An OCFL version of every change (fcrepo.autoversioning.enabled, true by default) unless
    # --system-option autoversioning=off; JMS and authorization are off as lakebench starts it.
    WORK = {"versions": PER_CHANGE, "events": NONE, "access": NONE, "tombstones": KEPT}
    DISK_PER_TRIPLE = 460  # 395-455 B at 2,000 and 3,000 children (docs/runs/users, docs/runs/http)
    OPTIONS = {"autoversioning": Option("an OCFL version of every change (fcrepo.autoversioning.enabled); off: "
                                        "versions on request only, like the other systems", Choice("on", "off"),
                                        "on")}

    # Fedora 6 keeps its versions as Memento (Fedora API 4), as the LDP client reads them.
    create_version = LdpSystem.create_version
    list_versions = LdpSystem.list_versions
    get_version = LdpSystem.get_version

    def start_options(self) -> dict:
        return {"autoversioning": self.options.get("autoversioning", "on") == "on"}

    def declared_work(self) -> dict[str, str]:
        declared = super().declared_work()
        if self.options.get("autoversioning", "on") == "off":
            declared["versions"] = ON_REQUEST
        return declared
