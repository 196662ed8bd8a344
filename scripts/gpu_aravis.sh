#!/usr/bin/env bash
# Aravis for the GPU machine, which has neither Aravis nor a network to
# install it from: the GenICam tests (tests_py/test_genicam.py) run there
# against Aravis's own simulators, as in CI. `make gpu-aravis` packs
# gpu-aravis.tar.xz here from the Debian packages (libaravis-0.8-0,
# aravis-tools): lib/ holds libaravis-0.8.so.0 and the libraries it and
# arv-fake-gv-camera-0.8 link beyond glibc, libstdc++ and libgcc (glib, gio,
# libxml2, libusb, ICU...); bin/ holds arv-fake-gv-camera-0.8 (GigE Vision
# served on the loopback interface). run_gpu_tests.sh unpacks it when
# carried, puts bin/ on PATH and appends lib/ to LD_LIBRARY_PATH, so the
# machine's own libraries win where it has them. Built against this
# machine's glibc (Debian 12: 2.36); the GPU machine's is newer (2.39).
#
# Usage: bash scripts/gpu_aravis.sh <out.tar.xz>
set -euo pipefail
out=$1
lib=$(ldconfig -p | awk '/libaravis-0.8.so.0 / {print $NF; exit}')
tool=$(command -v arv-fake-gv-camera-0.8 || true)
if [ -z "$lib" ] || [ -z "$tool" ]; then
  echo "gpu_aravis.sh: needs libaravis-0.8-0 and aravis-tools (apt-get install aravis-tools)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib" "$tmp/bin"
cp -L "$lib" "$tmp/lib/libaravis-0.8.so.0"
cp -L "$tool" "$tmp/bin/"
for dep in $(ldd "$lib" "$tool" | awk '/=> \// {print $3}' | sort -u); do
  case $(basename "$dep") in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++*|libgcc_s*|libaravis*) ;;
    *) cp -L "$dep" "$tmp/lib/" ;;
  esac
done
tar -C "$tmp" -cJf "$out" lib bin
ls -la "$out"
