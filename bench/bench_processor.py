"""`make bench` section "processor": the CUDA processor alone on device-resident spectra against
the device's memory roofline (issue 10).

It runs ``BenchmarkCUDAProcessor`` from the carried Go test binary (gpu-build/bin/process.test.gz,
written by ``make gpu-build``; gosrc/process/gpu_bench_test.go says what it measures) and turns its
metrics into a table: A-scans/s, the designed bytes per A-scan, the bandwidth they imply and its
fraction of the device-to-device copy bandwidth measured in the same run, the inverse FFT's share
of the time and the fraction of the bound that the FFT's measured time sets. At 1376 and 2752
samples it also runs the processor with cuFFT instead of the one-pass kernel (the "cufft" rows).
"""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "gpu-build" / "bin" / "process.test.gz"

# "BenchmarkCUDAProcessor/n=1376/cufft-16  3  1386825 ns/op  16256.12 MB/s  2491 GB/s_moved ..."
_LINE = re.compile(r"^BenchmarkCUDAProcessor/(?P<name>\S+?)(-\d+)?\s+\d+\s+(?P<rest>.*)$")


def parse(output: str) -> list[dict]:
    """The rows of BenchmarkCUDAProcessor's output: the sub-benchmark's name and its metrics."""
    rows = []
    for line in output.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        fields = m.group("rest").split()
        row: dict = {"name": m.group("name")}
        for value, unit in zip(fields[::2], fields[1::2]):
            try:
                row[unit] = float(value)
            except ValueError:
                continue
        name = row["name"]
        row["samples"] = int(re.match(r"n=(\d+)", name).group(1))
        row["fft"] = "cuFFT (forced)" if name.endswith("/cufft") else "as chosen"
        rows.append(row)
    return rows


def run_binary(benchtime: str = "3x") -> str:
    """Runs the benchmark from the package directory (where its testdata lives) and returns its
    output."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "process.test"
        with gzip.open(BINARY, "rb") as src, open(exe, "wb") as dst:
            shutil.copyfileobj(src, dst)
        exe.chmod(0o755)
        proc = subprocess.run([str(exe), "-test.run", "^$", "-test.bench", "^BenchmarkCUDAProcessor$",
                               "-test.benchtime", benchtime], cwd=ROOT / "gosrc" / "process",
                              capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"process.test failed (rc={proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout


def md(rows: list[dict]) -> str:
    lines = ["## The processor alone (device-resident spectra)", "",
             "`BenchmarkCUDAProcessor`: 8192-record blocks on two slots and two streams, averaging, "
             "resampling, filter, inverse FFT, dB and int8. *bytes / A-scan* as designed (2n + 37m); "
             "*of the copy bandwidth*: that traffic over the device-to-device copy bandwidth measured "
             "in the same run; *FFT share*: the inverse FFT alone over the processor's time; *of the "
             "FFT roofline*: the elementwise kernels' bytes at copy bandwidth plus the FFT's measured "
             "time, over the processor's time.", "",
             "| samples | inverse FFT | M A-scans/s | bytes / A-scan | GB/s moved | of the copy bandwidth "
             "| FFT share | FFT ns / A-scan | of the FFT roofline |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['samples']} | {r['fft']} | {r['ascans/s'] / 1e6:.1f} | {r['bytes/ascan']:,.0f} | "
                     f"{r['GB/s_moved']:,.0f} | **{r['of_d2d_bw']:.2f}** | {r['fft_share']:.2f} | "
                     f"{r['ns/ascan_fft']:.1f} | {r['of_fft_roofline']:.2f} |")
    if rows:
        lines += ["", f"Device-to-device copy bandwidth in this run: {rows[0]['d2d_GB/s']:,.0f} GB/s (read + write)."]
    return "\n".join(lines)


def run(results: dict) -> None:
    """Store results["processor"] and results["processor_md"]; a note instead when the Go test
    binary was not carried."""
    if not BINARY.exists():
        results["processor_md"] = ("## The processor alone\n\nSkipped: gpu-build/bin/process.test.gz is missing "
                                   "(run `make gpu-build` here and carry gpu-build/).")
        return
    rows = parse(run_binary())
    results["processor"] = rows
    results["processor_md"] = md(rows)


if __name__ == "__main__":
    out: dict = {}
    run(out)
    print(out["processor_md"])
