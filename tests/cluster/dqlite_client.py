"""A minimal client of dqlite's wire protocol (version 1), enough for the cluster tests:
find the leader, open a database, run statements with parameters, read rows, list the nodes
and hand leadership to one of them. Unlike the `dqlite` shell, it reports the server's error
message (SQLite's, or sqlite-embed's) as it is.

Message layout (as go-dqlite's internal/protocol encodes it): an 8-byte header (uint32 number
of 8-byte words in the body, uint8 type, uint8 schema, uint16 unused), then the body; integers
little-endian, strings NUL-terminated and padded to 8 bytes."""
import socket
import struct

# request and response types
LEADER, CLIENT, OPEN, EXEC_SQL, QUERY_SQL, CLUSTER, TRANSFER = 0, 1, 3, 8, 9, 16, 17
FAILURE, NODE, WELCOME, NODES, DB, RESULT, ROWS, EMPTY = 0, 1, 2, 3, 4, 6, 7, 8
INTEGER, FLOAT, TEXT, BLOB, NULL, BOOLEAN = 1, 2, 3, 4, 5, 11
ROWS_DONE, ROWS_PART = 0xFF, 0xEE


class DqliteError(Exception):
    """A failure response: the server's code and message."""

    def __init__(self, code, message):
        super().__init__("%s (code %d)" % (message, code))
        self.code = code
        self.message = message


def _pad(b):
    return b + b"\0" * (-len(b) % 8)


def _text(s):
    return _pad(s.encode() + b"\0")


def _params(values):
    """Parameters as schema 0 encodes them: a count byte, a type byte each, padding, values."""
    if not values:
        return b""
    head, body = bytes([len(values)]), b""
    for v in values:
        if v is None:
            head += bytes([NULL]); body += struct.pack("<q", 0)
        elif isinstance(v, bool):
            head += bytes([BOOLEAN]); body += struct.pack("<q", int(v))
        elif isinstance(v, int):
            head += bytes([INTEGER]); body += struct.pack("<q", v)
        elif isinstance(v, float):
            head += bytes([FLOAT]); body += struct.pack("<d", v)
        elif isinstance(v, (bytes, bytearray)):
            head += bytes([BLOB]); body += struct.pack("<Q", len(v)) + _pad(bytes(v))
        else:
            head += bytes([TEXT]); body += _text(str(v))
    return _pad(head) + body


class _Reader:
    def __init__(self, body):
        self.b, self.i = body, 0

    def u8(self):
        self.i += 1
        return self.b[self.i - 1]

    def u64(self):
        self.i += 8
        return struct.unpack_from("<Q", self.b, self.i - 8)[0]

    def i64(self):
        self.i += 8
        return struct.unpack_from("<q", self.b, self.i - 8)[0]

    def f64(self):
        self.i += 8
        return struct.unpack_from("<d", self.b, self.i - 8)[0]

    def text(self):
        end = self.b.index(b"\0", self.i)
        s = self.b[self.i:end].decode()
        self.i = end + 1 + (-(end + 1 - self.i) % 8)
        return s

    def blob(self):
        n = self.u64()
        v = self.b[self.i:self.i + n]
        self.i += n + (-n % 8)
        return bytes(v)


def _failure(r):
    """(code, message) of a failure response. libdqlite 1.11 answers a query that fails while
    stepping with the result's column header (count, names) left in front of the code and
    message (which is why the `dqlite` shell then prints only a column name): skip it."""
    code, message = r.u64(), r.text()
    if r.i == len(r.b):
        return code, message
    r.i = 0
    for _ in range(r.u64()):
        r.text()
    return r.u64(), r.text()


class Connection:
    """One protocol connection to one node (not necessarily the leader)."""

    def __init__(self, address, timeout=10.0):
        host, port = address.rsplit(":", 1)
        self.address = address
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.sendall(struct.pack("<Q", 1))
        self.db = None

    def close(self):
        self.sock.close()

    def _recv(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("dqlite: %s closed the connection" % self.address)
            out += chunk
        return out

    def _request(self, mtype, body):
        self.sock.sendall(struct.pack("<IBBH", len(body) // 8, mtype, 0, 0) + body)
        return self._response()

    def _response(self):
        words, mtype, _, _ = struct.unpack("<IBBH", self._recv(8))
        r = _Reader(self._recv(words * 8))
        if mtype == FAILURE:
            raise DqliteError(*_failure(r))
        return mtype, r

    def leader(self):
        """(id, address) of the leader as this node knows it; address '' when none."""
        _, r = self._request(LEADER, struct.pack("<Q", 0))
        return r.u64(), r.text()

    def open(self, name):
        self._request(CLIENT, struct.pack("<Q", 0))
        mtype, r = self._request(OPEN, _text(name) + struct.pack("<Q", 0) + _text(""))
        assert mtype == DB, mtype
        self.db = struct.unpack_from("<I", r.b, 0)[0]

    def execute(self, sql, *params):
        """Runs every statement of sql; returns (last insert rowid, rows changed)."""
        mtype, r = self._request(EXEC_SQL, struct.pack("<Q", self.db) + _text(sql) + _params(params))
        assert mtype == RESULT, mtype
        return r.u64(), r.u64()

    def query(self, sql, *params):
        """The rows of one statement, as tuples."""
        mtype, r = self._request(QUERY_SQL, struct.pack("<Q", self.db) + _text(sql) + _params(params))
        assert mtype == ROWS, mtype
        ncol = r.u64()
        for _ in range(ncol):
            r.text()
        rows = []
        while True:
            types = []
            header = (ncol * 4 + 63) // 64 * 8
            marker = r.b[r.i]   # a row header's first byte, or the end-of-rows / more-rows mark
            if marker in (ROWS_DONE, ROWS_PART):
                if marker == ROWS_DONE:
                    return rows
                mtype, r = self._response()  # the next part, which repeats the column names
                assert mtype == ROWS, mtype
                for _ in range(r.u64()):
                    r.text()
                continue
            for k in range(header):
                slot = r.u8()
                types += [slot & 0x0F, slot >> 4]
            row = []
            for t in types[:ncol]:
                if t == INTEGER or t == BOOLEAN:
                    row.append(r.i64())
                elif t == FLOAT:
                    row.append(r.f64())
                elif t == TEXT:
                    row.append(r.text())
                elif t == BLOB:
                    row.append(r.blob())
                elif t == NULL:
                    r.u64(); row.append(None)
                else:
                    raise ValueError("dqlite: unexpected column type %d" % t)
            rows.append(tuple(row))

    def nodes(self):
        """[(id, address, role)] of the cluster's configuration."""
        mtype, r = self._request(CLUSTER, struct.pack("<Q", 1))
        assert mtype == NODES, mtype
        return [(r.u64(), r.text(), r.u64()) for _ in range(r.u64())]

    def transfer(self, node_id):
        """Asks the leader to hand leadership to node_id."""
        self._request(TRANSFER, struct.pack("<Q", node_id))


def connect_leader(addresses, database="demo", timeout=10.0):
    """A connection to the current leader with database open; raises if none answers."""
    last = None
    for a in addresses:
        try:
            c = Connection(a, timeout)
        except OSError as e:
            last = e
            continue
        try:
            _, leader = c.leader()
            if leader and leader != a:
                c.close()
                c = Connection(leader, timeout)
                if c.leader()[1] != leader:
                    c.close()
                    continue
            elif not leader:
                c.close()
                continue
            c.open(database)
            return c
        except (OSError, DqliteError, ConnectionError) as e:
            last = e
            c.close()
    raise ConnectionError("dqlite: no leader among %s (%s)" % (addresses, last))
