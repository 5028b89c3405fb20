"""How Fedora is run: every data location under one data directory, loopback only.

:func:`java_command` is the JVM's command line; :func:`write_activemq_config`
and :data:`JUL_CONFIG` are the two files lakebench writes beside the
repository.  The data directory's layout is in :mod:`lakebench.systems.fcrepo`.
"""
from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

from lakebench.systems.fcrepo.install import FedoraArtifacts, FedoraError, fedora_line

ACTIVEMQ_FILE = "activemq.xml"
JUL_FILE = "logging.properties"
HOME_DIR = "home"
TMP_DIR = "tmp"

JAVA_INSTALL_HINT = "install a Java runtime with: apt-get install -y openjdk-17-jre-headless"


def find_java(java: str = "java") -> str:
    """The path of the ``java`` executable, or a FedoraError saying how to install one."""
    found = shutil.which(java)
    if found is None:
        raise FedoraError(f"Java not found ({java!r} is not an executable on PATH); "
                          f"Fedora needs Java 11 or later: {JAVA_INSTALL_HINT}")
    return found


def write_activemq_config(war: Path, dest: Path) -> Path:
    """Write the war's ActiveMQ broker configuration without its network connectors.

    Fedora 4's default ``config/activemq.xml`` opens OpenWire and STOMP on
    0.0.0.0:61616 and 0.0.0.0:61613, exposing the reference on every
    interface and making two Fedoras collide.  Fedora itself reaches the
    broker in-VM (``vm://localhost``), so the connectors can simply go: the
    broker and the JMS publishing Fedora does on every change stay as in a
    stock installation, but nothing listens.
    """
    with zipfile.ZipFile(war) as z:
        try:
            original = z.read("WEB-INF/classes/config/activemq.xml").decode("utf-8")
        except KeyError:
            raise FedoraError(f"{war} has no WEB-INF/classes/config/activemq.xml; "
                              f"cannot make its JMS broker loopback-only") from None
    config, n = re.subn(r"\s*<transportConnectors>.*?</transportConnectors>", "", original, flags=re.S)
    if n != 1 or "transportConnector" in config:
        # Refuse rather than silently start a broker open to the network.
        raise FedoraError(f"unexpected ActiveMQ configuration in {war}: "
                          f"cannot remove its transport connectors")
    note = ("\n<!-- Written by lakebench from the war's config/activemq.xml with the transport\n"
            "     connectors removed: Fedora uses the broker in-VM, and nothing listens. -->\n")
    config = config.replace("?>", "?>" + note, 1)
    dest.write_text(config, encoding="utf-8")
    return dest


# Jersey in the 4.x war looks for JAXB and javax.activation, which left the
# JDK in Java 11; it works without them but logs ~20,000 lines of stack
# traces per start, which would bury any real error in the log.
JUL_CONFIG = """\
# Written by lakebench: java.util.logging as the JDK default, but without
# Jersey's start-up warnings about JAXB / javax.activation missing on Java 11+.
handlers = java.util.logging.ConsoleHandler
.level = INFO
java.util.logging.ConsoleHandler.level = ALL
org.glassfish.jersey.internal.Errors.level = SEVERE
"""


def java_command(java: str, artifacts: FedoraArtifacts, webapp: Path, data_dir: Path,
                 port: int, heap: str, autoversioning: bool = True) -> list[str]:
    """The full command line that runs Fedora with every data location under ``data_dir``
    (``autoversioning`` False: Fedora 6 without its version of every change)."""
    home = data_dir / HOME_DIR
    arjuna = home / "arjuna"
    props = {
        "fcrepo.home": home,
        # Arjuna (the transaction manager) defaults its object store to the
        # user's home directory; both property spellings are read.
        "com.arjuna.ats.arjuna.common.ObjectStoreEnvironmentBean.default.objectStoreDir": arjuna,
        "com.arjuna.ats.arjuna.objectstore.objectStoreDir": arjuna,
        "java.io.tmpdir": data_dir / TMP_DIR,
        "java.util.logging.config.file": data_dir / JUL_FILE,
        "fcrepo.log": "WARN",
    }
    if fedora_line(artifacts.version) == 4:
        props.update({
            "fcrepo.modeshape.configuration": "classpath:/config/file-simple/repository.json",
            "fcrepo.object.directory": home / "objects",
            "fcrepo.binary.directory": home / "binaries",
            "fcrepo.activemq.directory": home / "activemq",
            "fcrepo.activemq.configuration": (data_dir / ACTIVEMQ_FILE).as_uri(),
        })
    else:
        # Fedora 6 keeps its OCFL root, H2 database and staging under
        # fcrepo.home; JMS off means no broker.  Its H2 URL asks for
        # FILE_LOCK=SOCKET, which opens a lock-watchdog server socket on every
        # interface unless H2 is told its bind address.
        props.update({
            "fcrepo.auth.enabled": "false",
            "fcrepo.jms.enabled": "false",
            "h2.bindAddress": "127.0.0.1",
        })
        if not autoversioning:
            props["fcrepo.autoversioning.enabled"] = "false"
    return [
        java, f"-Xmx{heap}",
        # Libraries in both wars reflect into java.lang, closed since Java 16.
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        *(f"-D{k}={v}" for k, v in props.items()),
        "-jar", str(artifacts.jetty_runner),
        "--host", "127.0.0.1", "--port", str(port), "--path", "/", str(webapp),
    ]



def prepare_data_dir(artifacts: FedoraArtifacts, data_dir: Path) -> None:
    """Make ``data_dir`` ready for a start: ``home/`` kept, ``tmp/`` emptied, the config files written."""
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / HOME_DIR).mkdir(exist_ok=True)
    # tmp holds only scratch (Jetty unpacks the war there on every start),
    # so clear what a killed JVM left behind rather than let it pile up.
    shutil.rmtree(data_dir / TMP_DIR, ignore_errors=True)
    (data_dir / TMP_DIR).mkdir()
    (data_dir / JUL_FILE).write_text(JUL_CONFIG)
    if fedora_line(artifacts.version) == 4:
        write_activemq_config(artifacts.war, data_dir / ACTIVEMQ_FILE)
