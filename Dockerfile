# Kafka Inspector: `kafka-inspector read | tap | report` in one image.
#
#   docker build -t kafka-inspector .
#   docker run --rm --net=host --cap-add NET_RAW --cap-add NET_ADMIN -v "$PWD/out:/out" \
#       kafka-inspector tap -i eth0 --port 9092 --output /out --quiet
#
# Two stages: `builder` builds the project's wheel (compiling the hot path with Cython and gcc) and
# installs it with its pinned dependencies into /opt/venv; the final stage copies that venv onto the same
# Python base plus tcpdump and a JRE (Spark). No compiler, no pip cache, no build backend in the final
# image. docs/docker.md explains the pins and how to refresh them.

# Python 3.11 on Debian 12 (bookworm): tag and index digest. The digest was taken from published
# references (no registry could be reached where this file was written): if a pull reports it unknown,
# take the current one with `docker buildx imagetools inspect python:3.11.13-slim-bookworm` or pass
# `--build-arg PYTHON_IMAGE=python:3.11.13-slim-bookworm`.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm@sha256:cec9aa7aa96eea4fa036e9b82be1e6b325f2e3707f462d885868df51ec0a4b47

# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CONSTRAINT=/tmp/constraints.txt

# A C compiler for the compiled modules (decoders/accel, the */native twins and the hot path); builder stage only.
ARG GCC_VERSION=4:12.2.0-3
ARG LIBC_DEV_VERSION=2.36-9+deb12u14
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends \
        "gcc=${GCC_VERSION}" "libc6-dev=${LIBC_DEV_VERSION}" \
    && rm -rf /var/lib/apt/lists/*

# Every Python package of the image, pinned (the versions the test suite runs with). PIP_CONSTRAINT
# also applies to the isolated build environment of the wheel (setuptools, wheel).
RUN printf '%s\n' \
        'setuptools==80.9.0' \
        'wheel==0.45.1' \
        'Cython==3.1.4' \
        'dpkt==1.9.8' \
        'scapy==2.8.0' \
        'pyarrow==26.0.1' \
        'rich==15.0.0' \
        'markdown-it-py==4.3.0' \
        'mdurl==0.1.2' \
        'pygments==2.21.0' \
        'cramjam==2.14.0' \
        'cryptography==50.0.2' \
        'cffi==2.1.1' \
        'pycparser==3.12' \
        'pyspark==4.3.0' \
        'py4j==0.10.9.9' \
        > /tmp/constraints.txt

WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY inspector ./inspector
COPY decoders ./decoders
COPY pipelines ./pipelines
COPY contract ./contract

# The wheel, then a venv with no pip or setuptools of its own, filled by the base image's pip. The build
# fails if any installed distribution is not pinned above (as after a new dependency in pyproject.toml).
RUN pip wheel --no-deps --wheel-dir /wheels . \
    && python -m venv --without-pip /opt/venv \
    && pip --python /opt/venv/bin/python install "$(ls /wheels/kafka_inspector-*.whl)[spark]" \
    && pip --python /opt/venv/bin/python freeze --all | grep -v '^kafka-inspector' | sed 's/[=@ ].*//' \
        | tr 'A-Z_.' 'a-z--' | sort > /tmp/installed \
    && sed 's/==.*//' /tmp/constraints.txt | tr 'A-Z_.' 'a-z--' | sort > /tmp/pinned \
    && unpinned="$(comm -23 /tmp/installed /tmp/pinned)" \
    && if [ -n "$unpinned" ]; then echo "not pinned in the Dockerfile: $unpinned" >&2; exit 1; fi \
    && /opt/venv/bin/kafka-inspector --help > /dev/null \
    && /opt/venv/bin/python -c "import inspector.tap, inspector.live_view, pipelines.report" \
    && /opt/venv/bin/python -c "import decoders.api as d, inspector.framing as f, inspector.events as e; \
assert all(m.__file__.endswith('.so') for m in (d, f, e)) and d.accelerated(), 'compiled modules missing'"

# ---------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

# Debian 12 package versions from `apt-cache policy` (bookworm, bookworm-security). The JRE runs Spark
# for `report`; tcpdump (with libpcap) captures for `tap`. The man directory works around openjdk's
# postinst on slim images.
ARG TCPDUMP_VERSION=4.99.3-1
ARG LIBPCAP_VERSION=1.10.3-1
ARG JRE_VERSION=17.0.21.1+2-1~deb12u1

RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends \
        "tcpdump=${TCPDUMP_VERSION}" \
        "libpcap0.8=${LIBPCAP_VERSION}" \
        "openjdk-17-jre-headless=${JRE_VERSION}" \
    && rm -rf /var/lib/apt/lists/*

COPY --from=builder /opt/venv /opt/venv

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /out
# Root inside the container: `tap` needs CAP_NET_RAW/CAP_NET_ADMIN for tcpdump (granted with
# --cap-add); `read` and `report` also run as any other user (docker run --user "$(id -u):$(id -g)").
ENTRYPOINT ["kafka-inspector"]
CMD ["--help"]
