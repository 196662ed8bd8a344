"""Build the Go core of vortexgo as a CPython extension with gopy.

`pip install .` runs this: it builds the pinned gopy and goimports from go.mod
(so no tool has to be installed by hand), then binds gosrc/pyapi with
`-dynamic-link` so the extension links only libc and imports on machines
without CUDA. The result lands in vortexgo/_native inside the wheel.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent


def build_native(dest: Path, python: str = sys.executable) -> None:
    """Run gopy for `python` and copy the bound package into `dest`."""
    tag = sysconfig.get_config_var("SOABI") or "native"
    # A leading "_" keeps the generated Go package out of `./...` patterns
    # (go vet, go test, the layout tests), though it lives inside the module.
    work = ROOT / "build" / f"_gopy-{tag}"
    tools = ROOT / "build" / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["PATH"] = f"{tools}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("CGO_ENABLED", "1")
    # The tool versions come from go.mod's tool directives: one pin for all.
    subprocess.run(
        ["go", "build", "-o", str(tools) + os.sep,
         "github.com/go-python/gopy", "golang.org/x/tools/cmd/goimports"],
        cwd=ROOT, env=env, check=True)
    if work.exists():
        shutil.rmtree(work)
    # gopy compiles its generated Go inside the output folder, which must lie
    # inside this module (go.mod) for the import of gosrc/pyapi to resolve.
    subprocess.run(
        [str(tools / "gopy"), "build", "-dynamic-link", f"-vm={python}",
         f"-output={work}", "-name=gocore", "./gosrc/pyapi"],
        cwd=ROOT, env=env, check=True)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in work.iterdir():
        if f.suffix == ".so" or (f.suffix == ".py" and f.name != "build.py"):
            shutil.copy2(f, dest / f.name)
    build_fastcall(dest, python)


def build_fastcall(dest: Path, python: str = sys.executable) -> None:
    """Compile python/vortexgo/_fastcall.c into `dest` for `python`.

    The C fast path for per-call stream and event operations (see
    gosrc/cuda/fastpath.h). It needs only the target Python's headers and the
    system C compiler, no CUDA headers. A failed build is reported and
    skipped: vortexgo then uses the Go fast path, which is slower, not wrong.
    """
    query = ("import sysconfig, json; print(json.dumps([sysconfig.get_paths()['include'], "
             "sysconfig.get_config_var('EXT_SUFFIX'), sysconfig.get_config_var('CC') or 'cc']))")
    out = subprocess.run([python, "-c", query], check=True, capture_output=True, text=True).stdout
    include, suffix, cc = json.loads(out)
    cmd = [*shlex.split(cc), "-O2", "-shared", "-fPIC", "-std=c11", "-Wall", f"-I{include}",
           f"-I{ROOT / 'gosrc' / 'cuda'}", str(ROOT / "python" / "vortexgo" / "_fastcall.c"),
           "-o", str(dest / f"_fastcall{suffix}")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"warning: the C fast path was not built ({' '.join(cmd)}):\n{res.stderr}", file=sys.stderr)


class BuildPyWithGo(build_py):
    """build_py that also builds the gopy extension into the package."""

    def run(self) -> None:
        super().run()
        build_native(Path(self.build_lib) / "vortexgo" / "_native")


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "native":
    # `python setup.py native DEST`: used by the Makefile for in-place builds.
    build_native(Path(sys.argv[2]))
    sys.exit(0)

class BinaryDistribution(Distribution):
    """The wheel carries a CPython extension, so it is platform-specific."""

    def has_ext_modules(self) -> bool:
        return True


setup(cmdclass={"build_py": BuildPyWithGo}, distclass=BinaryDistribution)
