"""The sqlite-embed command: embed a table's text column into an embed_index (batched, resumable,
with progress), search it, and describe model folders. `sqlite-embed --help` lists the commands."""
import argparse
import json
import os
import sqlite3
import sys
import time
import urllib.parse

import sqlite_embed
from sqlite_embed import plot

EPILOG = """examples:
  sqlite-embed index notes.db notes body --model models/sqlite-embed-mini
  sqlite-embed search notes.db notes_idx 'is the bus late?' --model models/sqlite-embed-mini -k 3
  sqlite-embed models models/sqlite-embed-mini
  sqlite-embed models --db notes.db
  sqlite-embed plot positions positions.svg --positions 64 --dims 64
  sqlite-embed plot attention heads.svg --model models/sqlite-embed-mini --text 'the bus is late' --layer 1"""


def quote(name):
    """An SQL identifier, quoted."""
    return '"%s"' % name.replace('"', '""')


def connect(path, memory=False):
    """An existing database file, opened read-write (mode=rw: a mistyped path is an error, not a
    new empty file); ":memory:" only where memory is allowed."""
    if memory and path == ":memory:":
        con = sqlite3.connect(path, isolation_level=None)
    elif not os.path.isfile(path):
        raise SystemExit("sqlite-embed: %s: no such database file" % path)
    else:
        con = sqlite3.connect("file:%s?mode=rw" % urllib.parse.quote(os.path.abspath(path)),
                              isolation_level=None, uri=True)
    try:
        sqlite_embed.load(con)
    except sqlite_embed.ExtensionLoadingUnavailable as e:
        raise SystemExit(str(e))
    return con


def index_model(con, index):
    """The model name an existing embed_index was created with (its config), or None."""
    try:
        row = con.execute("SELECT value FROM %s WHERE key = 'model'" % quote(index + "_config")).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def check_folder(folder):
    if not os.path.isdir(folder):
        raise SystemExit("sqlite-embed: %s: no such model folder" % folder)


def load_model(con, folder, name):
    check_folder(folder)
    con.execute("SELECT embed_load(?, ?)", (name, folder))


class Progress:
    """A tqdm bar (Debian's python3-tqdm) when asked for or importable, else a plain counter on
    stderr: a line for the first batch, then at most one a second, and one at the end."""

    def __init__(self, mode, total, desc):
        self.total, self.done, self.bar, self.mode = total, 0, None, mode
        self.last = 0.0
        if mode in ("auto", "bar"):
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc=desc, unit="rows", file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                if mode == "bar":
                    raise SystemExit("sqlite-embed: --progress bar needs tqdm (apt-get install python3-tqdm)")
            self.mode = "bar" if self.bar else "plain"

    def update(self, n):
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if self.mode == "plain" and (self.last == 0.0 or now - self.last >= 1.0 or self.done == self.total):
            pct = 100.0 * self.done / self.total if self.total else 100.0
            print("indexed %d/%d rows (%.0f%%)" % (self.done, self.total, pct), file=sys.stderr, flush=True)
            self.last = now

    def close(self):
        if self.bar is not None:
            self.bar.close()


def check_column(con, db, table, column):
    """TABLE and COLUMN as the database has them: an unknown double-quoted name would otherwise be
    read as a string literal, and every row indexed as the column's name."""
    columns = [c for (c,) in con.execute("SELECT name FROM pragma_table_xinfo(?)", (table,))]
    if not columns:
        raise SystemExit("sqlite-embed: %s has no table %s" % (db, table))
    if column.lower() not in (c.lower() for c in columns):
        raise SystemExit("sqlite-embed: table %s has no column %s (its columns: %s)"
                         % (table, column, ", ".join(columns)))


def text_value(table, column, rowid, value):
    """A value as the index's text: SQLite's own text for numbers (the SELECT casts them), a BLOB
    only when it is UTF-8 text."""
    if not isinstance(value, bytes):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SystemExit("sqlite-embed: %s.%s of rowid %d is a blob that is not UTF-8 text (byte %d); "
                         "convert or clear it, then run again" % (table, column, rowid, e.start))


def check_blobs(con, table, column):
    for rowid, value in con.execute("SELECT rowid, %s FROM %s WHERE typeof(%s) = 'blob' ORDER BY rowid"
                                    % (quote(column), quote(table), quote(column))):
        text_value(table, column, rowid, value)


def indexed(con, index):
    """The rowids already in the index; none while it does not exist yet."""
    if not con.execute("SELECT 1 FROM sqlite_schema WHERE name = ? COLLATE NOCASE", (index,)).fetchone():
        return set()
    return {r for (r,) in con.execute("SELECT rowid FROM %s" % quote(index))}


def commit_batch(con, statements):
    """One transaction of (sql, rows) pairs: all of it committed, or none (Ctrl-C included)."""
    con.execute("BEGIN")
    try:
        for sql, rows in statements:
            con.executemany(sql, rows) if rows is not None else con.execute(sql)
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:  # Ctrl-C may also land just after the COMMIT
            con.execute("ROLLBACK")
        raise


def cmd_index(args):
    check_folder(args.model)
    con = connect(args.db)
    check_column(con, args.db, args.table, args.column)
    index = args.index or args.table + "_idx"
    name = args.name or index_model(con, index) or os.path.basename(os.path.normpath(args.model))
    load_model(con, args.model, name)
    table, column = quote(args.table), quote(args.column)
    rows = [r for (r,) in con.execute("SELECT rowid FROM %s WHERE %s IS NOT NULL ORDER BY rowid" % (table, column))]
    check_blobs(con, args.table, args.column)
    create = ("CREATE VIRTUAL TABLE IF NOT EXISTS %s USING embed_index(model = '%s')"
              % (quote(index), name.replace("'", "''")), None)
    have = indexed(con, index)
    todo = [r for r in rows if r not in have]
    start = time.monotonic()
    progress = Progress(args.progress, len(todo), "indexing %s" % index)
    select = ("SELECT rowid, CASE WHEN typeof(%s) = 'blob' THEN %s ELSE CAST(%s AS TEXT) END FROM %s "
              "WHERE rowid BETWEEN ? AND ? AND %s IS NOT NULL ORDER BY rowid" % (column, column, column, table, column))
    insert = "INSERT INTO %s(rowid, text) VALUES (?, ?)" % quote(index)
    done = 0
    try:
        if not todo:
            commit_batch(con, [create])
        for at in range(0, len(todo), args.batch):
            ids = todo[at:at + args.batch]
            wanted = set(ids)
            batch = [(r, text_value(args.table, args.column, r, t)) for r, t in con.execute(select, (ids[0], ids[-1]))
                     if r in wanted]
            # the index is created with the first batch: a failure before it leaves no trace
            commit_batch(con, ([create] if at == 0 else []) + [(insert, batch)])
            done += len(batch)
            progress.update(len(batch))
    except KeyboardInterrupt:
        progress.close()
        done = len(indexed(con, index)) - len(have)
        print("sqlite-embed: interrupted after %d rows (committed); run the same command to resume" % done,
              file=sys.stderr)
        return 130
    progress.close()
    print("indexed %d rows into %s (%d already there) in %.1f s"
          % (done, index, len(rows) - len(todo), time.monotonic() - start))
    return 0


def cmd_search(args):
    check_folder(args.model)
    con = connect(args.db)
    name = args.name or index_model(con, args.index)
    if not name:
        raise SystemExit("sqlite-embed: %s is not an embed_index with a model in %s" % (args.index, args.db))
    load_model(con, args.model, name)
    sql = "SELECT rowid, distance, text FROM %s WHERE %s MATCH ? AND k = ?" % (quote(args.index), quote(args.index))
    for rowid, distance, text in con.execute(sql, (args.query, args.k)):
        if args.json:
            print(json.dumps({"rowid": rowid, "distance": distance, "text": text}))
        else:
            print("%s\t%.6f\t%s" % (rowid, distance, text))
    return 0


MODEL_COLUMNS = ("name", "architecture", "hidden_size", "layers", "max_tokens", "pooling", "normalize",
                 "weights", "fingerprint")


def cmd_models(args):
    con = connect(args.db or ":memory:", memory=not args.db)
    if args.db:
        for (table,) in con.execute("SELECT name FROM sqlite_schema WHERE type = 'table' AND "
                                    "sql LIKE 'CREATE VIRTUAL TABLE%USING embed_index%' ORDER BY name"):
            print("%s\tmodel %s" % (table, index_model(con, table) or "(none: vectors only)"))
    for folder in args.folders:
        name = os.path.basename(os.path.normpath(folder))
        load_model(con, folder, name)
        row = con.execute("SELECT %s FROM embed_models WHERE name = ?" % ", ".join(MODEL_COLUMNS), (name,)).fetchone()
        print(" ".join("%s=%s" % kv for kv in zip(MODEL_COLUMNS, row)) + " folder=%s" % folder)
    return 0


def parser():
    p = argparse.ArgumentParser(prog="sqlite-embed", description="Transformer embeddings in SQLite files.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version="sqlite-embed %s" % sqlite_embed.__version__)
    sub = p.add_subparsers(dest="command", metavar="{index,search,models,plot}")
    ix = sub.add_parser("index", help="embed a table's text column into an embed_index (resumable)",
                        description="Embeds TABLE.COLUMN into an embed_index keyed by the table's rowid, in "
                        "transactions of --batch rows. Rows already in the index are skipped, so an interrupted "
                        "run resumes where it stopped.")
    ix.add_argument("db")
    ix.add_argument("table")
    ix.add_argument("column")
    ix.add_argument("--model", required=True, help="the Hugging Face model folder")
    ix.add_argument("--name", help="the model's name (default: the index's, else the folder's name)")
    ix.add_argument("--index", help="the embed_index table (default: TABLE_idx; created when missing)")
    ix.add_argument("--batch", type=int, default=256, help="rows per transaction (default 256)")
    ix.add_argument("--progress", choices=("auto", "bar", "plain", "none"), default="auto",
                    help="auto: a tqdm bar when tqdm is installed, else a plain counter")
    ix.set_defaults(fn=cmd_index)
    se = sub.add_parser("search", help="the k nearest texts of an embed_index")
    se.add_argument("db")
    se.add_argument("index")
    se.add_argument("query")
    se.add_argument("--model", required=True, help="the model folder the index was built with")
    se.add_argument("--name", help="the model's name (default: the one the index records)")
    se.add_argument("-k", type=int, default=5)
    se.add_argument("--json", action="store_true", help="one JSON object a line")
    se.set_defaults(fn=cmd_search)
    mo = sub.add_parser("models", help="describe model folders, or list a database's indexes and models")
    mo.add_argument("folders", nargs="*")
    mo.add_argument("--db", help="list this database's embed_index tables and their models")
    mo.set_defaults(fn=cmd_models)
    plot.add_parser(sub)
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if not getattr(args, "fn", None):
        p.print_help()
        return 2
    if getattr(args, "batch", 1) < 1:
        p.error("--batch must be at least 1")
    if getattr(args, "k", 1) < 1:
        p.error("-k must be at least 1")
    try:
        return args.fn(args)
    except plot.PlotError as e:
        args.parser.error(str(e))  # bad input to plot: usage and the problem, exit status 2
    except sqlite3.Error as e:
        print("sqlite-embed: %s" % e, file=sys.stderr)
        return 1
