"""embed_chunks: token-aware chunks for WordPiece, Unigram and byte-level BPE tokenizers and
defined models, checked against the text itself (byte slices, white space, sentence ends),
against an independent count of each chunk's tokens (the non-special rows of embed_tokens
over the chunk's text alone), and against greedy packings computed here in Python."""
import json
import os

from harness import test, connect, one, FIXTURES, assert_error, LESSON_MODEL

con = connect()
MODELS = {
    "wp": os.path.join(FIXTURES, "models", "bert-tiny-uncased"),  # WordPiece, 512 positions
    "mwp": os.path.join(FIXTURES, "tokenizers", "vocab", "bert-base-multilingual-cased"),
    "ug": os.path.join(FIXTURES, "models2", "xlmr-tiny"),  # Unigram (XLM-R)
    "bpe": os.path.join(FIXTURES, "tokenizers2", "vocab", "roberta-base"),  # byte-level BPE, no limit
}
for _name, _path in MODELS.items():
    con.execute("SELECT embed_load(?, ?)", (_name, _path))
con.execute("SELECT embed_define('chunks-lesson', ?)", (LESSON_MODEL,))
KINDS = ["wp", "mwp", "ug", "bpe"]

# Unicode's White_Space characters: what chunks never start or end with
WS = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}
SENTENCE_END = ".!?\u3002\uff01\uff1f"

with open(os.path.join(FIXTURES, "tokenizers", "public", "cases.jsonl"), encoding="utf-8") as _f:
    CASES = [json.loads(line) for line in _f]


def corpus(*cats):
    return [c["text"] for c in CASES if c["cat"] in cats and c["text"].strip()]


def chunks(model, text, options=None):
    return con.execute("SELECT chunk, text, start, \"end\", tokens FROM embed_chunks(?, ?, ?)",
                       (model, text, options)).fetchall()


def count_alone(model, text):
    """The model's tokens of text tokenized alone, specials (rows without offsets) excluded."""
    return one(con, "SELECT count(*) FROM embed_tokens(?, ?) WHERE start IS NOT NULL", model, text)


def full_tokens(model, text):
    """The whole text's token spans; the text must be within the model's limit (embed_tokens
    truncates), which the caller's texts are: checked against the untruncated BPE count."""
    assert count_alone("bpe", text) < 400, "a text too long for full_tokens"
    return con.execute("SELECT start, \"end\" FROM embed_tokens(?, ?) WHERE start IS NOT NULL ORDER BY position",
                       (model, text)).fetchall()


def check_chunks(model, text, max_tokens, overlap=0):
    """Every property a chunking must have, whatever the text; returns the rows."""
    opts = json.dumps({"max_tokens": max_tokens, "overlap": overlap})
    rows = chunks(model, text, opts)
    b = text.encode("utf-8")
    covered = bytearray(len(b))
    assert [r[0] for r in rows] == list(range(len(rows)))
    for i, (_, t, start, end, tokens) in enumerate(rows):
        assert 0 <= start < end <= len(b), (start, end)
        assert b[start:end] == t.encode("utf-8"), (model, i, t)
        assert t[0] not in WS and t[-1] not in WS, (model, repr(t))
        assert tokens == count_alone(model, t) <= max_tokens, (model, max_tokens, tokens, repr(t))
        covered[start:end] = b"\x01" * (end - start)
        if i:
            assert rows[i - 1][2] < start and rows[i - 1][3] < end, (rows[i - 1], rows[i])
            if overlap == 0:
                assert rows[i - 1][3] <= start
    pos = 0
    for ch in text:
        n = len(ch.encode("utf-8"))
        assert ch in WS or all(covered[pos:pos + n]), (model, "byte %d (%r) is in no chunk" % (pos, ch))
        pos += n
    return rows


@test
def offsets_slice_the_blob_in_sql():
    text = "Первое предложение. 第二句话。 Third one — with emoji 🎉 and café.\n\nA new paragraph!"
    for m in KINDS:
        bad = one(con, "SELECT count(*) FROM embed_chunks(?, ?, '{\"max_tokens\": 6}') "
                  "WHERE CAST(text AS BLOB) IS NOT substr(CAST(?2 AS BLOB), start + 1, \"end\" - start)", m, text)
        assert bad == 0 and len(chunks(m, text, '{"max_tokens": 6}')) > 2, m


@test
def invariants_on_many_scripts():
    groups = [("lang_en", "man_en"), ("lang_ru", "man_ru"), ("lang_zh", "lang_ja", "man_ja"), ("lang_ko", "man_ko"),
              ("lang_ar_fa_ur",), ("lang_hi_bn_ta", "lang_th_lo_km_my"), ("emoji", "gen_emoji"),
              ("combining", "gen_combining"), ("gen_unicode_soup", "gen_mixed_lang"), ("unicode_spaces", "zero_width",
                                                                                     "controls", "gen_unicode_ws")]
    for cats in groups:
        text = " ".join(corpus(*cats))
        for m in KINDS:
            for limit, overlap in [(7, 0), (16, 5), (40, 0)]:
                check_chunks(m, text, limit, overlap)


@test
def invariants_on_the_whole_corpus():
    # over 64 KiB: the planner tokenizes it in segments
    text = "\n".join(c["text"] for c in CASES)
    assert len(text.encode("utf-8")) > 100000
    for m in KINDS:
        rows = check_chunks(m, text, 48, 8 if m == "wp" else 0)
        assert len(rows) > 1000


def sentences_of(text):
    """The sentences of text as (start, end) byte spans: after . ! ? before white space, after
    。！？, and at line breaks (the documented rule)."""
    spans, start, b = [], 0, text.encode("utf-8")
    pos = 0
    for i, ch in enumerate(text):
        pos += len(ch.encode("utf-8"))
        nxt = text[i + 1] if i + 1 < len(text) else " "
        if (ch in ".!?" and nxt in WS) or ch in "\u3002\uff01\uff1f" or ch == "\n" or i + 1 == len(text):
            seg = b[start:pos].decode("utf-8")
            if seg.strip():
                lead = len(seg) - len(seg.lstrip())
                s = start + len(seg[:lead].encode("utf-8"))
                e = s + len(seg.strip().encode("utf-8"))
                spans.append((s, e))
            start = pos
    return spans


EN = ("The cat sat on the mat. It was a sunny day! Did the dog bark at the old man? No, it slept all day long. "
      "Children played in the park near the river. The teacher said that the lesson was over. "
      "We went home early because it started to rain.\nThe next morning was cold and bright. "
      "Everyone had breakfast together in the kitchen. Then they walked to the station.")


@test
def wordpiece_packs_whole_sentences_greedily():
    # WordPiece counts are context-free: the packing is computable from each sentence's count
    b = EN.encode("utf-8")
    spans = sentences_of(EN)
    counts = [count_alone("wp", b[s:e].decode()) for s, e in spans]
    for limit in [12, 20, 33, 50]:
        assert max(counts) <= limit
        want, i = [], 0
        while i < len(spans):
            j, total = i, 0
            while j < len(spans) and total + counts[j] <= limit:
                total += counts[j]
                j += 1
            want.append((spans[i][0], spans[j - 1][1]))
            i = j
        got = [(r[2], r[3]) for r in check_chunks("wp", EN, limit)]
        assert got == want, (limit, got, want)


@test
def chunks_end_at_sentence_ends_when_the_next_sentence_does_not_fit():
    zh = "我爱北京天安门。天安门上太阳升。伟大领袖毛主席，指引我们向前进！今天天气很好？我们去公园散步吧。"
    for m in KINDS:
        for text in [EN, zh, EN + "\n" + zh]:
            b = text.encode("utf-8")
            ends = [e for _, e in sentences_of(text)]
            toks = full_tokens(m, text)
            longest = max(count_alone(m, b[s:e].decode()) for s, e in sentences_of(text))
            for limit in [longest + 2, longest + 15]:
                rows = check_chunks(m, text, limit)
                for _, t, start, end, _ in rows[:-1]:
                    assert end in ends, (m, limit, t)
                    nxt = ends[ends.index(end) + 1]
                    in_context = sum(1 for s, e in toks if s >= start and e <= nxt)
                    assert in_context > limit or count_alone(m, b[start:nxt].decode()) > limit, (m, limit, t)


@test
def a_long_sentence_is_cut_at_word_boundaries():
    words = ("internationalization of unbelievably complicated antidisestablishmentarianism requires "
             "extraordinary patience and a remarkably thorough understanding of the underlying "
             "circumstances surrounding every single participant").split()
    text = " ".join(words) + "."
    b = text.encode("utf-8")
    for m in KINDS:
        longest = max(count_alone(m, w) for w in words)
        for limit in [longest, longest + 3, 2 * longest]:
            rows = check_chunks(m, text, limit)
            assert len(rows) > 1
            for _, t, start, end, _ in rows:
                assert start == 0 or b[start - 1:start] == b" ", (m, t)
                assert end == len(b) or b[end:end + 1] == b" ", (m, t)
            if m == "wp":  # context-free counts: the greedy packing of words
                want, i = [], 0
                while i < len(words):
                    j = i + 1
                    while j < len(words) and count_alone(m, " ".join(words[i:j + 1]) + ("." if j + 1 == len(words)
                                                                                       else "")) <= limit:
                        j += 1
                    want.append(" ".join(words[i:j]) + ("." if j == len(words) else ""))
                    i = j
                assert [r[1] for r in rows] == want, (limit, [r[1] for r in rows], want)


@test
def only_an_over_long_word_is_cut_inside():
    long_word = "antidisestablishmentarianism" * 3
    text = "a short start. then " + long_word + " and the rest of it."
    b = text.encode("utf-8")
    w0 = b.index(long_word.encode())
    w1 = w0 + len(long_word)
    for m in KINDS:
        limit = 6
        assert count_alone(m, long_word) > limit
        rows = check_chunks(m, text, limit)
        inside = [r for r in rows if w0 < r[2] < w1 or w0 < r[3] < w1]
        assert inside, m
        starts = {s for s, _ in full_tokens(m, text)}
        for _, t, start, end, _ in rows:
            if w0 < start < w1:
                assert start in starts, (m, t)  # between two tokens of the whole text
            for cut in (start, end):  # elsewhere only at white space
                if not w0 < cut < w1 and 0 < cut < len(b):
                    assert b[cut - 1:cut] == b" " or b[cut:cut + 1] == b" ", (m, t)
        assert "".join(r[1] for r in rows if w0 <= r[2] and r[3] <= w1) in long_word


@test
def overlap_shares_up_to_the_stated_tokens():
    text = " ".join(corpus("lang_en", "man_en"))
    text = text[:text.index(" ", 1200)]
    toks = full_tokens("wp", text)
    for limit, overlap in [(16, 4), (32, 10), (64, 63), (8, 1)]:
        rows = check_chunks("wp", text, limit, overlap)
        plain = check_chunks("wp", text, limit, 0)
        assert len(rows) > len(plain)
        for a, b in zip(rows, rows[1:]):
            shared = sum(1 for s, e in toks if s >= b[2] and e <= a[3])
            assert overlap - overlap // 2 <= shared <= overlap, (limit, overlap, shared, a, b)
    for m in ["ug", "bpe", "mwp"]:
        rows = check_chunks(m, text, 20, 6)
        toks = full_tokens(m, text)
        for a, b in zip(rows, rows[1:]):
            assert 0 < sum(1 for s, e in toks if s >= b[2] and e <= a[3]) <= 6 + 1, (m, a, b)


@test
def the_default_limit_is_the_models_less_its_special_tokens():
    limit = one(con, "SELECT max_tokens FROM embed_models WHERE name = 'wp'")
    specials = one(con, "SELECT count(*) FROM embed_tokens('wp', '') WHERE start IS NULL")
    assert (limit, specials) == (512, 2)
    fits = " ".join(["the"] * (limit - specials))
    assert [r[4] for r in chunks("wp", fits)] == [510]
    assert [r[4] for r in chunks("wp", fits + " the")] == [510, 1]
    assert max(r[4] for r in chunks("wp", fits + " " + fits)) <= 510
    assert_error(con, "SELECT * FROM embed_chunks('bpe', 'a text')", "embed_chunks: model 'bpe' has no token limit",
                 "give max_tokens")
    assert [r[1] for r in chunks("bpe", "Hello world.", '{"max_tokens": 3}')] == ["Hello world."]
    assert [r[1] for r in chunks("bpe", "Hello world.", '{"max_tokens": 2}')] == ["Hello", "world."]


@test
def defined_models_count_their_words():
    text = "bus is late. early bus is late\n\nlate late early"
    rows = chunks("chunks-lesson", text, '{"max_tokens": 4}')
    assert [r[1] for r in rows] == ["bus is late.", "early bus is late", "late late early"]
    assert [r[4] for r in rows] == [3, 4, 3]
    rows = chunks("chunks-lesson", "bus is late early bus", '{"max_tokens": 2, "overlap": 1}')
    assert [r[1] for r in rows] == ["bus is", "is late", "late early", "early bus"]
    # words outside the vocabulary are still counted (chunking needs no vocabulary)
    assert [r[1] for r in chunks("chunks-lesson", "unknown words here", '{"max_tokens": 2}')] == ["unknown words", "here"]


@test
def null_empty_and_white_space_give_no_rows():
    for m in KINDS + ["chunks-lesson"]:
        for text in [None, "", "   ", " \n\t\u3000\u00a0 "]:
            assert chunks(m, text, '{"max_tokens": 4}') == [], (m, repr(text))
    assert chunks(None, "a text") == []
    assert con.execute("SELECT * FROM embed_chunks('wp', 'a b', NULL)").fetchall() == [(0, "a b", 0, 3, 2)]
    assert chunks("wp", 42) == [(0, "42", 0, 2, 1)]  # a number is chunked as its text
    # characters the tokenizer drops still lie in a chunk
    assert [(r[1], r[4]) for r in chunks("wp", "\x07\x08")] == [("\x07\x08", 0)]


@test
def hidden_columns_echo_the_arguments():
    row = con.execute("SELECT model, input, options, text FROM embed_chunks('wp', 'Hi there.', '{\"overlap\": 0}')"
                      ).fetchall()
    assert row == [("wp", "Hi there.", '{"overlap": 0}', "Hi there.")]
    got = con.execute("SELECT chunk, text FROM embed_chunks WHERE model = 'wp' AND input = 'One. Two.' "
                      "AND options = '{\"max_tokens\": 2}'").fetchall()
    assert got == [(0, "One."), (1, "Two.")]


@test
def bad_arguments_are_errors_that_name_embed_chunks():
    q = "SELECT * FROM embed_chunks('wp', 'some text', ?)"
    for opts, frag in [
        ('{"max_tokens": 0}', 'option "max_tokens" must be an integer from 1 to 2147483647, not 0'),
        ('{"max_tokens": -3}', 'option "max_tokens" must be an integer from 1'),
        ('{"max_tokens": 2.5}', "not 2.5"), ('{"max_tokens": "8"}', 'not "8"'),
        ('{"max_tokens": null}', "not null"), ('{"max_tokens": true}', "not true"),
        ('{"max_tokens": 1e12}', 'option "max_tokens" must be an integer from 1 to 2147483647, not 1000000000000'),
        # the value as given, not rounded to the integer it is near
        ('{"max_tokens": 1.0000000000000002}', "to 2147483647, not 1.0000000000000002"),
        ('{"overlap": 0.1}', "to 2147483647, not 0.1"),
        ('{"overlap": -1}', 'option "overlap" must be an integer from 0 to 2147483647, not -1'),
        ('{"overlap": [1]}', "not [1]"),
        ('{"max_tokens": 8, "overlap": 8}', "overlap must be from 0 to max_tokens - 1 (7), not 8"),
        ('{"overlap": 510}', "overlap must be from 0 to max_tokens - 1 (509), not 510"),
        ('{"max_token": 8}', 'unknown option "max_token" (known: max_tokens, overlap)'),
        ('{"max_tokens": 8, "max_tokens": 9}', 'option "max_tokens" is given twice'),
        ("[8]", "options must be a JSON object"), ("max_tokens=8", "options must be a JSON object"),
    ]:
        assert_error(con, q, "embed_chunks: ", frag, args=(opts,))
    assert_error(con, q, "embed_chunks: options must be JSON text, not the integer 8", args=(8,))
    assert_error(con, q, "embed_chunks: options must be JSON text", args=(b"{}",))
    # bad options are errors even when the text is NULL
    assert_error(con, "SELECT * FROM embed_chunks('wp', NULL, '{\"x\": 1}')", "embed_chunks: unknown option")
    assert_error(con, "SELECT * FROM embed_chunks('nope', 'a')", "embed_chunks: no model named 'nope'")
    assert_error(con, "SELECT * FROM embed_chunks(7, 'a')", "embed_chunks: the model name must be text")
    assert_error(con, "SELECT * FROM embed_chunks('wp', x'61')", "embed_chunks: the text")
    assert_error(con, "SELECT * FROM embed_chunks('wp', CAST(x'61ff62' AS TEXT))",
                 "embed_chunks: invalid UTF-8 at byte 1")
    for sql in ["SELECT * FROM embed_chunks", "SELECT * FROM embed_chunks('wp')",
                "SELECT * FROM embed_chunks WHERE chunk = 1 OR text = 'x'"]:
        assert_error(con, sql, "embed_chunks: needs a model and a text")


@test
def a_leading_character_the_tokenizer_drops_does_not_shift_the_cuts():
    # SentencePiece's map drops \x01 and \x7f, and Hugging Face's offsets after a dropped first
    # character lie early by its length; the chunks must still fit and cover the text
    word = "supercalifragilisticexpialidocious"
    for model in ("ug", "bpe", "wp"):
        for lead in ("\x01", "\x7f", "\x01\x7f\x01", "\x01 "):
            text = lead + " ".join([word] * 3)
            for limit in range(2, 9):
                plain = chunks(model, " ".join([word] * 3), json.dumps({"max_tokens": limit}))
                got = check_chunks(model, text, limit)
                if model == "ug":  # the same cuts as without the dropped character
                    assert [r[1].lstrip(lead) for r in got] == [r[1] for r in plain], (lead, limit, got, plain)
    # a later segment (64 KiB) that starts with one
    line = "\x01" + " ".join([word] * 3) + "\n"
    check_chunks("ug", line * (70000 // len(line)), 8)


@test
def a_chunked_index_takes_a_text_that_starts_with_a_dropped_character():
    c = connect()
    c.execute("SELECT embed_load('ug-ix', ?)", (MODELS["ug"],))
    c.execute("CREATE VIRTUAL TABLE ix USING embed_index(model = 'ug-ix', chunk_tokens = 4)")
    text = "\x01" + " ".join(["supercalifragilisticexpialidocious"] * 3)
    c.execute("INSERT INTO ix(rowid, text) VALUES (1, ?)", (text,))
    want = [(s, e) for s, e in c.execute("SELECT start, \"end\" FROM embed_chunks('ug-ix', ?, "
                                          "'{\"max_tokens\": 4}')", (text,))]
    got = c.execute("SELECT start, \"end\" FROM ix_parts WHERE row = 1 ORDER BY chunk").fetchall()
    assert len(want) == 6 and got == want, (got, want)


@test
def a_limit_smaller_than_one_piece_is_an_error():
    # a 4-byte character is 4 byte-level tokens that no cut may separate
    assert_error(con, "SELECT * FROM embed_chunks('bpe', 'x \U0001d11e y', '{\"max_tokens\": 2}')",
                 "embed_chunks: max_tokens 2 is too small")
    assert [r[1] for r in chunks("bpe", "x \U0001d11e y", '{"max_tokens": 3}')] == ["x", "\U0001d11e", "y"]
