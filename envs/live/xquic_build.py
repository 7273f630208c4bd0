"""XQUIC built for live runs (``python -m envs.live.setup --xquic``): alibaba/xquic checked out at
a pinned commit, its static library built with the options the ``mpsched_xquic`` extension needs
(position-independent code, BBRv2 and Reno, BoringSSL), and the extension (``bindings/``)
pip-installed against it.

XQUIC is on no package registry and the project ships none of its code: this step clones it for
the user (``--source`` takes a local checkout or mirror instead of GitHub), outside the project's
tree (default ``$XDG_CACHE_HOME/mpsched/xquic/<commit>``, ``--prefix`` to choose). A second call
with the same commit, options and bindings reuses the build (stamps in the build directory), and
every failing step raises ``XquicBuildError`` with the tail of its log and the log's path.

The SSL library is Debian's BoringSSL (``android-libboringssl-dev``) unless ``XQUIC_SSL_INC`` and
``XQUIC_SSL_LIBS`` (``;``-separated libssl and libcrypto) name another BoringSSL build, the
variables the extension's CMake file reads too.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from envs.live.system import LiveError

PINNED_COMMIT = "d67938db705c39b1f160ed1596ab4392f75e7e3c"
PINNED_DATE = "2026-08-19"  # "Stabilize H3 field section case close wait (#905)"; the extension is tested on it
DEFAULT_SOURCE = "https://github.com/alibaba/xquic"
DEBIAN_PACKAGES = ("android-libboringssl-dev", "cmake", "g++", "git", "openssl")
CMAKE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_POSITION_INDEPENDENT_CODE=ON", "-DXQC_ENABLE_BBR2=ON",
                 "-DXQC_ENABLE_RENO=ON", "-DSSL_TYPE=boringssl")
BINDINGS = Path(__file__).resolve().parents[2] / "bindings"
BINDINGS_SOURCES = ("CMakeLists.txt", "pyproject.toml", "src")
LIBRARY_STAMP = "mpsched-library.json"
BINDINGS_STAMP = "mpsched-bindings.json"
LOG_TAIL_LINES = 25


class XquicBuildError(LiveError):
    """A step of the XQUIC setup that failed; the message says which, with its log."""


def _cache_base() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mpsched" / "xquic"


def default_tree(commit: str = PINNED_COMMIT) -> Path:
    """Where XQUIC is checked out and built when no ``--prefix`` is given (one tree per commit)."""
    return _cache_base() / commit[:12]


@dataclass(frozen=True)
class SslLibrary:
    """The BoringSSL that XQUIC and the extension are built with (headers and libssl, libcrypto)."""

    include: str
    libs: tuple[str, ...]

    @classmethod
    def from_environment(cls) -> SslLibrary:
        inc, libs = os.environ.get("XQUIC_SSL_INC"), os.environ.get("XQUIC_SSL_LIBS")
        if bool(inc) != bool(libs):
            raise XquicBuildError("set both XQUIC_SSL_INC (headers) and XQUIC_SSL_LIBS (libssl;libcrypto), or neither "
                                  "for Debian's android-libboringssl-dev")
        if inc and libs:
            return cls(inc, tuple(p for p in libs.split(";") if p))
        arch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
        lib_dir = f"/usr/lib/{arch}/android"
        return cls("/usr/include/android", (f"{lib_dir}/libssl.so", f"{lib_dir}/libcrypto.so"))

    def check(self) -> None:
        missing = [p for p in (f"{self.include}/openssl/ssl.h", *self.libs) if not Path(p).is_file()]
        if missing:
            raise XquicBuildError(f"BoringSSL not found ({', '.join(missing)} missing): install the Debian package "
                                  "android-libboringssl-dev, or set XQUIC_SSL_INC and XQUIC_SSL_LIBS to another build")

    def cmake_args(self) -> list[str]:
        return [f"-DSSL_INC_PATH={self.include}", f"-DSSL_LIB_PATH={';'.join(self.libs)}"]

    def environment(self) -> dict[str, str]:
        return {"XQUIC_SSL_INC": self.include, "XQUIC_SSL_LIBS": ";".join(self.libs)}


@dataclass(frozen=True)
class XquicBuild:
    """One XQUIC build: where it comes from, where it goes, with what."""

    source: str = DEFAULT_SOURCE
    tree: Path | None = None  # default_tree(commit)
    ssl: SslLibrary = field(default_factory=SslLibrary.from_environment)
    commit: str = PINNED_COMMIT
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise XquicBuildError(f"jobs must be >= 1, got {self.jobs}")
        if "://" not in self.source and not self.source.startswith("git@"):
            if not Path(self.source).exists():
                raise XquicBuildError(f"XQUIC source {self.source!r} is neither a URL nor an existing checkout or "
                                      "mirror")
            object.__setattr__(self, "source", str(Path(self.source).expanduser().absolute()))  # git runs elsewhere
        object.__setattr__(self, "tree", Path(self.tree or default_tree(self.commit)).expanduser().absolute())

    @property
    def build_dir(self) -> Path:
        assert self.tree is not None  # __post_init__ sets it
        return self.tree / "build"  # where the extension's CMake file looks by default

    @property
    def library(self) -> Path:
        return self.build_dir / "libxquic-static.a"

    def options(self) -> list[str]:
        return [*CMAKE_OPTIONS, *self.ssl.cmake_args()]

    def library_record(self) -> dict:
        """What decides whether a built library can be reused."""
        return {"commit": self.commit, "options": self.options()}


@dataclass
class BuildReport:
    """What ``setup`` did and what is installed, printed by ``python -m envs.live.setup --xquic``."""

    build: XquicBuild
    checkout: str = ""        # "cloned", "fetched", "checked out", "reused"
    library: str = ""         # "built", "reused"
    bindings: str = ""        # "installed", "reused"
    extension: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        b = self.build
        date = f" ({PINNED_DATE})" if b.commit == PINNED_COMMIT else ""
        size = b.library.stat().st_size / 1e6 if b.library.is_file() else float("nan")
        out = [f"XQUIC {b.commit}{date} from {b.source}",
               f"  tree: {b.tree} (checkout {self.checkout or 'not done'})",
               f"  library: {b.library} ({size:.1f} MB, {self.library or 'not built'})",
               f"  options: {' '.join(CMAKE_OPTIONS)}",
               f"  SSL: BoringSSL, headers {b.ssl.include}, libraries {' '.join(b.ssl.libs)}"]
        ext = self.extension
        if ext:
            out += [(f"extension: mpsched_xquic {ext['file']} ({self.bindings or 'found'}), built against XQUIC "
                     f"{ext.get('xquic_commit') or 'unknown'}"),
                    f"  smoke import: ok; schedulers {', '.join(ext['modes'])}; CCs {', '.join(ext['ccs'])}"]
        return out


def _git(*args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and out.returncode != 0:
        raise XquicBuildError(f"git {' '.join(args)} failed ({out.returncode}): {(out.stderr or out.stdout).strip()}")
    return out


def _has_commit(tree: Path, commit: str) -> bool:
    return _git("cat-file", "-e", f"{commit}^{{commit}}", cwd=tree, check=False).returncode == 0


def _logged(step: str, argv: list[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> None:
    """Run one build step with its output in ``log``; a failure raises with the log's tail."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        f.write("$ " + " ".join(argv) + "\n")
        f.flush()
        try:
            code = subprocess.run(argv, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, check=False).returncode
        except FileNotFoundError:
            raise XquicBuildError(f"{step}: {argv[0]} not found (Debian packages: {' '.join(DEBIAN_PACKAGES)})") \
                from None
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
        raise XquicBuildError(f"{step} failed (exit {code}); last lines of {log}:\n{tail}\n(full log: {log})")


def checkout(build: XquicBuild) -> str:
    """The tree at the pinned commit: cloned from the source, or an existing clone fetched or reused."""
    tree = build.tree
    assert tree is not None  # XquicBuild.__post_init__ sets it
    if shutil.which("git") is None:
        raise XquicBuildError("git not found (Debian package git)")
    how = "reused"
    if not (tree / ".git").exists():
        if tree.exists() and any(tree.iterdir()):
            raise XquicBuildError(f"{tree} exists and is not a git checkout; choose another --prefix or remove it")
        tree.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "--quiet", "--no-checkout", build.source, str(tree))
        how = "cloned"
    if not _has_commit(tree, build.commit):
        _git("fetch", "--quiet", build.source, build.commit, cwd=tree, check=False)  # a server may refuse SHA wants
        heads = _git("fetch", "--quiet", build.source, "+refs/heads/*:refs/remotes/source/*", cwd=tree, check=False)
        if heads.returncode != 0:
            raise XquicBuildError(f"git fetch {build.source} failed: {heads.stderr.strip()}")
        if not _has_commit(tree, build.commit):
            raise XquicBuildError(f"{build.source} has no commit {build.commit} (the pinned XQUIC, {PINNED_DATE}): "
                                  "point --source at a checkout or mirror that has it")
        how = "fetched" if how == "reused" else how
    head = _git("rev-parse", "--verify", "-q", "HEAD", cwd=tree, check=False).stdout.strip()
    if how == "cloned" or head != build.commit:  # not on reuse: the build rewrites a tracked header
        _git("checkout", "--quiet", "--detach", "--force", build.commit, cwd=tree)
        how = "checked out" if how == "reused" else how
    return how


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def build_library(build: XquicBuild, rebuild: bool = False) -> str:
    """XQUIC's static library (``make xquic-static``), reused when built before with this commit and
    these options."""
    stamp = build.build_dir / LIBRARY_STAMP
    if not rebuild and build.library.is_file() and _read_json(stamp) == build.library_record():
        return "reused"
    build.ssl.check()
    if shutil.which("cmake") is None:
        raise XquicBuildError("cmake not found (Debian package cmake)")
    stamp.unlink(missing_ok=True)
    _logged("cmake (configuring XQUIC)", ["cmake", "-S", str(build.tree), "-B", str(build.build_dir),
                                          *build.options()], build.build_dir / "cmake.log")
    _logged("make xquic-static", ["make", f"-j{build.jobs}", "xquic-static"], build.build_dir / "make.log",
            cwd=build.build_dir)
    if not build.library.is_file():
        raise XquicBuildError(f"make xquic-static finished but {build.library} is missing "
                              f"(log: {build.build_dir / 'make.log'})")
    stamp.write_text(json.dumps(build.library_record(), indent=1))
    return "built"


def bindings_digest() -> str:
    """A hash of the extension's sources (a changed source means a new install)."""
    h = hashlib.sha256()
    for name in BINDINGS_SOURCES:
        p = BINDINGS / name
        for f in sorted(p.rglob("*") if p.is_dir() else [p]):
            if f.is_file():
                h.update(str(f.relative_to(BINDINGS)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def bindings_record(build: XquicBuild) -> dict:
    return {"library": build.library_record(), "bindings": bindings_digest(), "python": sys.executable}


_SMOKE = ("import json, mpsched_xquic as m; print(json.dumps({'file': m.__file__, 'modes': list(m.MODES), "
          "'ccs': list(m.CCS), 'xquic_commit': getattr(m, 'XQUIC_COMMIT', None)}))")


def installed_extension() -> dict | None:
    """What a fresh interpreter imports as ``mpsched_xquic`` (file, schedulers, CCs, the XQUIC commit
    it was built against), or None when it does not import."""
    with tempfile.TemporaryDirectory() as cwd:  # nothing in the working directory shadows it
        out = subprocess.run([sys.executable, "-c", _SMOKE], cwd=cwd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def install_bindings(build: XquicBuild, rebuild: bool = False) -> tuple[str, dict]:
    """``pip install ./bindings`` against the build, unless this interpreter already has that
    extension from these sources; then the smoke import. Returns (what was done, the extension)."""
    stamp = build.build_dir / BINDINGS_STAMP
    record = bindings_record(build)
    ext = installed_extension()
    if not rebuild and ext and ext.get("xquic_commit") == build.commit and _read_json(stamp) == record:
        return "reused", ext
    stamp.unlink(missing_ok=True)
    settings = {"XQUIC_DIR": str(build.tree), "XQUIC_BUILD_DIR": str(build.build_dir), **build.ssl.environment()}
    argv = [sys.executable, "-m", "pip", "install", "--no-cache-dir", str(BINDINGS),
            *(f"--config-settings=cmake.define.{k}={v}" for k, v in settings.items())]
    _logged("pip install bindings (the mpsched_xquic extension)", argv, build.build_dir / "bindings.log",
            env={**os.environ, **settings})
    ext = installed_extension()
    if ext is None:
        err = subprocess.run([sys.executable, "-c", "import mpsched_xquic"], capture_output=True, text=True,
                             cwd=tempfile.gettempdir(), check=False).stderr.strip().splitlines()
        raise XquicBuildError(f"mpsched_xquic was installed but does not import: {err[-1] if err else '?'}")
    if ext.get("xquic_commit") != build.commit:
        raise XquicBuildError(f"the installed mpsched_xquic ({ext['file']}) reports XQUIC "
                              f"{ext.get('xquic_commit')}, not {build.commit}: another copy shadows it")
    stamp.write_text(json.dumps(record, indent=1))
    return "installed", ext


def setup(build: XquicBuild, rebuild: bool = False) -> BuildReport:
    """Check out, build and install; each step reused when already done."""
    report = BuildReport(build)
    report.checkout = checkout(build)
    report.library = build_library(build, rebuild)
    report.bindings, report.extension = install_bindings(build, rebuild)
    return report
