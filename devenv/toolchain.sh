#!/usr/bin/env bash
# Builds the pinned toolchain from Go modules into a cache outside the checkout.
# Each piece lands in $TOOLCHAIN/<piece>-<version>/ and is built once; a stamp
# file marks a finished build, so an interrupted one is simply redone.
# Usage: toolchain.sh [all|etcd|kube|kube-node|containerd|coredns|metallb|pause|pulumi|langhost|dynamic-provider|k8s-provider|quadlet|bindir]
# (`quadlet` builds podman's Quadlet generators of QUADLET_VERSIONS and prints their paths.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=devenv/versions.env
. "$here/versions.env"
# shellcheck source=devenv/lib.sh
. "$here/lib.sh"
PROG=toolchain
TOOLCHAIN=$CACHE/toolchain
BIN=$TOOLCHAIN/bin-pulumi$PULUMI_VERSION-k8s$PULUMI_KUBERNETES_VERSION-kube$KUBERNETES_VERSION-etcd$ETCD_VERSION-containerd$CONTAINERD_VERSION
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-auto}

need_go() {
  command -v go >/dev/null || die "Go is missing: install Go >= 1.25 (only needed to build the toolchain once) and run again"
}

# Each piece's directory: its version, and for our own sources (the provider's
# fixes, the pause program) their hash, so an edit rebuilds it.
piece() { # kind
  case $1 in
    etcd) echo "etcd-$ETCD_VERSION" ;;
    pulumi) echo "pulumi-$PULUMI_VERSION" ;;
    k8s-provider) echo "pulumi-resource-kubernetes-$PULUMI_KUBERNETES_VERSION-$(cat "$here"/provider-fixes/*.py | sha256sum | cut -c1-8)" ;;
    kube) echo "kube-$KUBERNETES_VERSION" ;;
    kube-node) echo "kube-node-$KUBERNETES_VERSION" ;;
    containerd) echo "containerd-$CONTAINERD_VERSION" ;;
    coredns) echo "coredns-$COREDNS_VERSION" ;;
    metallb) echo "metallb-$METALLB_VERSION" ;;
    pause) echo "pause-$PAUSE_VERSION-$(cat "$here/pause/main.go" "$here/pause/go.mod" | sha256sum | cut -c1-12)" ;;
    quadlet-*) echo "$1" ;;
    *) die "unknown piece '$1'" ;;
  esac
}
piece_dir() { echo "$TOOLCHAIN/$1"; }
done_already() { [ -f "$(piece_dir "$1")/.done" ]; }

# A first build shows one line on stderr (`make` drops this script's stdout):
# the pieces it builds and how long that usually takes. What Go prints goes
# to the phase's log, shown when a step fails.
LOG=$LOG_DIR/toolchain.log
declare -A NAME=([etcd]=etcd [pulumi]=pulumi [k8s-provider]=pulumi-kubernetes [kube]=kube-apiserver
                 [kube-node]=kubelet [containerd]=containerd [coredns]=coredns [metallb]=metallb [pause]=pause)
# Seconds each took on the reference machine (2 cores, empty Go caches, nothing else running; at
# 7dc9b3a: 29 min 44 s in all; docs/local-environment.md).
declare -A COLD=([etcd]=94 [pulumi]=365 [k8s-provider]=582 [kube]=322 [kube-node]=116 [containerd]=93
                 [coredns]=198 [pause]=10)
# MetalLB's is an estimate, not yet measured in a cold `make up` (a `go install` of its
# controller and speaker took 2 min 6 s from an empty module cache on 2 cores).
COLD[metallb]=150
# One kind per podman version of QUADLET_VERSIONS, quadlet-<version>: the three
# took 28-34 s together (the first also builds the standard library they share).
QUADLETS=()
for v in $QUADLET_VERSIONS; do
  QUADLETS+=("quadlet-$v"); NAME[quadlet-$v]=quadlet-$v; COLD[quadlet-$v]=11
done
announce() { # kind...: the phase's line, if any of them is still to build
  local kind names=() seconds=0 list
  for kind in "$@"; do
    done_already "$(piece "$kind")" && continue
    names+=("${NAME[$kind]}"); seconds=$((seconds + COLD[$kind]))
  done
  [ ${#names[@]} -gt 0 ] || return 0
  need_go
  printf -v list '%s, ' "${names[@]}"
  phase toolchain "$LOG" "building ${list%, } from Go modules" "$(usually "$seconds") on a cold cache"
}
quietly() { logged "$LOG" "$@"; }
begin_piece() { # piece what
  need_go
  PIECE_START=$SECONDS
  mkdir -p "$(piece_dir "$1")" "$LOG_DIR"
  echo "--- building $2 into $(piece_dir "$1")" >>"$LOG"
}
mark_done() {
  touch "$(piece_dir "$1")/.done"
  echo "--- built $1 in $(((SECONDS - PIECE_START) / 60))m$(((SECONDS - PIECE_START) % 60))s" >>"$LOG"
}
wrapper() { # fresh throw-away Go module to build one piece in
  local d=$TOOLCHAIN/build/$1; rm -rf "$d"; mkdir -p "$d"; cd "$d"; quietly go mod init "example.local/$1-build"
}

build_etcd() {
  local p; p=$(piece etcd); done_already "$p" && return 0
  begin_piece "$p" "etcd $ETCD_VERSION"
  wrapper etcd
  quietly go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
  quietly go build -trimpath -ldflags "-s -w" -o "$(piece_dir "$p")/etcd" go.etcd.io/etcd/server/v3
  mark_done "$p"
}

# A wrapper module for k8s.io/kubernetes: every staging module (v0.0.0 in its
# go.mod) replaced by its published v0.MINOR.PATCH, and its godebug line copied.
kube_wrapper() { # name
  wrapper "$1"
  local staging=0.${KUBERNETES_VERSION#1.} gomod m godebug
  gomod=$(go list -m -json "k8s.io/kubernetes@v$KUBERNETES_VERSION" 2>>"$LOG" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])') || log_failed "$LOG" "finding k8s.io/kubernetes v$KUBERNETES_VERSION"
  while read -r m; do
    quietly go mod edit "-replace=$m=$m@v$staging"
  done < <(awk '$1 ~ /^k8s\.io\// && $2=="v0.0.0" {print $1}' "$gomod" | sort -u)
  godebug=$(awk '$1=="godebug" {print $2}' "$gomod" | head -1)
  [ -z "$godebug" ] || quietly go mod edit "-godebug=$godebug"
  quietly go get "k8s.io/kubernetes/cmd/kube-apiserver@v$KUBERNETES_VERSION"
}
# Without them the binaries report v0.0.0 and clients refuse the cluster.
kube_ldflags() {
  local minor v=k8s.io/component-base/version c=k8s.io/client-go/pkg/version
  minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
  echo "-s -w -X $v.gitVersion=v$KUBERNETES_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $c.gitVersion=v$KUBERNETES_VERSION -X $c.gitMajor=1 -X $c.gitMinor=$minor"
}

build_kube() {
  local p; p=$(piece kube); done_already "$p" && return 0
  begin_piece "$p" "kube-apiserver and kubectl $KUBERNETES_VERSION"
  kube_wrapper kube
  local ldf; ldf=$(kube_ldflags)
  quietly go build -trimpath -ldflags "$ldf" -o "$(piece_dir "$p")/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  quietly go build -trimpath -ldflags "$ldf" -o "$(piece_dir "$p")/kubectl" k8s.io/kubernetes/cmd/kubectl
  mark_done "$p"
}

# The node's own components, in one build so they share their compile work
# (and, through the build cache, the API server's).
build_kube_node() {
  local p; p=$(piece kube-node); done_already "$p" && return 0
  begin_piece "$p" "kubelet, kube-controller-manager, kube-scheduler and kube-proxy $KUBERNETES_VERSION"
  kube_wrapper kube-node
  quietly go build -trimpath -ldflags "$(kube_ldflags)" -o "$(piece_dir "$p")/" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy
  mark_done "$p"
}

build_containerd() {
  local p; p=$(piece containerd); done_already "$p" && return 0
  begin_piece "$p" "containerd, ctr and containerd-shim-runc-v2 $CONTAINERD_VERSION"
  wrapper containerd
  local m=github.com/containerd/containerd/v2
  quietly go get "$m@v$CONTAINERD_VERSION"
  quietly go build -trimpath -tags no_btrfs -ldflags "-s -w -X $m/version.Version=v$CONTAINERD_VERSION" -o "$(piece_dir "$p")/" \
    "$m/cmd/containerd" "$m/cmd/ctr" "$m/cmd/containerd-shim-runc-v2"
  mark_done "$p"
}

# CoreDNS and its image (one static binary at the root).
build_coredns() {
  local p d; p=$(piece coredns); d=$(piece_dir "$p")
  if ! done_already "$p"; then
    begin_piece "$p" "coredns $COREDNS_VERSION"
    wrapper coredns
    quietly go get "github.com/coredns/coredns@v$COREDNS_VERSION"
    quietly go build -trimpath -ldflags "-s -w" -o "$d/coredns" github.com/coredns/coredns
    mark_done "$p"
  fi
  image_from_binary "$d/coredns" "$d/image.tar" "$COREDNS_IMAGE" /coredns
}

# MetalLB's controller and speaker (devenv/dataplane runs them), an image each (one static
# binary at the root, as the release's images have it), and the release's own CRDs, from
# the module's config/crd/bases (the ones its config/crd kustomization lists, without the
# BGPPeer conversion-webhook patch: the environment runs MetalLB with its webhooks off).
build_metallb() {
  local p d m=go.universe.tf/metallb src f; p=$(piece metallb); d=$(piece_dir "$p")
  if ! done_already "$p"; then
    begin_piece "$p" "MetalLB $METALLB_VERSION (controller, speaker, CRDs)"
    wrapper metallb
    quietly go get "$m@v$METALLB_VERSION"
    quietly go build -trimpath -ldflags "-s -w" -o "$d/" "$m/controller" "$m/speaker"
    src=$(go list -m -f '{{.Dir}}' "$m" 2>>"$LOG") || log_failed "$LOG" "finding MetalLB's module"
    compgen -G "$src/config/crd/bases/*.yaml" >/dev/null || die "MetalLB $METALLB_VERSION has no config/crd/bases/*.yaml"
    for f in "$src"/config/crd/bases/*.yaml; do printf -- '---\n'; cat "$f"; done >"$d/crds.yaml.tmp"
    mv -f "$d/crds.yaml.tmp" "$d/crds.yaml"
    mark_done "$p"
  fi
  image_from_binary "$d/controller" "$d/controller.tar" "$METALLB_CONTROLLER_IMAGE" /controller
  image_from_binary "$d/speaker" "$d/speaker.tar" "$METALLB_SPEAKER_IMAGE" /speaker
}

# The pause program of devenv/pause.
build_pause() {
  local p d; p=$(piece pause); d=$(piece_dir "$p")
  if ! done_already "$p"; then
    begin_piece "$p" "pause $PAUSE_VERSION"
    (cd "$here/pause" && GOFLAGS='' quietly go build -trimpath -ldflags "-s -w" -o "$d/pause" .)
    mark_done "$p"
  fi
  image_from_binary "$d/pause" "$d/image.tar" "$PAUSE_IMAGE" /pause
}

# An image whose root holds one static binary, also its entrypoint.
image_from_binary() { # binary tarball image-ref entrypoint
  [ -f "$2" ] && [ "$(python3 "$here/oci.py" --index "$2" | cut -d' ' -f1)" = "$3" ] && return 0
  local root; mkdir -p "$TOOLCHAIN/build"; root=$(mktemp -d "$TOOLCHAIN/build/rootfs.XXXXXX")
  install -m755 "$1" "$root$4"
  mkdir -m755 "$root/etc"; mkdir -m1777 "$root/tmp"
  printf 'root:x:0:0:root:/:/nonexistent\nnobody:x:65534:65534:nobody:/:/nonexistent\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
  python3 "$here/oci.py" --rootfs "$root" --out "$2" --name "$3" --entrypoint "[\"$4\"]" --mtime 0 >/dev/null
  rm -rf "$root"
}

# podman's Quadlet, the systemd generator that turns the roles' .container units
# into services, as each podman line users' nodes run has it (QUADLET_VERSIONS):
# quadlet-<version>, which the unit tests run over the roles' units. Under a lock:
# `make unit` builds them, and several checkouts may share this cache.
build_quadlet() { # version
  local v=$1 p m=github.com/containers/podman/v${1%%.*}
  p=$(piece "quadlet-$v"); done_already "$p" && return 0
  begin_piece "$p" "podman's quadlet $v"
  wrapper "$p"
  quietly go get "$m/cmd/quadlet@v$v"
  quietly go build -trimpath -ldflags "-s -w" -o "$(piece_dir "$p")/$p" "$m/cmd/quadlet"
  mark_done "$p"
}
build_quadlets() {
  local kind
  mkdir -p "$TOOLCHAIN"; take_lock "$TOOLCHAIN/.quadlet.lock"
  for kind in "${QUADLETS[@]}"; do build_quadlet "${kind#quadlet-}"; done
}
quadlet_paths() {
  local kind
  for kind in "${QUADLETS[@]}"; do echo "$(piece_dir "$(piece "$kind")")/$kind"; done
}

# The CLI with the project's fixes (devenv/cli-fixes/), built from a copy of
# pulumi's pkg module; the hash of the fixes is in .cli-fixes, so an edit
# rebuilds the CLI (the language host and plugins beside it stay).
cli_fixes() { cat "$here"/cli-fixes/*.py | sha256sum | cut -c1-8; }
build_pulumi() {
  local p; p=$(piece pulumi)
  done_already "$p" && [ "$(cat "$(piece_dir "$p")/.cli-fixes" 2>/dev/null)" = "$(cli_fixes)" ] && return 0
  begin_piece "$p" "pulumi $PULUMI_VERSION and its Python language host"
  wrapper pulumi
  quietly go mod edit "-replace=github.com/atotto/clipboard=$CLIPBOARD_FORK"
  quietly go get "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v$PULUMI_VERSION" "github.com/pulumi/pulumi/sdk/v3@v$PULUMI_VERSION"
  local pkg fix tree=$TOOLCHAIN/build/pulumi-pkg
  pkg=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/pkg/v3 2>>"$LOG") || log_failed "$LOG" "finding pulumi's pkg module"
  rm -rf "$tree"; cp -r "$pkg" "$tree"; chmod -R u+w "$tree"
  for fix in "$here"/cli-fixes/*.py; do quietly python3 "$fix" "$tree"; done
  quietly go mod edit "-replace=github.com/pulumi/pulumi/pkg/v3=$tree"
  local ldf="-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION"
  quietly go build -trimpath -tags osusergo,grpcnotrace -ldflags "$ldf" -o "$(piece_dir "$p")/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  # The Python SDK's program executor ships in the sdk module (its
  # dynamic-provider plugin too, in whose place install_dynamic_provider puts ours).
  local sdk; sdk=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3 2>>"$LOG") || log_failed "$LOG" "finding pulumi's sdk module"
  install -m755 "$sdk/python/cmd/pulumi-language-python-exec" "$(piece_dir "$p")/"
  rm -rf "$tree"
  cli_fixes >"$(piece_dir "$p")/.cli-fixes"
  mark_done "$p"
}

# The provider with the project's fixes (devenv/provider-fixes/).
build_k8s_provider() {
  local p; p=$(piece k8s-provider); done_already "$p" && return 0
  begin_piece "$p" "pulumi-resource-kubernetes $PULUMI_KUBERNETES_VERSION"
  local mod=github.com/pulumi/pulumi-kubernetes/provider/v4 info src sum
  info=$(cd /tmp && GONOSUMDB=$mod go mod download -json "$mod@$PULUMI_KUBERNETES_MODULE_VERSION" 2>>"$LOG") ||
    log_failed "$LOG" "downloading $mod"
  sum=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("Sum",""))' <<<"$info")
  [ "$sum" = "$PULUMI_KUBERNETES_MODULE_SUM" ] || die "$mod hash $sum differs from the pinned $PULUMI_KUBERNETES_MODULE_SUM"
  src=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])' <<<"$info")
  local d=$TOOLCHAIN/build/k8sprov; rm -rf "$d"; cp -r "$src" "$d"; chmod -R u+w "$d"; cd "$d"
  quietly go mod edit -dropreplace=github.com/pulumi/pulumi-kubernetes/sdk/v4 \
    "-require=github.com/pulumi/pulumi-kubernetes/sdk/v4@v$PULUMI_KUBERNETES_SDK_VERSION"
  local fix
  for fix in "$here"/provider-fixes/*.py; do quietly python3 "$fix" "$d"; done
  export GONOSUMDB=$mod
  (cd cmd/pulumi-resource-kubernetes && VERSION=$PULUMI_KUBERNETES_VERSION quietly go run generate.go)
  quietly go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=v$PULUMI_KUBERNETES_VERSION" \
    -o "$(piece_dir "$p")/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes
  mark_done "$p"
}

# The Python language host (devenv/langhost): its own small venv with the
# Pulumi SDK (for gRPC and the protocol stubs), the package beside the SDK's
# executor shim, a copy of versions.env (the host reports PULUMI_VERSION as its
# version), and a wrapper named as the CLI expects. Re-installed when it changes.
install_langhost() {
  # Beside the real `pulumi`, where the CLI looks for its bundled plugins.
  local d=$TOOLCHAIN/pulumi-$PULUMI_VERSION src=$here/langhost f site
  [ -x "$d/pulumi-language-python-exec" ] || die "build pulumi first: devenv/toolchain.sh pulumi"
  if [ ! -f "$d/langhost-venv/.done" ]; then
    rm -rf "$d/langhost-venv"; quietly python3 -m venv "$d/langhost-venv"
    quietly "$d/langhost-venv/bin/pip" install "pulumi==$PULUMI_VERSION"
    touch "$d/langhost-venv/.done"
  fi
  mkdir -p "$d/langhost"
  for f in "$src"/*.py; do
    cmp -s "$f" "$d/langhost/${f##*/}" || install -m644 "$f" "$d/langhost/${f##*/}"
  done
  for f in "$d"/langhost/*.py; do [ -f "$src/${f##*/}" ] || rm -f "$f"; done
  cmp -s "$here/versions.env" "$d/versions.env" || install -m644 "$here/versions.env" "$d/versions.env"
  rm -f "$d/pulumi_language_python.py"  # the single-file host of earlier versions
  # `python -P -m langhost` finds the package through a .pth file, so nothing
  # leaks into the environment of the programs it runs (as PYTHONPATH would).
  site=$("$d/langhost-venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  [ "$(cat "$site/openstack_nova_langhost.pth" 2>/dev/null)" = "$d" ] || echo "$d" > "$site/openstack_nova_langhost.pth"
  printf '#!/bin/sh\nexec "%s" -P -m langhost -use-executor="%s" "$@"\n' \
    "$d/langhost-venv/bin/python" "$d/pulumi-language-python-exec" > "$d/pulumi-language-python.tmp"
  chmod 755 "$d/pulumi-language-python.tmp"; mv "$d/pulumi-language-python.tmp" "$d/pulumi-language-python"
}

# The dynamic-provider plugin (devenv/dynamic-provider.sh and dynamic_provider.py):
# the SDK's server with a thread pool of OPENSTACK_NOVA_MAX_RUNS, not its fixed 4.
# Beside `pulumi`, under the name the CLI looks for (on PATH, through the bin
# directory's link, then next to `pulumi`). Re-installed when it changes; each
# file replaced whole, as a CLI may be starting it.
install_dynamic_provider() {
  local d=$TOOLCHAIN/pulumi-$PULUMI_VERSION
  mkdir -p "$d"
  replace_file "$here/dynamic_provider.py" "$d/dynamic_provider.py" 644
  replace_file "$here/dynamic-provider.sh" "$d/pulumi-resource-pulumi-python" 755
}
replace_file() { # src dest mode
  cmp -s "$1" "$2" && return 0
  install -m"$3" "$1" "$2.tmp"; mv -f "$2.tmp" "$2"
}

# Resource plugins go where the CLI looks for an exact version ($PULUMI_HOME's
# plugin cache), so it never searches PATH or tries a download.
register_provider() {
  local home=${PULUMI_HOME:-$CACHE/pulumi-home}
  local dir=$home/plugins/resource-kubernetes-v$PULUMI_KUBERNETES_VERSION
  local src; src=$TOOLCHAIN/$(piece k8s-provider)/pulumi-resource-kubernetes
  [ -x "$src" ] || die "missing $src: run 'devenv/toolchain.sh all'"
  if ! cmp -s "$src" "$dir/pulumi-resource-kubernetes"; then
    mkdir -p "$dir"; rm -f "$dir.partial"; install -m755 "$src" "$dir/pulumi-resource-kubernetes"
  fi
}

# One directory with every binary, linked; PATH points here. The cluster's
# own images are linked in its images/ directory, MetalLB's CRDs in manifests/.
assemble_bindir() {
  mkdir -p "$BIN/images" "$BIN/manifests"
  local f kn=$TOOLCHAIN/kube-node-$KUBERNETES_VERSION ctd=$TOOLCHAIN/containerd-$CONTAINERD_VERSION quadlets
  mapfile -t quadlets < <(quadlet_paths)
  for f in "$TOOLCHAIN/etcd-$ETCD_VERSION/etcd" "$TOOLCHAIN/kube-$KUBERNETES_VERSION/kube-apiserver" \
           "$TOOLCHAIN/kube-$KUBERNETES_VERSION/kubectl" "$TOOLCHAIN/pulumi-$PULUMI_VERSION/pulumi" \
           "$TOOLCHAIN/pulumi-$PULUMI_VERSION/pulumi-language-python" \
           "$TOOLCHAIN/pulumi-$PULUMI_VERSION/pulumi-language-python-exec" \
           "$TOOLCHAIN/pulumi-$PULUMI_VERSION/pulumi-resource-pulumi-python" \
           "$kn/kubelet" "$kn/kube-controller-manager" "$kn/kube-scheduler" "$kn/kube-proxy" \
           "$ctd/containerd" "$ctd/ctr" "$ctd/containerd-shim-runc-v2" "${quadlets[@]}"; do
    [ -x "$f" ] || die "missing $f: run 'devenv/toolchain.sh all'"
    ln -sfn "$f" "$BIN/$(basename "$f")"
  done
  local metallb; metallb=$TOOLCHAIN/$(piece metallb)
  for f in "$TOOLCHAIN/$(piece pause)/image.tar:images/pause.tar" "$TOOLCHAIN/$(piece coredns)/image.tar:images/coredns.tar" \
           "$metallb/controller.tar:images/metallb-controller.tar" "$metallb/speaker.tar:images/metallb-speaker.tar" \
           "$metallb/crds.yaml:manifests/metallb-crds.yaml"; do
    [ -f "${f%:*}" ] || die "missing ${f%:*}: run 'devenv/toolchain.sh all'"
    ln -sfn "${f%:*}" "$BIN/${f##*:}"
  done
  register_provider
  echo "$BIN"
}

case "${1:-all}" in
  etcd) announce etcd; build_etcd ;;
  kube) announce kube; build_kube ;;
  kube-node) announce kube-node; build_kube_node ;;
  containerd) announce containerd; build_containerd ;;
  coredns) announce coredns; build_coredns ;;
  metallb) announce metallb; build_metallb ;;
  pause) announce pause; build_pause ;;
  pulumi) announce pulumi; build_pulumi ;;
  k8s-provider) announce k8s-provider; build_k8s_provider ;;
  langhost) install_langhost ;;
  dynamic-provider) install_dynamic_provider ;;
  # its own log: `make unit` may build them while another toolchain build logs
  quadlet) LOG=$LOG_DIR/quadlet.log; announce "${QUADLETS[@]}"; build_quadlets; quadlet_paths ;;
  bindir) install_langhost >/dev/null; install_dynamic_provider; assemble_bindir ;;
  all) announce etcd pulumi k8s-provider kube kube-node containerd coredns metallb pause "${QUADLETS[@]}"
       build_etcd; build_pulumi; install_langhost; install_dynamic_provider; build_k8s_provider; build_kube; build_kube_node
       build_containerd; build_coredns; build_metallb; build_pause; build_quadlets; assemble_bindir ;;
  *) die "unknown piece '$1'" ;;
esac
