#!/bin/sh
# Debian's redis-server without a config file listens on every address but, with protected mode on, refuses every
# client that is not on loopback. The official image builds protected mode off; here it goes first so that flags
# given after it still win.
set -eu
if [ "$1" = redis-server ]; then
  shift
  exec redis-server --protected-mode no "$@"
fi
exec "$@"
