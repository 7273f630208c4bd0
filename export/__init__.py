"""Export trained policies to dependency-free C headers (``python -m export``), and run the
compiled artefact in the simulator (``export.runtime``)."""

from export.api import VERSION as __version__  # noqa: F401
from export.api import export_agent, export_checkpoint, fast_only_header, generate, resolve_checkpoint  # noqa: F401
from export.errors import ExportError  # noqa: F401
