"""The bundled catalog's data files (taxonomy, strategies, recipes, kv_store) and where they live.

A leaf: the loader reads from :data:`DATA_DIR` and the diagnostics re-read a file from it for line
numbers, and neither needs the other for that.
"""

from pathlib import Path

#: The folder holding the bundled catalog's JSON/YAML files (installed as package data).
DATA_DIR = Path(__file__).resolve().parent
