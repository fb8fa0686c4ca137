"""embed_hybrid's "rerank" option: the best rerank_depth fused rows scored again by a
cross-encoder. The expected answer is built here from pieces checked elsewhere: embed_hybrid's
own fused list without the option (test_hybrid checks it against plain SQL), embed_rerank's
score of each row's text one pair at a time (test_rerank checks it against PyTorch), and, for a
chunked index, each row's chunk nearest the query by a brute force over embed_chunks and embed."""
import os

from harness import ROOT, test, connect, one, assert_error
from hybrid_corpus import corpus

CE = os.path.join(ROOT, "tests", "references", "rerank", "bert")
QUERIES = ["the bus is late again", "broken printer in the office", "rain and snow on the bridge"]


def con_with_ce(con=None):
    con = corpus(con)
    one(con, "SELECT embed_load('hybrid-ce', ?)", CE)
    return con


def expected(con, q, k, depth, text_of):
    fused = con.execute("SELECT rowid, score FROM embed_hybrid('notes_idx', 'notes_fts', ?, 100000)", (q,)).fetchall()
    head = [(rowid, score, one(con, "SELECT embed_rerank('hybrid-ce', ?, ?)", q, text_of(rowid)))
            for rowid, score in fused[:depth]]
    head.sort(key=lambda r: (-r[2], -r[1], r[0]))
    rows = [(r[0], r[2]) for r in head] + [(rowid, None) for rowid, _ in fused[depth:]]
    return rows[:k]


def check(got, want):
    assert [r[0] for r in got] == [r[0] for r in want], (got, want)
    for (_, a), (_, b) in zip(got, want):
        assert (a is None) == (b is None) and (a is None or abs(a - b) < 1e-5), (a, b)


def body(con):
    return lambda rowid: one(con, "SELECT body FROM notes WHERE id = ?", rowid)


@test
def reranked_rows_equal_the_cross_encoder_over_the_fused_list():
    con = con_with_ce()
    for q in QUERIES:
        for k, depth in ((10, 50), (5, 5), (3, 20)):
            got = con.execute("SELECT rowid, rerank_score FROM embed_hybrid('notes_idx', 'notes_fts', ?, ?, "
                              "json_object('rerank', 'hybrid-ce', 'rerank_depth', ?))", (q, k, depth)).fetchall()
            check(got, expected(con, q, k, depth, body(con)))


@test
def rows_past_the_depth_follow_in_fused_order_without_a_score():
    con = con_with_ce()
    q = QUERIES[0]
    got = con.execute("SELECT rowid, rerank_score FROM embed_hybrid('notes_idx', 'notes_fts', ?, 12, "
                      "'{\"rerank\": \"hybrid-ce\", \"rerank_depth\": 4}')", (q,)).fetchall()
    want = expected(con, q, 12, 4, body(con))
    check(got, want)
    assert len(got) == 12 and all(s is not None for _, s in got[:4]) and all(s is None for _, s in got[4:])
    # the default depth is 50
    got = con.execute("SELECT rowid, rerank_score FROM embed_hybrid('notes_idx', 'notes_fts', ?, 60, "
                      "'{\"rerank\": \"hybrid-ce\"}')", (q,)).fetchall()
    check(got, expected(con, q, 60, 50, body(con)))


@test
def order_by_score_is_sorted_by_sqlite_when_reranked():
    con = con_with_ce()
    q = QUERIES[1]
    opts = '{"rerank": "hybrid-ce", "rerank_depth": 30}'
    got = con.execute("SELECT rowid, score FROM embed_hybrid('notes_idx', 'notes_fts', ?, 10, ?) "
                      "ORDER BY score DESC, rowid", (q, opts)).fetchall()
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    got = con.execute("SELECT rowid, rerank_score FROM embed_hybrid('notes_idx', 'notes_fts', ?, 10, ?) "
                      "ORDER BY rerank_score DESC", (q, opts)).fetchall()
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    # without reranking the columns are NULL
    assert one(con, "SELECT count(*) FROM embed_hybrid('notes_idx', 'notes_fts', ?, 10) "
                    "WHERE rerank_score IS NULL AND chunk IS NULL", q) == 10


def nearest_chunk(con, q, text):
    """Brute force: the chunk of text (as the index cuts it) whose embedding is nearest the query."""
    rows = con.execute("SELECT c.chunk, c.start, c.\"end\", c.text FROM embed_chunks('hybrid-minilm', ?, "
                       "'{\"max_tokens\": 6}') AS c", (text,)).fetchall()
    dist = [(one(con, "SELECT embed_distance(embed('hybrid-minilm', ?), embed('hybrid-minilm', ?))", q, r[3]),
             r[0], r) for r in rows]
    return min(dist)[2]


@test
def a_chunked_index_reranks_each_row_by_its_nearest_chunk():
    con = connect()
    corpus(con, index="plain_idx")
    one(con, "SELECT embed_load('hybrid-ce', ?)", CE)
    con.execute("CREATE VIRTUAL TABLE notes_idx USING embed_index(model = 'hybrid-minilm', chunk_tokens = 6)")
    con.execute("INSERT INTO notes_idx(rowid, text) SELECT id, body FROM notes")
    q = QUERIES[2]
    got = con.execute("SELECT rowid, rerank_score, chunk, chunk_start, chunk_end FROM embed_hybrid('notes_idx', "
                      "'notes_fts', ?, 8, '{\"rerank\": \"hybrid-ce\", \"rerank_depth\": 15}')", (q,)).fetchall()
    chunks = {}

    def text_of(rowid):
        chunks[rowid] = nearest_chunk(con, q, one(con, "SELECT body FROM notes WHERE id = ?", rowid))
        return chunks[rowid][3]

    want = expected(con, q, 8, 15, text_of)
    check([r[:2] for r in got], want)
    for rowid, _, chunk, start, end in got:
        assert (chunk, start, end) == chunks[rowid][:3], (rowid, chunk, start, end, chunks[rowid])


@test
def bad_rerank_options_are_errors():
    con = con_with_ce()
    base = "SELECT * FROM embed_hybrid('notes_idx', 'notes_fts', 'bus', 3, ?)"
    bad = [('{"rerank": "hybrid-minilm"}', "embed_hybrid: option \"rerank\": model 'hybrid-minilm' has no classifier"),
           ('{"rerank": "no-such-model"}', "embed_hybrid: option \"rerank\":"),
           ('{"rerank": 3}', "embed_hybrid: option \"rerank\" must be a text")]
    for depth in ("0", "1.5", "\"5\"", "100001"):
        bad.append(('{"rerank": "hybrid-ce", "rerank_depth": %s}' % depth,
                    "embed_hybrid: option \"rerank_depth\" must be an integer from 1 to 100000"))
    for opts, msg in bad:
        assert_error(con, base, msg, args=(opts,))
    # a NULL query gives no rows, reranked or not
    assert one(con, "SELECT count(*) FROM embed_hybrid('notes_idx', 'notes_fts', NULL, 3, "
                    "'{\"rerank\": \"hybrid-ce\"}')") == 0
