"""Errors the workbench raises for bad input: always a sentence naming what is wrong."""

from collections.abc import Iterable


class ConfigError(ValueError):
    """A name, value or combination in a config or on the command line that cannot be used."""


def unknown_name(kind: str, name: object, valid: Iterable[str]) -> ConfigError:
    """``unknown cc 'bbr3'; valid: bbr, bbr2, cubic, reno``."""
    return ConfigError(f"unknown {kind} {name!r}; valid: {', '.join(sorted(valid))}")


def out_of_range(field: str, value: object, allowed: str) -> ConfigError:
    return ConfigError(f"{field} must be {allowed}, got {value!r}")
