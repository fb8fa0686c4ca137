"""The npm package (bindings/node) as a user gets it: `npm pack` makes a tarball that carries
embed.so, VERSION and the licences; `npm install` of it into a fresh folder (offline: it has no
dependencies) gives require('sqlite-embed'), whose load(db) loads the extension into a
better-sqlite3 Database (from the npm registry, installed into .deps/ by scripts/deps.sh) with
embed_version() equal to VERSION; node:sqlite where this Node has it; an install from the
repository folder uses the repository's embed.so. Usage: test_node.py EMBED_SO."""
import json
import os
import subprocess
import sys
import tarfile
import tempfile

from check import test, run, main, version, ROOT

EXT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "embed.so"))
TMP = tempfile.mkdtemp(prefix="embed-node-")
PKG = os.path.join(ROOT, "bindings", "node")
DEPS = os.path.join(ROOT, ".deps", "node_modules")
APP = os.path.join(TMP, "app")
ENV = dict(os.environ, SQLITE_EMBED_SO=EXT, NODE_PATH=DEPS, npm_config_update_notifier="false")
NPM = ["npm", "--no-audit", "--no-fund", "--loglevel=error"]


def node(code, cwd=APP, ok=True):
    return run(["node", "-e", code], cwd=cwd, env=ENV, ok=ok)


def node_json(code, cwd=APP):
    return json.loads(node(code, cwd).stdout)


@test
def package_json_says_the_version_file():
    assert json.load(open(os.path.join(PKG, "package.json")))["version"] == version()


@test
def npm_pack_carries_the_library_version_and_licences():
    run(NPM + ["pack", "--pack-destination", TMP, PKG], env=ENV, cwd=TMP)
    tgz = os.path.join(TMP, "sqlite-embed-%s.tgz" % version())
    names = set(tarfile.open(tgz).getnames())
    for f in ("index.js", "index.d.ts", "package.json", "README.md", "lib/embed.so", "lib/embed_preload.so",
              "lib/VERSION", "lib/LICENSE", "lib/LICENSE-MIT", "lib/LICENSE-APACHE"):
        assert "package/" + f in names, (f, sorted(names))
    data = tarfile.open(tgz).extractfile("package/lib/embed.so").read()
    assert data == open(EXT, "rb").read(), "the packed embed.so is not the one built"
    assert not os.path.exists(os.path.join(PKG, "lib")), "postpack left bindings/node/lib behind"


@test
def npm_install_into_a_fresh_folder_and_load_into_better_sqlite3():
    os.makedirs(APP)
    run(NPM + ["install", "--offline", os.path.join(TMP, "sqlite-embed-%s.tgz" % version())], env=ENV, cwd=APP)
    assert os.path.isdir(os.path.join(DEPS, "better-sqlite3")), "better-sqlite3 is not in .deps/ (scripts/deps.sh)"
    got = node_json("""
const Database = require('better-sqlite3');
const e = require('sqlite-embed');
const db = new Database(':memory:');
e.load(db);
console.log(JSON.stringify({
  sql: db.prepare('SELECT embed_version() AS v').get().v, pkg: e.version, path: e.getLoadablePath(),
  add: db.prepare("SELECT embed_json(embed_add('[1, 2]', '[3, 4]')) AS v").get().v,
  bs3: require('better-sqlite3/package.json').version, node: process.versions.node}));""")
    assert got["sql"] == version() and got["pkg"] == version(), got
    assert got["path"] == os.path.join(APP, "node_modules", "sqlite-embed", "lib", "embed.so"), got
    assert got["add"] == "[4,6]", got
    want_major = "12" if int(got["node"].split(".")[0]) >= 20 else "11"
    assert got["bs3"].split(".")[0] == want_major, got
    print("better-sqlite3 %s on Node %s" % (got["bs3"], got["node"]))


@test
def load_refuses_what_is_not_a_database():
    out = node("try { require('sqlite-embed').load({}); } catch (e) { console.log(e.name + ': ' + e.message); }")
    assert out.stdout.strip() == ("TypeError: sqlite-embed: load(db) takes a better-sqlite3 Database or a "
                                  "node:sqlite DatabaseSync"), out.stdout


@test
def node_sqlite_where_this_node_has_it():
    has = node("try { require('node:sqlite'); console.log('yes'); } catch (e) { console.log('no'); }").stdout.strip()
    if has != "yes":
        print("node:sqlite: not in Node %s (it came in 22.5): checked only that it is absent" %
              node("console.log(process.versions.node)").stdout.strip())
        return
    got = node_json("""
const { DatabaseSync } = require('node:sqlite');
const e = require('sqlite-embed');
const db = new DatabaseSync(':memory:', { allowExtension: true });
e.load(db);
let refused = '';
try { e.load(new DatabaseSync(':memory:')); } catch (err) { refused = err.message; }
console.log(JSON.stringify({ v: db.prepare('SELECT embed_version() AS v').get().v, refused }));""")
    assert got["v"] == version(), got
    assert "allowExtension: true" in got["refused"], got


@test
def an_install_from_the_repository_folder_uses_the_repositorys_library():
    linked = os.path.join(TMP, "linked")
    os.makedirs(linked)
    # a link, as npm >= 9.4 makes by default (9.0 to 9.3, Debian 12's 9.2 among them, copy)
    run(NPM + ["install", "--offline", "--install-links=false", PKG], env=ENV, cwd=linked)
    got = node_json("const e = require('sqlite-embed');"
                    "let p; try { p = e.getLoadablePath(); } catch (err) { p = err.message; }"
                    "console.log(JSON.stringify({ p, v: e.version }));", cwd=linked)
    assert got["v"] == version(), got
    root_so = os.path.join(ROOT, "embed.so")
    if os.path.exists(root_so):
        assert got["p"] == root_so, got
    else:
        assert got["p"] == "sqlite-embed: %s is missing (in the repository, run make first)" % \
            os.path.join(ROOT, "bindings", "node", "lib", "embed.so"), got


if __name__ == "__main__":
    rc = main()
    subprocess.run(["rm", "-rf", TMP])
    sys.exit(rc)
