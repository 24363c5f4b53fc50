#!/usr/bin/env bash
# Builds the Debian package build/kafkaiq_<version>_<arch>.deb from this
# checkout (`make deb`): `make install` staged under /usr, binaries stripped,
# Depends from dpkg-shlibdeps, packed by dpkg-deb (dpkg-dev, fakeroot not
# needed: --root-owner-group). Then `sudo apt install ./build/kafkaiq_*.deb`.
#
#   BUILD                the build directory (build)
#   KIQ_DEB_OUT          where the .deb goes (the build directory)
#   KIQ_DEB_MAINTAINER   the Maintainer field (KafkaIQ maintainers <kafkaiq@localhost>)
#   KIQ_DEB_STRIP=0      keeps the symbols and debug information
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
OUT=${KIQ_DEB_OUT:-$BUILD}

# The version has one home: engine/core/version.h (`kafkaiq version`).
version=$(sed -n 's/^#define KIQ_VERSION "\(.*\)"$/\1/p' engine/core/version.h)
[[ -n $version ]] || { echo "deb.sh: no KIQ_VERSION in engine/core/version.h" >&2; exit 1; }
arch=$(dpkg --print-architecture)
# Lua C modules go where Debian's luajit looks for them (its package.cpath).
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || true)
maintainer=${KIQ_DEB_MAINTAINER:-KafkaIQ maintainers <kafkaiq@localhost>}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/debian/kafkaiq # where dpkg-shlibdeps expects a package's files

make -s --no-print-directory install BUILD="$BUILD" DESTDIR="$root" PREFIX=/usr \
    ${multiarch:+LIBDIR=/usr/lib/$multiarch/lua/5.1}
bin=$root/usr/bin/kafkaiq
so=$(find "$root/usr/lib" -name core.so)
if [[ ${KIQ_DEB_STRIP:-1} != 0 ]]; then
    # .dynsym stays: `-rdynamic` exports the engine and Lua C API to FFI and modules
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$bin" "$so"
fi

# Depends: dpkg-shlibdeps wants a debian/control beside the files it reads.
# core.so takes its Lua symbols from the host (luajit, or kafkaiq itself).
mkdir -p "$work/DEBIAN"
printf 'Source: kafkaiq\n\nPackage: kafkaiq\nArchitecture: any\n' >"$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O --warnings=0 "${bin#"$work"/}" "${so#"$work"/}" 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p') || true
if [[ -z $depends ]]; then
    echo "deb.sh: dpkg-shlibdeps failed; using the libraries build/kafkaiq links (Debian 12's names)" >&2
    depends="libc6, libev4, libjansson4, libluajit-5.1-2 | libluajit2-5.1-2, liblz4-1, libmicrohttpd12, libcjose0, libisal2, libpcre2-8-0, libsnappy1v5, libssl3, libzstd1, zlib1g"
fi

size_kb=$(du -sk "$root" | cut -f1)
mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: kafkaiq
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size_kb
Depends: $depends
Suggests: luajit
Section: devel
Priority: optional
Description: Kafka broker engine in C, scriptable from LuaJIT
 KafkaIQ is a Kafka broker engine that real Kafka clients use unmodified,
 built like Kafka inside (processors on libev, a bounded request queue, I/O
 threads, segment files and indexes), for understanding, scripting and
 testing Kafka.
 .
 This package holds the kafkaiq command (kafkaiq serve, kafkaiq run), the
 kafkaiq Lua modules with the kafkaiq.core C module for LuaJIT, and the
 examples and labs in /usr/share/kafkaiq/examples.
EOF

mkdir -p "$OUT"
deb=$OUT/kafkaiq_${version}_${arch}.deb
dpkg-deb --build --root-owner-group -Zxz "$root" "$deb" >/dev/null
echo "$deb"
