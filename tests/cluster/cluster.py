"""Starts and stops a local dqlite cluster for the tests and the demo: Debian's `dqlite-demo`
nodes on 127.0.0.1 ports, each with sqlite-embed registered by embed_preload.so and the same
models loaded from EMBED_MODELS. Every process it starts it stops, by PID."""
import os
import shutil
import signal
import socket
import subprocess
import time

from dqlite_client import DqliteError, connect_leader

DEMO = shutil.which("dqlite-demo")
DATABASE = "demo"   # the database dqlite-demo's nodes serve


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, workdir, preload, extension, models, size=3):
        self.workdir, self.size = workdir, size
        self.env = dict(os.environ, LD_PRELOAD=preload, EMBED_EXTENSION=extension, EMBED_MODELS=models)
        self.nodes = [{"db": "127.0.0.1:%d" % free_port(), "api": "127.0.0.1:%d" % free_port(),
                       "dir": os.path.join(workdir, "node%d" % i), "proc": None} for i in range(size)]

    @property
    def addresses(self):
        return [n["db"] for n in self.nodes]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self, timeout=30):
        for i in range(self.size):
            self.start_node(i)
            if i == 0:
                self.connect(timeout)   # the first node leads before the others join it
        self.wait_voters(timeout)
        return self

    def start_node(self, i, models=None):
        """Starts node i (again, after a kill: it keeps its data folder and rejoins)."""
        n = self.nodes[i]
        os.makedirs(n["dir"], exist_ok=True)
        args = [DEMO, "--api", n["api"], "--db", n["db"], "--dir", n["dir"]]
        if i > 0:
            args += ["--join", self.nodes[0]["db"]]
        env = dict(self.env, EMBED_MODELS=models) if models is not None else self.env
        n["log"] = open(os.path.join(self.workdir, "node%d.log" % i), "ab")
        n["proc"] = subprocess.Popen(args, env=env, stdout=n["log"], stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def kill(self, i, sig=signal.SIGKILL):
        p = self.nodes[i]["proc"]
        if p and p.poll() is None:
            p.send_signal(sig)
            p.wait(timeout=30)
        self.nodes[i]["proc"] = None
        if self.nodes[i].get("log"):
            self.nodes[i]["log"].close()

    def running(self, i):
        p = self.nodes[i]["proc"]
        return p is not None and p.poll() is None

    def stop(self):
        for i in range(self.size):
            p = self.nodes[i]["proc"]
            if p and p.poll() is None:
                p.terminate()
        for i in range(self.size):
            p = self.nodes[i]["proc"]
            if p:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            self.kill(i)

    def log(self, i):
        with open(os.path.join(self.workdir, "node%d.log" % i), "rb") as f:
            return f.read().decode(errors="replace")

    def connect(self, timeout=30):
        """A connection to the leader, waiting up to timeout seconds for one to be elected."""
        deadline = time.monotonic() + timeout
        while True:
            live = [n["db"] for i, n in enumerate(self.nodes) if self.running(i)]
            try:
                return connect_leader(live, DATABASE, timeout=5)
            except (ConnectionError, OSError, DqliteError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def leader(self, timeout=30):
        c = self.connect(timeout)
        try:
            return self.addresses.index(c.address)
        finally:
            c.close()

    def wait_voters(self, timeout=30):
        """Until every node is a voter (dqlite's app promotes joining nodes shortly after)."""
        deadline = time.monotonic() + timeout
        while True:
            c = self.connect(timeout)
            try:
                roles = {a: r for _, a, r in c.nodes()}
            finally:
                c.close()
            if all(roles.get(a) == 0 for a in self.addresses):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("dqlite: not every node became a voter: %s" % roles)
            time.sleep(0.1)

    def make_leader(self, i, timeout=30):
        """Hands leadership to node i and returns a connection to it."""
        deadline = time.monotonic() + timeout
        while True:
            c = self.connect(timeout)
            if c.address == self.nodes[i]["db"]:
                return c
            try:
                ids = {a: nid for nid, a, _ in c.nodes()}
                c.transfer(ids[self.nodes[i]["db"]])
            except (DqliteError, ConnectionError, OSError):
                pass
            c.close()
            if time.monotonic() > deadline:
                raise TimeoutError("dqlite: node %d did not become the leader" % i)
            time.sleep(0.1)

