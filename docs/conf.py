"""Sphinx configuration of the documentation site (``make docs``).

One site rooted at ``docs/``: the guides are the Markdown pages here (read by
MyST, so they also render on GitHub as they are) and the API reference is
``docs/api/``, generated from the docstrings with autodoc; napoleon reads their
Google-style sections (Args, Returns, Raises, Attributes). It imports the
package from ``python/``, so the native extension must be built first
(``make docs`` builds it).
"""

import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "python")))

import vortexgo  # noqa: E402  (after the path is set)
from vortexgo import _errors  # noqa: E402

# The exceptions say they are vortexgo's (``vortexgo.VortexError`` in a traceback), but their
# attributes' ``#:`` comments are in _errors.py: autodoc reads the comments from the source of
# ``__module__``, so while the site builds the classes point back at their file. The pages
# still name them ``vortexgo.X``, as the directives do.
for _name in _errors.__all__:
    getattr(_errors, _name).__module__ = _errors.__name__

project = "vortexgo"
author = "the vortexgo authors"
copyright = "the vortexgo authors"
release = vortexgo.__version__
version = release

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# Headings up to level 4 get GitHub's anchors, so "engine.md#sessions" links
# work on GitHub and in the site alike (and must resolve: warnings are errors).
myst_heading_anchors = 4
# Fences without a language (transcripts, file trees) stay plain text.
highlight_language = "none"

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
    # The same split of ProcessorConfig.levels' ``Union[Range, tuple[float, float], None]``.
    (r"py:class", r".*\| tuple\[float"),
    # RasterScanConfig.volumes, the legacy index formatter's field, whose
    # docstring napoleon misreads; the field is being removed (drop this then).
    (r"py:class", r"vortexgo's index formatter only|scan="),
]

html_theme = "alabaster"
html_title = f"vortexgo {release}"
exclude_patterns = ["_build"]
html_theme_options = {
    "description": "Streaming OCT acquisition on the GPU, from Python",
    "fixed_sidebar": True,
    # Wide enough for the guides' code (up to about 100 columns) without a scroll bar.
    "page_width": "1240px",
    "sidebar_width": "250px",
    "body_max_width": "960px",
    "code_font_size": "0.85em",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
html_show_sourcelink = False
