#!/usr/bin/env bash
# Installs Stacko Referee on Raspberry Pi OS (Bookworm or later), from this checkout:
#   sudo deploy/install.sh            install or update (run it again after `git pull`)
#   deploy/install.sh --dry-run       print what it would do, change nothing (works on any Debian)
# Steps: OS packages (picamera2 from the OS, espeak-ng, i2c-tools, ...), I2C and camera enabled,
# a service user in the i2c/gpio/video/audio groups, a venv that sees the system picamera2, the
# settings file, a `stacko` command for everyone, and the systemd unit (restart on failure; the
# match resumes from the log) with the status page on port 8000.
# Idempotent: every step first checks whether it is already done; a second run changes nothing.
# Paths and tools can be overridden by environment variables (tests install into a temporary tree).
set -euo pipefail

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'
Options:
  -n, --dry-run   print the actions, change nothing
  --no-start      install and enable the service but do not (re)start it
  -h, --help      this text
EOF
}

DRY_RUN=0
START=1
for arg in "$@"; do
  case $arg in
    -n | --dry-run) DRY_RUN=1 ;;
    --no-start) START=0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

SRC=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${STACKO_PREFIX:-/opt/stacko-referee}
STATE_DIR=${STACKO_STATE_DIR:-/var/lib/stacko-referee}
ETC_DIR=${STACKO_ETC_DIR:-/etc/stacko-referee}
UNIT_DIR=${STACKO_UNIT_DIR:-/etc/systemd/system}
BIN_DIR=${STACKO_BIN_DIR:-/usr/local/bin}
BOOT_CONFIG=${STACKO_BOOT_CONFIG:-}
SERVICE_USER=${STACKO_USER:-stacko}
PORT=${STACKO_PORT:-8000}
PYTHON=${PYTHON:-python3}
UNIT_NAME=stacko-referee.service
GROUPS_NEEDED=(i2c gpio video audio)
APT_PACKAGES=(
  python3-picamera2 # the camera library, built for this OS's libcamera (not on PyPI in a usable form)
  python3-venv python3-pip
  python3-lgpio     # gpiozero's pin library on the Pi 5 (and 4)
  i2c-tools         # i2cdetect: see the IMU (0x68) and load-cell ADC (0x2A) on the bus
  espeak-ng         # the referee's voice
  alsa-utils        # aplay: plays the voice on the speaker
  libopenblas0      # numpy/scikit-learn speed on the Pi
)

CHANGED=0
note() { printf 'install: %s\n' "$*"; }
# Run a command that changes the system, or only print it in a dry run.
act() {
  CHANGED=1
  if ((DRY_RUN)); then
    printf 'would run: %s\n' "$*"
  else
    printf 'running: %s\n' "$*"
    "$@"
  fi
}
# Install content (from stdin) to a file with a mode, only when it differs from what is there.
put_file() {
  local dest=$1 mode=$2 tmp
  tmp=$(mktemp)
  cat >"$tmp"
  if [[ -f $dest ]] && cmp -s "$tmp" "$dest"; then
    note "$dest is up to date"
    rm -f "$tmp"
    return 1
  fi
  if ((DRY_RUN)); then
    printf 'would write %s (mode %s):\n' "$dest" "$mode"
    sed 's/^/    | /' "$tmp"
    CHANGED=1
  else
    act install -D -m "$mode" "$tmp" "$dest"
  fi
  rm -f "$tmp"
  return 0
}

is_pi() { [[ -r /proc/device-tree/model ]] && grep -qa 'Raspberry Pi' /proc/device-tree/model; }

if ((!DRY_RUN)) && [[ $(id -u) -ne 0 ]]; then
  echo "install.sh: run it as root (sudo deploy/install.sh), or try --dry-run first" >&2
  exit 1
fi
if ((DRY_RUN)); then note "dry run: nothing will be changed"; fi
if ! is_pi; then note "this is not a Raspberry Pi: the Pi-only steps (I2C, camera) are shown but skipped"; fi

# 1. OS packages -------------------------------------------------------------------------------
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  act apt-get update -qq
  act env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  note "OS packages are installed"
fi

# 2. I2C and the camera ------------------------------------------------------------------------
if command -v raspi-config >/dev/null 2>&1; then
  # raspi-config prints 0 when I2C is already on.
  if [[ $(raspi-config nonint get_i2c) != 0 ]]; then
    act raspi-config nonint do_i2c 0
  else
    note "I2C is enabled"
  fi
else
  note "raspi-config not found: would enable I2C with 'raspi-config nonint do_i2c 0' on Raspberry Pi OS"
fi
if [[ -z $BOOT_CONFIG ]]; then
  for f in /boot/firmware/config.txt /boot/config.txt; do
    if [[ -f $f ]]; then BOOT_CONFIG=$f; break; fi
  done
fi
# Bookworm finds the Camera Module 3 by itself when camera_auto_detect=1 (its default).
if [[ -n $BOOT_CONFIG && -f $BOOT_CONFIG ]]; then
  if grep -Eq '^[[:space:]]*camera_auto_detect=1' "$BOOT_CONFIG" || grep -Eq '^[[:space:]]*dtoverlay=imx708' "$BOOT_CONFIG"; then
    note "the camera is enabled in $BOOT_CONFIG"
  else
    act sed -i -E 's/^[[:space:]]*camera_auto_detect=.*/camera_auto_detect=1/' "$BOOT_CONFIG"
    if ! grep -Eq '^[[:space:]]*camera_auto_detect=1' "$BOOT_CONFIG"; then
      if ((DRY_RUN)); then
        printf 'would append camera_auto_detect=1 to %s\n' "$BOOT_CONFIG"
      else
        echo "camera_auto_detect=1" >>"$BOOT_CONFIG"
      fi
    fi
    note "the camera works after the next reboot"
  fi
else
  note "no /boot/firmware/config.txt: would make sure it says camera_auto_detect=1 on Raspberry Pi OS"
fi

# 3. The service user and its groups ----------------------------------------------------------
if getent passwd "$SERVICE_USER" >/dev/null; then
  note "user $SERVICE_USER exists"
else
  act useradd --system --user-group --home-dir "$STATE_DIR" --no-create-home --shell /usr/sbin/nologin "$SERVICE_USER"
fi
for g in "${GROUPS_NEEDED[@]}"; do
  if ! getent group "$g" >/dev/null; then
    note "group $g does not exist on this system (Raspberry Pi OS has it): skipped"
  elif id -nG "$SERVICE_USER" 2>/dev/null | tr ' ' '\n' | grep -qx "$g"; then
    note "$SERVICE_USER is in group $g"
  else
    act usermod -aG "$g" "$SERVICE_USER"
  fi
done
# The person installing may run `stacko calibrate` and `stacko doctor` with the service's files.
admin=${SUDO_USER:-}
if [[ -n $admin && $admin != root ]]; then
  if id -nG "$admin" 2>/dev/null | tr ' ' '\n' | grep -qx "$SERVICE_USER"; then
    note "$admin is in group $SERVICE_USER"
  else
    act usermod -aG "$SERVICE_USER" "$admin"
  fi
fi

# 4. Folders ------------------------------------------------------------------------------------
for d in "$STATE_DIR" "$STATE_DIR/calibration"; do
  if [[ -d $d ]] && [[ $(stat -c '%U:%G %a' "$d") == "$SERVICE_USER:$SERVICE_USER 2775" ]]; then
    note "$d is ready"
  else
    act install -d -o "$SERVICE_USER" -g "$SERVICE_USER" -m 2775 "$d"
  fi
done

# 5. The virtualenv (sees the OS's picamera2) and the referee in it -----------------------------
VENV=$PREFIX/venv
if [[ -x $VENV/bin/python ]] && grep -q 'include-system-site-packages = true' "$VENV/pyvenv.cfg" 2>/dev/null; then
  note "virtualenv $VENV exists and sees the system packages"
else
  act "$PYTHON" -m venv --clear --system-site-packages "$VENV"
fi
src_hash=$(cd "$SRC" && { find pyproject.toml referee vision hardware calibration web_ui deploy -type f \
  ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 2>/dev/null || true; } | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
stamp=$PREFIX/.installed-from
if [[ -f $stamp && $(cat "$stamp") == "$src_hash" ]]; then
  note "Stacko Referee $src_hash is installed in $VENV"
else
  # numpy<2: the OS's picamera2/simplejpeg are built against numpy 1.x.
  act "$VENV/bin/python" -m pip install -q --upgrade --constraint "$SRC/deploy/pi-constraints.txt" "${SRC}[pi]"
  if ((!DRY_RUN)); then printf '%s\n' "$src_hash" >"$stamp"; fi
fi
if [[ -f $SRC/docs/pi.md ]]; then
  put_file "$PREFIX/docs/pi.md" 0644 <"$SRC/docs/pi.md" || true
fi

# 6. Settings and the `stacko` command ----------------------------------------------------------
put_file "$ETC_DIR/env" 0644 <<EOF || true
# Stacko Referee settings, read by the service and by the stacko command (written by deploy/install.sh).
STACKO_BACKEND=pi
STACKO_CALIBRATION_DIR=$STATE_DIR/calibration
STACKO_LOG=$STATE_DIR/matches.sqlite
STACKO_HOST=0.0.0.0
STACKO_PORT=$PORT
EOF
put_file "$BIN_DIR/stacko" 0755 <<EOF || true
#!/bin/sh
# The referee's command line with the service's settings (written by deploy/install.sh).
set -a
. "$ETC_DIR/env"
set +a
exec "$VENV/bin/stacko" "\$@"
EOF

# 7. The systemd unit ---------------------------------------------------------------------------
unit_changed=0
if sed -e "s#/opt/stacko-referee#$PREFIX#g" -e "s#/etc/stacko-referee#$ETC_DIR#g" \
  -e "s#/var/lib/stacko-referee#$STATE_DIR#g" -e "s#^User=stacko#User=$SERVICE_USER#" \
  -e "s#^Group=stacko#Group=$SERVICE_USER#" "$SRC/deploy/$UNIT_NAME" | put_file "$UNIT_DIR/$UNIT_NAME" 0644; then
  unit_changed=1
  act systemctl daemon-reload
fi
if systemctl is-enabled --quiet "$UNIT_NAME" 2>/dev/null; then
  note "$UNIT_NAME is enabled (starts at boot)"
else
  act systemctl enable "$UNIT_NAME"
fi
if ((START)) && ((CHANGED || unit_changed)); then
  # A running referee picks up the new code; a stopped one is left for after calibration.
  act systemctl try-restart "$UNIT_NAME"
fi

if ((CHANGED)); then
  if ((DRY_RUN)); then note "dry run done: the lines above show what a real run would change"; else note "done"; fi
  cat <<EOF
Next steps:
  1. reboot once if I2C or the camera was just enabled (sudo reboot); it also lets a new group take effect
  2. stacko doctor        checks every part and says what to fix
  3. stacko calibrate     guided calibration of this table (about 5 minutes)
  4. sudo systemctl start $UNIT_NAME   then open http://$(hostname).local:$PORT/
EOF
else
  note "everything is already installed: nothing changed"
fi
