#!/bin/sh
# The image's entrypoint (after tini): runs `nereid` with the container's arguments. Command lines written
# for Triton's images start with the program's name (`tritonserver --model-store=... `, as KServe's Triton
# runtime passes them), so a leading `tritonserver` or `nereid` word is dropped. `exec` keeps nereid the
# process that tini signals, so SIGTERM drains it instead of killing a shell.
set -e
case "${1:-}" in
  tritonserver | nereid) shift ;;
esac
exec nereid "$@"
