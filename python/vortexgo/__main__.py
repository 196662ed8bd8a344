"""``python -m vortexgo``: the command line (:mod:`vortexgo.cli`).

    python -m vortexgo info     devices, CUDA driver, cuFFT, the C fast path, versions
    python -m vortexgo demo     a simulated OCT acquisition: MIP and B-scan PNGs, the volumes
    python -m vortexgo bench    a short benchmark of this machine's device
    python -m vortexgo adq-layout INCLUDE -o FILE   the Teledyne driver's ADQParameters layout table
"""

import sys

from vortexgo.cli import main

if __name__ == "__main__":
    sys.exit(main())
