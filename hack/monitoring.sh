#!/usr/bin/env bash
# Provides what the monitoring e2e tests need beside the test cluster (hack/testcluster.sh):
#
#   prometheus                 a real Prometheus server: Debian's `prometheus` package (its static binary, unpacked
#                              with `apt-get download` + `dpkg-deb -x`: nothing is installed on the machine and no
#                              service is started)
#   prometheus-operator-crds   the Prometheus Operator's ServiceMonitor and Prometheus CRDs, from its Go module
#                              (github.com/prometheus-operator/prometheus-operator, the version hack/monitoring/
#                              prometheus-operator/go.mod pins: the one of KAI v0.17's monitoring API)
#
#   hack/monitoring.sh [PART...]   prints, per part asked (both by default), the directory holding it (stdout, one
#                                  line each, in order); logs go to stderr
#
# Each part is fetched ONCE into ${KAI_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kai}/monitoring/<part>-<version>/;
# later runs find it there. Any failure stops the script with a non-zero status and the reason on stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wrappers="$here/monitoring"
LOG_PREFIX=monitoring
# shellcheck source=hack/lib/gobuild.sh
source "$here/lib/gobuild.sh"

ALL_PARTS=(prometheus prometheus-operator-crds)
OPERATOR_MODULE=github.com/prometheus-operator/prometheus-operator
OPERATOR_CRDS=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheuses.yaml)

is_fetched() { [[ -f "$1/.complete" ]]; }

# The version of Debian's package apt would fetch (the cache key); empty when apt knows no such package.
prometheus_version() {
    command -v apt-cache >/dev/null 2>&1 || die "no apt-cache: Prometheus comes from Debian's 'prometheus' package"
    apt-cache policy prometheus 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }'
}

fetch_prometheus() { # <dest> <staging>
    local dest="$1" staging="$2" started=$SECONDS deb
    log "fetching Debian's prometheus package (apt-get download)"
    (cd "$staging" && apt-get -o APT::Sandbox::User="$(id -un)" download prometheus >&2) || die "apt-get download prometheus failed (see above)"
    deb="$(compgen -G "$staging/prometheus_*.deb" | head -n 1)" || die "apt-get download left no prometheus_*.deb"
    dpkg-deb -x "$deb" "$staging/root" || die "cannot unpack $deb"
    mv "$staging/root/usr/bin/prometheus" "$staging/prometheus" || die "$deb holds no usr/bin/prometheus"
    rm -rf "$staging/root" "$deb"
    "$staging/prometheus" --version >/dev/null 2>&1 || die "the unpacked prometheus does not run"
    touch "$staging/.complete"
    rm -rf "$dest"
    mv "$staging" "$dest" || die "cannot move prometheus to $dest"
    log "prometheus fetched in $((SECONDS - started))s: $dest"
}

fetch_operator_crds() { # <dest> <staging> <version>
    local dest="$1" staging="$2" version="$3" started=$SECONDS module_dir crd
    require_go
    module_dir="$(cd "$wrappers/prometheus-operator" && go mod download -json "$OPERATOR_MODULE" |
        awk -F'"' '$2 == "Dir" { print $4 }')" || die "go mod download $OPERATOR_MODULE@$version failed"
    [[ -d "$module_dir" ]] || die "the module cache has no directory for $OPERATOR_MODULE@$version"
    mkdir -p "$staging/crds"
    for crd in "${OPERATOR_CRDS[@]}"; do
        cp "$module_dir/example/prometheus-operator-crd/$crd" "$staging/crds/" ||
            die "$OPERATOR_MODULE@$version has no example/prometheus-operator-crd/$crd"
    done
    chmod -R u+w "$staging"
    touch "$staging/.complete"
    rm -rf "$dest"
    mv "$staging" "$dest" || die "cannot move the CRDs to $dest"
    log "prometheus-operator CRDs $version fetched in $((SECONDS - started))s: $dest"
}

parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=("${ALL_PARTS[@]}")
cache_root="$(cache_area monitoring)"
export GOFLAGS="-mod=readonly"

dirs=()
locked=
for part in "${parts[@]}"; do
    case "$part" in
    prometheus)
        version="$(prometheus_version)"
        if [[ -z "$version" && $(id -u) -eq 0 ]]; then
            log "apt knows no prometheus package: running apt-get update"
            apt-get update >&2 || die "apt-get update failed"
            version="$(prometheus_version)"
        fi
        [[ -n "$version" ]] || die "apt knows no 'prometheus' package (run 'apt-get update' as root, or add Debian's main archive)"
        ;;
    prometheus-operator-crds)
        version="$(module_version "$wrappers/prometheus-operator/go.mod" "$OPERATOR_MODULE")"
        [[ -n "$version" ]] || die "no $OPERATOR_MODULE version in $wrappers/prometheus-operator/go.mod"
        ;;
    *) die "unknown part '$part' (known: ${ALL_PARTS[*]})" ;;
    esac
    dest="$cache_root/$part-${version//[:+~]/_}"
    if ! is_fetched "$dest"; then
        if [[ -z "$locked" ]]; then
            lock_area "$cache_root"
            locked=1
        fi
        if ! is_fetched "$dest"; then # unless fetched while we waited
            staging="$(mktemp -d "$cache_root/.fetch.XXXXXX")"
            # shellcheck disable=SC2064 # the staging path is fixed now
            trap "rm -rf '$staging'" EXIT
            case "$part" in
            prometheus) fetch_prometheus "$dest" "$staging" ;;
            prometheus-operator-crds) fetch_operator_crds "$dest" "$staging" "$version" ;;
            esac
            trap - EXIT
        fi
    fi
    log "$part $version: $dest"
    dirs+=("$dest")
done
printf '%s\n' "${dirs[@]}"
