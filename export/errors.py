"""The one error type of the exporter."""

from envs.errors import ConfigError


class ExportError(ConfigError):
    """An agent, layer or setting the exporter cannot turn into C; nothing was written."""
