"""sqlite-embed plot: SVG pictures of position tables and attention weights for people learning
how transformers work. Every value drawn comes from the extension's SQL (position_encoding,
embed_attention, embed_tokens, embed_models); Python only lays the cells out and picks colours.
The SVG is written as plain text so that no plotting library is needed. Each cell is a <rect>
in a row group (data-row) of a <g class="heatmap">, in column order, with the value it shows in
data-v, so that a reader (or a test) can check a picture against SQL."""
import os
import sqlite3
import struct
from xml.sax.saxutils import escape, quoteattr

MAX_POSITIONS = 4096
MAX_DIMS = 4096
MAX_CELLS = 262144     # about 20 MB of SVG: more is no longer a picture one can open
MAX_TOKENS = 128       # attention: tokens² cells per head

# Diverging scale for signed values (blue, white, red) and a sequential one for weights (white to
# dark blue): white is "nothing", so a faint cell reads as a small value in both.
NEGATIVE, ZERO, POSITIVE = (59, 76, 192), (255, 255, 255), (180, 4, 38)
LIGHT, DARK = (255, 255, 255), (8, 48, 107)


class PlotError(Exception):
    """Bad input: reported as a usage error (exit status 2), with no traceback."""


def mix(a, b, t):
    return tuple(int(round(x + (y - x) * t)) for x, y in zip(a, b))


def hex_colour(rgb):
    return "#%02x%02x%02x" % rgb


def diverging(v, limit):
    """The colour of v on a scale from -limit (blue) through 0 (white) to +limit (red)."""
    t = max(-1.0, min(1.0, v / limit)) if limit > 0 else 0.0
    return hex_colour(mix(ZERO, POSITIVE, t) if t >= 0 else mix(ZERO, NEGATIVE, -t))


def sequential(v, limit):
    """The colour of v on a scale from 0 (white) to limit (dark blue)."""
    t = max(0.0, min(1.0, v / limit)) if limit > 0 else 0.0
    return hex_colour(mix(LIGHT, DARK, t))


def number(v):
    """A value as data-v shows it: 4 significant digits are plenty for a picture, and keep the
    file small."""
    s = "%.4g" % v
    return "0" if s == "-0" else s


def xml_text(s):
    """s escaped, with the characters XML 1.0 cannot hold at all (control characters other than
    tab and newline, lone surrogates, U+FFFE and U+FFFF) as U+FFFD: a --text may carry them, and
    the file must still parse."""
    return escape("".join(c if c in "\t\n" or (" " <= c < "\ud800") or ("\ue000" <= c < "\ufffe")
                          or c >= "\U00010000" else "\ufffd" for c in s))


def text(x, y, s, extra="", size=11):
    return '<text x="%g" y="%g" font-family="sans-serif" font-size="%d"%s>%s</text>' % (x, y, size, extra,
                                                                                          xml_text(s))


def heatmap(x0, y0, rows, cell, colour, label):
    """The cells of one heat map at (x0, y0), cell pixels a side: rows is a list of lists of
    values; label names the map (data-label) for readers that want one panel of several. The map
    is drawn in units of one cell, scaled, and a row is a group moved to its place, so that a cell
    needs only its x: a 64 x 64 map stays under 300 KB."""
    out = ['<g class="heatmap" data-label=%s data-rows="%d" data-cols="%d" shape-rendering="crispEdges" '
           'transform="translate(%d %d) scale(%d)">'
           % (quoteattr(label), len(rows), len(rows[0]) if rows else 0, x0, y0, cell)]
    for r, values in enumerate(rows):
        out.append('<g data-row="%d" transform="translate(0 %d)">' % (r, r)
                   + "".join('<rect x="%d" width="1" height="1" fill="%s" data-v="%s"/>'
                             % (c, colour(v), number(v)) for c, v in enumerate(values))
                   + "</g>")
    out.append("</g>")
    return out


def legend(x, y, width, low, high, stops, title):
    """A colour bar of the scale from low to high (stops: (offset, colour) pairs), its two ends and
    its middle written under it."""
    out = ['<defs><linearGradient id="scale" x1="0" x2="1" y1="0" y2="0">']
    out += ['<stop offset="%g" stop-color="%s"/>' % s for s in stops]
    out.append("</linearGradient></defs>")
    out.append('<g class="legend">')
    out.append(text(x, y - 4, title))
    out.append('<rect x="%d" y="%d" width="%d" height="12" fill="url(#scale)" stroke="#888"/>' % (x, y, width))
    for frac, v in ((0, low), (0.5, (low + high) / 2), (1, high)):
        anchor = ("start", "middle", "end")[int(frac * 2)]
        out.append(text(x + frac * width, y + 25, number(v), ' text-anchor="%s"' % anchor))
    out.append("</g>")
    return out


def title_width(title):
    """About the pixels a title of 13 px sans-serif needs, so that a narrow picture does not cut it."""
    return 20 + 7 * len(title)


def document(width, height, title, body):
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>',
                      '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">'
                      % (width, height, width, height),
                      "<title>%s</title>" % xml_text(title),
                      '<rect width="100%" height="100%" fill="white"/>'] + body + ["</svg>", ""])


def write(path, svg):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise PlotError("%s: no such folder to write the picture into" % os.path.dirname(path))
    with open(path, "w", encoding="utf-8") as f:
        f.write(svg)


def floats(blob):
    return struct.unpack("<%df" % (len(blob) // 4), blob)


def model_facts(con, name):
    """layers, heads, max_positions, position_kind and hidden_size of a loaded model, from
    embed_models."""
    row = con.execute("SELECT layers, heads, max_positions, position_kind, hidden_size FROM embed_models "
                      "WHERE name = ?", (name,)).fetchone()
    return dict(zip(("layers", "heads", "max_positions", "position_kind", "hidden_size"), row))


def load(con, folder):
    """Loads a model folder under its folder's name; a folder the extension cannot read is bad input."""
    if not os.path.isdir(folder):
        raise PlotError("%s: no such model folder" % folder)
    name = os.path.basename(os.path.normpath(folder))
    try:
        con.execute("SELECT embed_load(?, ?)", (name, folder))
    except sqlite3.Error as e:
        raise PlotError("%s: not a model folder the extension can load (%s)" % (folder, e))
    return name


def check_count(what, n, high):
    if n is not None and not 1 <= n <= high:
        raise PlotError("%s must be from 1 to %d, not %d" % (what, high, n))


def position_rows(con, model, positions, dims):
    """The position table as rows of values: position_encoding(pos, dims) (the sinusoidal formula),
    or position_encoding(model, pos), the model's own vector (a learned table's row; for a
    rotary model the cos and sin of its angles) cut to its first dims values."""
    args = (lambda p: (p, dims)) if model is None else (lambda p: (model, p))
    rows = []
    try:
        for p in range(positions):
            rows.append(list(floats(con.execute("SELECT position_encoding(?, ?)", args(p)).fetchone()[0])[:dims]))
    except sqlite3.Error as e:
        raise PlotError(str(e))
    return rows


def positions_picture(con, args):
    """(svg, rows, cols) of the positions picture."""
    check_count("--positions", args.positions, MAX_POSITIONS)
    check_count("--dims", args.dims, MAX_DIMS)
    if args.model is None:
        positions, dims = args.positions or 64, args.dims or 64
        model, title = None, "sinusoidal position encoding, base 10000 (position_encoding(pos, %d))" % dims
    else:
        model = load(con, args.model)
        facts = model_facts(con, model)
        if facts["position_kind"] == "alibi":
            raise PlotError("%s has no position vectors: ALiBi adds its positions to the attention scores "
                            "(see embed_attention_bias)" % args.model)
        width = len(position_rows(con, model, 1, MAX_DIMS)[0])
        positions = args.positions or min(64, facts["max_positions"])
        dims = args.dims or width
        if positions > facts["max_positions"]:
            raise PlotError("--positions %d: %s has %d positions" % (positions, args.model, facts["max_positions"]))
        if dims > width:
            raise PlotError("--dims %d: %s's position vectors have %d values" % (dims, args.model, width))
        title = "%s position table of %s (position_encoding('%s', pos))" % (facts["position_kind"], model, model)
    if positions * dims > MAX_CELLS:
        raise PlotError("--positions %d x --dims %d is %d cells, more than %d: ask for fewer"
                        % (positions, dims, positions * dims, MAX_CELLS))
    rows = position_rows(con, model, positions, dims)
    limit = max(abs(v) for r in rows for v in r) or 1.0
    cell = max(1, min(12, 640 // max(positions, dims)))
    left, top = 60, 50
    body = [text(10, 20, title, '', 13)]
    body += heatmap(left, top, rows, cell, lambda v: diverging(v, limit), "positions")
    w, h = dims * cell, positions * cell
    body += axis_ticks(left, top, cell, dims, positions)
    body.append(text(left + w / 2, top + h + 30, "dimension (columns: 0, 1, ... %d)" % (dims - 1),
                     ' text-anchor="middle"'))
    body.append(text(14, top + h / 2, "position", ' text-anchor="middle" transform="rotate(-90 14 %g)"'
                     % (top + h / 2)))
    lx = left + w + 30
    body += legend(lx, top + 14, 160, -limit, limit,
                   [(0, hex_colour(NEGATIVE)), (0.5, hex_colour(ZERO)), (1, hex_colour(POSITIVE))], "value")
    width, height = max(lx + 200, left + w + 20), max(top + h + 45, 140)
    return document(max(width, title_width(title)), height, title, body), positions, dims


def axis_ticks(left, top, cell, cols, rows):
    """Numbers along the top (columns) and the left (rows) every few cells."""
    out = []
    step = max(1, 8 // cell) * 4
    for c in range(0, cols, step):
        out.append(text(left + c * cell + cell / 2, top - 4, str(c), ' text-anchor="middle"', 9))
    for r in range(0, rows, step):
        out.append(text(left - 4, top + r * cell + cell / 2 + 3, str(r), ' text-anchor="end"', 9))
    return out


def attention_picture(con, args):
    """(svg, tokens, panels) of the attention picture: one heat map per (layer, head)."""
    model = load(con, args.model)
    facts = model_facts(con, model)
    if facts["layers"] < 1:
        raise PlotError("%s has no attention layers" % args.model)
    if args.layer is not None and not 1 <= args.layer <= facts["layers"]:
        raise PlotError("--layer %d: %s has layers 1 to %d" % (args.layer, args.model, facts["layers"]))
    if args.head is not None and not 0 <= args.head < facts["heads"]:
        raise PlotError("--head %d: %s has heads 0 to %d" % (args.head, args.model, facts["heads"] - 1))
    try:
        tokens = con.execute("SELECT position, token, word FROM embed_tokens(?, ?) ORDER BY position",
                             (model, args.text)).fetchall()
    except sqlite3.Error as e:
        raise PlotError(str(e))
    if not any(word is not None for _, _, word in tokens):
        raise PlotError("the text %r has no tokens (only the model's special tokens)" % args.text)
    if len(tokens) > MAX_TOKENS:
        raise PlotError("the text has %d tokens, more than %d: %d x %d cells a head is no longer a picture"
                        % (len(tokens), MAX_TOKENS, len(tokens), len(tokens)))
    labels = [t for _, t, _ in tokens]
    n = len(labels)
    layers = [args.layer] if args.layer is not None else list(range(1, facts["layers"] + 1))
    heads = [args.head] if args.head is not None else list(range(facts["heads"]))
    weights = {}
    try:
        for layer in layers:
            # a NULL head would give no rows, so every head is asked for by leaving it out; one
            # layer at a time narrows the work as the argument does (docs/attention.md)
            sql, params = "SELECT head, query, key, weight FROM embed_attention(?, ?, ?", [model, args.text, layer]
            if args.head is not None:
                sql, params = sql + ", ?", params + [args.head]
            for head, q, k, w in con.execute(sql + ")", params):
                weights.setdefault((layer, head), [[0.0] * n for _ in range(n)])[q][k] = w
    except sqlite3.Error as e:
        raise PlotError(str(e))
    limit = max(w for m in weights.values() for r in m for w in r) or 1.0
    cell = max(4, min(24, 360 // n))
    label_w = 8 + 6 * max(len(t) for t in labels)
    panel_w, panel_h = label_w + n * cell + 20, 24 + n * cell + label_w + 10
    title = "attention of %s, %s: query (rows) x key (columns) weights" % (model, args.text)
    body = [text(10, 20, title, '', 13)]
    top = 40
    for i, layer in enumerate(layers):
        for j, head in enumerate(heads):
            x0, y0 = 10 + j * panel_w + label_w, top + i * panel_h + 24
            body.append(text(x0, y0 - 8, "layer %d, head %d" % (layer, head), ' font-weight="bold"'))
            body += heatmap(x0, y0, weights[(layer, head)], cell, lambda v: sequential(v, limit),
                            "layer %d head %d" % (layer, head))
            body += token_labels(x0, y0, cell, labels)
    w = 10 + len(heads) * panel_w
    lx = max(10, w - 190)
    ly = top + len(layers) * panel_h + 14
    body += legend(lx, ly, 160, 0.0, limit, [(0, hex_colour(LIGHT)), (1, hex_colour(DARK))],
                   "weight (each row sums to 1)")
    body.append(text(10, ly + 50, "rows: the token that reads (query); columns: the tokens it reads (keys)"))
    return document(max(w, 420, title_width(title)), ly + 60, title, body), n, len(layers) * len(heads)


def token_labels(x0, y0, cell, labels):
    """The tokens along the left (queries) and, turned, under the map (keys)."""
    out = []
    n = len(labels)
    for i, t in enumerate(labels):
        out.append(text(x0 - 4, y0 + i * cell + cell / 2 + 4, t, ' text-anchor="end" class="query"'))
        x, y = x0 + i * cell + cell / 2 + 4, y0 + n * cell + 4
        out.append(text(x, y, t, ' text-anchor="end" class="key" transform="rotate(-90 %g %g)"' % (x, y)))
    return out


def connect():
    import sqlite_embed
    con = sqlite3.connect(":memory:")
    try:
        sqlite_embed.load(con)
    except sqlite_embed.ExtensionLoadingUnavailable as e:
        raise SystemExit(str(e))
    return con


def cmd_positions(args):
    svg, rows, cols = positions_picture(connect(), args)
    write(args.out, svg)
    print("wrote %s: %d positions x %d dimensions" % (args.out, rows, cols))
    return 0


def cmd_attention(args):
    svg, n, panels = attention_picture(connect(), args)
    write(args.out, svg)
    print("wrote %s: %d heads, %d x %d tokens" % (args.out, panels, n, n))
    return 0


def add_parser(sub):
    """The plot subcommand and its two pictures, under the command's subparsers."""
    pl = sub.add_parser("plot", help="SVG pictures: a position table, a sentence's attention heads",
                        description="Draws SVG heat maps from the extension's SQL: a position table "
                        "(position_encoding) or a sentence's attention weights (embed_attention). Each cell "
                        "carries its value in a data-v attribute.")
    pics = pl.add_subparsers(dest="picture", metavar="{positions,attention}", required=True)
    po = pics.add_parser("positions", help="the sinusoidal position table, or a model's own",
                         description="Rows are positions, columns dimensions. Without --model: the sinusoidal "
                         "table PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...). With --model: "
                         "the model's position vectors (a learned table's rows).")
    po.add_argument("out", help="the SVG file to write")
    po.add_argument("--model", help="a model folder: its own position table")
    po.add_argument("--positions", type=int, help="rows (default 64, or the model's positions when fewer; "
                    "at most %d)" % MAX_POSITIONS)
    po.add_argument("--dims", type=int, help="columns (default 64, or the model's full width)")
    po.set_defaults(fn=cmd_positions, parser=po)
    at = pics.add_parser("attention", help="a sentence's attention weights, one heat map per head",
                         description="One heat map per head of --layer (every layer without it): rows are "
                         "the tokens that read (queries), columns the tokens they read (keys).")
    at.add_argument("out", help="the SVG file to write")
    at.add_argument("--model", required=True, help="the model folder")
    at.add_argument("--text", required=True, help="the sentence")
    at.add_argument("--layer", type=int, help="1 to the model's layers (default: every layer)")
    at.add_argument("--head", type=int, help="0 to the model's heads - 1 (default: every head)")
    at.set_defaults(fn=cmd_attention, parser=at)
