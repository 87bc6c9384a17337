#!/usr/bin/env bash
# Provides the parts of the e2e test cluster beyond kube-apiserver + etcd (hack/controlplane.sh):
#
#   kube-controller-manager  the apiserver's Kubernetes release: workload controllers, garbage collector, namespaces
#   kwok                     the kubelet stand-in (sigs.k8s.io/kwok's controller) + its Stage CRD and stages
#   kuberay                  the KubeRay operator (RayCluster, RayJob, RayService) + its CRDs
#   training-operator        the Kubeflow training operator (PyTorchJob, MPIJob, TFJob, ...) + its CRDs
#   helm                     the Helm v3 client, for the chart's lint and install tests (deploy/helm)
#   kube-state-metrics       node capacity (kube_node_status_capacity), which KAI's time-based fair share divides by
#
#   hack/testcluster.sh [PART...]   prints, per part asked (all by default), the directory holding it (stdout, one
#                                   line each, in order); logs go to stderr
#
# Each part is built ONCE from the Go module proxy, from its wrapper module in hack/testcluster/<part>/ (pinned
# go.mod + go.sum), into ${KAI_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kai}/testcluster/<part>-<version>/; later
# runs find it there. The CRDs and stage manifests are copied from the same module versions. Any failure stops the
# script with a non-zero status and the reason on stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wrappers="$here/testcluster"
LOG_PREFIX=testcluster
# shellcheck source=hack/lib/gobuild.sh
source "$here/lib/gobuild.sh"

ALL_PARTS=(kube-controller-manager kwok kuberay training-operator helm kube-state-metrics)

# Per part: the module whose version names the cache directory, the package to build, the binary's name, and
# the files to copy from that module (<path in the module>:<directory in the cache>): CRDs, the ClusterRole the
# part's own manifests give it, KWOK's stages.
part_module() {
    case "$1" in
    kube-controller-manager) echo k8s.io/kubernetes ;;
    kwok) echo sigs.k8s.io/kwok ;;
    kuberay) echo github.com/ray-project/kuberay/ray-operator ;;
    training-operator) echo github.com/kubeflow/training-operator ;;
    helm) echo helm.sh/helm/v3 ;;
    kube-state-metrics) echo k8s.io/kube-state-metrics/v2 ;;
    *) die "unknown part '$1' (known: ${ALL_PARTS[*]})" ;;
    esac
}
part_package() {
    case "$1" in
    kube-controller-manager) echo k8s.io/kubernetes/cmd/kube-controller-manager ;;
    kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
    kuberay) echo github.com/ray-project/kuberay/ray-operator ;;
    training-operator) echo github.com/kubeflow/training-operator/cmd/training-operator.v1 ;;
    helm) echo helm.sh/helm/v3/cmd/helm ;;
    kube-state-metrics) echo k8s.io/kube-state-metrics/v2 ;;
    esac
}
part_binary() {
    case "$1" in
    kube-controller-manager) echo kube-controller-manager ;;
    kwok) echo kwok ;;
    kuberay) echo ray-operator ;;
    training-operator) echo training-operator ;;
    helm) echo helm ;;
    kube-state-metrics) echo kube-state-metrics ;;
    esac
}
part_files() {
    case "$1" in
    kwok)
        echo kustomize/crd/bases/kwok.x-k8s.io_stages.yaml:crds
        echo kustomize/stage/node/fast/node-initialize.yaml:stages
        echo kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml:stages
        echo kustomize/stage/pod/fast/pod-ready.yaml:stages
        echo kustomize/stage/pod/fast/pod-delete.yaml:stages
        echo kustomize/rbac/role.yaml:rbac
        ;;
    kuberay)
        echo 'config/crd/bases/ray.io_*.yaml:crds'
        echo config/rbac/role.yaml:rbac
        ;;
    training-operator)
        echo 'manifests/base/crds/kubeflow.org_*.yaml:crds'
        echo manifests/base/rbac/role.yaml:rbac
        ;;
    kube-state-metrics)
        echo examples/standard/cluster-role.yaml:rbac
        ;;
    esac
}
part_ldflags() { # <part> <version>
    case "$1" in
    kube-controller-manager) kube_ldflags "$2" ;;
    helm) printf '%s' "-s -w -X helm.sh/helm/v3/internal/version.version=$2" ;; # what `helm version` says
    *) printf '%s' "-s -w" ;;
    esac
}

part_version() {
    local version
    version="$(module_version "$wrappers/$1/go.mod" "$(part_module "$1")")"
    [[ -n "$version" ]] || die "no $(part_module "$1") version in $wrappers/$1/go.mod"
    printf '%s\n' "$version"
}

is_built() { [[ -x "$1/$2" && -f "$1/.complete" ]]; }

build_part() { # <part> <version> <dest>
    local part="$1" version="$2" dest="$3" binary staging module_dir started entry pattern target
    binary="$(part_binary "$part")"
    log "building $part $version with $(go version) (cold build: minutes)"
    staging="$(mktemp -d "$cache_root/.build.XXXXXX")"
    # shellcheck disable=SC2064 # the staging path is fixed now
    trap "rm -rf '$staging'" EXIT
    started=$SECONDS
    (cd "$wrappers/$part" &&
        go build -trimpath -ldflags "$(part_ldflags "$part" "$version")" -o "$staging/$binary" "$(part_package "$part")") ||
        die "building $part $version failed (see the go output above)"
    [[ -x "$staging/$binary" ]] || die "the build of $part produced no $binary in $staging"
    "$staging/$binary" --help >/dev/null 2>&1 || die "the built $binary does not run ($staging/$binary --help failed)"

    module_dir="$(cd "$wrappers/$part" && go list -m -f '{{.Dir}}' "$(part_module "$part")")" ||
        die "cannot locate module $(part_module "$part") in the module cache"
    while IFS= read -r entry; do
        [[ -n "$entry" ]] || continue
        pattern="${entry%%:*}" target="$staging/${entry##*:}"
        mkdir -p "$target"
        # shellcheck disable=SC2086 # the pattern is a glob on purpose
        compgen -G "$module_dir/$pattern" >/dev/null || die "module $(part_module "$part") $version has no $pattern"
        # shellcheck disable=SC2086
        cp $module_dir/$pattern "$target/" || die "cannot copy $pattern from $module_dir"
        chmod -R u+w "$target"
    done < <(part_files "$part")
    touch "$staging/.complete"

    rm -rf "$dest"
    mv "$staging" "$dest" || die "cannot move $part to $dest"
    trap - EXIT
    log "$part built in $((SECONDS - started))s: $dest ($(du -sh "$dest/$binary" | cut -f1) binary)"
}

parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=("${ALL_PARTS[@]}")
cache_root="$(cache_area testcluster)"
export GOFLAGS="-mod=readonly -buildvcs=false"

dirs=()
locked=
for part in "${parts[@]}"; do
    part_module "$part" >/dev/null
    version="$(part_version "$part")"
    dest="$cache_root/$part-$version"
    binary="$(part_binary "$part")"
    if ! is_built "$dest" "$binary"; then
        if [[ -z "$locked" ]]; then
            require_go
            lock_area "$cache_root"
            locked=1
        fi
        is_built "$dest" "$binary" || build_part "$part" "$version" "$dest" # unless built while we waited
    fi
    log "$part $version: $dest"
    dirs+=("$dest")
done
printf '%s\n' "${dirs[@]}"
