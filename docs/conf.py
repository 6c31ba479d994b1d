"""Sphinx settings for the documentation site (scripts/docs.sh builds it from the sources docs/prepare.py writes).

Why Sphinx with myst-nb: both are long-kept, offline, pure-Python tools; Sphinx brings its own search (a local
index, no service), myst-nb renders saved notebook outputs without executing anything, folds tagged cells into
<details>, and lets us drop the widget mime type so that a stepper's saved static frame is what a page shows.
mkdocs-jupyter was the other candidate: its nbconvert pages pull require.js and MathJax from CDNs by default,
and its usual theme fetches web fonts, which this site must not do (no external request).
"""
project = "reasoning_kit"
author = "reasoning_kit developers"
copyright = "2026, the reasoning_kit developers"  # without it the footer read "Copyright ©" and nothing
extensions = ["myst_nb"]
root_doc = "index"
exclude_patterns = ["md/**", "_build", "**.ipynb_checkpoints"]
html_theme = "furo"
html_title = "reasoning_kit"
html_copy_source = False
html_show_sourcelink = False
nb_execution_mode = "off"  # outputs as saved in the notebooks
nb_ipywidgets_js = {}  # no widget manager from a CDN
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]  # the static frame, not the widget
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "myst.xref_missing", "mystnb.unknown_mime_type", "misc.highlighting_failure", "toc.not_included"]
html_static_path = ["_static"]
mathjax_path = "no-mathjax.js"  # a local stand-in: no MathJax from a CDN (the notebooks have no formulae to typeset)
