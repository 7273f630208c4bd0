"""What an online agent's checkpoint holds besides its arrays: a JSON state file and the
round trip of its random generator, so a resumed run continues the same sequence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from envs.errors import ConfigError

STATE_FILE = "agent_state.json"


def save_json(directory: Path, data: dict[str, Any], name: str = STATE_FILE) -> None:
    (Path(directory) / name).write_text(json.dumps(data, indent=2))


def load_json(directory: Path, name: str = STATE_FILE) -> dict[str, Any]:
    path = Path(directory) / name
    if not path.is_file():
        raise ConfigError(f"checkpoint {directory} has no {name}")
    return json.loads(path.read_text())


def rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return dict(rng.bit_generator.state)


def set_rng_state(rng: np.random.Generator, state: dict[str, Any]) -> None:
    rng.bit_generator.state = state
