"""The data set the Python client suites write and check, and topic readiness.

Record i has key "k-%08d", a 16..271 byte value derived from i, and headers seq,
parity and empty: the same shape as the Go and Java suites.
"""
from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from compat_helpers import eventually


def wait_leaders(admin, topic, partitions):
    def check():
        md = admin.list_topics(topic=topic, timeout=5)
        t = md.topics.get(topic)
        assert t is not None and t.error is None, f"topic {topic}: {t and t.error}"
        assert len(t.partitions) == partitions, f"{len(t.partitions)} partitions, want {partitions}"
        for p in t.partitions.values():
            assert p.error is None and p.leader >= 0, f"partition {p.id}: leader {p.leader} error {p.error}"
        # Metadata can name a leader before the leader has created the partition;
        # ListOffsets is answered by the partition itself.
        specs = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
        for f in admin.list_offsets(specs).values():
            f.result(10)
    eventually(check)


def key(i):
    return b"k-%08d" % i


def value(i):
    n = 16 + i % 256
    unit = f"v{i}.".encode()
    return (unit * (n // len(unit) + 1))[:n]


def headers(i):
    return [("seq", str(i).encode()), ("parity", b"odd" if i % 2 else b"even"), ("empty", b"")]


def check(k, v, hs):
    """Checks a fetched record against the data set and returns its index."""
    hs = [(h, hv if hv is None else bytes(hv)) for h, hv in (hs or [])]
    assert len(hs) == 3 and hs[0][0] == "seq", f"headers {hs}"
    i = int(hs[0][1])
    assert k == key(i), f"record {i}: key {k!r}"
    assert v == value(i), f"record {i}: value {v!r}"
    assert hs == headers(i), f"record {i}: headers {hs}"
    return i
