#!/usr/bin/env bash
# Installs the real-driver desktop lane on a Debian 12 machine, idempotently:
#   * Debian packages: an X server (Xvfb), a window manager (openbox), a D-Bus session bus, AT-SPI,
#     Debian's python3 with GTK3 introspection (the GTK test apps under fixtures/gtk_apps/ run on it);
#   * a dedicated virtualenv (git-ignored) holding cua-driver from PyPI.
# It prints the bundled binary's path, then on its last line `cua-driver: <script path> <version>`.
# It knows nothing about the tests; tests/desktop/ skips itself when this has not been run (and fails instead
# under HERMES_REQUIRE_LANES=1, as in CI).
#
# Usage: bash .ci/desktop-setup.sh        (as root, or with sudo available for apt-get)
# Env:   CUA_DRIVER_VERSION (default 0.37.0), CUA_DRIVER_VENV (default .ci-tools/cua-driver-venv)
set -euo pipefail
cd "$(dirname "$0")/.."

CUA_DRIVER_VERSION="${CUA_DRIVER_VERSION:-0.37.0}"
VENV="${CUA_DRIVER_VENV:-.ci-tools/cua-driver-venv}"

APT_PACKAGES=(
    xvfb            # the X server (Xvfb -displayfd picks a free display)
    openbox         # EWMH window manager: cua-driver needs _NET_CLIENT_LIST / _NET_ACTIVE_WINDOW
    dbus            # dbus-daemon for the session bus
    dbus-x11        # dbus-launch / X11 autolaunch, as the upstream CI uses
    at-spi2-core    # at-spi-bus-launcher + registryd, D-Bus activated
    python3         # Debian's interpreter: the GTK apps need its python3-gi
    python3-gi      # PyGObject
    python3-venv    # to create the driver's venv with Debian's python3
    gir1.2-gtk-3.0  # GTK3 typelib (pulls libgtk-3-0 and its AT-SPI bridge)
    fonts-dejavu-core  # glyphs, so button labels render in screenshots
    x11-utils       # xdpyinfo / xwininfo, handy for debugging a display by hand
)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "desktop-setup: installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
    echo "desktop-setup: Debian packages already present"
fi

if ! /usr/bin/python3 -c 'import gi; gi.require_version("Gtk", "3.0"); from gi.repository import Gtk' 2>/dev/null; then
    echo "desktop-setup: Debian python3 cannot import Gtk 3.0 after install" >&2
    exit 1
fi

DRIVER="$VENV/bin/cua-driver"
have_version=""
if [ -x "$VENV/bin/python" ]; then
    have_version="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("cua-driver"))' 2>/dev/null || true)"
fi
if [ "$have_version" != "$CUA_DRIVER_VERSION" ]; then
    echo "desktop-setup: installing cua-driver==$CUA_DRIVER_VERSION into $VENV"
    if [ ! -x "$VENV/bin/python" ]; then
        mkdir -p "$(dirname "$VENV")"
        /usr/bin/python3 -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "cua-driver==$CUA_DRIVER_VERSION"
else
    echo "desktop-setup: cua-driver $have_version already in $VENV"
fi

if [ ! -x "$DRIVER" ]; then
    echo "desktop-setup: $DRIVER missing after install" >&2
    exit 1
fi
version="$(CUA_DRIVER_RS_TELEMETRY_ENABLED=0 CUA_DRIVER_RS_UPDATE_CHECK=false "$DRIVER" --version 2>/dev/null | head -n1)"
# The console script is a Python wrapper around this binary; the test harness runs the binary directly.
bundled="$("$VENV/bin/python" -c 'import cua_driver.wrapper as w; print(w.get_binary_path())')"
echo "cua-driver binary: $bundled"
echo "cua-driver: $(cd "$(dirname "$DRIVER")" && pwd)/$(basename "$DRIVER") $version"
