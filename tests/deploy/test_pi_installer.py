"""The Pi installer and its unit, checked on a non-Pi machine: lint, unit verification, dry run, idempotency.

The idempotency test runs the real script into a temporary tree with stand-ins for the tools that
would change the machine (apt-get, raspi-config, usermod, systemctl, the venv's pip), which record
what they were asked to do.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
INSTALL = DEPLOY / "install.sh"
UNIT = DEPLOY / "stacko-referee.service"


def _run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is installed by deploy/dev-setup.sh")
def test_every_shell_script_passes_shellcheck():
    scripts = sorted(str(p) for p in DEPLOY.glob("*.sh"))
    assert scripts, "no shell scripts found"
    result = _run(["shellcheck", "--severity=style", *scripts])
    assert result.returncode == 0, result.stdout + result.stderr


def _unit_with_exec(tmp_path: Path, exec_path: str) -> Path:
    text = UNIT.read_text().replace("/opt/stacko-referee/venv/bin/stacko", exec_path)
    out = tmp_path / "stacko-referee.service"
    out.write_text(text)
    return out


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_unit_verifies_when_its_program_exists(tmp_path):
    # any existing executable stands in for the installed /opt/stacko-referee/venv/bin/stacko
    result = _run(["systemd-analyze", "verify", str(_unit_with_exec(tmp_path, sys.executable))])
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_unit_verification_catches_a_missing_program(tmp_path):
    result = _run(["systemd-analyze", "verify", str(_unit_with_exec(tmp_path, "/nonexistent/stacko"))])
    assert result.returncode != 0


def test_unit_restarts_on_failure_runs_the_referee_and_starts_at_boot():
    text = UNIT.read_text()
    assert "Restart=on-failure" in text
    assert "ExecStart=/opt/stacko-referee/venv/bin/stacko run" in text
    assert "WantedBy=multi-user.target" in text
    assert "User=stacko" in text


def test_dry_run_prints_every_step_and_changes_nothing(tmp_path):
    env = dict(os.environ, STACKO_PREFIX=str(tmp_path / "opt"), STACKO_ETC_DIR=str(tmp_path / "etc"),
               STACKO_STATE_DIR=str(tmp_path / "state"), STACKO_UNIT_DIR=str(tmp_path / "units"),
               STACKO_BIN_DIR=str(tmp_path / "bin"))
    result = _run(["bash", str(INSTALL), "--dry-run"], env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "python3-picamera2" in out or "OS packages are installed" in out
    assert "--system-site-packages" in out
    assert "STACKO_PORT=8000" in out
    assert "Restart=on-failure" in out
    assert "systemctl enable stacko-referee.service" in out
    assert "i2c" in out and "gpio" in out
    assert "running:" not in out
    assert list(tmp_path.iterdir()) == [], "a dry run must not create anything"


def test_unknown_option_is_refused():
    result = _run(["bash", str(INSTALL), "--frobnicate"])
    assert result.returncode == 2
    assert "unknown option" in result.stderr


# ------------------------------------------------------------------ a real run into a temporary tree

STUBS = {
    # Every package is already there (so apt is never needed); the test checks the decision elsewhere.
    "dpkg-query": 'printf "install ok installed"\n',
    "apt-get": 'echo "apt-get $*" >> "$LOG"\n',
    "raspi-config": '''case "$2" in
  get_i2c) if [ -f "$STATE/i2c" ]; then echo 0; else echo 1; fi ;;
  do_i2c) touch "$STATE/i2c"; echo "raspi-config $*" >> "$LOG" ;;
esac\n''',
    "getent": '''case "$1" in
  passwd) [ "$2" = root ] ;;
  group) case "$2" in i2c|gpio|video|audio) echo "$2:x:1:" ;; *) exit 2 ;; esac ;;
esac\n''',
    "id": '''if [ "$1" = -nG ]; then echo "root $(cat "$STATE/groups" 2>/dev/null | tr '\\n' ' ')"; else exec /usr/bin/id "$@"; fi\n''',
    "usermod": 'echo "$2" >> "$STATE/groups"; echo "usermod $*" >> "$LOG"\n',
    "useradd": 'echo "useradd $*" >> "$LOG"\n',
    "systemctl": '''case "$1" in
  is-enabled) [ -f "$STATE/enabled" ]; exit ;;
  enable) touch "$STATE/enabled" ;;
esac
echo "systemctl $*" >> "$LOG"\n''',
    # `python3 -m venv ... DIR` makes a venv whose python records pip installs.
    "fake-python": '''dir="${!#}"
mkdir -p "$dir/bin"
echo "include-system-site-packages = true" > "$dir/pyvenv.cfg"
printf '#!/usr/bin/env bash\\necho "pip $*" >> "$LOG"\\n' > "$dir/bin/python"
chmod +x "$dir/bin/python"
echo "venv $*" >> "$LOG"\n''',
}


@pytest.fixture
def fake_system(tmp_path):
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, body in STUBS.items():
        p = stubs / name
        p.write_text("#!/usr/bin/env bash\n" + body)
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "state-of-stubs"
    state.mkdir()
    boot = tmp_path / "config.txt"
    boot.write_text("dtparam=audio=on\ncamera_auto_detect=0\n")
    env = dict(os.environ, PATH=f"{stubs}:{os.environ['PATH']}", LOG=str(tmp_path / "actions.log"), STATE=str(state),
               PYTHON=str(stubs / "fake-python"), STACKO_USER="root", STACKO_BOOT_CONFIG=str(boot),
               STACKO_PREFIX=str(tmp_path / "opt"), STACKO_ETC_DIR=str(tmp_path / "etc"),
               STACKO_STATE_DIR=str(tmp_path / "var"), STACKO_UNIT_DIR=str(tmp_path / "units"),
               STACKO_BIN_DIR=str(tmp_path / "bin"), SUDO_USER="")
    return tmp_path, env


@pytest.mark.skipif(os.geteuid() != 0, reason="a real (non-dry) run needs root, as on the Pi")
def test_second_run_changes_nothing(fake_system):
    tmp, env = fake_system
    first = _run(["bash", str(INSTALL), "--no-start"], env)
    assert first.returncode == 0, first.stdout + first.stderr
    log = (tmp / "actions.log").read_text()
    assert "raspi-config nonint do_i2c 0" in log
    assert "usermod -aG i2c root" in log and "usermod -aG gpio root" in log
    assert "--system-site-packages" in log
    assert "pip install" in log and "[pi]" in log
    assert "systemctl enable stacko-referee.service" in log
    assert "camera_auto_detect=1" in (tmp / "config.txt").read_text()
    unit = (tmp / "units" / "stacko-referee.service").read_text()
    assert f"ExecStart={tmp}/opt/venv/bin/stacko run" in unit
    assert f"EnvironmentFile={tmp}/etc/env" in unit
    assert (tmp / "var" / "calibration").is_dir()
    wrapper = (tmp / "bin" / "stacko").read_text()
    assert f"{tmp}/opt/venv/bin/stacko" in wrapper

    (tmp / "actions.log").unlink()
    before = {p: p.stat().st_mtime_ns for p in tmp.rglob("*") if p.is_file() and "state-of-stubs" not in str(p)}
    second = _run(["bash", str(INSTALL), "--no-start"], env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "nothing changed" in second.stdout
    assert "running:" not in second.stdout
    assert not (tmp / "actions.log").exists(), (tmp / "actions.log").read_text()
    after = {p: p.stat().st_mtime_ns for p in before}
    assert before == after, "the second run rewrote files"


@pytest.mark.skipif(os.geteuid() != 0, reason="a real (non-dry) run needs root, as on the Pi")
def test_changed_code_is_reinstalled_and_the_service_restarted(fake_system, tmp_path):
    tmp, env = fake_system
    assert _run(["bash", str(INSTALL)], env).returncode == 0
    (tmp / "opt" / ".installed-from").write_text("an older version\n")
    (tmp / "actions.log").unlink()
    again = _run(["bash", str(INSTALL)], env)
    assert again.returncode == 0, again.stderr
    log = (tmp / "actions.log").read_text()
    assert "pip install" in log
    assert "systemctl try-restart stacko-referee.service" in log
