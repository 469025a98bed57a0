"""confluent-kafka (librdkafka) against the broker."""
import os
import time
import urllib.request

import pytest
from confluent_kafka import (Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions,
                                   NewTopic)

from compat_helpers import eventually, unique
from dataset import check, headers, key, value, wait_leaders

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def produce(bootstrap, topic, indexes, compression="none", extra=None):
    """Produces the data set records at indexes with an idempotent acks=all producer.

    Returns {index: (partition, offset)} from the delivery reports.
    """
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "compression.type": compression, "linger.ms": 5}
    conf.update(extra or {})
    p = Producer(conf)
    where, errors = {}, []

    def report(i):
        def cb(err, msg):
            if err is not None:
                errors.append((i, err))
            else:
                where[i] = (msg.partition(), msg.offset())
        return cb

    for i in indexes:
        while True:
            try:
                p.produce(topic, key=key(i), value=value(i), headers=headers(i), on_delivery=report(i))
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    assert p.flush(60) == 0, "records still queued after flush"
    assert not errors, f"delivery errors: {errors[:5]}"
    assert len(where) == len(indexes)
    return where


def consume_assigned(bootstrap, topic, partitions, n, timeout=60):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("assign"),
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out, deadline = [], time.monotonic() + timeout
        while len(out) < n:
            assert time.monotonic() < deadline, f"read {len(out)} of {n} records"
            for m in c.consume(num_messages=1000, timeout=0.5):
                assert m.error() is None, m.error()
                out.append(m)
        return out
    finally:
        c.close()


def verify_exactly_once(msgs, indexes, where=None):
    seen, last = set(), {}
    for m in msgs:
        i = check(m.key(), m.value(), m.headers())
        assert i in indexes, f"unexpected record {i}"
        assert i not in seen, f"record {i} delivered twice"
        seen.add(i)
        if where is not None:
            assert where[i] == (m.partition(), m.offset()), f"record {i} moved"
        assert last.get(m.partition(), -1) < m.offset(), f"offsets out of order in {m.partition()}"
        last[m.partition()] = m.offset()
    assert seen == set(indexes), f"{len(set(indexes) - seen)} records missing"


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(bootstrap, make_topic, codec):
    n = 20000
    topic = make_topic("ck-rt-" + codec, 3)
    where = produce(bootstrap, topic, range(n), codec)
    msgs = consume_assigned(bootstrap, topic, 3, n)
    verify_exactly_once(msgs, range(n), where)
    for p in range(3):
        written = sum(1 for pp, _ in where.values() if pp == p)
        assert sorted(o for pp, o in where.values() if pp == p) == list(range(written)), \
            f"partition {p}: offsets not dense from 0"


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_commit_and_resume(bootstrap, admin, make_topic, protocol):
    """A member consumes part of the data and commits; the group's next member resumes
    exactly there; the committed offsets are what the admin client lists."""
    n, first = 1000, 600
    topic = make_topic("ck-group-" + protocol, 2)
    produce(bootstrap, topic, range(n))
    group = unique("ck-group-" + protocol)
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    if protocol == "classic":
        conf["heartbeat.interval.ms"] = 500

    c1 = Consumer(conf)
    got1 = []
    try:
        c1.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got1) < first:
            assert time.monotonic() < deadline, f"first member read {len(got1)} records"
            for m in c1.consume(num_messages=first - len(got1), timeout=0.5):
                assert m.error() is None, m.error()
                got1.append(m)
        committed = c1.commit(asynchronous=False)
        assert all(tp.error is None for tp in committed), committed
        want = {tp.partition: tp.offset for tp in committed}
        on_broker = c1.committed([TopicPartition(topic, p) for p in range(2)], timeout=15)
        assert {tp.partition: tp.offset for tp in on_broker if tp.offset >= 0} == want
    finally:
        c1.close()

    # Each partition's committed offset is one past the last record consumed from it.
    last = {}
    for m in got1:
        last[m.partition()] = max(last.get(m.partition(), -1), m.offset())
    assert want == {p: o + 1 for p, o in last.items()}

    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(15)
    assert {tp.partition: tp.offset for tp in listed.topic_partitions if tp.offset >= 0} == want

    c2 = Consumer(conf)
    got2 = []
    try:
        c2.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got2) < n - first:
            assert time.monotonic() < deadline, f"second member read {len(got2)} of {n - first}"
            for m in c2.consume(num_messages=n - first - len(got2), timeout=0.5):
                assert m.error() is None, m.error()
                got2.append(m)
    finally:
        c2.close()
    verify_exactly_once(got1 + got2, range(n))

    described = admin.describe_consumer_groups([group])[group].result(15)
    assert described.type.name.lower() == protocol, f"group type {described.type}"


def test_admin_topic_lifecycle(bootstrap, admin):
    topic = unique("ck-admin")
    admin.create_topics([NewTopic(topic, 2, 1, config={"retention.ms": "3600000"})])[topic].result(30)
    try:
        wait_leaders(admin, topic, 2)
        assert topic in admin.list_topics(timeout=10).topics

        res = ConfigResource(ConfigResource.Type.TOPIC, topic)

        def config(name):
            return admin.describe_configs([res])[res].result(15)[name].value

        assert config("retention.ms") == "3600000"
        admin.incremental_alter_configs([ConfigResource(
            ConfigResource.Type.TOPIC, topic,
            incremental_configs=[ConfigEntry("retention.ms", "7200000",
                                             incremental_operation=AlterConfigOpType.SET)])])[res].result(15)

        def altered():
            assert config("retention.ms") == "7200000"
        eventually(altered, timeout=15)

        admin.create_partitions([NewPartitions(topic, 4)])[topic].result(15)
        wait_leaders(admin, topic, 4)

        with pytest.raises(KafkaException) as dup:
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
        assert dup.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    finally:
        admin.delete_topics([topic])[topic].result(15)

    def gone():
        assert topic not in admin.list_topics(timeout=10).topics
    eventually(gone)


def weir_fetch_counts():
    """The broker's Fetch counters from WEIR_METRICS, or None against Apache Kafka."""
    url = os.environ.get("WEIR_METRICS", "").strip()
    if not url:
        return None
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = resp.read().decode()
    out = {}
    for line in body.splitlines():
        if line.startswith("weir_fetch_"):
            name, _, v = line.rpartition(" ")
            out[name] = float(v)
    return out


def test_fetch_without_sessions(bootstrap, make_topic):
    """librdkafka does not implement fetch sessions (KIP-227): it sends every Fetch
    sessionless (session 0, epoch -1). It reads every record once, unchanged; against weir
    the broker counts only sessionless requests while it consumes, and a request parked
    below fetch.min.bytes re-reads only the partitions that changed, so its reads stay at
    about the partitions it names."""
    topic = make_topic("sessionless", 20)
    indexes = list(range(2000))
    where = produce(bootstrap, topic, indexes)
    before = weir_fetch_counts()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("sessionless"),
                  "enable.auto.commit": False, "fetch.wait.max.ms": 200})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(20)])
        msgs, deadline = [], time.monotonic() + 60
        while len(msgs) < len(indexes):
            assert time.monotonic() < deadline, f"read {len(msgs)} of {len(indexes)} records"
            for m in c.consume(num_messages=1000, timeout=0.5):
                assert m.error() is None, m.error()
                msgs.append(m)
        verify_exactly_once(msgs, set(indexes), where)
        idle_from = weir_fetch_counts()
        end = time.monotonic() + 3
        while time.monotonic() < end:
            assert not c.consume(num_messages=10, timeout=0.2), "a record past the data set"
        idle_to = weir_fetch_counts()
    finally:
        c.close()
    if before is None:
        return
    sessionless = 'weir_fetch_requests_total{kind="sessionless"}'
    for kind in ("full", "incremental"):
        k = f'weir_fetch_requests_total{{kind="{kind}"}}'
        assert idle_to[k] == before[k], f"{kind} fetches from a client without sessions"
    requests = idle_to[sessionless] - idle_from[sessionless]
    named = idle_to['weir_fetch_request_partitions_total{kind="sessionless"}'] - \
        idle_from['weir_fetch_request_partitions_total{kind="sessionless"}']
    reads = idle_to['weir_fetch_partition_reads_total{kind="sessionless"}'] - \
        idle_from['weir_fetch_partition_reads_total{kind="sessionless"}']
    print(f"idle: {requests:.0f} sessionless fetches naming {named:.0f} partitions, {reads:.0f} reads")
    assert requests >= 5, f"{requests} fetches in 3 idle seconds"
    assert reads <= named + requests, f"{reads} partition reads for {named} named in {requests} parked fetches"
