"""Fedora's files: the war and a Jetty runner from Maven Central, verified and cached.

:func:`fetch` downloads them into the cache (``$LAKEBENCH_CACHE`` or
``~/.cache/lakebench``), checking SHA-1 checksums: pinned here for the
tested artifacts, else Maven Central's own ``.sha1`` file.  A verified
cached copy is used offline.  :func:`prepare_webapp` gives Jetty what to run
(6.x: the war unpacked once, without authentication).  Two lines of Fedora
are supported (``notes/fedora.md``): 4.x (ModeShape; 4.7.5 is the default
and the tested one) and 6.x (OCFL; 6.1.0 is the tested one).
"""
from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from lakebench.systems.external import cache_dir as _cache_dir
from lakebench.systems.external import file_digest, want_progress

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
DEFAULT_VERSION = "4.7.5"
JETTY_RUNNER_VERSION = "9.4.58.v20250814"

#: Checksums pinned in lakebench for the artifacts it is tested with, so a
#: compromised or corrupted mirror cannot substitute them.  Other versions
#: are checked against the ``.sha1`` file Maven Central publishes beside them.
PINNED_SHA1 = {
    ("org.fcrepo", "fcrepo-webapp", "4.7.5", "war"): "243df71ceef8dca9309f230f2abb31c195368c5c",
    ("org.eclipse.jetty", "jetty-runner", JETTY_RUNNER_VERSION, "jar"):
        "4be8777479cb7aa5ec422c872e27e0f268e98b86",
}


class FedoraError(RuntimeError):
    """Fedora could not be fetched, started, found or stopped; the message says why."""


@dataclass(frozen=True)
class FedoraArtifacts:
    """Verified local copies of what it takes to run one Fedora version."""

    version: str
    war: Path  # org.fcrepo:fcrepo-webapp:<version>:war
    jetty_runner: Path  # org.eclipse.jetty:jetty-runner:<JETTY_RUNNER_VERSION>:jar
    cache_dir: Path


def maven_url(group: str, artifact: str, version: str, ext: str, repository: str = MAVEN_CENTRAL) -> str:
    """The URL of one artifact in a Maven 2 layout repository."""
    base = repository if repository.endswith("/") else repository + "/"
    return f"{base}{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.{ext}"


def sha1_of(path: Path) -> str:
    """Hex SHA-1 of a file."""
    return file_digest(path, "sha1")


def download(url: str, dest: Path, sha1: str | None = None, progress: bool | None = None) -> Path:
    """Download ``url`` to ``dest``, checking the SHA-1 if one is given.

    The bytes go to a temporary file beside ``dest`` that is renamed into
    place only once complete and verified, so an interrupted or corrupted
    download never leaves a file that looks good.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    show = want_progress(progress)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha1()
        try:
            response = urllib.request.urlopen(url, timeout=60)
        except urllib.error.HTTPError as e:
            raise FedoraError(f"cannot download {url}: HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise FedoraError(f"cannot download {url}: {reason}") from None
        with response, os.fdopen(fd, "wb") as out:
            fd = -1  # now owned by `out`
            total = int(response.headers.get("Content-Length") or 0)
            done, next_report = 0, 10
            if show:
                size = f" ({total / 1e6:.0f} MB)" if total else ""
                print(f"downloading {url}{size}", file=sys.stderr, flush=True)
            while True:
                try:
                    chunk = response.read(1 << 20)
                except (OSError, http.client.HTTPException) as e:
                    raise FedoraError(f"download of {url} broke off: {e!r}") from None
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if show and total and done * 100 >= next_report * total:
                    print(f"  {dest.name}: {done * 100 // total}%", file=sys.stderr, flush=True)
                    next_report = done * 100 // total // 10 * 10 + 10
            if total and done != total:
                raise FedoraError(f"download of {url} broke off after {done} of {total} bytes")
        got = digest.hexdigest()
        if sha1 is not None and got != sha1.lower():
            raise FedoraError(f"checksum mismatch for {url}: expected SHA-1 {sha1}, got {got}; file discarded")
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache is shared
        os.replace(tmp, dest)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    return dest


def _parse_sha1_file(text: str, url: str) -> str:
    """The hash in a Maven ``.sha1`` file (``<hex>`` or ``<hex>  <filename>``)."""
    match = re.match(r"\s*([0-9a-fA-F]{40})\b", text)
    if not match:
        raise FedoraError(f"no SHA-1 found in {url}")
    return match.group(1).lower()


def _fetch_artifact(group: str, artifact: str, version: str, ext: str, cache_dir: Path,
                    repository: str, progress: bool | None) -> Path:
    """One artifact into the cache, verified; a cached verified copy is used offline."""
    url = maven_url(group, artifact, version, ext, repository)
    dest = cache_dir / f"{artifact}-{version}.{ext}"
    expected = PINNED_SHA1.get((group, artifact, version, ext))
    if expected is None:
        # Not pinned here: trust Maven Central's own checksum file, cached
        # beside the artifact so a later offline run can still verify it.
        sha1_path = dest.with_name(dest.name + ".sha1")
        if not sha1_path.exists():
            download(url + ".sha1", sha1_path, progress=False)
        try:
            expected = _parse_sha1_file(sha1_path.read_text(errors="replace"), url + ".sha1")
        except FedoraError:
            sha1_path.unlink()  # unusable: fetch it afresh next time
            raise
    if dest.exists():
        if sha1_of(dest) == expected:
            return dest
        print(f"lakebench: cached {dest} fails its checksum; downloading it again", file=sys.stderr)
        dest.unlink()
    return download(url, dest, expected, progress)


def fetch(version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None, *,
          progress: bool | None = None, repository: str = MAVEN_CENTRAL) -> FedoraArtifacts:
    """Download (or find in the cache) the Fedora war and the Jetty runner.

    ``progress``: True/False forces percentage lines on stderr on/off; None
    shows them only when stderr is a terminal.  ``repository`` is the Maven
    repository base URL (tests point it at a local server).
    """
    cache = _cache_dir(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    war = _fetch_artifact("org.fcrepo", "fcrepo-webapp", version, "war", cache, repository, progress)
    jar = _fetch_artifact("org.eclipse.jetty", "jetty-runner", JETTY_RUNNER_VERSION, "jar",
                          cache, repository, progress)
    return FedoraArtifacts(version=version, war=war, jetty_runner=jar, cache_dir=cache)


def fedora_line(version: str) -> int:
    """The Fedora line (4 or 6) whose start-up recipe fits ``version``."""
    major = version.split(".", 1)[0]
    if major in ("4", "6"):
        return int(major)
    raise FedoraError(f"Fedora {version} is not supported: lakebench knows how to run "
                      f"the 4.x line (tested with 4.7.5) and the 6.x line (tested with 6.1.0)")


def prepare_webapp(artifacts: FedoraArtifacts) -> Path:
    """The web application Jetty should run for this version.

    4.x: the war itself.  6.x: the war unpacked once into the cache with
    ``WEB-INF/no-auth-web.xml`` in place of ``web.xml``, since the default
    descriptor demands BASIC auth with no realm under jetty-runner.
    """
    if fedora_line(artifacts.version) == 4:
        return artifacts.war
    target = artifacts.cache_dir / f"fcrepo-webapp-{artifacts.version}-noauth"
    if (target / "WEB-INF" / "web.xml").exists():
        return target
    # Unpack beside the target and rename, so a half-unpacked tree is never used.
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=artifacts.cache_dir))
    try:
        with zipfile.ZipFile(artifacts.war) as z:
            z.extractall(tmp)
        no_auth = tmp / "WEB-INF" / "no-auth-web.xml"
        if not no_auth.exists():
            raise FedoraError(f"{artifacts.war} has no WEB-INF/no-auth-web.xml; "
                              f"cannot run Fedora {artifacts.version} without authentication")
        shutil.copyfile(no_auth, tmp / "WEB-INF" / "web.xml")
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is shared
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "WEB-INF" / "web.xml").exists():  # not a concurrent winner
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target

