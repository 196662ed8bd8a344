#!/usr/bin/env bash
# Install each built wheel into a fresh venv with no Go on PATH and run the
# CPU test subset against the INSTALLED package.
#
#   scripts/test_wheels.sh [WHEEL ...]      (default: every dist/vortexgo-*.whl)
#
# For each wheel: a fresh venv of the matching Python (pyenv's, or $PYTHON_3_12
# style overrides, or the `python3.X` on PATH), PATH reduced to the venv and
# /usr/bin:/bin (the check below proves Go is not reachable), everything
# installed from wheels only (--only-binary :all:, so nothing is compiled:
# the wheel with [demo], and $TEST_REQS),
# then pytest runs from a temporary directory holding a copy of tests_py (and
# the scan golden data the tests read), with PYTHONPATH unset, so `import
# vortexgo` can only find the installed wheel. `python -m vortexgo info` runs
# too. A summary line per wheel ends the output; the exit status is non-zero
# if any wheel failed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# A few minutes per Python on a small machine; every test here runs on CPU.
TESTS=${TESTS:-"test_array.py test_stream_event.py test_engine.py test_scan_golden.py test_cli.py"}
TEST_REQS=${TEST_REQS:-"pytest>=7 pytest-timeout hypothesis"}
WORK=${WORK:-$(mktemp -d -t vortexgo-wheel-test.XXXXXX)}

wheels=("$@")
if [ ${#wheels[@]} -eq 0 ]; then
  mapfile -t wheels < <(ls dist/vortexgo-*.whl 2>/dev/null)
fi
[ ${#wheels[@]} -gt 0 ] || { echo "test_wheels: no wheels (run make wheel first)" >&2; exit 1; }

find_python() {  # $1 = 3.12 -> an interpreter of that version
  local v=$1 var="PYTHON_${1/./_}"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  local p
  p=$(ls -d "$HOME"/.pyenv/versions/$v.*/bin/python3 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$p" ] || p=$(command -v "python$v" || true)
  # Debian's build for a version pyenv lacks here (scripts/debian_python.sh, made by make wheel).
  [ -n "$p" ] || { [ -x "$ROOT/build/python$v/usr/bin/python$v" ] && p=$ROOT/build/python$v/usr/bin/python$v; } || true
  [ -n "$p" ] || { echo "test_wheels: no Python $v" >&2; return 1; }
  echo "$p"
}

summary=()
status=0
for whl in "${wheels[@]}"; do
  whl=$(cd "$(dirname "$whl")" && pwd)/$(basename "$whl")
  tag=$(basename "$whl" | sed -E 's/^vortexgo-[^-]+-cp([0-9])([0-9]+)-.*/\1.\2/')
  py=$(find_python "$tag")
  dir=$WORK/py$tag
  rm -rf "$dir" && mkdir -p "$dir/run"
  echo "=== $(basename "$whl") with $py"
  "$py" -m venv "$dir/venv"
  cp -r tests_py "$dir/run/tests_py"
  mkdir -p "$dir/run/gosrc/scan/testdata"
  cp gosrc/scan/testdata/scan_golden.json "$dir/run/gosrc/scan/testdata/"
  rm -rf "$dir/run/tests_py/__pycache__"
  # A clean environment: no Go, no PYTHONPATH, no site of ours.
  set +e
  (
    set -e
    cd "$dir/run"
    export PATH="$dir/venv/bin:/usr/bin:/bin"
    unset PYTHONPATH GOROOT GOPATH VIRTUAL_ENV
    if command -v go >/dev/null 2>&1; then echo "test_wheels: go is on PATH ($(command -v go))" >&2; exit 1; fi
    echo "go on PATH: none (command -v go fails)"
    python -m pip install -q --upgrade pip
    # The wheel with [demo] (the CLI tests write PNGs) and the test runner:
    # what the CPU subset imports, and a check that [demo] resolves.
    python -m pip install -q --only-binary :all: "$whl[demo]" $TEST_REQS
    python - <<'EOF'
import os, sys, vortexgo
where = os.path.dirname(vortexgo.__file__)
assert where.startswith(sys.prefix), f"vortexgo imported from {where}, not from the venv"
print("vortexgo imported from", where)
EOF
    python -m vortexgo info
    # The wheel carries the examples and the notebook (setup.py): copied out, they are all there.
    (cd "$dir" && python -m vortexgo examples ex >/dev/null && test -f ex/acquire.py && test -f ex/acquire.ipynb) ||
      { echo "test_wheels: python -m vortexgo examples did not give acquire.py and acquire.ipynb" >&2; exit 1; }
    # The GPU extras must resolve to wheels for this Python (pip reads their
    # metadata only; nothing is installed: CUDA itself is tested on a GPU).
    if [ "${CHECK_EXTRAS:-1}" = 1 ]; then
      for extra in cuda cuda12; do
        python -m pip install -q --dry-run --only-binary :all: --report "$dir/extra-$extra.json" "$whl[$extra]"
        python -c "import json, sys; r = json.load(open(sys.argv[1])); print('[' + sys.argv[2] + '] resolves:', ', '.join(i['metadata']['name'] + ' ' + i['metadata']['version'] for i in r['install'] if i['metadata']['name'] != 'vortexgo'))" "$dir/extra-$extra.json" "$extra"
      done
    fi
    cd tests_py
    # -p no:cacheprovider: the copy is thrown away; rootdir is the copy.
    python -m pytest -q -p no:cacheprovider --timeout=300 $TESTS 2>&1 | tee "$dir/pytest.log"
  )
  rc=$?
  set -e
  counts=$(grep -E '^[=]* *[0-9]+ (passed|failed)|^[0-9]+ (passed|failed)' "$dir/pytest.log" 2>/dev/null | tail -1 | sed -E 's/=//g; s/^ +| +$//g' || true)
  summary+=("Python $tag $(basename "$whl"): ${counts:-no pytest summary} (exit $rc)")
  [ $rc -eq 0 ] || status=1
done

echo "=== wheel-test summary"
printf '%s\n' "${summary[@]}"
exit $status
