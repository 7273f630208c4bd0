"""``python -m export checkpoint=<dir or MLflow run id> out=policy.h [prefix=...] [fixed_point=true]
[tracking_uri=...]``: write a policy header (see README, "Exporting a policy to C")."""

from __future__ import annotations

import os
import sys

from envs.errors import ConfigError, debug_argv, ending

KEYS = {"checkpoint": None, "out": "policy.h", "prefix": "mpsched_policy", "fixed_point": "false",
        "tracking_uri": None}
USAGE = ("usage: python -m export checkpoint=<checkpoint dir | MLflow run id> out=policy.h "
         "[prefix=mpsched_policy] [fixed_point=true|false] [tracking_uri=sqlite:///mlflow.db]")


def parse(argv: list[str]) -> dict[str, str | None]:
    args = dict(KEYS)
    for a in argv:
        key, sep, value = a.partition("=")
        key = key.lstrip("+")
        if not sep or key not in KEYS:
            raise ConfigError(f"unknown argument {a!r}; valid keys: {', '.join(KEYS)}\n{USAGE}")
        args[key] = value
    if not args["checkpoint"]:
        raise ConfigError(f"checkpoint= is required\n{USAGE}")
    if not args["out"]:  # out= (say, a shell variable that was not set): renaming onto '.' ended in an OSError
        raise ConfigError("out= is empty; give the header's file name, e.g. out=policy.h")
    if os.path.isdir(str(args["out"])):
        raise ConfigError(f"out={args['out']} is a directory; give the header's file name, e.g. "
                          f"out={os.path.join(str(args['out']), 'policy.h')}")
    if str(args["fixed_point"]).lower() not in ("true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"fixed_point must be true or false, got {args['fixed_point']!r}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = debug_argv(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help", "help") for a in argv):
        print(USAGE)
        return 0
    with ending(bad_input_code=2):
        args = parse(argv)
        from export.api import export_checkpoint

        fixed = str(args["fixed_point"]).lower() in ("true", "1", "yes")
        text = export_checkpoint(str(args["checkpoint"]), args["out"], str(args["prefix"]), fixed, args["tracking_uri"])
    lines = text.count("\n")
    print(f"wrote {args['out']} ({lines} lines, {'int32 fixed point' if fixed else 'float32'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
