"""``python -m envs.live.setup``: install what live runs need (Debian packages, as root) and build
the delay line, then report what this machine offers (congestion controls, netem).

Options: ``--no-apt`` (only build and check), ``--check`` (only check; exit 1 when live runs
cannot work here). Without ``--check`` it fails only when installing or building fails.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from envs.live import delayline
from envs.live.system import DEBIAN_PACKAGES, LiveError, available_ccs, preflight


def unavailable_reason() -> str | None:
    """None when live runs can work here (the machine's prerequisites and the delay line), else why
    not (for skipping tests)."""
    try:
        preflight()
        delayline.binary()
    except LiveError as err:
        return str(err)
    return None


def install_packages() -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    missing = [p for p in DEBIAN_PACKAGES
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True)
               .stdout.strip() != "install ok installed"]
    if not missing:
        print("Debian packages: all installed")
        return
    print(f"installing: {' '.join(missing)}", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m envs.live.setup", description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-apt", action="store_true", help="do not install Debian packages")
    ap.add_argument("--check", action="store_true", help="only report whether live runs can work here")
    args = ap.parse_args(argv)
    if not args.check:
        if os.geteuid() != 0:
            print("live runs need root: run this as root (sudo) to install their dependencies", file=sys.stderr)
            return 1
        if not args.no_apt:
            install_packages()
        try:
            print(f"delay line: {delayline.binary()}")
        except LiveError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    reason = unavailable_reason()
    print(f"congestion controls: {', '.join(available_ccs()) or 'none'}")
    if reason:  # e.g. a kernel without MPTCP: the live tests skip, with this reason
        print(f"live runs: NOT available: {reason}")
        return 1 if args.check else 0
    print("live runs: available")
    return 0


if __name__ == "__main__":
    sys.exit(main())
