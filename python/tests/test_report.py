"""zmpi.report, the profiler's JSON reader (also `zmpi report`): a real report of the climate
example under `zmpirun --profile-only` (data/climate.2.zmpi.json), its table and plot, and the
errors of files that are not reports."""
import json
import os
import subprocess
import sys

import pytest

from zmpi import report

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "climate.2.zmpi.json")


def test_load_and_table(capsys):
    r = report.load(DATA)
    assert r["ranks"] == 2 and r["sites"]
    report.print_table(r, 5)
    out = capsys.readouterr().out
    assert "2 ranks" in out and "Allreduce" in out
    assert len(out.strip().splitlines()) == 3 + 5 + ("verdicts" in out)


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "sites.png"
    report.plot(report.load(DATA), 10, str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_not_a_report(tmp_path):
    bad = tmp_path / "x.json"
    for text in ("[1, 2]", '{"version": 2, "sites": []}', "{not json"):
        bad.write_text(text)
        with pytest.raises(ValueError):
            report.load(str(bad))
    with pytest.raises(OSError):
        report.load(str(tmp_path / "missing.json"))


def test_incomplete_reports(tmp_path):
    """A report missing a key, or with a key of the wrong kind, is a ValueError naming
    it (and `zmpi report` says so in one line), never a traceback; an advice without a
    ratio (no samples) prints as '-'."""
    r = json.load(open(DATA))
    bad = tmp_path / "x.json"
    for drop in ("ranks", "app_time_s"):
        t = {k: v for k, v in r.items() if k != drop}
        bad.write_text(json.dumps(t))
        with pytest.raises(ValueError, match=drop):
            report.load(str(bad))
    for key, value in (("bytes", None), ("time_s", "x"), ("call", 3)):
        t = json.loads(json.dumps(r))
        t["sites"][0][key] = value
        bad.write_text(json.dumps(t))
        with pytest.raises(ValueError, match=key):
            report.load(str(bad))
        p = subprocess.run([sys.executable, "-m", "zmpi.report", str(bad)], capture_output=True, text=True)
        assert p.returncode != 0 and "Traceback" not in p.stderr and key in p.stderr
    t = json.loads(json.dumps(r))
    del t["sites"][0]["location"]
    bad.write_text(json.dumps(t))
    p = subprocess.run([sys.executable, "-m", "zmpi.report", str(bad)], capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr and "location" in p.stderr
    t = json.loads(json.dumps(r))
    for s in t["sites"]:
        if s.get("advice"):
            s["advice"].update(ratio=None, saving_s={}, verdict="no samples")
    bad.write_text(json.dumps(t))
    p = subprocess.run([sys.executable, "-m", "zmpi.report", str(bad)], capture_output=True, text=True)
    assert p.returncode == 0 and "no samples" in p.stdout, p.stderr


def test_plot_into_missing_folder(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "new" / "deeper" / "sites.png"
    p = subprocess.run([sys.executable, "-m", "zmpi.report", DATA, "--plot", str(out)], capture_output=True,
                       text=True)
    assert p.returncode == 0 and "Traceback" not in p.stderr and out.read_bytes()[:4] == b"\x89PNG"
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    p = subprocess.run([sys.executable, "-m", "zmpi.report", DATA, "--plot", str(blocked / "x.png")],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "Traceback" not in p.stderr and "--plot" in p.stderr


def test_module_command(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "zmpi.report", DATA, "--top", "3"], capture_output=True, text=True)
    assert ok.returncode == 0 and "verdict" in ok.stdout
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"version": 1}))
    r = subprocess.run([sys.executable, "-m", "zmpi.report", str(bad)], capture_output=True, text=True)
    assert r.returncode != 0 and "not a zmpi report" in r.stderr
