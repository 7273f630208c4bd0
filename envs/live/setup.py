"""``python -m envs.live.setup``: install what live runs need (Debian packages, as root) and build
the delay line, then report what this machine offers (congestion controls, netem).

Options: ``--no-apt`` (only build and check), ``--check`` (only check; exit 1 when live runs
cannot work here). Without ``--check`` it fails only when installing or building fails.

``--xquic`` also builds XQUIC at the pinned commit and installs the ``mpsched_xquic`` extension
against it (``envs/live/xquic_build.py``; ``--source``, ``--prefix``, ``--jobs``, ``--rebuild``),
reporting what it built; with ``--check`` it reports the installed extension (exit 1 without it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence

from envs.live import delayline, xquic_build
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


def install_packages(packages: Sequence[str] = DEBIAN_PACKAGES) -> None:
    """Install the Debian packages of ``packages`` that are missing (apt-get, as root)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    def installed(package: str) -> bool:
        return subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True,
                              check=False).stdout.strip() == "install ok installed"
    try:
        missing = [p for p in packages if not installed(p)]
    except FileNotFoundError:
        raise LiveError("dpkg-query not found: this is not a Debian-based system; install yourself: "
                        f"{' '.join(packages)}, then pass --no-apt") from None
    if not missing:
        print("Debian packages: all installed")
        return
    print(f"installing: {' '.join(missing)}", flush=True)
    try:
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env)
    except FileNotFoundError:
        raise LiveError(f"apt-get not found: install {' '.join(missing)} yourself, then pass --no-apt") from None
    except subprocess.CalledProcessError as err:
        raise LiveError(f"installing {' '.join(missing)} failed: {' '.join(err.cmd)} exited with {err.returncode}") \
            from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m envs.live.setup", description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-apt", action="store_true", help="do not install Debian packages")
    ap.add_argument("--check", action="store_true", help="only report whether live runs can work here")
    xq = ap.add_argument_group("XQUIC", f"build XQUIC {xquic_build.PINNED_COMMIT[:12]} ({xquic_build.PINNED_DATE}) "
                                        "and the mpsched_xquic extension (live.backend=xquic)")
    xq.add_argument("--xquic", action="store_true", help="also build XQUIC and install the extension")
    xq.add_argument("--source", help="git URL, checkout or mirror to clone XQUIC from "
                                     f"(default {xquic_build.DEFAULT_SOURCE})")
    xq.add_argument("--prefix", help="directory to check XQUIC out and build it in (default "
                                     "$XDG_CACHE_HOME/mpsched/xquic/<commit>)")
    xq.add_argument("--jobs", type=int, help="parallel make jobs (default: the number of CPUs)")
    xq.add_argument("--rebuild", action="store_true", help="rebuild XQUIC and the extension even if built")
    args = ap.parse_args(argv)
    given = [f"--{name}" for name in ("source", "prefix", "jobs", "rebuild")
             if getattr(args, name) not in (None, False)]
    if given and not args.xquic:
        ap.error(f"{', '.join(given)} only with --xquic")
    if args.check and given:
        ap.error(f"--check builds nothing: drop {', '.join(given)}")
    if args.jobs is not None and args.jobs < 1:
        ap.error(f"--jobs must be >= 1, got {args.jobs}")
    return args


def build_from_args(args: argparse.Namespace) -> xquic_build.XquicBuild:
    """The XQUIC build the arguments describe."""
    given = {"source": args.source, "tree": args.prefix, "jobs": args.jobs}
    return xquic_build.XquicBuild(**{k: v for k, v in given.items() if v is not None})


def check_xquic() -> bool:
    """Report the installed extension; False when there is none."""
    ext = xquic_build.installed_extension()
    if ext is None:
        print("XQUIC: mpsched_xquic NOT installed (python -m envs.live.setup --xquic)")
        return False
    commit = ext.get("xquic_commit") or "unknown"
    note = "" if commit == xquic_build.PINNED_COMMIT else f" (the pinned commit is {xquic_build.PINNED_COMMIT})"
    print(f"XQUIC: mpsched_xquic {ext['file']}, built against XQUIC {commit}{note}")
    return True


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.check:
        if os.geteuid() != 0 and not args.no_apt:
            print("installing the Debian packages needs root: run this as root (sudo), or pass --no-apt when they "
                  "are installed", file=sys.stderr)
            return 1
        try:
            build = build_from_args(args) if args.xquic else None  # bad arguments fail before anything is installed
            if not args.no_apt:
                install_packages((*DEBIAN_PACKAGES, *xquic_build.DEBIAN_PACKAGES) if args.xquic else DEBIAN_PACKAGES)
            print(f"delay line: {delayline.binary()}")
            if build is not None:
                print(f"XQUIC: building {build.commit[:12]} in {build.tree} (logs in {build.build_dir})", flush=True)
                print("\n".join(xquic_build.setup(build, rebuild=args.rebuild).lines()))
        except LiveError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    reason = unavailable_reason()
    print(f"congestion controls: {', '.join(available_ccs()) or 'none'}")
    xquic_ok = check_xquic() if args.xquic and args.check else True
    if reason:  # e.g. a kernel without MPTCP: the live tests skip, with this reason
        print(f"live runs: NOT available: {reason}")
        return 1 if args.check else 0
    print("live runs: available")
    return 0 if xquic_ok else 1


if __name__ == "__main__":
    sys.exit(main())
