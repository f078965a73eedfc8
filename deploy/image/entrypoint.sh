#!/bin/bash
# The image's entrypoint: runs govcat with the container's arguments; exec replaces this
# shell, so SIGTERM from ECS or docker reaches govcat itself.
#
# GOVCAT_AWS_CONFIG_TOML (optional): the `--source aws` domain map as TOML text, as ECS passes
# a secret (Secrets Manager or SSM). It is written to /var/lib/govcat/aws-config.toml (mode
# 0600; the root filesystem is read-only) and GOVCAT_AWS_CONFIG points at it.
set -euo pipefail
if [ -n "${GOVCAT_AWS_CONFIG_TOML:-}" ]; then
    state="${GOVCAT_STATE_DIR:-/var/lib/govcat}"
    umask 077
    printf '%s\n' "$GOVCAT_AWS_CONFIG_TOML" > "$state/aws-config.toml"
    export GOVCAT_AWS_CONFIG="$state/aws-config.toml"
    unset GOVCAT_AWS_CONFIG_TOML
fi
exec /opt/govcat/bin/govcat "$@"
