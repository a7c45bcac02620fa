#!/bin/bash
# Runs in the trixie build root (devenv/hosts/libvirt/tree.sh): Debian's
# patches, Debian's configure flags less what the nodes do not need, a meson
# build, and an install laid out as Debian's rules lay it out.
set -euo pipefail
version=$1 src=$2 dest=$3 # Debian version, unpacked source, DESTDIR
cd "$src"

changelog=$(dpkg-parsechangelog -S Version)
[ "$changelog" = "$version" ] || { echo "the source is $changelog, not $version" >&2; exit 1; }

# Debian's patches in the order of their series, as dpkg-source applies a 3.0 (quilt) package.
while read -r patch _; do
  case "$patch" in '' | '#'*) continue ;; esac
  patch -p1 --forward --batch --no-backup-if-mismatch --quiet <"debian/patches/$patch"
done <debian/patches/series

# Debian's compiler and linker flags (debian/rules' build options).
export DEB_BUILD_MAINT_OPTIONS=hardening=+bindnow DEB_LDFLAGS_MAINT_STRIP=-Wl,-Bsymbolic-functions
eval "$(dpkg-buildflags --export=sh)"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

# shellcheck disable=SC2054  # commas in meson values, not array separators
flags=(
  # What debhelper's meson build system passes.
  --wrap-mode=nodownload --buildtype=plain --prefix=/usr --sysconfdir=/etc --localstatedir=/var
  "--libdir=lib/$multiarch" -Dpython.bytecompile=-1
  # debian/rules for linux/amd64, as is: Debian's paths, and every feature of the
  # packages a node installs (libvirt0, libvirt-clients, libvirt-daemon-system and
  # its drivers). driver_libvirtd builds the modular daemons, their units and
  # their config as well as libvirtd (Debian lists them in debian/not-installed);
  # nothing else is needed to have them.
  --libexecdir=/usr/lib/libvirt -Drunstatedir=/run -Dinitconfdir=/etc/default
  -Dsshconfdir=/etc/ssh/ssh_config.d -Dunitdir=/usr/lib/systemd/system -Dsysusersdir=/usr/lib/sysusers.d
  -Dno_git=true -Dpackager=Debian "-Dpackager_version=$version"
  -Ddriver_libvirtd=enabled -Dhost_validate=enabled -Dssh_proxy=enabled
  -Ddriver_qemu=enabled -Ddriver_remote=enabled -Dremote_default_mode=legacy -Ddriver_test=enabled
  -Ddriver_ch=disabled -Ddriver_bhyve=disabled -Ddriver_hyperv=disabled -Dopenwsman=disabled -Ddriver_vz=disabled
  -Dqemu_user=libvirt-qemu -Dqemu_group=libvirt-qemu "-Dqemu_moddir=/usr/lib/$multiarch/qemu"
  -Dqemu_datadir=/usr/share/qemu -Drpath=disabled -Dtls_priority=NORMAL
  -Dsasl=enabled -Dlibssh2=enabled -Dlibssh=enabled -Dreadline=enabled
  -Dbash_completion=enabled -Dbash_completion_dir=/usr/share/bash-completion/completions
  -Djson_c=enabled -Dpolkit=enabled -Dudev=enabled -Dpciaccess=enabled
  -Dstorage_fs=enabled -Dstorage_dir=enabled -Dstorage_vstorage=disabled -Dblkid=enabled
  -Dinit_script=systemd -Dnumactl=enabled -Dnumad=enabled -Dsysctl_config=enabled -Duserfaultfd_sysctl=enabled
  -Dselinux=enabled -Dsecdriver_selinux=enabled -Dselinux_mount=/sys/fs/selinux
  -Dapparmor=enabled -Dsecdriver_apparmor=enabled -Dapparmor_profiles=enabled
  -Dcapng=enabled -Dlibnl=enabled -Ddriver_network=enabled -Dfirewall_backend_priority=iptables,nftables
  -Dnetcf=disabled -Ddriver_secrets=enabled -Ddtrace=enabled -Daudit=enabled -Dlibpcap=enabled
  -Dfirewalld=enabled -Dattr=enabled -Dpm_utils=disabled
  # ARCHES_NBDKIT is empty in debian/arches.mk: no architecture has it.
  -Dnbdkit=disabled -Dnbdkit_config_default=disabled
  # libvirt_parthelper ships in libvirt-daemon-driver-storage, and only the disk backend builds it.
  -Dstorage_disk=enabled
  # Changed from debian/rules: left out because the nodes do not use them, and
  # they cost build time. Documentation (html and man pages) and the test suite:
  -Ddocs=disabled -Dtests=disabled
  # translations (libvirt-l10n is a Recommends; the nodes run in the C locale;
  # the catalogs are built all the same, and left out below):
  -Dnls=disabled
  # the other hypervisors' drivers and what only they use (the nodes run qemu only;
  # Debian builds ESX, VMware and OpenVZ into libvirt0, the others into packages
  # the nodes do not install):
  -Ddriver_esx=disabled -Dcurl=disabled -Ddriver_vmware=disabled -Ddriver_openvz=disabled
  -Ddriver_libxl=disabled -Ddriver_vbox=disabled -Ddriver_lxc=disabled -Dfuse=disabled -Dlogin_shell=disabled
  # the host interface driver, storage backends, the sanlock and NSS plugins: all
  # in packages the nodes do not install (nova keeps its disks as files, or
  # reaches Ceph through qemu itself):
  -Dstorage_lvm=disabled -Dstorage_scsi=disabled -Dstorage_iscsi=disabled
  -Dstorage_iscsi_direct=disabled -Dlibiscsi=disabled -Dstorage_mpath=disabled -Dstorage_zfs=disabled
  -Dstorage_rbd=disabled -Dstorage_gluster=disabled -Dglusterfs=disabled -Ddriver_interface=disabled
  -Dsanlock=disabled -Dnss=disabled -Dwireshark_dissector=disabled
)
rm -rf build "$dest"
LC_ALL=C.UTF-8 meson setup build "${flags[@]}"
ninja -C build -j "$(nproc)"
meson install -C build --no-rebuild --destdir "$dest"

cd "$dest"
# Debian's rules after the install (execute_after_dh_auto_install): the default
# network does not start by itself; networks and nwfilters are templates the
# maintainer scripts copy into /etc (the root has them already); the sysctl
# files are examples only; the polkit rule has Debian's name.
rm -rf etc/libvirt/qemu/networks/autostart
mkdir -p usr/share/libvirt/networks usr/share/libvirt/nwfilter
mv etc/libvirt/qemu/networks/* usr/share/libvirt/networks/
mv etc/libvirt/nwfilter/* usr/share/libvirt/nwfilter/
rm -rf usr/lib/sysctl.d
mv usr/share/polkit-1/rules.d/50-libvirt.rules usr/share/polkit-1/rules.d/60-libvirt.rules
# What no package of a node holds: the users come from Debian's maintainer
# scripts (not sysusers); headers, pkg-config files and examples are
# libvirt-dev's and libvirt-doc's, translations libvirt-l10n's, the ssh proxy
# libvirt-ssh-proxy's, the qemu tools in Python libvirt-clients-qemu's; the
# LXC and Xen files belong to drivers not built; /run is a tmpfs on a booted node.
rm -rf usr/lib/sysusers.d usr/include "usr/lib/$multiarch/pkgconfig" usr/share/doc usr/share/locale \
  usr/lib/libvirt/libvirt-ssh-proxy etc/ssh usr/bin/virt-qemu-qmp-proxy usr/bin/virt-qemu-sev-validate \
  etc/logrotate.d/libvirtd.libxl etc/logrotate.d/libvirtd.lxc etc/apparmor.d/usr.sbin.virtxend \
  etc/apparmor.d/abstractions/libvirt-lxc etc/apparmor.d/libvirt/TEMPLATE.lxc run
find "usr/lib/$multiarch" -maxdepth 1 -name 'libvirt*.so' -type l -delete

# Stripped as dh_strip strips (the debug symbols would be a -dbgsym package;
# .note.stapsdt, the dtrace probes, stays).
while IFS= read -r -d '' f; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  case "$f" in
    *.so | *.so.*) strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f" ;;
    *) strip --remove-section=.comment --remove-section=.note "$f" ;;
  esac
done < <(find . -type f -print0)

# The tree must hold each daemon, its units and its config.
for d in virtqemud virtproxyd virtsecretd virtnodedevd virtlogd virtlockd; do
  for f in "usr/sbin/$d" "usr/lib/systemd/system/$d.service" "usr/lib/systemd/system/$d.socket" \
    "usr/lib/systemd/system/$d-admin.socket" "etc/libvirt/$d.conf"; do
    [ -e "$f" ] || { echo "the install has no /$f" >&2; exit 1; }
  done
done
[ -e usr/lib/systemd/system/virtproxyd-tls.socket ] || { echo "the install has no virtproxyd-tls.socket" >&2; exit 1; }
