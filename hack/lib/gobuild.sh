# Shared by hack/controlplane.sh and hack/testcluster.sh: build Go binaries once from the Go module proxy into
# ${KAI_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/kai}/<area>/, from wrapper modules with pinned go.mod + go.sum.
# Source it after setting LOG_PREFIX; every failure ends the calling script with the reason on stderr.

log() { printf '%s: %s\n' "$LOG_PREFIX" "$*" >&2; }
die() {
    printf '%s: ERROR: %s\n' "$LOG_PREFIX" "$*" >&2
    exit 1
}

# The version a wrapper go.mod pins for a module, so a cache key cannot drift from what is built.
module_version() { # <go.mod> <module path>
    awk -v m="$2" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$1"
}

cache_area() { # <area>: the cache directory of one area (controlplane, testcluster)
    printf '%s/%s\n' "${KAI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kai}" "$1"
}

require_go() { # <what to do instead>
    command -v go >/dev/null 2>&1 ||
        die "'go' is not on PATH: install Go >= 1.26 (it fetches modules from the Go module proxy)${1:+ or $1}"
}

# Takes the area's lock on fd 9 (released when the script exits): one builder at a time, as parallel pytest
# workers, make and an IDE may all ask at once, and two Go builds on a small machine only slow each other down.
lock_area() { # <area dir>
    mkdir -p "$1" || die "cannot create $1"
    exec 9>"$1/.lock"
    flock 9 || die "cannot lock $1/.lock"
}

# Static binaries, reproducible paths; the local toolchain unless told otherwise.
export CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

kube_ldflags() { # <kubernetes version>: the version stamp of a Kubernetes binary, as its release build sets it
    local minor="${1#v1.}" pkg=k8s.io/component-base/version
    minor="${minor%%.*}"
    printf '%s' "-s -w -X $pkg.gitVersion=$1 -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}
