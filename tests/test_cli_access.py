"""``lakebench run``'s credentials and TLS options: each mistake is one line and exit code 2, and no
refusal repeats a credential (the end-to-end runs are in tests/systems/test_ldp_access.py)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lakebench.cli import main
from lakebench.systems.base import PASSWORD_VARIABLE, USER_VARIABLE

SECRET = "s3cret-Zq81"


@pytest.fixture
def netrc(tmp_path):
    path = tmp_path / "netrc"
    path.write_text(f"machine fedora.example login alice password {SECRET}\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("argv, env, fragment", [
    (["--system-url", f"https://alice:{SECRET}@fedora.example/rest/"], {},
     "--system-url: the URL holds credentials (user:password@): remove them and set LAKEBENCH_SYSTEM_USER"),
    (["--system-url", f"alice:{SECRET}@fedora.example:99999/"], {}, "the URL holds credentials"),
    (["--system-url", "http://fedora.example/rest/"], {USER_VARIABLE: "alice", PASSWORD_VARIABLE: SECRET},
     "credentials would cross the network in clear text to fedora.example over http://"),
    (["--system-url", "https://fedora.example/rest/"], {USER_VARIABLE: "alice"},
     "LAKEBENCH_SYSTEM_PASSWORD is empty or not set"),
    (["--system-url", "https://fedora.example/rest/", "--system-netrc", "{netrc}"],
     {USER_VARIABLE: "alice", PASSWORD_VARIABLE: SECRET}, "credentials given twice"),
    (["--system-url", "https://elsewhere.example/rest/", "--system-netrc", "{netrc}"], {},
     "no entry for elsewhere.example"),
    (["--system-url", "https://fedora.example/rest/", "--system-netrc", "/no/such/netrc"], {},
     "--system-netrc /no/such/netrc: No such file"),
    (["--system-url", "https://fedora.example/rest/", "--system-ca", "/etc/hostname"], {},
     "--system-ca /etc/hostname: no PEM CA certificate in it"),
    (["--system-url", "http://fedora.example/rest/", "--system-ca", "/etc/hostname"], {},
     "--system-ca verifies an https:// server"),
    (["--system-url", "https://fedora.example/rest/", "--system-insecure-http"], {},
     "--system-insecure-http applies to an http:// --system-url"),
    (["--system-url", "http://fedora.example/rest/", "--system-insecure-http"], {},
     "--system-insecure-http lets credentials go over http://, and none are given"),
    (["--system-ca", "/etc/hostname"], {}, "--system-ca applies to --system-url, which is not given"),
    (["--system-netrc", "{netrc}"], {}, "--system-netrc applies to --system-url, which is not given"),
])
def test_access_mistakes_are_one_line_exit_2_and_never_repeat_a_secret(argv, env, fragment, netrc, tmp_path,
                                                                       monkeypatch, capsys):
    for name in (USER_VARIABLE, PASSWORD_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    systems = ["--systems", "ldp"] if "--system-url" in argv else ["--systems", "memory"]
    argv = [a.replace("{netrc}", str(netrc)) for a in argv]
    assert main(["run", *systems, *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert SECRET not in err
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_a_netrc_file_others_can_read_is_refused(netrc, tmp_path, capsys):
    netrc.chmod(0o644)
    assert main(["run", "--systems", "ldp", "--system-url", "https://fedora.example/rest/",
                 "--system-netrc", str(netrc), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"--system-netrc {netrc}: others may read or change it (mode 644): chmod 600 {netrc}" in err
    assert len(err.strip().splitlines()) == 1


def test_the_credential_variables_apply_to_system_url_only(tmp_path, monkeypatch, capsys):
    """Exported for another run, they do not stop a run of systems lakebench starts (nor reach its worker:
    tests/systems/test_ldp_access.py)."""
    monkeypatch.setenv(USER_VARIABLE, "alice")
    monkeypatch.setenv(PASSWORD_VARIABLE, SECRET)
    assert main(["run", "--systems", "memory", "--children", "5", "--tail-seconds", "0", "--quiet",
                 "--out", str(tmp_path / "out")]) == 0
    assert SECRET not in (tmp_path / "out" / "results.json").read_text()
    assert SECRET not in "".join(capsys.readouterr())


def test_help_states_where_credentials_come_from():
    out = " ".join(subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--help"], capture_output=True,
                                  text=True, check=True, env={**os.environ, "COLUMNS": "200"}).stdout.split())
    assert "LAKEBENCH_SYSTEM_USER and LAKEBENCH_SYSTEM_PASSWORD" in out
    for option in ("--system-netrc FILE", "--system-ca FILE", "--system-insecure-http"):
        assert option in out
