#!/usr/bin/env bash
# Builds the kai image (the Dockerfile's) without a Docker engine or a container registry, then checks that it runs.
#
#   hack/image.sh            builds build/kai-image.oci.tar (an OCI image layout, tag = pyproject's version), then
#                            runs the check below; logs go to stderr
#   hack/image.sh --check    only the check, on the build/kai-image.oci.tar already built
#
# Keep in step with the Dockerfile (same Debian release and packages, wheels, user, paths, entry point): this is the
# same image built another way. What differs: Debian's mirror serves only the newest bookworm point release (the
# Dockerfile pins debian:12.12-slim; Python is Debian's 3.11 either way), and the slim image's dpkg excludes are
# mmdebstrap options here.
#
# 1. kai's wheel and its pinned dependencies' wheels, built with pip on this host from a copy of the build context
#    (pyproject.toml, README.md, src), as the Dockerfile's `wheels` stage does; the host's Python must be 3.11.
# 2. A minimal Debian bookworm root filesystem with python3 and python3-venv, made by mmdebstrap from Debian's mirror;
#    its hooks add the user kai (uid 10000), the venv /opt/kai with the wheels installed offline, and the chart's CRDs
#    in /kai/crds. Its tarball (mtimes clamped to SOURCE_DATE_EPOCH, the last commit's time) is the image's layer.
# 3. umoci packs that layer into an OCI image layout with the Dockerfile's config (ENTRYPOINT kai, CMD --help,
#    USER 10000:10000, PATH with /opt/kai/bin), written as a tarball: `skopeo copy oci-archive:build/kai-image.oci.tar
#    docker://REGISTRY/kai:TAG` (or `podman load`) takes it elsewhere.
# The check unpacks the tarball with umoci and runs, chrooted into its root filesystem as the image's user, the
# image's default command and `kai <component> --help` for every component the chart runs, then `kai simulate` on an
# example; it fails unless each exits 0.
#
# Needs root (mmdebstrap --mode=root, chroot) and Debian's packages mmdebstrap and umoci (installed with apt-get when
# missing), PyPI and a Debian mirror. Work files go to ${KAI_CACHE_DIR:-~/.cache/kai}/image/ (mmdebstrap's to $TMPDIR)
# and are removed at exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
LOG_PREFIX=image
# log, die, cache_area, lock_area (the Go settings it also exports do not matter here).
# shellcheck source=hack/lib/gobuild.sh
source "$here/lib/gobuild.sh"
export LC_ALL=C

out="$repo/build/kai-image.oci.tar"
mirror="${KAI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${KAI_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
image_path="PATH=/opt/kai/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" # Docker's PATH + ENV
components=(operator scheduler binder podgrouper podgroup-controller queue-controller admission apply-crds doctor)
tag="$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
    "$repo/pyproject.toml")"

[[ $EUID -eq 0 ]] || die "run as root: mmdebstrap --mode=root and the check's chroot need it"
if ! command -v mmdebstrap >/dev/null 2>&1 || ! command -v umoci >/dev/null 2>&1; then
    log "installing Debian's mmdebstrap (with mmtarfilter) and umoci"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap umoci >&2 ||
        die "apt-get could not install mmdebstrap and umoci"
fi

cache="$(cache_area image)"
lock_area "$cache"
work="$(mktemp -d "$cache/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

check() {
    [[ -f "$out" ]] || die "no image at $out: run hack/image.sh first"
    local layout="$work/check-layout" bundle="$work/check-bundle" failed=0 rc sub checked=$SECONDS
    mkdir "$layout"
    tar -xf "$out" -C "$layout" || die "cannot read $out"
    umoci unpack --image "$layout:$tag" "$bundle" >&2 || die "umoci cannot unpack $out:$tag"
    # The runtime config umoci derives from the image: args = Entrypoint + Cmd, the user resolved, the environment.
    local uid gid args envs
    eval "$(python3 - "$bundle/config.json" <<'EOF'
import json, shlex, sys
p = json.load(open(sys.argv[1]))["process"]
words = lambda xs: " ".join(shlex.quote(x) for x in xs)
print(f"uid={p['user']['uid']} gid={p['user']['gid']} args=({words(p['args'])}) envs=({words(p['env'])})")
EOF
    )"
    [[ "$uid:$gid ${args[*]}" == "10000:10000 kai --help" ]] ||
        die "the image runs '${args[*]}' as $uid:$gid, not 'kai --help' as 10000:10000"
    run() { env -i "${envs[@]}" chroot --userspec="$uid:$gid" "$bundle/rootfs" "$@"; }
    log "$(run python3 --version) on Debian $(cat "$bundle/rootfs/etc/debian_version"), as uid $uid, env ${envs[*]}"

    rc=0
    run "${args[@]}" >/dev/null || rc=$?
    log "check: the default command, ${args[*]}: exit $rc"
    ((rc == 0)) || failed=1
    for sub in "${components[@]}"; do
        rc=0
        run kai "$sub" --help >/dev/null || rc=$?
        log "check: kai $sub --help: exit $rc"
        ((rc == 0)) || failed=1
    done
    rc=0
    run sh -c 'cat /kai/crds/*.yaml' | cmp -s - <(cat "$repo"/deploy/helm/kai-scheduler/crds/*.yaml) || rc=$?
    log "check: /kai/crds, read as uid $uid, equals deploy/helm/kai-scheduler/crds: exit $rc"
    ((rc == 0)) || failed=1
    rc=0
    cp "$repo/examples/department.yaml" "$bundle/rootfs/tmp/"
    run kai simulate /tmp/department.yaml >/dev/null || rc=$?
    log "check: kai simulate examples/department.yaml: exit $rc"
    ((rc == 0)) || failed=1
    ((failed == 0)) || die "the image at $out does not run (see the exits above)"
    log "check passed in $((SECONDS - checked))s: $out"
}

if [[ "${1:-}" == --check ]]; then
    check
    exit 0
fi
[[ $# -eq 0 ]] || die "usage: hack/image.sh [--check]"

started=$SECONDS
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}"
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
log "$(mmdebstrap --version), $(umoci --version), $(python3 --version) on the host; image time $created"

# 1. Wheels. The host's Python must be the image's minor version, for pip to pick the right binary wheels.
python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || die "the host's python3 must be 3.11, as bookworm's"
mkdir "$work/context" "$work/wheels"
tar -C "$repo" --exclude=__pycache__ -cf - pyproject.toml README.md src | tar -C "$work/context" -xf -
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --upgrade pip >&2
"$work/venv/bin/pip" wheel --quiet --wheel-dir "$work/wheels" "$work/context" >&2 || die "pip could not build the wheels"
log "$(find "$work/wheels" -name '*.whl' | wc -l) wheels in $((SECONDS - started))s"

# 2. The root filesystem, as a tarball whose ./dev is empty (a runtime mounts its own). Commands in the chroot get a
#    clean environment, so the host's PIP_* settings stay out and .pyc files are stamped by hash (SOURCE_DATE_EPOCH).
in_root="chroot \"\$1\" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
step=$SECONDS
mmdebstrap --mode=root --variant=minbase --format=tar --include=python3,python3-venv \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook="$in_root useradd --uid 10000 --user-group --no-create-home --shell /usr/sbin/nologin kai" \
    --customize-hook="$in_root python3 -m venv /opt/kai" \
    --customize-hook="copy-in $work/wheels /tmp" \
    --customize-hook="$in_root /opt/kai/bin/pip install --quiet --no-cache-dir --no-index --find-links /tmp/wheels kai" \
    --customize-hook='rm -rf "$1/tmp/wheels" "$1/etc/resolv.conf" "$1/etc/hostname"' \
    --customize-hook='mkdir "$1/kai"' \
    --customize-hook="copy-in $repo/deploy/helm/kai-scheduler/crds /kai" \
    bookworm - "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
    "deb $security_mirror bookworm-security main" | mmtarfilter --path-exclude='/dev/*' >"$work/layer.tar" ||
    die "mmdebstrap failed (see its output above)"
log "root filesystem in $((SECONDS - step))s"

# 3. The OCI image layout and its tarball. Every timestamp is SOURCE_DATE_EPOCH, so the same commit, mirror content
#    and wheels give the same digests.
layout="$work/layout"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci raw add-layer --image "$layout:$tag" --history.created "$created" \
    --history.created_by "hack/image.sh: mmdebstrap bookworm python3 python3-venv, kai $tag wheels, user kai, /kai/crds" \
    "$work/layer.tar"
umoci config --image "$layout:$tag" --no-history --created "$created" --config.user 10000:10000 \
    --config.entrypoint kai --config.cmd --help --config.env "$image_path"
umoci gc --layout "$layout"
mkdir -p "$(dirname "$out")"
tar -C "$layout" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner -cf "$out.tmp" .
mv "$out.tmp" "$out"
manifest="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
    "$layout/index.json")"
log "built in $((SECONDS - started))s: $out (kai:$tag, manifest $manifest)"
log "size: $(numfmt --to=iec "$(stat -c %s "$out")") archive, $(numfmt --to=iec "$(stat -c %s "$work/layer.tar")") unpacked"
rm -rf "$layout" "$work/layer.tar"

check
