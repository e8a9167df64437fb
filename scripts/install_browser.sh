#!/usr/bin/env bash
# `make browser`: headless Chromium and its WebDriver (Debian's chromium and chromium-driver) for
# the results-site browser test, tests/study/test_site_browser.py. Installs them with apt-get when
# either is missing (needs root); does nothing when both are there. Bounded by
# BROWSER_INSTALL_TIMEOUT seconds (default 600).
set -euo pipefail

LIMIT="${BROWSER_INSTALL_TIMEOUT:-600}"
missing=()
for cmd in chromium chromedriver; do
    command -v "${cmd}" > /dev/null || missing+=("${cmd}")
done
if ((${#missing[@]} == 0)); then
    echo "browser: $(chromium --version 2> /dev/null | head -1), chromedriver at $(command -v chromedriver)"
    exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
    echo "browser: error: ${missing[*]} not installed and not root; expected root (to apt-get install chromium chromium-driver) or the packages installed" >&2
    exit 2
fi
echo "browser: installing chromium chromium-driver (missing: ${missing[*]})"
timeout --kill-after=30 "${LIMIT}" bash -c \
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver > /dev/null' \
    || { echo "browser: error: apt-get install chromium chromium-driver failed or ran past ${LIMIT} s" >&2; exit 1; }
for cmd in chromium chromedriver; do
    command -v "${cmd}" > /dev/null || { echo "browser: error: ${cmd} still missing after the install" >&2; exit 1; }
done
echo "browser: installed $(chromium --version 2> /dev/null | head -1)"
