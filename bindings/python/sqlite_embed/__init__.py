"""sqlite-embed, the SQLite extension that computes transformer embeddings in SQL, for Python.

    import sqlite3, sqlite_embed
    con = sqlite3.connect("notes.db")
    sqlite_embed.load(con)          # an sqlite3.Connection or an apsw.Connection

loadable_path() is the bundled embed.so, preload_path() the LD_PRELOAD helper beside it."""
import os

__all__ = ["load", "loadable_path", "preload_path", "ExtensionLoadingUnavailable", "__version__"]

_HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(_HERE, "VERSION"), encoding="ascii") as _f:
    __version__ = _f.read().strip()


class ExtensionLoadingUnavailable(RuntimeError):
    """The connection's SQLite module was built without loadable extensions."""


def loadable_path():
    """The path of the bundled embed.so, as load_extension() takes it."""
    return os.path.join(_HERE, "embed.so")


def preload_path():
    """The path of embed_preload.so, which registers embed.so in every connection a process opens
    (LD_PRELOAD) for hosts that cannot call load_extension."""
    return os.path.join(_HERE, "embed_preload.so")


def _unavailable(con):
    import sys
    return ExtensionLoadingUnavailable(
        "sqlite_embed.load: this Python's sqlite3 module cannot load extensions (%s has no "
        "enable_load_extension: pyenv's and macOS's Pythons are often built without it). Use one of:\n"
        "  - a Python whose sqlite3 can, e.g. Debian's /usr/bin/python3 (apt-get install python3);\n"
        "  - apsw, which always can (apt-get install python3-apsw, or pip install apsw): "
        "sqlite_embed.load(apsw.Connection(path));\n"
        "  - the preload helper, which registers the extension in every connection without loading:\n"
        "    LD_PRELOAD=%s %s your_script.py"
        % (type(con).__name__, preload_path(), sys.executable))


def _is_apsw(con):
    return type(con).__module__.split(".")[0] == "apsw"


def load(con):
    """Loads sqlite-embed into con: an sqlite3.Connection (whose module can load extensions) or an
    apsw.Connection. Extension loading is switched back off afterwards for sqlite3 connections."""
    path = loadable_path()
    if _is_apsw(con):
        enable = getattr(con, "enable_load_extension", None) or con.enableloadextension
        load_ext = getattr(con, "load_extension", None) or con.loadextension
        enable(True)
        load_ext(path)
        return
    enable = getattr(con, "enable_load_extension", None)
    if not callable(enable):
        raise _unavailable(con)
    enable(True)
    try:
        con.load_extension(path)
    finally:
        enable(False)
