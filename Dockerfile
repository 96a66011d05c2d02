# Kafka Inspector: `kafka-inspector tap | read | report` in one image, both roles of a deployment (the tap on a
# broker host, the report on a Spark host). docs/docker.md has the run lines; docker/test.sh builds and runs it.
#
#   DOCKER_BUILDKIT=1 docker build -t kafka-inspector .
#
# Needs BuildKit (the default builder of Docker 23 and later; Docker 20.10: DOCKER_BUILDKIT=1): the builder stage
# mounts pip's cache and, when given, the build host's pip settings as build secrets (docker/test.sh passes them).
#
# Two stages. `builder` installs the pinned dependencies into /opt/venv (one layer, rebuilt only when
# docker/constraints.txt or the requirements in pyproject.toml change), then compiles the project's wheel (Cython and gcc) and installs
# it there, without the generated C sources and with the compiled modules stripped. The runtime stage is the same
# Python base plus tcpdump, a JRE (Spark) and nss_wrapper, with /opt/venv copied in: no compiler, no build backend,
# no pip cache, no apt lists.

# Python 3.11 on Debian 12 (bookworm): tag and index digest. The digest was taken from published references: if a
# pull reports it unknown, take the current one with `docker buildx imagetools inspect python:3.11.13-slim-bookworm`
# or pass `--build-arg PYTHON_IMAGE=python:3.11.13-slim-bookworm`. Without a registry, docker/base-image.sh makes a
# stand-in from Debian's packages.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm@sha256:cec9aa7aa96eea4fa036e9b82be1e6b325f2e3707f462d885868df51ec0a4b47

# ---------------------------------------------------------------------------------------------------------------
# The requirements pyproject.toml names (the build backend; the dependencies and the `spark` extra), as two files:
# the dependencies' layer below is rebuilt when they change, not on any other edit of pyproject.toml.
FROM ${PYTHON_IMAGE} AS requirements
COPY pyproject.toml /build/
RUN mkdir /build/requirements && python3 -c 'import tomllib; p = tomllib.load(open("/build/pyproject.toml", "rb")); \
open("/build/requirements/build.txt", "w").write("\n".join(p["build-system"]["requires"]) + "\n"); \
open("/build/requirements/runtime.txt", "w").write("\n".join(p["project"]["dependencies"] \
    + p["project"]["optional-dependencies"]["spark"]) + "\n")'

# ---------------------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# The C compiler (and binutils' strip) for the compiled modules: builder stage only.
ARG GCC_VERSION=4:12.2.0-3
ARG LIBC_DEV_VERSION=2.36-9+deb12u14
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends \
        "gcc=${GCC_VERSION}" "libc6-dev=${LIBC_DEV_VERSION}" \
    && apt-get clean && rm -rf /var/lib/apt/lists/*

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PIP_CONSTRAINT=/build/constraints.txt

# The dependencies, before the sources: a change to the code rebuilds only the layers below this one.
# /opt/build: the build tools (the base image's pip, the pinned build backend). /opt/venv: the image's environment,
# without pip, filled by /opt/build's pip with pyproject.toml's dependencies and the `spark` extra. The build host's
# pip settings (an index, a CA bundle) come as the optional secrets `pip_config` (a pip.conf) and `pip_cert` and
# stay out of the image. The build fails if anything installed is not pinned in docker/constraints.txt.
COPY docker/constraints.txt /build/
COPY --from=requirements /build/requirements/ /build/requirements/
RUN --mount=type=secret,id=pip_config --mount=type=secret,id=pip_cert \
    --mount=type=cache,id=kafka-inspector-pip,target=/root/.cache/pip,sharing=locked \
    if [ -s /run/secrets/pip_config ]; then export PIP_CONFIG_FILE=/run/secrets/pip_config; fi \
    && if [ -s /run/secrets/pip_cert ]; then export PIP_CERT=/run/secrets/pip_cert; fi \
    && python3 -m venv /opt/build \
    && /opt/build/bin/pip install --quiet --requirement /build/requirements/build.txt \
    && python3 -m venv --without-pip /opt/venv \
    && /opt/build/bin/pip --python /opt/venv/bin/python install --quiet --requirement /build/requirements/runtime.txt \
    && { /opt/build/bin/pip freeze --all --exclude pip; /opt/build/bin/pip --python /opt/venv/bin/python freeze --all; } \
        | sed 's/[=@ ].*//' | tr 'A-Z_.' 'a-z--' | sort -u > /build/installed \
    && sed -e 's/#.*//' -e '/^ *$/d' -e 's/==.*//' /build/constraints.txt | tr 'A-Z_.' 'a-z--' | sort -u > /build/pinned \
    && unpinned="$(comm -23 /build/installed /build/pinned)" \
    && if [ -n "$unpinned" ]; then echo "installed but not pinned in docker/constraints.txt:" $unpinned >&2; exit 1; fi

# The project: its wheel (compiled with the pinned Cython, offline: the build backend is in /opt/build), installed
# into /opt/venv without its generated C sources, the compiled modules stripped. No CFLAGS: setuptools takes a
# CFLAGS in the environment instead of Python's own flags (-O3 -DNDEBUG -fwrapv), which left the modules
# unoptimised; setup.py adds -g0 after Python's flags itself (no debugging information: the same machine code).
COPY pyproject.toml setup.py /build/src/
COPY contract /build/src/contract
COPY decoders /build/src/decoders
COPY inspector /build/src/inspector
COPY pipelines /build/src/pipelines
RUN /opt/build/bin/pip wheel --quiet --no-build-isolation --no-deps --no-index --wheel-dir /build/wheels /build/src \
    && /opt/build/bin/pip --python /opt/venv/bin/python install --quiet --no-deps --no-index /build/wheels/*.whl \
    && site="$(/opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    && find "$site"/{contract,decoders,inspector,pipelines} -name '*.c' -delete \
    && find "$site"/{contract,decoders,inspector,pipelines} -name '*.so' -exec strip --strip-unneeded {} +

# ---------------------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# Debian 12 package versions from `apt-cache policy` (bookworm, bookworm-security). The JRE runs Spark for
# `report`; tcpdump (with libpcap) captures for `tap`; nss_wrapper gives an arbitrary `--user` a passwd entry (the
# JVM looks its user up). The man directory works around openjdk's postinst on slim images.
ARG TCPDUMP_VERSION=4.99.3-1
ARG LIBPCAP_VERSION=1.10.3-1
ARG JRE_VERSION=17.0.21.1+2-1~deb12u1
ARG NSS_WRAPPER_VERSION=1.1.12-1
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends \
        "tcpdump=${TCPDUMP_VERSION}" \
        "libpcap0.8=${LIBPCAP_VERSION}" \
        "openjdk-17-jre-headless=${JRE_VERSION}" \
        "libnss-wrapper=${NSS_WRAPPER_VERSION}" \
    && apt-get clean && rm -rf /var/lib/apt/lists/*

COPY --from=builder /opt/venv /opt/venv
COPY docker/entrypoint.sh /usr/local/bin/kafka-inspector-entrypoint

# KAFKA_INSPECTOR_CLASS_ARCHIVE=0: no JVM class-data archive (pipelines/class_archive.py). The JVM writes it some
# seconds after the report has returned, when the container is already gone, so it never exists for the next run,
# and recording it made each report slower: 3 runs each, in turn, on one of pcaps/' captures, on a busy 2-core
# host: 63-93 s without, 114-151 s with.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    KAFKA_INSPECTOR_CLASS_ARCHIVE=0

# The installed package, not a source tree, from a folder with no sources in it: it runs, and runs compiled.
WORKDIR /data
RUN cd / && kafka-inspector --help > /dev/null \
    && python -c "import inspector.tap.command, inspector.tap.live_view, pipelines.report" \
    && python -c "import decoders.api as d, inspector.kafka.framing as f, inspector.rows.event_table as e, \
decoders.accel.api_001_fetch as r, inspector.native._body as n; \
assert all(m.__file__.startswith('/opt/venv/') and m.__file__.endswith('.so') for m in (d, f, e, r, n)), 'not compiled'" \
    && ! command -v gcc && ! command -v cc \
    && [ -z "$(find /opt/venv/lib/python3*/site-packages/{contract,decoders,inspector,pipelines} -name '*.c')" ]

# The tap's Prometheus endpoint (`tap --metrics :9464`).
EXPOSE 9464
# Root inside the container for `tap`: tcpdump opens its packet socket as root (CAP_NET_RAW), then becomes the user
# tcpdump (CAP_SETUID, CAP_SETGID), which the tap then signals to stop it (CAP_KILL): Docker's default capabilities.
# `read` and `report` run as any user (docker run --user "$(id -u):$(id -g)", a Kubernetes runAsUser).
ENTRYPOINT ["kafka-inspector-entrypoint"]
CMD ["--help"]
