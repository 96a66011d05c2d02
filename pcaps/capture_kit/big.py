"""The large benchmark captures (not committed): byte-heavy, frame-heavy, and kafkajs's."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pcaps.capture_kit.clients import aio_fetch, cfk_create_topics, cfk_fetch, headers, kp_fetch
from pcaps.capture_kit.infra import HERE, free_port, log, tansu_broker, tcpdump

# --------------------------------------------------------------------------------------------
# big benchmark captures
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def recording(output: Path, topics: dict[str, int] | None = None) -> Iterator[str]:
    """Tansu on a free port (``topics`` created first, not recorded) while tcpdump records it into ``output``;
    yields the bootstrap address. The broker's log, beside ``output``, is removed after."""
    port = free_port()
    output.parent.mkdir(parents=True, exist_ok=True)
    tansu_log = output.with_name(output.name + ".tansu.log")
    try:
        with tansu_broker(port, tansu_log) as bs:
            if topics:
                cfk_create_topics(bs, topics)
            with tcpdump(output, [port]):
                yield bs
    finally:
        tansu_log.unlink(missing_ok=True)


def make_big(size_mb: int, output: Path, max_minutes: float) -> None:
    """Produce+fetch heavy capture of at least ``size_mb`` MB against Tansu (not committed)."""
    import random

    from confluent_kafka import Producer

    target = size_mb * 1024 * 1024
    rnd = random.Random(1234)
    words = [f"w{rnd.randrange(10_000):04d}".encode() for _ in range(4096)]
    with recording(output, {f"bench-{i}": 4 for i in range(4)}) as bs:
        deadline = time.monotonic() + max_minutes * 60
        part = output.with_name(output.name + ".part")
        rnd_round = 0
        while time.monotonic() < deadline and part.exists() and part.stat().st_size < target:
            topic = f"bench-{rnd_round % 4}"
            codec = ("none", "lz4", "zstd", "none", "snappy", "gzip")[rnd_round % 6]
            p = Producer(
                {
                    "bootstrap.servers": bs,
                    "client.id": f"bench-producer-{codec}",
                    "compression.type": codec,
                    "linger.ms": 10,
                    "batch.size": 256 * 1024,
                }
            )
            n = 20000
            for i in range(n):
                value = b" ".join(rnd.choices(words, k=rnd.randrange(20, 200)))
                while True:
                    try:
                        p.produce(topic, key=f"k{i % 97}".encode(), value=value, headers=headers("bench", codec, i))
                        break
                    except BufferError:
                        p.poll(0.1)
                if i % 1000 == 0:
                    p.poll(0)
            left = p.flush(60)
            del p
            log(f"big: round {rnd_round} produced {n - left} records ({codec}) to {topic}")
            # every round is fetched back; alternate the fetching library
            fetch: Callable[[str, str, int, int, float], int] = (cfk_fetch, kp_fetch, aio_fetch)[rnd_round % 3]
            try:
                got = fetch(bs, topic, 4, n * (rnd_round // 4 + 1), 120.0)
                log(f"big: fetched {got} records with {fetch.__name__}")
            except Exception as exc:  # noqa: BLE001
                log(f"big: fetch incomplete: {exc}")
            rnd_round += 1
            log(f"big: capture now {part.stat().st_size / 1e6:.1f} MB")


def make_big_frames(size_mb: int, output: Path, max_minutes: float) -> None:
    """Frame-heavy capture: many small Produce/Fetch requests (one record each) from real clients."""
    import random

    from confluent_kafka import Producer

    target = size_mb * 1024 * 1024
    rnd = random.Random(4321)
    with recording(output, {f"frames-{i}": 2 for i in range(4)}) as bs:
        deadline = time.monotonic() + max_minutes * 60
        part = output.with_name(output.name + ".part")
        rnd_round = 0
        while time.monotonic() < deadline and part.exists() and part.stat().st_size < target:
            topic = f"frames-{rnd_round % 4}"
            p = Producer(
                {
                    "bootstrap.servers": bs,
                    "client.id": "frames-producer",
                    "linger.ms": 0,
                    "batch.num.messages": 1,
                    "max.in.flight.requests.per.connection": 5,
                }
            )
            n = 4000
            for i in range(n):
                value = rnd.randbytes(rnd.randrange(200, 1200))
                while True:
                    try:
                        p.produce(topic, key=f"k{i % 13}".encode(), value=value)
                        break
                    except BufferError:
                        p.poll(0.05)
                p.poll(0)
            left = p.flush(60)
            del p
            log(f"big-frames: round {rnd_round} produced {n - left} records to {topic}")
            try:
                got = kp_fetch(bs, topic, 2, n * (rnd_round // 4 + 1), 120.0, max_partition_fetch_bytes=2048,
                               fetch_max_bytes=4096)
                log(f"big-frames: fetched {got} records")
            except Exception as exc:  # noqa: BLE001
                log(f"big-frames: fetch incomplete: {exc}")
            rnd_round += 1
            log(f"big-frames: capture now {part.stat().st_size / 1e6:.1f} MB")


#: kafkajs's folder (its package.json pins the version; ``npm install`` there on first use).
KAFKAJS = HERE / "kafkajs"


def kafkajs_ready() -> Path:
    """The kafkajs producer script, kafkajs installed beside it from the npm registry when missing."""
    if not (KAFKAJS / "node_modules" / "kafkajs").is_dir():
        log("kafkajs: npm install (pinned in pcaps/kafkajs/package.json)")
        subprocess.run(["npm", "install", "--no-package-lock", "--no-audit", "--no-fund"], cwd=KAFKAJS, check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
    return KAFKAJS / "produce.js"


def make_big_kafkajs(size_mb: int, output: Path, max_minutes: float) -> None:
    """Byte-heavy mixed capture: kafkajs producing ``size_mb`` MB to Tansu in 4 KiB sends, with a Metadata round
    trip before each send (kafkajs's ``metadataMaxAge: 0``), as a Node.js service refreshing metadata often does;
    then a kafkajs consumer group reading it all back from the beginning."""
    script = kafkajs_ready()
    with recording(output) as bs:
        done = subprocess.run(["node", str(script), bs, "kafkajs-bytes", str(size_mb), "4096", "1"],
                              cwd=KAFKAJS, capture_output=True, text=True, timeout=max_minutes * 60)
        if done.returncode:
            raise RuntimeError(f"kafkajs producer failed ({done.returncode}): {done.stderr[-2000:]}")
        log(f"big-kafkajs: produced {done.stdout.strip()}")
        produced = json.loads(done.stdout.strip().splitlines()[-1])
        read = subprocess.run(["node", str(KAFKAJS / "consume.js"), bs, "kafkajs-bytes", "kafkajs-reader",
                               str(produced["sends"])], cwd=KAFKAJS, capture_output=True, text=True,
                              timeout=max_minutes * 60)
        if read.returncode:
            raise RuntimeError(f"kafkajs consumer failed ({read.returncode}): {read.stderr[-2000:]}")
        log(f"big-kafkajs: read back {read.stdout.strip()}")
