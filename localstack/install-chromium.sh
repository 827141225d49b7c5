#!/usr/bin/env bash
# install-chromium.sh makes sure Debian's headless chromium is installed: the
# console's browser tests (console/e2e) drive it, and they fail without it.
# It installs nothing when a chromium is already on the PATH (or
# SQSWORKER_CHROMIUM names one). Installing needs root (apt-get install -y
# chromium); anyone else is told what to run. Nothing downloads a browser
# build of its own.
set -euo pipefail

if [ -n "${SQSWORKER_CHROMIUM:-}" ]; then
  [ -x "$SQSWORKER_CHROMIUM" ] || { echo "install-chromium: SQSWORKER_CHROMIUM=$SQSWORKER_CHROMIUM is not an executable" >&2; exit 1; }
  exit 0
fi
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-chromium: the console's browser tests need headless Chromium and none is installed." >&2
  echo "install-chromium: run as root: apt-get install -y chromium (or set SQSWORKER_CHROMIUM to a Chromium binary)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no apt-get here; install Chromium with your package manager, or set SQSWORKER_CHROMIUM to its binary" >&2
  exit 1
fi
echo "install-chromium: installing Debian's chromium (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq chromium >&2
command -v chromium >/dev/null 2>&1 || { echo "install-chromium: apt-get installed no chromium command" >&2; exit 1; }
