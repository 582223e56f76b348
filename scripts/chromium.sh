#!/usr/bin/env bash
# Installs the browser the page's tests drive (tests/browser): Debian's
# chromium package, when no chromium is on the machine. CI runs it before
# the tests (.ci/run); the tests run it themselves when the browser is
# missing. Needs root (or sudo) and apt-get.
set -euo pipefail

if [ -n "${HARNESS_CHROMIUM:-}" ] && [ -x "${HARNESS_CHROMIUM}" ]; then
  exit 0
fi
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium.sh: no chromium and no apt-get: install Chromium and set HARNESS_CHROMIUM to its path" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "chromium.sh: installing chromium needs root" >&2
    exit 1
  fi
  sudo="sudo -n"
fi
echo "chromium.sh: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
command -v chromium >/dev/null
