#!/usr/bin/env bash
# A stand-in for the official Python base image, made from Debian's own packages, for a host that can reach
# Debian's archive but no container registry:
#
#   docker/base-image.sh [TAG]      # default tag: kafka-inspector-base:bookworm-python3.11
#   docker build --build-arg PYTHON_IMAGE=kafka-inspector-base:bookworm-python3.11 -t kafka-inspector .
#
# debootstrap (Debian package `debootstrap`, run as root) installs a minimal bookworm with python3.11, its venv
# module, pip and headers, as `python:3.11-slim-bookworm` has them (Debian's python3 in /usr/bin instead of a
# python.org build in /usr/local; no compiler: the Dockerfile's builder stage installs gcc). `docker import` turns
# the tree into an image. DEBIAN_MIRROR picks the archive (default: deb.debian.org).
set -euo pipefail

tag="${1:-kafka-inspector-base:bookworm-python3.11}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

command -v debootstrap >/dev/null || { echo "base-image.sh: debootstrap is needed (apt-get install debootstrap)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "base-image.sh: debootstrap needs root (run with sudo)" >&2; exit 1; }

root="$(mktemp -d "${TMPDIR:-/tmp}/kafka-inspector-base.XXXXXX")"
trap 'rm -rf "$root"' EXIT

debootstrap --variant=minbase \
    --include=python3.11,python3-venv,python3-pip,python3-dev,ca-certificates \
    bookworm "$root" "$mirror" >"$root.log" 2>&1 \
    || { tail -20 "$root.log" >&2; echo "base-image.sh: debootstrap failed (log: $root.log)" >&2; exit 1; }
rm -f "$root.log"

# What a container image leaves out: the package lists and caches (an image runs apt-get update itself), logs,
# and, as Debian's own slim images do, documentation, manual pages and translations (copyright files kept),
# now and for what the image's builds install later.
cat > "$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
SLIM
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* "$root"/usr/share/lintian/* \
    "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/log/* "$root"/tmp/* "$root"/root/.cache
# The security archive beside the main one, as Debian's own images have it.
printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$mirror" "$mirror" "${mirror%/debian}/debian-security" > "$root/etc/apt/sources.list"

tar --numeric-owner -C "$root" -c . | docker import \
    -c 'ENV LANG=C.UTF-8' \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["python3"]' \
    -m "debootstrap bookworm: python3.11, python3-venv, python3-pip, python3-dev" \
    - "$tag" >/dev/null
echo "$tag"
