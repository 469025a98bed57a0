"""kafka-python (pure Python) against the broker."""
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import TopicAlreadyExistsError

from compat_helpers import eventually, unique
from dataset import check, headers, key, value, wait_leaders

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture
def kadmin(bootstrap):
    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    yield a
    a.close()


def produce(bootstrap, topic, indexes, compression=None):
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                      compression_type=compression, linger_ms=5)
    try:
        futures = {i: p.send(topic, key=key(i), value=value(i), headers=headers(i)) for i in indexes}
        p.flush(60)
        return {i: (md.partition, md.offset) for i, f in futures.items() for md in [f.get(timeout=30)]}
    finally:
        p.close()


def poll_until(consumer, n, timeout=60):
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n:
        assert time.monotonic() < deadline, f"read {len(out)} of {n} records"
        for recs in consumer.poll(timeout_ms=500, max_records=n - len(out)).values():
            out.extend(recs)
    return out


def verify_exactly_once(recs, indexes, where=None):
    seen = set()
    for r in recs:
        i = check(r.key, r.value, r.headers)
        assert i in indexes and i not in seen, f"record {i} unexpected or twice"
        seen.add(i)
        if where is not None:
            assert where[i] == (r.partition, r.offset), f"record {i} moved"
    assert seen == set(indexes), f"{len(set(indexes) - seen)} records missing"


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
def test_round_trip(bootstrap, make_topic, codec):
    n = 5000
    topic = make_topic("kp-rt-" + (codec or "none"), 3)
    where = produce(bootstrap, topic, range(n), codec)
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        verify_exactly_once(poll_until(c, n), range(n), where)
        ends = c.end_offsets(tps)
        for tp in tps:
            assert ends[tp] == sum(1 for p, _ in where.values() if p == tp.partition)
    finally:
        c.close()


def test_group_commit_and_resume(bootstrap, make_topic, kadmin):
    n, first = 1000, 600
    topic = make_topic("kp-group", 2)
    produce(bootstrap, topic, range(n))
    group = unique("kp-group")
    conf = dict(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                auto_offset_reset="earliest", heartbeat_interval_ms=500)

    c1 = KafkaConsumer(topic, **conf)
    try:
        got1 = poll_until(c1, first)
        c1.commit()
        last = {}
        for r in got1:
            last[r.partition] = max(last.get(r.partition, -1), r.offset)
        want = {p: o + 1 for p, o in last.items()}
        assert {p: c1.committed(TopicPartition(topic, p)) for p in want} == want
    finally:
        c1.close()

    listed = kadmin.list_group_offsets(group)[group]
    assert {tp.partition: om.offset for tp, om in listed.items()} == want

    c2 = KafkaConsumer(topic, **conf)
    try:
        got2 = poll_until(c2, n - first)
    finally:
        c2.close()
    verify_exactly_once(got1 + got2, range(n))


def test_admin_topic_lifecycle(bootstrap, kadmin, admin):
    topic = unique("kp-admin")
    kadmin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "3600000"})])
    try:
        wait_leaders(admin, topic, 2)
        assert topic in kadmin.list_topics()

        def config(name):
            described = kadmin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)],
                                                config_filter="all")
            return described["topic"][topic][name]["value"]

        assert config("retention.ms") == "3600000"
        assert config("cleanup.policy") == "delete"
        kadmin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                             configs={"retention.ms": "7200000"})])

        def altered():
            assert config("retention.ms") == "7200000"
        eventually(altered, timeout=15)

        kadmin.create_partitions({topic: NewPartitions(total_count=3)})
        wait_leaders(admin, topic, 3)

        with pytest.raises(TopicAlreadyExistsError):
            kadmin.create_topics([NewTopic(topic, 1, 1)], raise_errors=True)
    finally:
        kadmin.delete_topics([topic])

    def gone():
        assert topic not in kadmin.list_topics()
    eventually(gone)
