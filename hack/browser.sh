#!/usr/bin/env bash
# Provides the real browser of the dashboard's browser tests (tests/e2e/test_dashboard.py): Debian's `chromium` and
# its matching `chromium-driver` (ChromeDriver), installed once with apt-get; later runs find them installed.
#
#   hack/browser.sh     prints two lines (stdout): the Chromium binary, then the ChromeDriver binary; logs go to
#                       stderr
#
# Chromium needs its shared libraries, so it is installed (not unpacked into a cache as hack/monitoring.sh unpacks
# Prometheus); that takes root. Never a browser download by a test tool. Any failure stops the script with a
# non-zero status and the reason on stderr.
set -euo pipefail

LOG_PREFIX=browser
log() { printf '%s: %s\n' "$LOG_PREFIX" "$*" >&2; }
die() {
    printf '%s: ERROR: %s\n' "$LOG_PREFIX" "$*" >&2
    exit 1
}

CHROMIUM=/usr/bin/chromium
DRIVER=/usr/bin/chromedriver

# The browser's and the driver's versions (major.minor.build.patch); empty when missing or not runnable.
version_of() { "$1" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+' | head -n 1 || true; }

installed() { [[ -x "$CHROMIUM" && -x "$DRIVER" && -n "$(version_of "$CHROMIUM")" ]]; }

if ! installed; then
    command -v apt-get >/dev/null 2>&1 ||
        die "no apt-get: the browser tests need Debian's chromium and chromium-driver packages"
    [[ $(id -u) -eq 0 ]] ||
        die "chromium and chromium-driver are not installed and installing them needs root: run 'sudo apt-get install chromium chromium-driver'"
    exec 9>/tmp/kai-browser-install.lock
    flock 9 || die "cannot lock /tmp/kai-browser-install.lock"
    if ! installed; then # unless installed while we waited
        started=$SECONDS
        if [[ -z "$(apt-cache policy chromium-driver 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)"')" ]]; then
            log "apt knows no chromium-driver package: running apt-get update"
            apt-get update >&2 || die "apt-get update failed"
        fi
        log "installing Debian's chromium and chromium-driver (apt-get install)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver >&2 ||
            die "apt-get install chromium chromium-driver failed (see above)"
        installed || die "chromium-driver is installed but $CHROMIUM or $DRIVER does not run"
        log "installed in $((SECONDS - started))s"
    fi
fi

browser="$(version_of "$CHROMIUM")"
driver="$(version_of "$DRIVER")"
[[ "${browser%.*}" == "${driver%.*}" ]] ||
    die "Chromium $browser and ChromeDriver $driver differ: run 'apt-get install chromium chromium-driver' to match them"
log "Chromium $browser, ChromeDriver $driver"
printf '%s\n%s\n' "$CHROMIUM" "$DRIVER"
