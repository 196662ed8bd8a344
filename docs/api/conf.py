"""Sphinx configuration of the API reference (``make docs``).

The reference is generated from the docstrings with autodoc; napoleon reads
their Google-style sections (Args, Returns, Raises, Attributes). It imports
the package from ``python/``, so the native extension must be built first
(``make docs`` builds it).
"""

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python")))

import vortexgo  # noqa: E402  (after the path is set)

project = "vortexgo"
author = "the vortexgo authors"
copyright = "the vortexgo authors"
release = vortexgo.__version__
version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]

# Members in the order the source defines them, which is the order the
# modules explain them in; __all__ decides which are public.
# Public classes inherit most of their API from private bases (_Processor,
# _SimpleStack, _Endpoint, _StreamBase), so inherited members are shown;
# those of builtins and the standard library are not.
autodoc_default_options = {
    "members": True,
    "inherited-members": "object,int,tuple,IntEnum,Enum,Exception,BaseException,RuntimeError,ValueError,MemoryError",
}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autoclass_content = "both"  # the class docstring and __init__'s Args

napoleon_google_docstring = True
napoleon_numpy_docstring = False
# Attributes sections as :ivar: fields: as directives they would describe a
# dataclass field a second time next to autodoc's own entry.
napoleon_use_ivar = True

# Every cross-reference must resolve (warnings are errors), except to the
# standard library and NumPy, whose inventories would need the network
# (intersphinx), and to private names, which the reference leaves out.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(logging|os|numpy|np|collections\.abc|typing|threading|enum|concurrent\.futures|datetime)(\..*)?"),
    (r"py:.*", r"(.*\.)?_[A-Za-z].*"),
    # Sphinx 9 splits a dataclass signature's postponed ``dict[str, X]``
    # annotation at the comma and looks up "dict[str" as a class.
    (r"py:class", r"dict\[str"),
    # RasterScanConfig.volumes, the legacy index formatter's field, whose
    # docstring napoleon misreads; the field is being removed (drop this then).
    (r"py:class", r"vortexgo's index formatter only|scan="),
]

html_theme = "alabaster"
html_title = f"vortexgo {release}"
exclude_patterns = ["_build"]
