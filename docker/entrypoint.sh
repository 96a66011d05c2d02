#!/bin/sh
# The image's entrypoint: `kafka-inspector` with its arguments, run as whichever user the container was given.
#
# `docker run --user UID:GID` (or a Kubernetes runAsUser) may name a user the image's /etc/passwd does not know.
# Docker then sets HOME=/, and Spark's JVM, which looks its user up, fails: Hadoop cannot log the user in, and Ivy
# puts its cache under the user's home. For such a user this gives the process a name and a writable home
# (nss_wrapper: a passwd and a group file of its own in /tmp, preloaded into every process), then runs the command.
set -eu

uid="$(id -u)"
gid="$(id -g)"
if ! getent passwd "$uid" > /dev/null 2>&1; then
    case "${HOME:-/}" in
        /) HOME="${TMPDIR:-/tmp}/kafka-inspector-home" ;;
    esac
    mkdir -p "$HOME"
    export HOME
    wrapper="$(mktemp -d "${TMPDIR:-/tmp}/nss_wrapper.XXXXXX")"
    cp /etc/passwd "$wrapper/passwd"
    cp /etc/group "$wrapper/group"
    echo "kafka-inspector:x:$uid:$gid:Kafka Inspector:$HOME:/bin/sh" >> "$wrapper/passwd"
    getent group "$gid" > /dev/null 2>&1 || echo "kafka-inspector:x:$gid:" >> "$wrapper/group"
    NSS_WRAPPER_PASSWD="$wrapper/passwd"
    NSS_WRAPPER_GROUP="$wrapper/group"
    LD_PRELOAD="libnss_wrapper.so${LD_PRELOAD:+ $LD_PRELOAD}"
    export NSS_WRAPPER_PASSWD NSS_WRAPPER_GROUP LD_PRELOAD
fi
exec kafka-inspector "$@"
