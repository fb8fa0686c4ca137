#!/usr/bin/python3
"""Similarity search over 300 short notes from Python, with embed_index.

Needs a Python whose sqlite3 module can load extensions: Debian's /usr/bin/python3 can
(pyenv, python.org and some distribution builds are compiled without that support and fail
at enable_load_extension). Run from the repository root after `make`:

    /usr/bin/python3 examples/notes.py [--db notes.db] [--extension ./embed] [--model PATH]

It prints the same answers as examples/notes.sql does in the sqlite3 shell.
"""
import argparse
import sqlite3

SUBJECTS = ["The morning bus", "The night train", "Our team meeting", "The office printer",
            "My bicycle", "The coffee machine", "The weekly report", "The garden hose",
            "The school trip", "The dentist appointment"]
EVENTS = ["was late again", "was cancelled", "broke down", "went perfectly", "was moved to Friday",
          "needs to be fixed"]
PLACES = ["near the station.", "in the city centre.", "at home.", "on the third floor.", "by the river."]
QUESTIONS = ["Was the train late?",
             "Is the printer broken?",
             "When is the meeting?",
             "The coffee machine needs to be fixed on the third floor.",
             "Did anything happen by the river?"]


def notes():
    """300 notes made from templates, in the same order as examples/notes.sql."""
    return ["%s %s %s" % (s, e, p) for s in SUBJECTS for e in EVENTS for p in PLACES]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=":memory:", help="database file (default: in memory)")
    ap.add_argument("--extension", default="./embed", help="path of embed.so, without .so")
    ap.add_argument("--model", default="models/sqlite-embed-mini",
                    help="a Hugging Face / sentence-transformers model folder")
    args = ap.parse_args()

    con = sqlite3.connect(args.db, isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(args.extension)
    con.enable_load_extension(False)
    print("model: " + con.execute("SELECT embed_load('mini', ?)", (args.model,)).fetchone()[0])

    con.execute("DROP TABLE IF EXISTS notes_idx")
    con.execute("DROP TABLE IF EXISTS notes")
    con.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    con.execute("CREATE VIRTUAL TABLE notes_idx USING embed_index(model = 'mini', metric = 'cosine')")
    # One transaction: the index embeds the pending texts in length-sorted batches at commit.
    with con:
        con.execute("BEGIN")
        for body in notes():
            cur = con.execute("INSERT INTO notes(body) VALUES (?)", (body,))
            con.execute("INSERT INTO notes_idx(rowid, text) VALUES (?, ?)", (cur.lastrowid, body))
    print("indexed: %d" % con.execute("SELECT count(*) FROM notes_idx").fetchone()[0])

    for question in QUESTIONS:
        rows = con.execute(
            "SELECT n.id, n.body, i.distance FROM notes_idx AS i JOIN notes AS n ON n.id = i.rowid"
            " WHERE i.notes_idx MATCH ? AND i.k = 3 ORDER BY i.distance, n.id", (question,))
        for note_id, body, dist in rows:
            print("%s|%d|%s|%.4f" % (question, note_id, body, dist))
    con.close()


if __name__ == "__main__":
    main()
