#!/bin/bash
# Runs in the booted check node (devenv/hosts/libvirt.sh check): every modular
# daemon is started by its socket when a client connects, answers, and qemu
# runs a guest under TCG.
set -euo pipefail
version=$1
upstream=${version%%-*}
guest=libvirt-check

ok() { printf 'ok: %s\n' "$*"; }
fail() {
  printf 'FAIL: %s\n' "$*"
  journalctl -b --no-pager -n 40 -o short-monotonic 2>/dev/null || true
  exit 1
}
active() { systemctl is-active --quiet "$1"; }

# systemctl needs PID 1's private bus, which it opens a moment after it starts.
for ((i = 0; i < 600; i++)); do [ -S /run/systemd/private ] && break; sleep 0.1; done
state=$(timeout 120 systemctl is-system-running --wait 2>/dev/null) || true
[ "$state" = running ] || fail "the node is '$state' after boot; failed units: $(systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')"
ok "the node booted to 'running'"

# Every program and module of the tree finds its libraries in the node.
# (ldd fails on the shell scripts among them, which need no library.)
missing=$({ ldd /usr/sbin/libvirtd /usr/sbin/virt* /usr/bin/virsh /usr/bin/virt-* /usr/lib/libvirt/libvirt_* \
  /usr/lib/*-linux-gnu/libvirt/*/*.so 2>/dev/null || true; } | awk '/:$/ { f = $1 } /not found/ { print f, $1 }')
[ -z "$missing" ] || fail "libraries not found: $missing"
ok "the daemons, tools and driver modules find all their libraries"

[ "$(systemctl is-enabled libvirtd.service libvirtd.socket | sort -u)" = masked ] || fail "libvirtd is not masked"
for d in virtqemud virtproxyd virtsecretd virtnodedevd virtlogd; do
  active "$d.socket" || fail "$d.socket is not listening"
  active "$d-admin.socket" || fail "$d-admin.socket is not listening"
  [ "$d" = virtlogd ] || active "$d-ro.socket" || fail "$d-ro.socket is not listening"
  ! active "$d.service" || fail "$d runs before any client connected"
done
ok "each daemon's sockets listen, no daemon runs yet"

out=$(virsh -c qemu:///system version) || fail "virsh -c qemu:///system version: $out"
grep -qx "Using API: QEMU $upstream" <<<"$out" || fail "unexpected API version: $out"
grep -q '^Running hypervisor: QEMU ' <<<"$out" || fail "no hypervisor in: $out"
active virtqemud.service || fail "virtqemud did not start for qemu:///system"
! active libvirtd.service || fail "libvirtd runs"
! active virtproxyd.service || fail "qemu:///system went through virtproxyd, not straight to virtqemud"
ok "virsh -c qemu:///system version, answered by virtqemud: $(tr '\n' ' ' <<<"$out")"

caps=$(virsh -c qemu:///system capabilities) || fail "virsh capabilities failed"
n=$(xmllint --xpath "count(/capabilities/guest[os_type='hvm']/arch[@name='x86_64']/domain[@type='qemu'])" - <<<"$caps")
[ "$n" -ge 1 ] || fail "the capabilities list no qemu domain for x86_64: $caps"
ok "the capabilities list the qemu (TCG) domain type for x86_64"

# virtproxyd serves libvirtd's socket to clients of the legacy mode (a nova-compute
# whose libvirt client predates the modular daemons) and passes them on.
out=$(virsh -c 'qemu:///system?mode=legacy' uri) || fail "qemu:///system through virtproxyd: $out"
active virtproxyd.service || fail "virtproxyd did not start for libvirtd's socket"
ok "virtproxyd answered on libvirtd's socket and passed the call to virtqemud"

virsh -c secret:///system secret-list >/dev/null || fail "secret:///system"
active virtsecretd.service || fail "virtsecretd did not start"
ok "virtsecretd answered secret:///system"
n=$(virsh -c nodedev:///system nodedev-list | grep -c .) || fail "nodedev:///system"
active virtnodedevd.service || fail "virtnodedevd did not start"
ok "virtnodedevd answered nodedev:///system ($n devices)"

for d in virtqemud virtproxyd virtsecretd virtnodedevd virtlogd; do
  # virtproxyd serves libvirtd's admin socket as well.
  admin=$d
  [ "$d" = virtproxyd ] && admin=libvirtd
  out=$(virt-admin -c "$admin:///system" version) || fail "virt-admin -c $admin:///system version: $out"
  grep -q "Running against daemon: $upstream" <<<"$out" || fail "$d reports: $out"
  active "$d.service" || fail "$d is not running"
  [ "$(readlink -f "/proc/$(systemctl show -P MainPID "$d.service")/exe")" = "/usr/sbin/$d" ] ||
    fail "$d.service does not run /usr/sbin/$d"
done
ok "each daemon answered virt-admin on its admin socket with libvirt $upstream"

# A guest: virtqemud starts qemu (TCG), virtlogd keeps its log.
xml=$(mktemp)
cat >"$xml" <<EOF
<domain type='qemu'>
  <name>$guest</name>
  <memory unit='MiB'>64</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <devices><memballoon model='none'/></devices>
</domain>
EOF
virsh -c qemu:///system create "$xml" >/dev/null || fail "the guest did not start"
[ "$(virsh -c qemu:///system domstate "$guest")" = running ] || fail "the guest is not running"
grep -q 'qemu-system-x86_64' "/var/log/libvirt/qemu/$guest.log" || fail "no qemu log from virtlogd"
virsh -c qemu:///system destroy "$guest" >/dev/null || fail "the guest did not stop"
ok "a TCG guest ran (qemu started by virtqemud, its log kept by virtlogd)"
