#!/usr/bin/env bash
# `make docker-test`: build the image from a clean export of the current commit, as a new user would get it, and
# run both roles in it: `read` (as an arbitrary user), `report` (as an arbitrary user), `tap -i lo` (with Docker's
# default capabilities, and without NET_RAW), `tap --metrics` and `report --follow` (each when the image has it).
# It prints the build time and the image size (docs/docker.md quotes them) and exits non-zero on the first failure.
#
# Needs a running Docker engine and a client with BuildKit (buildx, or DOCKER_BUILDKIT=1 on Docker 20.10), git, and
# python3 with pip for the host's pip settings. The base image: $PYTHON_IMAGE if set, else the Dockerfile's
# python:3.11 when it is present or can be pulled, else the stand-in docker/base-image.sh makes (made once, kept).
# The host's pip settings (index URLs, trusted hosts, CA bundle) reach the build as secrets: pip inside the build
# trusts what the host's pip trusts. A second run reuses Docker's layer cache (the dependencies' layer comes before
# the sources'): only what changed since is rebuilt.
#
#   docker/test.sh            # or: make docker-test
#   KEEP=1 docker/test.sh     # keep the work folder (the outputs of every step) and say where it is
set -euo pipefail

cd "$(dirname "$0")/.."
tag="${IMAGE:-kafka-inspector:test}"
stand_in="kafka-inspector-base:bookworm-python3.11"
uid_gid="4321:4321"  # a user the image does not know: what `--user` / runAsUser give in practice
name="kafka-inspector-test-$$"
pcap_a="tansu-kafka-python-0.10-removed-versions.pcap"  # a client speaking versions Kafka 4.0 removed
pcap_b="mock-cluster-apiversions-v5-misrouted.pcap"

say() { printf 'docker-test: %s\n' "$*"; }
fail() { printf 'docker-test: FAILED: %s\n' "$*" >&2; exit 1; }
exec 3>&2  # the script's stderr, for what a check run with its output hidden (wait_for) must still say

# --- the tools ---------------------------------------------------------------------------------------------------
# A client that builds with BuildKit: `docker buildx`, or Docker 20.10's own with DOCKER_BUILDKIT=1. Several
# `docker` on PATH (a newer CLI without buildx before the distribution's) are each tried.
build=()
for client in ${DOCKER:-$(type -ap docker | awk '!seen[$0]++')}; do
    if "$client" buildx version > /dev/null 2>&1; then
        build=("$client" buildx build --load); docker="$client"; break
    elif DOCKER_BUILDKIT=1 "$client" build --help 2> /dev/null | grep -q -- '--secret'; then
        build=(env DOCKER_BUILDKIT=1 "$client" build); docker="$client"; break
    fi
done
[ ${#build[@]} -gt 0 ] || fail "no Docker client with BuildKit (install docker-buildx, or use Docker 20.10 with DOCKER_BUILDKIT=1)"
"$docker" info > /dev/null 2>&1 || fail "no Docker engine answers (start it: dockerd, or service docker start)"
command -v git > /dev/null || fail "git is needed (the build context is \`git archive HEAD\`)"

work="$(mktemp -d "${TMPDIR:-/tmp}/kafka-inspector-docker-test.XXXXXX")"
started=()
cleanup() {
    local status=$?
    for container in "${started[@]}"; do "$docker" rm -f "$container" > /dev/null 2>&1 || true; done
    if [ "${KEEP:-0}" = 1 ]; then
        say "work folder kept: $work"
    else
        # The containers' files belong to their users: removed from a container, as root.
        [ -d "$work/data" ] && "$docker" run --rm -v "$work:/work" --entrypoint rm "$tag" -rf /work/data > /dev/null 2>&1
        rm -rf "$work"
    fi
    exit $status
}
trap cleanup EXIT
trap 'printf "docker-test: FAILED at line %s: %s\n" "$LINENO" "$BASH_COMMAND" >&2' ERR
trap 'exit 130' INT TERM

# --- the build context: the current commit, nothing else -----------------------------------------------------------
mkdir "$work/context"
git archive HEAD | tar -x -C "$work/context"
[ -z "$(git status --porcelain --untracked-files=no)" ] || say "note: uncommitted changes are not in the image (it is built from HEAD)"
commit="$(git rev-parse --short HEAD)"

# --- the base image ----------------------------------------------------------------------------------------------
base_args=()
if [ -n "${PYTHON_IMAGE:-}" ]; then
    base="$PYTHON_IMAGE"
else
    default_base="$(sed -n 's/^ARG PYTHON_IMAGE=//p' Dockerfile)"
    if "$docker" image inspect "$default_base" > /dev/null 2>&1 \
            || timeout 60 "$docker" pull --quiet "$default_base" > /dev/null 2>&1; then
        base="$default_base"
    else
        base="$stand_in"
        if ! "$docker" image inspect "$stand_in" > /dev/null 2>&1; then
            say "no registry: making the stand-in base image $stand_in from Debian's packages (docker/base-image.sh)"
            docker/base-image.sh "$stand_in" > /dev/null
        fi
    fi
fi
base_args=(--build-arg "PYTHON_IMAGE=$base")

# --- the host's pip settings, as build secrets ---------------------------------------------------------------------
# pip's own environment variable first, then its configuration files; only what a build can use (http(s) URLs,
# not the host's local folders).
pip_setting() {
    local variable="PIP_$(printf '%s' "$1" | tr 'a-z-' 'A-Z_')"
    if [ -n "${!variable:-}" ]; then printf '%s\n' "${!variable}"; return; fi
    python3 -m pip config get "global.$1" 2> /dev/null || python3 -m pip config get "install.$1" 2> /dev/null || true
}
urls() { tr ' ' '\n' | { grep -E '^https?://' || true; } | tr '\n' ' ' | sed 's/ $//'; }
secrets=()
if python3 -m pip --version > /dev/null 2>&1; then
    index="$(pip_setting index-url | urls)"
    extra="$(pip_setting extra-index-url | urls)"
    trusted="$(pip_setting trusted-host)"
    cert="$(pip_setting cert)"
    cert="${cert:-${REQUESTS_CA_BUNDLE:-}}"
    (umask 077; {
        echo "[global]"
        [ -z "$index" ] || echo "index-url = $index"
        [ -z "$extra" ] || echo "extra-index-url = $extra"
        [ -z "$trusted" ] || echo "trusted-host = $trusted"
    } > "$work/pip.conf")
    secrets+=(--secret "id=pip_config,src=$work/pip.conf")
    if [ -n "$cert" ] && [ -f "$cert" ]; then secrets+=(--secret "id=pip_cert,src=$cert"); fi
fi

# --- build -------------------------------------------------------------------------------------------------------
say "building $tag from $commit on $base (client: $docker)"
start=$(date +%s.%N)
"${build[@]}" --progress=plain "${base_args[@]}" "${secrets[@]}" -t "$tag" "$work/context" > "$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log" >&2; fail "docker build (the log above)"; }
build_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
cached=$(grep -c '^#[0-9]* CACHED' "$work/build.log" || true)
size=$("$docker" image inspect -f '{{.Size}}' "$tag")
say "built in ${build_s} s (${cached} steps from the cache); image $(awk -v s="$size" 'BEGIN { printf "%.2f GB", s / 1e9 }') ($size bytes)"

run() { "$docker" run --rm "$@"; }
in_image() { run --entrypoint python -v "$work/data:/data" "$tag" -c "$1"; }
rows() {  # rows of the events under /data/$1 (as `report` reads them)
    in_image "import pyarrow.dataset as d; print(d.dataset('/data/$1/events', format='parquet').count_rows())"
}
logged() {  # logged NAME COMMAND...: run COMMAND, its output to $work/NAME.log, shown if it fails
    "${@:2}" > "$work/$1.log" 2>&1 || { tail -20 "$work/$1.log" >&2; return 1; }
}
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds
    local seconds="$1" what="$2"; shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" > /dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || fail "waited $seconds s for $what"
        sleep 1
    done
}
tcpdump_running() { "$docker" top "$1" 2> /dev/null | grep -q tcpdump; }
start_tap() {  # start_tap CONTAINER OUTPUT [TAP OPTIONS...]: a tap on lo, in its container's own network namespace
    local container="$1" output="$2"; shift 2
    "$docker" run -d --name "$container" "${hardened[@]}" -v "$work/data:/data" "$tag" \
        tap -i lo --output "$output" --quiet "$@" > /dev/null
    started+=("$container")
    wait_for 60 "tcpdump in $container" tcpdump_running "$container"
    sleep 2  # tcpdump opens the interface after it starts
}
stop() {  # stop CONTAINER: SIGTERM, as docker stop and Kubernetes send it; it must exit 0
    "$docker" stop -t 60 "$1" > /dev/null
    local status
    status=$("$docker" inspect -f '{{.State.ExitCode}}' "$1")
    [ "$status" = 0 ] || { "$docker" logs "$1" 2>&1 | tail -10 >&2; fail "$1 exited $status after SIGTERM"; }
}
replay() {  # replay CONTAINER PCAP...: send the captures' packets onto lo in CONTAINER's network namespace
    # Their destination MAC is made one lo does not own, so the container's own stack drops them (no RST answers
    # to connections it never opened) while tcpdump, on the interface, sees every one.
    local container="$1"; shift
    run --net "container:$container" -v "$work/context/pcaps:/pcaps:ro" --entrypoint python "$tag" -c "
import sys
from scapy.all import Ether, rdpcap, sendp
for path in sys.argv[1:]:
    packets = rdpcap(path)
    for packet in packets:
        packet[Ether].dst = '02:00:00:00:00:01'
    sendp(packets, iface='lo', verbose=False)
" "${@/#//pcaps/}"
    sleep 3  # tcpdump hands the last packets over within a second (no --immediate-mode)
}
mkdir -m 1777 "$work/data"
# What docs/kubernetes/ asks of the runtime: a read-only root file system with a /tmp (exec: Spark loads native
# libraries it unpacks there, which Docker's default noexec tmpfs refuses); the tap with only the
# capabilities it needs (tcpdump opens its socket as root, then becomes the user tcpdump; the tap signals it);
# read and report as a user the image does not know, with no capability at all.
hardened=(--security-opt no-new-privileges --read-only --tmpfs /tmp:exec --cap-drop ALL --cap-add NET_RAW --cap-add SETUID --cap-add SETGID --cap-add KILL)
as_user=(--security-opt no-new-privileges --read-only --tmpfs /tmp:exec --cap-drop ALL --user "$uid_gid")

# --- read ----------------------------------------------------------------------------------------------------------
start=$SECONDS
logged read run "${as_user[@]}" -v "$work/context/pcaps:/pcaps:ro" -v "$work/data:/data" "$tag" \
    read "/pcaps/$pcap_a" "/pcaps/$pcap_b" --output /data/read --quiet || fail "read as uid $uid_gid"
read_rows=$(rows read)
[ "$read_rows" -gt 0 ] || fail "read wrote no events"
say "read: 2 captures -> $read_rows events, as uid $uid_gid ($((SECONDS - start)) s)"

# --- report --------------------------------------------------------------------------------------------------------
start=$SECONDS
logged report run "${as_user[@]}" -v "$work/data:/data" "$tag" report /data/read --output /data/report \
    || fail "report as uid $uid_gid"
for file in findings.parquet admin_audit.parquet report.html; do
    [ -e "$work/data/report/$file" ] || fail "report wrote no $file"
done
findings=$(in_image "import pyarrow.parquet as p; print(p.read_table('/data/report/findings.parquet').num_rows)")
[ "$findings" -gt 0 ] || fail "report found nothing in captures made to be found"
say "report: $findings findings and report.html, as uid $uid_gid ($((SECONDS - start)) s)"

# --- tap -i lo -----------------------------------------------------------------------------------------------------
start=$SECONDS
start_tap "$name-tap" /data/tap --rotate 2s
replay "$name-tap" "$pcap_a" "$pcap_b"
stop "$name-tap"
tap_rows=$(rows tap)
drops=$(in_image "import json; print(json.load(open('/data/tap/summary.json'))['tap']['kernel_dropped'])")
[ "$tap_rows" = "$read_rows" ] || fail "tap decoded $tap_rows events from the replayed captures, read $read_rows"
say "tap -i lo: $tap_rows events (as read), $drops kernel drops, exit 0 on SIGTERM ($((SECONDS - start)) s)"

# --- tap without NET_RAW -------------------------------------------------------------------------------------------
# Docker grants NET_RAW by default: this is what `--cap-drop NET_RAW` (or a runtime without it) gives.
status=0
err=$(run --cap-drop NET_RAW -v "$work/data:/data" "$tag" tap -i lo --output /data/tap-no-raw --duration 5 --quiet 2>&1) \
    || status=$?
[ "$status" = 3 ] || fail "tap without NET_RAW exited $status (expected 3): $err"
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "tap without NET_RAW wrote more than one line: $err"
say "tap --cap-drop NET_RAW: exit 3, \"$err\""

# --- tap --metrics (when the image has it) -------------------------------------------------------------------------
if run "$tag" tap --help | grep -q -- '--metrics'; then
    start_tap "$name-metrics" /data/tap-metrics --metrics :9464
    replay "$name-metrics" "$pcap_a"
    scrape="$(run --net "container:$name-metrics" --entrypoint python "$tag" -c \
        "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9464/metrics').read().decode())")"
    printf '%s\n' "$scrape" | grep -q '^kafka_inspector_requests_total{' \
        || fail "tap --metrics served no kafka_inspector_requests_total"
    stop "$name-metrics"
    say "tap --metrics :9464: /metrics serves $(printf '%s\n' "$scrape" | grep -c '^kafka_inspector_') kafka_inspector_ samples"
else
    say "tap --metrics: SKIPPED (not in this commit's tap)"
fi

# --- report --follow over two taps' growing output (issue 35, item 1) ------------------------------------------------
# FOLLOW STEP. Written against `kafka-inspector report EVENTS_DIR... --output DIR --follow [--trigger 10s] [--quiet]`
# (writes DIR/findings.jsonl); it runs as soon as this commit's `report --help` offers --follow. Both roles at once,
# as docs/docker.md and docs/kubernetes/ deploy them: two taps (two broker hosts) write rotated parts under
# /data/taps/, one report follows '/data/taps/*/'; each tap's finding must be written within 60 s.
if run "$tag" report --help | grep -q -- '--follow'; then
    mkdir -m 1777 "$work/data/taps"
    start_tap "$name-tap-a" /data/taps/a --rotate 5s
    start_tap "$name-tap-b" /data/taps/b --rotate 5s
    "$docker" run -d --name "$name-follow" "${as_user[@]}" -v "$work/data:/data" "$tag" \
        report '/data/taps/*/' --output /data/follow --follow --trigger 5s --quiet > /dev/null
    started+=("$name-follow")
    # Measured from the replay once the stream runs (Spark's start in a fresh container is not the latency asked
    # for): Spark writes its checkpoint's metadata as the query starts.
    follow_started() { [ -f "$work/data/follow/_checkpoint/spark/metadata" ]; }
    wait_for 300 "report --follow to start (docker logs $name-follow)" follow_started
    replay "$name-tap-a" "$pcap_a"
    replay "$name-tap-b" "$pcap_b"
    start=$SECONDS
    found() {
        grep -q "$1" "$work/data/follow/findings.jsonl" && return 0
        "$docker" inspect -f '{{.State.Running}}' "$name-follow" | grep -q true \
            || { "$docker" logs --tail 20 "$name-follow" >&3 2>&3; fail "report --follow stopped" 2>&3; }
        return 1
    }
    wait_for 60 "report --follow's finding from tap a" found old_message_format
    wait_for $((60 - (SECONDS - start))) "report --follow's finding from tap b" found misrouted_api_versions
    first=$((SECONDS - start))
    stop "$name-follow"
    stop "$name-tap-a"
    stop "$name-tap-b"
    say "report --follow '/data/taps/*/': both taps' findings ${first} s after the replay, $(wc -l < "$work/data/follow/findings.jsonl") lines in findings.jsonl, exit 0 on SIGTERM"
else
    say "report --follow: SKIPPED (not in this commit's report; the step runs once it is)"
fi

# --- the image's pins against the test suite's environment -----------------------------------------------------------
if [ -x .venv/bin/pip ]; then
    differ="$(.venv/bin/pip freeze --all 2> /dev/null | tr 'A-Z_.' 'a-z--' | sort \
        | comm -13 - <(sed -e 's/#.*//' -e '/^ *$/d' docker/constraints.txt | tr 'A-Z_.' 'a-z--' | sort) || true)"
    if [ -z "$differ" ]; then
        say "pins: docker/constraints.txt = the test suite's versions"
    else
        say "WARNING: pinned in docker/constraints.txt but not what the tests run with:" $differ
    fi
fi
say "OK: $tag ($commit) built in ${build_s} s, $(awk -v s="$size" 'BEGIN { printf "%.2f GB", s / 1e9 }')"
