// npm pack / npm publish: copies the built embed.so and embed_preload.so (SQLITE_EMBED_SO, an
// embed.so path with embed_preload.so beside it, or the repository's ./embed.so from `make`), the
// VERSION file and the licences into lib/, and refuses a package.json version other than VERSION.
"use strict";
const fs = require("fs");
const path = require("path");

const root = path.resolve(__dirname, "..", "..");
const version = fs.readFileSync(path.join(root, "VERSION"), "utf8").trim();
const pkg = require("./package.json");
if (pkg.version !== version) {
  console.error(`sqlite-embed: package.json says ${pkg.version}, VERSION says ${version}: make them equal`);
  process.exit(1);
}
const so = path.resolve(process.env.SQLITE_EMBED_SO || path.join(root, "embed.so"));
const lib = path.join(__dirname, "lib");
fs.mkdirSync(lib, { recursive: true });
for (const file of [so, path.join(path.dirname(so), "embed_preload.so")]) {
  if (!fs.existsSync(file)) {
    console.error(`sqlite-embed: ${file} is missing: run make in ${root} first`);
    process.exit(1);
  }
  fs.copyFileSync(file, path.join(lib, path.basename(file)));
}
for (const name of ["VERSION", "LICENSE", "LICENSE-MIT", "LICENSE-APACHE"])
  fs.copyFileSync(path.join(root, name), path.join(lib, name));
