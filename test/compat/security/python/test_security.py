"""confluent-kafka (librdkafka) and kafka-python against listeners that ask for
TLS and SASL: SASL_SSL with SCRAM-SHA-512, SSL with a client certificate, and
the refusals of wrong credentials and of a missing certificate. The brokers
come from test/compat/security/brokers, through the security suite."""
import os
import sys
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from compat_helpers import unique  # noqa: E402
from dataset import check, headers, key, value, wait_leaders  # noqa: E402


def env(name):
    v = os.environ.get(name, "").strip()
    if not v:
        pytest.fail(f"{name} is not set: run this through test/compat/run --only security")
    return v


def pki(name):
    return os.path.join(env("WEIR_SECURITY_DIR"), name)


def rdkafka_sasl(password="alice-secret"):
    return {"bootstrap.servers": env("WEIR_SASL_SSL_BOOTSTRAP"), "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": password,
            "ssl.ca.location": pki("ca.pem")}


def rdkafka_ssl(cert="alice"):
    conf = {"bootstrap.servers": env("WEIR_SSL_BOOTSTRAP"), "security.protocol": "SSL",
            "ssl.ca.location": pki("ca.pem")}
    if cert:
        conf.update({"ssl.certificate.location": pki(cert + ".crt"), "ssl.key.location": pki(cert + ".key")})
    return conf


def kp_sasl(password="alice-secret"):
    return dict(bootstrap_servers=env("WEIR_SASL_SSL_BOOTSTRAP"), security_protocol="SASL_SSL",
                sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice", sasl_plain_password=password,
                ssl_cafile=pki("ca.pem"))


def kp_ssl(cert="alice"):
    conf = dict(bootstrap_servers=env("WEIR_SSL_BOOTSTRAP"), security_protocol="SSL", ssl_cafile=pki("ca.pem"))
    if cert:
        conf.update(ssl_certfile=pki(cert + ".crt"), ssl_keyfile=pki(cert + ".key"))
    return conf


def make_topic(conf, partitions=2):
    admin = AdminClient(conf)
    name = unique("sec")
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    wait_leaders(admin, name, partitions)
    return name


def rdkafka_round_trip(conf, n=1000):
    topic = make_topic(conf)
    p = Producer({**conf, "enable.idempotence": True, "linger.ms": 5})
    errors = []
    for i in range(n):
        p.produce(topic, key=key(i), value=value(i), headers=headers(i),
                  on_delivery=lambda err, _msg: err and errors.append(err))
        p.poll(0)
    assert p.flush(60) == 0 and not errors, f"undelivered: {errors[:3]}"
    c = Consumer({**conf, "group.id": unique("sec-g"), "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        seen, deadline = set(), time.monotonic() + 60
        while len(seen) < n:
            assert time.monotonic() < deadline, f"read {len(seen)} of {n} records"
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            i = check(m.key(), m.value(), m.headers())
            assert i not in seen, f"record {i} twice"
            seen.add(i)
    finally:
        c.close()


def kafka_python_round_trip(conf, n=500):
    topic = make_topic(rdkafka_for(conf))
    p = KafkaProducer(acks="all", linger_ms=5, **conf)
    try:
        futures = [p.send(topic, key=key(i), value=value(i), headers=headers(i)) for i in range(n)]
        p.flush(60)
        for f in futures:
            f.get(timeout=30)
    finally:
        p.close()
    c = KafkaConsumer(enable_auto_commit=False, **conf)
    try:
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        seen, deadline = set(), time.monotonic() + 60
        while len(seen) < n:
            assert time.monotonic() < deadline, f"read {len(seen)} of {n} records"
            for recs in c.poll(timeout_ms=500).values():
                for r in recs:
                    i = check(r.key, r.value, r.headers)
                    assert i not in seen, f"record {i} twice"
                    seen.add(i)
    finally:
        c.close()


def rdkafka_for(kp_conf):
    """The librdkafka configuration matching a kafka-python one, for the admin calls."""
    if kp_conf["security_protocol"] == "SASL_SSL":
        return rdkafka_sasl(kp_conf["sasl_plain_password"])
    return rdkafka_ssl("alice")


def test_confluent_sasl_ssl_scram():
    rdkafka_round_trip(rdkafka_sasl())


def test_confluent_ssl_client_certificate():
    rdkafka_round_trip(rdkafka_ssl())


def test_confluent_wrong_password():
    admin = AdminClient({**rdkafka_sasl("not-the-password"), "retries": 0})
    with pytest.raises(KafkaException) as e:
        admin.list_topics(timeout=10)
    err = e.value.args[0]
    assert err.code() in (-169, -195, -185), err  # _AUTHENTICATION, _TRANSPORT, _TIMED_OUT after the refusal


def test_confluent_without_client_certificate():
    admin = AdminClient(rdkafka_ssl(None))
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=10)


def test_kafka_python_sasl_ssl_scram():
    kafka_python_round_trip(kp_sasl())


def test_kafka_python_ssl_client_certificate():
    kafka_python_round_trip(kp_ssl())


def test_kafka_python_wrong_password():
    with pytest.raises(KafkaError):
        p = KafkaProducer(max_block_ms=10000, **kp_sasl("not-the-password"))
        try:
            p.send(unique("never"), value=b"x").get(timeout=10)
        finally:
            p.close(timeout=5)
