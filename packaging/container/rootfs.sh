#!/usr/bin/env bash
# Makes the build context of packaging/container/Containerfile:
#
#   rootfs.sh BINARY DIR
#
# DIR/rootfs gets BINARY as /usr/local/bin/lro, the shared libraries `ldd`
# lists for it (copied at the same paths, links followed), the system's CA
# bundle, /etc/passwd and /etc/group naming the non-root user 65532, and /tmp
# (mode 1777). Refuses a binary whose `--version` lacks the features `cli`
# and `object-store`, which the published images carry.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: rootfs.sh BINARY DIR" >&2
  exit 2
fi
binary=$1
out=$2
version=$("$binary" --version)
case "$version" in
  *"features: object-store"*) ;;
  *) echo "rootfs.sh: $binary --version printed '$version': want the feature object-store" >&2; exit 1 ;;
esac
root="$out/rootfs"
rm -rf "$root"
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"
chmod 1777 "$root/tmp"
cp "$binary" "$root/usr/local/bin/lro"
chmod 755 "$root/usr/local/bin/lro"
# `ldd` prints `name => /path (addr)` for each library and `/path (addr)`
# for the loader; a static binary prints neither.
ldd "$binary" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
  while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
for bundle in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
  if [ -f "$bundle" ]; then
    cp -L "$bundle" "$root/etc/ssl/certs/ca-certificates.crt"
    break
  fi
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/tmp:/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
echo "$root: $(du -sh "$root" | cut -f1) ($version)"
