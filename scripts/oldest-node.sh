#!/usr/bin/env bash
# Prints the path of a Node binary of the oldest version package.json's `engines.node` admits
# (`>=20.19` means 20.19.0): the Node on PATH when it is that version, else the official binary from
# the npm registry (package node-<platform>-<arch>, the one the `node` package installs),
# fetched once into node_modules/.cache. Run from the repository root.
set -euo pipefail
floor=$(node -p "(/^>=\s*(\d+(?:\.\d+){0,2})$/.exec(require('./package.json').engines.node) ?? [])[1] ?? ''")
if [ -z "$floor" ]; then
  echo "oldest-node: engines.node must read '>=MAJOR[.MINOR[.PATCH]]'" >&2
  exit 1
fi
version=$(node -p "const v = '$floor'.split('.'); while (v.length < 3) v.push('0'); v.join('.')")
if [ "$(node --version)" = "v$version" ]; then
  command -v node
  exit 0
fi
pkg="node-$(node -p 'process.platform')-$(node -p 'process.arch')"
dir="node_modules/.cache/oldest-node/$version"
bin="$dir/node_modules/$pkg/bin/node"
if [ ! -x "$bin" ]; then
  echo "oldest-node: fetching $pkg@$version from the npm registry (once)" >&2
  npm install --silent --no-save --no-package-lock --no-audit --no-fund --prefix "$dir" "$pkg@$version" >&2
fi
echo "$(pwd)/$bin"
