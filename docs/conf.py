"""Sphinx configuration of the lakebench documentation."""
project = "lakebench"
author = "lakebench developers"
extensions = []
html_theme = "furo"
exclude_patterns = ["_build"]
