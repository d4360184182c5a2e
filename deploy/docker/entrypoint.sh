#!/bin/sh
# The image's entry point: migrate and create the first admin (`crater init`), then serve the console and the
# API on $PORT (`reflex run --env prod`, which becomes PID 1 and stops its worker on SIGTERM).
set -eu
crater init
exec reflex run --env prod "$@"
