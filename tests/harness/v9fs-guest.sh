#!/bin/bash
# v9fs-guest.sh - run a shell snippet in a throw-away QEMU guest whose Linux v9fs
# client has mounted the 9P server listening on a HOST unix socket.
#
#   v9fs-guest.sh SOCKET 'SNIPPET'   run SNIPPET (busybox sh, cwd = the mount point)
#   v9fs-guest.sh --build-assets     build the cached kernel + initramfs, then exit
#
# Exit status: the snippet's own; 124 timeout; 125 guest/setup failure; 126 mount
# failed (mount's error and the guest's dmesg tail are printed on stdout).
# The snippet's stdout and stderr (merged) are printed on stdout; diagnostics on stderr.
#
# Transport, no IP networking: guest virtio-serial port "ninep" <-> QEMU chardev
# (QEMU connects to SOCKET as a client, once, at start) <-> the 9P server. In the
# guest two busybox `cat`s relay the port to two FIFOs, and the kernel mounts
#   mount -t 9p -o trans=fd,rfdno=3,wfdno=4,version=$V9_VERSION[,aname=..][,$V9_OPTS]
# (trans=fd straight on the port fails on kernels >= 5.10: "kernel write not
# supported for file /vport0p1".) The guest has only busybox; it runs as root.
#
# Knobs (environment):
#   V9_VERSION  9p2000.L (default) | 9p2000.u | 9p2000
#   V9_ANAME    attach name (aname=), e.g. the export path for diod
#   V9_OPTS     extra mount options, e.g. "cache=loose,msize=262144,uname=glenda"
#   V9_TIMEOUT  seconds before the guest is killed (default 120)
#   V9_ACCEL    tcg (default) | kvm   (kvm here is "kvm-pvm", which never boots a
#               stock Debian kernel: TCG is the choice that works on this machine)
#   V9_ASSETS   asset cache (default ${XDG_CACHE_HOME:-$HOME/.cache}/anvilfs/v9fs-assets)
#   V9_VERBOSE  1 = print the QEMU stderr and guest console log on stderr
#   V9_STATUS_FILE  if set, one line is written there: "snippet RC", "mount 126",
#               "timeout 124" or "setup 125", so a caller can tell the snippet's
#               own exit 124..126 from the harness's (tests/harness/vm.py uses it)
#
# Needs (Debian bookworm): qemu-system-x86 busybox-static, plus apt lists
# (`apt-get update`) and access to the Debian archive once, to `apt-get download`
# the generic kernel (linux-image-cloud-amd64 has no 9p). python3 is used if present
# to unpack an ELF vmlinux (PVH boot skips the decompressor, slow under TCG).
set -u
ASSET_REV=1           # bump when the cached layout or module list changes
V9_VERSION=${V9_VERSION:-9p2000.L}
V9_ANAME=${V9_ANAME:-}
V9_OPTS=${V9_OPTS:-}
V9_TIMEOUT=${V9_TIMEOUT:-120}
V9_ACCEL=${V9_ACCEL:-tcg}
V9_ASSETS=${V9_ASSETS:-${XDG_CACHE_HOME:-$HOME/.cache}/anvilfs/v9fs-assets}
V9_VERBOSE=${V9_VERBOSE:-0}
V9_STATUS_FILE=${V9_STATUS_FILE:-}
CACHE=$V9_ASSETS/r$ASSET_REV
MODULES="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
  virtio_console netfs fscache 9pnet 9pnet_fd 9p"
OPTIONAL_MODULES=" 9pnet_fd netfs fscache virtio_pci_legacy_dev virtio_pci_modern_dev "

say() { echo "v9fs-guest: $*" >&2; }
status() { [ -z "$V9_STATUS_FILE" ] || echo "$1 $2" >"$V9_STATUS_FILE"; }
die() { say "error: $*"; status setup 125; exit 125; }

need() {  # need COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found: apt-get install $2"
}

# ------------------------------------------------------------------ assets (cached)
fetch_kernel() {  # in cwd: leaves ./vmlinuz and ./kroot/lib/modules/$kver; prints kver
  local kpkg
  kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
    awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  if [ -z "$kpkg" ]; then
    say "error: apt-cache cannot resolve linux-image-amd64: run apt-get update"; return 1
  fi
  if ! apt-get download "$kpkg" >apt.log 2>&1; then
    cat apt.log >&2; say "error: apt-get download $kpkg failed (needs the Debian archive)"
    return 1
  fi
  mkdir kroot
  dpkg-deb --fsys-tarfile "$kpkg"_*.deb | tar -x -C kroot --wildcards './boot/vmlinuz-*' \
    '*/kernel/fs/9p/*' '*/kernel/net/9p/*' '*/kernel/fs/netfs/*' '*/kernel/fs/fscache/*' \
    '*/kernel/drivers/virtio/*' '*/kernel/drivers/char/virtio_console.ko*' ||
    { say "error: unpacking $kpkg failed"; return 1; }
  rm -f ./*.deb
  cp kroot/boot/vmlinuz-* vmlinuz || return 1
  echo "${kpkg#linux-image-}"
}

unpack_vmlinux() {  # vmlinuz -> ELF vmlinux; optional, the bzImage boots too
  command -v python3 >/dev/null 2>&1 || return 0
  python3 - <<'PY' || rm -f vmlinux
import lzma, sys
d = open('vmlinuz', 'rb').read()
i = d.find(b'\xfd7zXZ\x00')
if i < 0:
    sys.exit(1)
out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(d[i:])
if out[:4] != b'\x7fELF':
    sys.exit(1)
open('vmlinux', 'wb').write(out)
PY
  [ ! -s vmlinux ] || rm -f vmlinuz
}

copy_modules() {  # copy_modules KVER -> base/lib/modules/{*.ko,order}
  local kver=$1 m f
  mkdir -p base/lib/modules
  for m in $MODULES; do
    f=$(find kroot -path "*/$kver/kernel/*" \( -name "$m.ko" -o -name "$m.ko.xz" \
      -o -name "$m.ko.zst" \) | head -1)
    if [ -z "$f" ]; then   # built in, or absent on this kernel
      case $OPTIONAL_MODULES in *" $m "*) continue ;; esac
      say "error: kernel module $m not found for $kver"; return 1
    fi
    case $f in
      *.xz) xz -dc "$f" >"base/lib/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" >"base/lib/modules/$m.ko" ;;
      *) cp "$f" "base/lib/modules/$m.ko" ;;
    esac || { say "error: cannot unpack $f"; return 1; }
    echo "$m" >>base/lib/modules/order
  done
}

build_assets_in() {  # build_assets_in DIR
  cd "$1" || return 1
  local kver
  kver=$(fetch_kernel) || return 1
  unpack_vmlinux
  mkdir -p base/bin base/proc base/sys base/dev base/tmp base/mnt base/run
  cp /bin/busybox base/bin/busybox || return 1
  copy_modules "$kver" || return 1
  (cd base && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >base.cpio.gz || return 1
  rm -rf kroot base apt.log
  echo "rev=$ASSET_REV kernel=$kver" >STAMP
}

ensure_assets() {
  [ -s "$CACHE/STAMP" ] && return 0
  need apt-get apt; need dpkg-deb dpkg; need flock util-linux; need gzip gzip
  [ -x /bin/busybox ] || die "/bin/busybox not found: apt-get install busybox-static"
  ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' ||
    die "/bin/busybox is not static: apt-get install busybox-static"
  mkdir -p "$V9_ASSETS" || die "cannot create the asset cache $V9_ASSETS"
  exec 9>"$V9_ASSETS/.lock" || die "cannot open $V9_ASSETS/.lock"
  flock -w 900 9 || die "timed out waiting for another asset build ($V9_ASSETS/.lock)"
  if [ ! -s "$CACHE/STAMP" ]; then   # the lock holder before us may have built it
    local tmp
    tmp=$(mktemp -d "$V9_ASSETS/.build.XXXXXX") || die "cannot write in $V9_ASSETS"
    chmod 755 "$tmp"
    say "building guest assets in $CACHE (one-time, needs the Debian archive)"
    if ! (build_assets_in "$tmp"); then
      rm -rf "$tmp"; die "building the guest assets in $V9_ASSETS failed (see above)"
    fi
    mv -T "$tmp" "$CACHE" || { rm -rf "$tmp"; die "cannot install assets in $CACHE"; }
    say "assets ready: $(cat "$CACHE/STAMP")"
  fi
  exec 9>&-
}

# ------------------------------------------------------------------ guest /init
write_init() {  # the per-run /init, overlaid on the cached base archive
  cat >"$1" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin HOME=/ TERM=dumb
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
V9_VERSION=9p2000.L V9_ANAME= V9_OPTS= V9_MNT=/mnt
. /run/conf
report() { echo "@@V9STATUS=$1 $2@@" >/dev/console; exec 6>&-; reboot -f; }
for m in $(cat /lib/modules/order); do
  insmod "/lib/modules/$m.ko" || echo "init: insmod $m failed" >/dev/console
done
findport() { for p in /sys/class/virtio-ports/*; do
  [ -f "$p/name" ] && [ "$(cat "$p/name")" = "$1" ] && [ -c "/dev/${p##*/}" ] &&
    { echo "/dev/${p##*/}"; return 0; }; done; return 1; }
i=0; until P9=$(findport ninep) && OUTP=$(findport out); do
  i=$((i+1)); [ $i -gt 500 ] && break; usleep 10000; done
[ -n "$OUTP" ] || OUTP=/dev/console
exec 6>"$OUTP"
[ -n "$P9" ] || { echo "init: virtio port 'ninep' not found" >&6; report setup 125; }
exec 5<>"$P9"                  # a virtio port opens only once: both relays share fd 5
mkfifo /tmp/p9in /tmp/p9out
cat <&5 >/tmp/p9in &           # server -> kernel
cat </tmp/p9out >&5 &          # kernel -> server
exec 3<>/tmp/p9in 4<>/tmp/p9out
OPTS="trans=fd,rfdno=3,wfdno=4,version=$V9_VERSION"
[ -n "$V9_ANAME" ] && OPTS="$OPTS,aname=$V9_ANAME"
[ -n "$V9_OPTS" ] && OPTS="$OPTS,$V9_OPTS"
if ! mount -t 9p -o "$OPTS" anvil "$V9_MNT" 2>&6; then
  echo "init: mount -t 9p -o $OPTS failed; dmesg tail:" >&6
  dmesg | tail -5 >&6
  report mount 126
fi
export V9_MNT
cd "$V9_MNT" && sh /run/snippet.sh >&6 2>&6 </dev/null
rc=$?
cd /
umount "$V9_MNT" 2>/dev/null || umount -l "$V9_MNT" 2>&6
report snippet $rc
INIT
  chmod 755 "$1"
}

# ------------------------------------------------------------------ run
qesc() { printf '%s' "${1//,/,,}"; }                   # QEMU option value escaping
shq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

run_guest() {
  local sock=$1 snippet=$2
  need qemu-system-x86_64 qemu-system-x86; need timeout coreutils
  [ -S "$sock" ] || die "$sock is not a unix socket (is the 9P server listening?)"
  [ ${#sock} -lt 108 ] || die "socket path longer than 107 bytes: $sock"
  ensure_assets
  local kernel=$CACHE/vmlinux
  [ -s "$kernel" ] || kernel=$CACHE/vmlinuz
  W=$(mktemp -d "${TMPDIR:-/tmp}/v9fs-guest.XXXXXX") || die "mktemp failed"
  trap 'rm -rf "$W"' EXIT
  mkdir -p "$W/x/run"
  write_init "$W/x/init"
  { echo "V9_VERSION=$(shq "$V9_VERSION")"; echo "V9_ANAME=$(shq "$V9_ANAME")"
    echo "V9_OPTS=$(shq "$V9_OPTS")"; } >"$W/x/run/conf"
  printf '%s\n' "$snippet" >"$W/x/run/snippet.sh"
  (cd "$W/x" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$W/extra.cpio.gz" ||
    die "cannot build the per-run initramfs"
  cat "$CACHE/base.cpio.gz" "$W/extra.cpio.gz" >"$W/initrd.img"  # cpio archives concatenate
  local accel=(-accel tcg)
  [ "$V9_ACCEL" = kvm ] && accel=(-enable-kvm -cpu host,-arch-capabilities)
  : >"$W/out.txt"
  timeout -k 5 "$V9_TIMEOUT" qemu-system-x86_64 "${accel[@]}" -m 256 -smp 1 \
    -nodefaults -no-user-config -display none -no-reboot -nic none \
    -kernel "$kernel" -initrd "$W/initrd.img" \
    -append "console=ttyS0 quiet acpi=off panic=-1" \
    -serial "file:$W/console.log" \
    -device virtio-serial-pci,id=vs0 \
    -chardev "socket,id=c9,path=$(qesc "$sock")" \
    -device virtserialport,bus=vs0.0,chardev=c9,name=ninep \
    -chardev "file,id=out,path=$(qesc "$W/out.txt")" \
    -device virtserialport,bus=vs0.0,chardev=out,name=out \
    </dev/null >"$W/qemu.err" 2>&1 &
  local qpid=$!
  trap 'kill -TERM $qpid 2>/dev/null; wait $qpid; rm -rf "$W"; exit 125' INT TERM
  wait $qpid
  local qrc=$?
  cat "$W/out.txt"
  local st kind rc
  st=$(grep -a -o '@@V9STATUS=[a-z]* [0-9]*@@' "$W/console.log" 2>/dev/null | tail -1)
  st=${st#@@V9STATUS=}; st=${st%@@}
  kind=${st% *}; rc=${st#* }
  if [ "$V9_VERBOSE" = 1 ] || [ -z "$st" ] || [ "$kind" = setup ]; then
    { echo "--- qemu exit $qrc; stderr:"; cat "$W/qemu.err"
      echo "--- guest console:"; cat "$W/console.log" 2>/dev/null; echo "---"; } >&2
  fi
  if [ -z "$st" ]; then
    if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
      say "timeout: the guest did not finish in ${V9_TIMEOUT}s (V9_TIMEOUT)"
      status timeout 124; exit 124
    fi
    die "the guest stopped without reporting a status (qemu exit $qrc)"
  fi
  [ "$kind" = mount ] && say "mount failed: mount -t 9p ... version=$V9_VERSION (see stdout)"
  status "$kind" "$rc"
  exit "$rc"
}

case ${1:-} in
  --build-assets) ensure_assets; say "assets: $CACHE ($(cat "$CACHE/STAMP"))"; exit 0 ;;
  -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 2 ] || die "usage: v9fs-guest.sh SOCKET 'SNIPPET' | --build-assets"
run_guest "$1" "$2"
