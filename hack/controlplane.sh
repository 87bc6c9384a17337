#!/usr/bin/env bash
# Provides kube-apiserver, etcd and kubectl for the real-control-plane tests (envtest style).
#
#   hack/controlplane.sh            prints the directory holding the binaries (stdout, one line); logs go to stderr
#
# 1. If $KUBEBUILDER_ASSETS is set and holds kube-apiserver and etcd, that directory is used (envtest convention).
# 2. Otherwise the binaries are built ONCE from the Go module proxy into
#    ${KAI_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kai}/controlplane/<versions>/ using the wrapper modules in
#    hack/controlplane/{kube-apiserver,etcd}/ (pinned go.mod + go.sum). Later runs find them there.
# Any failure stops the script with a non-zero status and the reason on stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wrappers="$here/controlplane"
LOG_PREFIX=controlplane
# shellcheck source=hack/lib/gobuild.sh
source "$here/lib/gobuild.sh"

has_binaries() { [[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]; }

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
    if has_binaries "$KUBEBUILDER_ASSETS"; then
        log "using \$KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
        printf '%s\n' "$KUBEBUILDER_ASSETS"
        exit 0
    fi
    log "\$KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks kube-apiserver and/or etcd; using the project's build"
fi

kube_version="$(module_version "$wrappers/kube-apiserver/go.mod" k8s.io/kubernetes)"
etcd_version="$(module_version "$wrappers/etcd/go.mod" go.etcd.io/etcd/server/v3)"
[[ -n "$kube_version" ]] || die "no k8s.io/kubernetes version in $wrappers/kube-apiserver/go.mod"
[[ -n "$etcd_version" ]] || die "no go.etcd.io/etcd/server/v3 version in $wrappers/etcd/go.mod"

cache_root="$(cache_area controlplane)"
dest="$cache_root/kube-$kube_version-etcd-$etcd_version"

if has_binaries "$dest" && [[ -x "$dest/kubectl" ]]; then
    log "cached: $dest"
    printf '%s\n' "$dest"
    exit 0
fi

require_go "set KUBEBUILDER_ASSETS to a directory with kube-apiserver and etcd"
lock_area "$cache_root"
if has_binaries "$dest" && [[ -x "$dest/kubectl" ]]; then # built by whoever held the lock before us
    log "cached: $dest"
    printf '%s\n' "$dest"
    exit 0
fi

log "building kube-apiserver + kubectl $kube_version and etcd $etcd_version with $(go version) (cold build: minutes)"
staging="$(mktemp -d "$cache_root/.build.XXXXXX")"
trap 'rm -rf "$staging"' EXIT

export GOFLAGS="-mod=mod -buildvcs=false"

started=$SECONDS
(cd "$wrappers/etcd" && go build -trimpath -ldflags "-s -w" -o "$staging/etcd" go.etcd.io/etcd/server/v3) ||
    die "building etcd $etcd_version failed (see the go output above)"
log "etcd built in $((SECONDS - started))s"
step=$SECONDS
(cd "$wrappers/kube-apiserver" &&
    go build -trimpath -ldflags "$(kube_ldflags "$kube_version")" -o "$staging/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl) ||
    die "building kube-apiserver/kubectl $kube_version failed (see the go output above)"
log "kube-apiserver + kubectl built in $((SECONDS - step))s"

for bin in etcd kube-apiserver kubectl; do
    [[ -x "$staging/$bin" ]] || die "the build produced no $bin in $staging"
done
"$staging/kube-apiserver" --version >&2 || die "the built kube-apiserver does not run"
"$staging/etcd" --version >&2 || die "the built etcd does not run"

rm -rf "$dest"
mv "$staging" "$dest" || die "cannot move the binaries to $dest"
trap - EXIT
log "built in $((SECONDS - started))s: $dest"
printf '%s\n' "$dest"
