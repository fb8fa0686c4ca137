"""Builds the sqlite-embed Python package: embed.so and embed_preload.so, built by the repository's
Makefile (`make embed.so embed_preload.so` two folders up) or taken from SQLITE_EMBED_SO (a built
embed.so; embed_preload.so beside it), are copied into the package with the repository's VERSION
and licences. The wheel holds a native library but no Python extension: py3-none-<platform>."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FILES = ("VERSION", "LICENSE", "LICENSE-MIT", "LICENSE-APACHE")


def repo_file(name):
    path = os.path.join(ROOT, name)
    if not os.path.isfile(path):
        raise SystemExit("sqlite-embed: %s not found: build the package from the sqlite-embed repository "
                         "(pip install --no-build-isolation ./bindings/python)" % path)
    return path


def version():
    with open(repo_file("VERSION"), encoding="ascii") as f:
        return f.read().strip()


def built_libraries():
    """(embed.so, embed_preload.so) to bundle: SQLITE_EMBED_SO's, or the Makefile's."""
    so = os.environ.get("SQLITE_EMBED_SO")
    if so:
        if not os.path.isabs(so):  # pip builds in another folder than the one it was called from
            raise SystemExit("sqlite-embed: SQLITE_EMBED_SO must be an absolute path, not %r" % so)
    else:
        repo_file("Makefile")
        print("sqlite-embed: make embed.so embed_preload.so (in %s)" % ROOT, flush=True)
        subprocess.run(["make", "--no-print-directory", "-C", ROOT, "-j%d" % (os.cpu_count() or 1),
                        "embed.so", "embed_preload.so"], check=True)
        so = os.path.join(ROOT, "embed.so")
    preload = os.path.join(os.path.dirname(so), "embed_preload.so")
    for path in (so, preload):
        if not os.path.isfile(path):
            raise SystemExit("sqlite-embed: %s is missing (run make in %s)" % (path, ROOT))
    return so, preload


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "sqlite_embed")
        os.makedirs(dest, exist_ok=True)
        for path in built_libraries():
            shutil.copy2(path, dest)
        for name in FILES:
            shutil.copy2(repo_file(name), dest)


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a platform wheel: it carries embed.so


cmdclass = {"build_py": BuildWithLibrary}
try:
    from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        def get_tag(self):
            return ("py3", "none", super().get_tag()[2])  # any Python 3, this platform

    cmdclass["bdist_wheel"] = PlatformWheel
except ImportError:
    pass

setup(version=version(), cmdclass=cmdclass, distclass=NativeDistribution)
