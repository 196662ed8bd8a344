#!/usr/bin/env python3
"""The Teledyne driver's ADQParameters layout table from an installed ADQAPI header.

    scripts/adq_layout.py /path/to/ADQAPI/include -o adq_layout.json

The generator is python/vortexgo/adq_layout.py (also `python -m vortexgo
adq-layout`, `make adq-layout ADQAPI_INCLUDE=...`); this runs it from a
checkout without vortexgo built or installed.
"""
import os
import runpy
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.argv[0] = "scripts/adq_layout.py"
    runpy.run_path(os.path.join(here, "..", "python", "vortexgo", "adq_layout.py"), run_name="__main__")
