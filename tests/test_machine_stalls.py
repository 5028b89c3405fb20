"""scripts/machine-stalls.py: the machine's own stalls, the floor under a write's slowest times."""
import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "machine-stalls.py")


def test_the_stall_script_times_the_disk_and_the_sleeps_and_leaves_no_file(tmp_path):
    out = subprocess.run([sys.executable, SCRIPT, "--seconds", "0.5", "--dir", str(tmp_path / "d")],
                         capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["seconds"] == 0.5
    for loop in ("disk_write_flush", "sleep_late"):
        each = report[loop]
        ms = each["ms"]
        assert each["count"] > 0 and 0 <= ms["p50"] <= ms["p999"] <= ms["max"]
        assert len(each["slowest_ms"]) == min(8, each["count"]) and each["slowest_ms"][0] == ms["max"]
        assert each["over_5_ms"] >= each["over_20_ms"] >= each["over_50_ms"] >= 0
    # a sleep of 1 ms cannot return early, nor can 0.5 s hold more than 500 of them
    assert report["sleep_late"]["count"] <= 500 and report["sleep_late"]["ms"]["p50"] >= 0
    assert list((tmp_path / "d").iterdir()) == []


def test_the_stall_script_refuses_a_time_that_is_not_positive(tmp_path):
    out = subprocess.run([sys.executable, SCRIPT, "--seconds", "0", "--dir", str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "--seconds must be positive" in out.stderr
