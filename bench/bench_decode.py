"""Decode throughput of ``decoders`` against kafka-python's and kio's decoders, on the same bytes.

Cases (frames built with kafka-python's encoders; records with its DefaultRecordBatchBuilder):

* JoinGroupRequest v7 (two protocols carrying ConsumerProtocolSubscription v1 metadata),
* JoinGroupRequest v7 as consumers send it (three assignors, each the same ConsumerProtocolSubscription v1: three
  topics, two owned partitions), and the same with garbage in the metadata (a partition count that cannot be:
  the decode stops deep in it; it must cost no more than twice the valid one, issue 33),
* MetadataResponse v12 (3 brokers, 50 topics x 10 partitions, each topic with its topic id),
* FetchResponse v12 (one partition with 16 KiB of records),
* ApiVersionsResponse v3 (60 api keys).

Each decoder parses header + body of the frame (no length prefix): ours with ``decode_request`` /
``decode_response`` (default settings, so JoinGroup also decodes the embedded subscriptions; the
"raw" column is ours with ``postprocess=False``),
kafka-python with ``<Message>.decode(frame, version=v, header=True)``, kio with
``entity_reader(header)`` then ``entity_reader(body)``. Records fields stay undecoded bytes in all
three. Rates are the best of ``--repeat`` timeit runs of at least ``--min-time`` seconds each.

Usage::

    python bench/bench_decode.py                  # the table
    python bench/bench_decode.py --profile metadata  # cProfile of our decoder on one case
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka.protocol.consumer.fetch import FetchResponse  # noqa: E402
from kafka.protocol.consumer.group import JoinGroupRequest  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription  # noqa: E402
from kafka.protocol.metadata import ApiVersionsResponse, MetadataResponse  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kio.index import load_request_schema, load_response_schema  # noqa: E402
from kio.serial import entity_reader  # noqa: E402

from decoders import decode_request, decode_response  # noqa: E402


@dataclass
class Case:
    name: str
    kind: str  # "request" | "response"
    api_key: int
    version: int
    frame: bytes
    kp_class: Any


def join_group_request() -> Case:
    tp = ConsumerProtocolSubscription.TopicPartition
    sub = ConsumerProtocolSubscription(
        version=1, topics=[f"orders-{i}" for i in range(5)], user_data=b"",
        owned_partitions=[tp(topic=f"orders-{i}", partitions=[0, 1, 2]) for i in range(5)]).encode()
    proto = JoinGroupRequest.JoinGroupRequestProtocol
    msg = JoinGroupRequest(version=7, group_id="checkout-service", session_timeout_ms=45000,
                           rebalance_timeout_ms=300000, member_id="consumer-1-6f0c7a7e-2b1d-4d0e-9a57-6c1f3b9d2e11",
                           group_instance_id=None, protocol_type="consumer",
                           protocols=[proto(name="cooperative-sticky", metadata=sub),
                                      proto(name="range", metadata=sub)])
    msg.with_header(correlation_id=17, client_id="consumer-checkout-1")
    return Case("JoinGroupRequest v7", "request", 11, 7, bytes(msg.encode(header=True)), JoinGroupRequest)


def _consumer_join_group(metadata: bytes, name: str) -> Case:
    proto = JoinGroupRequest.JoinGroupRequestProtocol
    msg = JoinGroupRequest(version=7, group_id="checkout-service", session_timeout_ms=45000,
                           rebalance_timeout_ms=300000, member_id="consumer-1-6f0c7a7e-2b1d-4d0e-9a57-6c1f3b9d2e11",
                           group_instance_id=None, protocol_type="consumer",
                           protocols=[proto(name=n, metadata=metadata)
                                      for n in ("cooperative-sticky", "range", "roundrobin")])
    msg.with_header(correlation_id=17, client_id="consumer-checkout-1")
    return Case(name, "request", 11, 7, bytes(msg.encode(header=True)), JoinGroupRequest)


def _consumer_subscription() -> bytes:
    tp = ConsumerProtocolSubscription.TopicPartition
    return bytes(ConsumerProtocolSubscription(
        version=1, topics=["orders", "payments", "refunds"], user_data=b"",
        owned_partitions=[tp(topic="orders", partitions=[0, 1]), tp(topic="payments", partitions=[0, 1])]).encode())


def join_group_consumers() -> Case:
    return _consumer_join_group(_consumer_subscription(), "JoinGroupRequest v7 (3 assignors)")


def join_group_garbage() -> Case:
    sub = _consumer_subscription()
    garbage = sub[:-14] + b"\x7f\xff\xff\xff" + sub[-10:]  # four bytes of the owned partitions overwritten
    return _consumer_join_group(garbage, "JoinGroupRequest v7 (garbage)")


def metadata_response() -> Case:
    cls = MetadataResponse
    broker = cls.MetadataResponseBroker
    topic = cls.MetadataResponseTopic
    part = topic.MetadataResponsePartition
    topics = [topic(error_code=0, name=f"topic-{t:03d}", topic_id=uuid.UUID(int=(0x5F3E << 112) + t * 7919 + 1),
                    is_internal=False,
                    partitions=[part(error_code=0, partition_index=p, leader_id=p % 3, leader_epoch=5,
                                     replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2], offline_replicas=[])
                                for p in range(10)],
                    authorized_operations=None)
              for t in range(50)]
    msg = cls(version=12, throttle_time_ms=0,
              brokers=[broker(node_id=i, host=f"broker-{i}.kafka.svc", port=9092, rack=f"rack-{i}") for i in range(3)],
              cluster_id="q7iVpcvRQvWwWfFDg6LsXw", controller_id=1, topics=topics)
    msg.with_header(correlation_id=18)
    return Case("MetadataResponse v12 (50x10)", "response", 3, 12, bytes(msg.encode(header=True)), cls)


def record_batch(size: int = 16 * 1024) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=size * 2)
    offset = 0
    while True:
        key, value = b"key-%06d" % offset, (b"event-%06d;" % offset) * 20
        ts = 1_700_000_000_000 + offset
        if builder.size() >= size:  # bytes written so far, batch header space included
            break
        builder.append(offset, ts, key, value, [])
        offset += 1
    return bytes(builder.build())


def fetch_response() -> Case:
    cls = FetchResponse
    topic = cls.FetchableTopicResponse
    part = topic.PartitionData
    records = record_batch()
    msg = cls(version=12, throttle_time_ms=0, error_code=0, session_id=123,
              responses=[topic(topic="payments", partitions=[
                  part(partition_index=0, error_code=0, high_watermark=10_000, last_stable_offset=10_000,
                       log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                       records=records)])])
    msg.with_header(correlation_id=19)
    return Case(f"FetchResponse v12 ({len(records) // 1024} KiB records)", "response", 1, 12,
                bytes(msg.encode(header=True)), cls)


def api_versions_response() -> Case:
    cls = ApiVersionsResponse
    key = cls.ApiVersion
    msg = cls(version=3, error_code=0, api_keys=[key(api_key=k, min_version=0, max_version=k % 13) for k in range(60)],
              throttle_time_ms=0)
    msg.with_header(correlation_id=20)
    return Case("ApiVersionsResponse v3 (60 keys)", "response", 18, 3, bytes(msg.encode(header=True)), cls)


CASES: dict[str, Callable[[], Case]] = {
    "joingroup": join_group_request,
    "joingroup-consumers": join_group_consumers,
    "joingroup-garbage": join_group_garbage,
    "metadata": metadata_response,
    "fetch": fetch_response,
    "apiversions": api_versions_response,
}


def ours(case: Case, postprocess: bool = True) -> Callable[[], Any]:
    frame, key, version = case.frame, case.api_key, case.version
    if case.kind == "request":
        return lambda: decode_request(frame, postprocess=postprocess)
    return lambda: decode_response(frame, key, version, postprocess=postprocess)


def ours_raw(case: Case) -> Callable[[], Any]:
    """Ours without the embedded-protocol pass (which kafka-python and kio do not do)."""
    return ours(case, postprocess=False)


def kafka_python(case: Case) -> Callable[[], Any]:
    frame, cls, version = case.frame, case.kp_class, case.version
    return lambda: cls.decode(frame, version=version, header=True)


def kio(case: Case) -> Callable[[], Any]:
    schema = (load_request_schema if case.kind == "request" else load_response_schema)(case.api_key, case.version)
    read_header = entity_reader(schema.__header_schema__)
    read_body = entity_reader(schema)
    frame = case.frame

    def run() -> Any:
        header, size = read_header(frame, 0)
        body, _ = read_body(frame, size)
        return header, body

    return run


#: kio's readers of ConsumerProtocolSubscription by version (a data schema: the version prefix is read apart).
_KIO_SUBSCRIPTION = {
    v: entity_reader(import_module(f"kio.schema.consumer_protocol_subscription.v{v}").ConsumerProtocolSubscription)
    for v in range(4)}


def kafka_python_embedded(case: Case) -> Callable[[], Any]:
    """kafka-python doing what ``read`` does with a JoinGroup: the frame, then each assignor's subscription."""
    frame, cls, version = case.frame, case.kp_class, case.version
    sub = ConsumerProtocolSubscription

    def run() -> Any:
        msg = cls.decode(frame, version=version, header=True)
        subs = []
        for proto in msg.protocols:
            try:
                subs.append(sub.decode(proto.metadata))
            except Exception as err:  # garbage: kafka-python raises, ours keeps a status
                subs.append(err)
        return msg, subs

    return run


def kio_embedded(case: Case) -> Callable[[], Any]:
    """kio doing what ``read`` does with a JoinGroup: the frame, then each assignor's subscription by its version."""
    body_run = kio(case)
    readers = _KIO_SUBSCRIPTION

    def run() -> Any:
        header, body = body_run()
        subs = []
        for proto in body.protocols:
            raw = proto.metadata
            try:
                subs.append(readers[int.from_bytes(raw[:2], "big", signed=True)](raw, 2)[0])
            except Exception as err:  # garbage: kio raises, ours keeps a status
                subs.append(err)
        return header, body, subs

    return run


def check(case: Case) -> None:
    """Every decoder must read the whole frame correctly before it is timed."""
    msg = ours(case)()
    assert msg.ok, f"{case.name}: ours: {msg.status}"
    kp = kafka_python(case)()
    assert kp.version == case.version
    header, body = kio(case)()
    assert header.correlation_id == msg.correlation_id
    if case.api_key == 3:
        assert len(body.topics) == len(kp.topics) == len(msg.body["Topics"]) == 50
    if case.api_key == 1:
        raw = body.responses[0].partitions[0].records
        assert len(raw) == len(kp.responses[0].partitions[0].records) == len(msg.body["Responses"][0]["Partitions"][0]
                                                                            ["Records"])
    if case.api_key == 18:
        assert len(body.api_keys) == len(kp.api_keys) == len(msg.body["ApiKeys"]) == 60
    if case.api_key == 11:
        assert len(body.protocols) == len(kp.protocols) == len(msg.body["Protocols"]) in (2, 3)
        decoded = msg.body["Protocols"][0]["MetadataDecoded"]["status"]
        assert (decoded == "ok") is ("garbage" not in case.name), decoded
        kio_subs, kp_subs = kio_embedded(case)()[2], kafka_python_embedded(case)()[1]
        if decoded == "ok":
            want = [sorted(p["MetadataDecoded"]["value"]["Topics"]) for p in msg.body["Protocols"]]
            assert [sorted(s.topics) for s in kio_subs] == [sorted(s.topics) for s in kp_subs] == want


def rates(fns: dict[str, Callable[[], Any]], repeat: int, min_time: float) -> dict[str, float]:
    """Decodes/s of each function: best of ``repeat`` timeit runs of >= ``min_time`` s each.

    The runs are interleaved (one run of each decoder per round) so that load from other
    processes on the machine affects all decoders alike."""
    timers = {name: timeit.Timer(fn) for name, fn in fns.items()}
    numbers = {}
    for name, timer in timers.items():
        number, elapsed = timer.autorange()
        numbers[name] = max(1, int(number * min_time / elapsed)) if elapsed < min_time else number
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, timer in timers.items():
            best[name] = min(best[name], timer.timeit(numbers[name]))
    return {name: numbers[name] / best[name] for name in fns}


def table(repeat: int, min_time: float) -> None:
    decoders = {"ours": ours, "ours-raw": ours_raw, "kafka-python": kafka_python, "kio": kio}
    embedded = {"ours": ours, "kafka-python": kafka_python_embedded, "kio": kio_embedded}
    header = (f"{'case':34} {'bytes':>6} {'ours/s':>9} {'raw/s':>9} {'kafka-python/s':>14} {'kio/s':>10} "
              f"{'ours/kafka-python':>17} {'ours/kio':>9} {'raw/kafka-python':>16} {'raw/kio':>8}")
    print(header)
    print("-" * len(header))
    ours_rates: dict[str, float] = {}
    same: dict[str, dict[str, float]] = {}
    for key, build in CASES.items():
        case = build()
        check(case)
        r = rates({name: make(case) for name, make in decoders.items()}, repeat, min_time)
        ours_rates[key] = r["ours"]
        kp, ki = r["kafka-python"], r["kio"]
        print(f"{case.name:34} {len(case.frame):>6} {r['ours']:>9,.0f} {r['ours-raw']:>9,.0f} {kp:>14,.0f} "
              f"{ki:>10,.0f} {r['ours'] / kp:>16.2f}x {r['ours'] / ki:>8.2f}x {r['ours-raw'] / kp:>15.2f}x "
              f"{r['ours-raw'] / ki:>7.2f}x")
        if case.api_key == 11:
            same[case.name] = rates({name: make(case) for name, make in embedded.items()}, repeat, min_time)
    print("\nours = decode_request/decode_response defaults; raw = postprocess=False (no embedded-protocol"
          " decoding,\nwhich only JoinGroup uses here). Target: ours >= 3x kafka-python and >= 0.5x kio.")
    print("\nThe same work: the JoinGroups decoded with each assignor's subscription by all three (kafka-python's"
          "\nConsumerProtocolSubscription.decode, kio's reader of the subscription's version; garbage raises there):")
    for name, r in same.items():
        print(f"  {name:34} ours {r['ours']:>9,.0f}/s  kafka-python {r['kafka-python']:>9,.0f}/s "
              f"({r['ours'] / r['kafka-python']:.2f}x)  kio {r['kio']:>9,.0f}/s ({r['ours'] / r['kio']:.2f}x)")
    cost = ours_rates["joingroup-consumers"] / ours_rates["joingroup-garbage"]
    print(f"A JoinGroup whose metadata is garbage costs {cost:.2f}x a valid one (target: <= 2x).")


def profile(name: str, seconds: float) -> None:
    case = CASES[name]()
    check(case)
    fn = ours(case)
    number, _ = timeit.Timer(fn).autorange()
    loops = max(1, int(number * seconds / 0.2))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(loops):
        fn()
    prof.disable()
    print(f"cProfile of decoders on {case.name} ({len(case.frame)} bytes), {loops} decodes")
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timeit repetitions per decoder (best is kept)")
    parser.add_argument("--min-time", type=float, default=0.3, help="minimum seconds per repetition")
    parser.add_argument("--profile", choices=sorted(CASES), help="run cProfile on our decoder for this case")
    parser.add_argument("--profile-seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile, args.profile_seconds)
    else:
        table(args.repeat, args.min_time)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
