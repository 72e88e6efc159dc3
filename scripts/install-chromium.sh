#!/usr/bin/env bash
# Headless Chromium for the report test (tests/report_browser.rs): the Debian package, when
# no chromium is on the PATH. Needs apt (and root, or sudo) the first time.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    exit 0
fi
sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
echo "installing chromium (Debian package) for the report test" >&2
sudo_if_needed apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive sudo_if_needed apt-get install -y -q chromium >/dev/null
command -v chromium >/dev/null
