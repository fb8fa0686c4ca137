// sqlite-embed for Node: load(db) loads the extension into a better-sqlite3 Database or a
// node:sqlite DatabaseSync; getLoadablePath() is the path of embed.so. A packed package carries
// embed.so in lib/; installed from the repository folder (npm install path/to/bindings/node) it
// uses the repository's, built by `make`.
"use strict";
const fs = require("fs");
const path = require("path");

function find(name) {
  const candidates = [path.join(__dirname, "lib", name), path.join(__dirname, "..", "..", name)];
  return candidates.find((p) => fs.existsSync(p)) || candidates[0];
}

function getLoadablePath() {
  const p = find("embed.so");
  if (!fs.existsSync(p))
    throw new Error(`sqlite-embed: ${p} is missing (in the repository, run make first)`);
  return p;
}

function getPreloadPath() {
  return find("embed_preload.so");
}

// VERSION beside embed.so; a copy of the folder without lib/ (npm 9.0-9.3 installs a folder as a
// copy) has package.json's, which the package test keeps equal to VERSION
const version = fs.existsSync(find("VERSION"))
  ? fs.readFileSync(find("VERSION"), "utf8").trim()
  : require("./package.json").version;

function load(db) {
  if (!db || typeof db.loadExtension !== "function")
    throw new TypeError("sqlite-embed: load(db) takes a better-sqlite3 Database or a node:sqlite DatabaseSync");
  if (typeof db.enableLoadExtension === "function") {
    // node:sqlite: loading must be allowed when the database is opened
    try {
      db.enableLoadExtension(true);
    } catch (e) {
      throw new Error("sqlite-embed: open the node:sqlite database with { allowExtension: true } " +
        `to load extensions (${e.message})`);
    }
    try {
      db.loadExtension(getLoadablePath());
    } finally {
      db.enableLoadExtension(false);
    }
    return;
  }
  db.loadExtension(getLoadablePath());
}

module.exports = { load, getLoadablePath, getPreloadPath, version };
