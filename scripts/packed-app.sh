# shellcheck shell=bash
# Sourced by the scripts that test the package as a user gets it (test-node, test-runtimes,
# test-browser, test-package): the built dist/ is packed with `npm pack` and the tarball is
# installed into a throwaway app, so `import 'autocontext'` resolves to the installed package
# and never to the sources. Run from the repository root.

# Exits with a message naming the calling script when dist/ is not built.
require_dist() { # <script name>
  if [ ! -f dist/entrypoints/node.js ] || [ ! -f dist/wasm/autocontext_bg.wasm ]; then
    echo "$1: dist/ is incomplete; run 'npm run build' first" >&2
    exit 1
  fi
}

# Sets `work` to a new directory (removed on exit) and installs the packed package into
# "$work/app", an ES-module app named <app name>.
install_packed_app() { # <app name>
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  local tarball
  tarball=$(npm pack --silent --pack-destination "$work" 2>/dev/null | tail -n 1)
  mkdir -p "$work/app"
  printf '{ "name": "%s", "private": true, "type": "module" }\n' "$1" > "$work/app/package.json"
  (cd "$work/app" && npm install --silent --no-audit --no-fund --no-package-lock "$work/$tarball")
}
