#!/usr/bin/env bash
# A minimal offscreen Qt for the GPU machine, which has no Qt binding and no
# network: vortex's Qt demos (vortex-oct-tools widgets) run there at full size
# with it (tests_py/test_vortex_demos*.py). `make gpu-qt` packs gpu-qt.tar.xz
# here: PyQt5's Core/Gui/Widgets/Svg (matplotlib's Qt backend imports QtSvg) with Qt's offscreen platform plugin, and, in
# syslib/, the system libraries Qt links that a CUDA container may lack
# (libGL, glib, fontconfig, freetype, X11...). run_gpu_tests.sh unpacks it
# when carried and appends syslib/ to LD_LIBRARY_PATH, so the machine's own
# libraries win where it has them. About 25 MB: it is carried in a call of
# its own (the 64 MiB carry limit), unpacked into gpu-qt/, which stays on the
# warm machine for the next calls.
#
# Usage: bash scripts/gpu_qt.sh <site-packages> <out.tar.xz>
set -euo pipefail
sp=$1 out=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
q=$tmp/site/PyQt5
mkdir -p "$q/Qt5/lib" "$q/Qt5/plugins/platforms" "$tmp/syslib"
cp "$sp"/PyQt5/__init__.py "$sp"/PyQt5/QtCore.abi3.so "$sp"/PyQt5/QtGui.abi3.so "$sp"/PyQt5/QtWidgets.abi3.so "$sp"/PyQt5/QtSvg.abi3.so \
   "$sp"/PyQt5/sip.cpython-*.so "$q/"
cp "$sp"/PyQt5/Qt5/lib/libQt5Core.so.5 "$sp"/PyQt5/Qt5/lib/libQt5Gui.so.5 "$sp"/PyQt5/Qt5/lib/libQt5Widgets.so.5 "$sp"/PyQt5/Qt5/lib/libQt5Svg.so.5 \
   "$sp"/PyQt5/Qt5/lib/libicu*.so.* "$q/Qt5/lib/"
cp "$sp"/PyQt5/Qt5/plugins/platforms/libqoffscreen.so "$q/Qt5/plugins/platforms/"
# What Qt's libraries need beyond glibc, libstdc++ and the Qt/ICU above.
for lib in $(ldd "$q"/Qt5/plugins/platforms/libqoffscreen.so "$q"/Qt5/lib/*.so* "$q"/*.so 2>/dev/null |
             awk '/=> \// {print $3}' | sort -u); do
  case $(basename "$lib") in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++*|libgcc_s*|libQt5*|libicu*) ;;
    *) cp -L "$lib" "$tmp/syslib/" ;;
  esac
done
tar -C "$tmp" -cJf "$out" site syslib
ls -la "$out"
