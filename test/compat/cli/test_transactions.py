"""kafka-transactions.sh (TransactionsCommand) against the broker: list, describe,
describe-producers, find-hanging and abort of an open transaction."""
import re

from confluent_kafka import Producer

from compat_helpers import eventually, unique
from kafka_tools import OFFSETS, TOPICS

TXNS = "org.apache.kafka.tools.TransactionsCommand"


def rows(out):
    """The tool's tab-separated table: a list of dicts keyed by its header."""
    lines = [l for l in out.splitlines() if "\t" in l]
    assert lines, f"no table in:\n{out}"
    header = [h.strip() for h in lines[0].split("\t") if h.strip()]
    return [dict(zip(header, (c.strip() for c in l.split("\t")))) for l in lines[1:]]


def test_transactions_command(tools, bootstrap):
    topic, tid = unique("txn"), unique("tid")
    tools.run(TOPICS, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")

    def ready():
        out = tools.run(OFFSETS, "--topic", topic).stdout
        assert out.split() == [f"{topic}:0:0"], out
    eventually(ready)

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"open")
    assert p.flush(30) == 0

    listed = {r["TransactionalId"]: r for r in rows(tools.run(TXNS, "list").stdout)}
    assert tid in listed, listed
    assert listed[tid]["TransactionState"] == "Ongoing", listed[tid]
    pid = listed[tid]["ProducerId"]

    described = rows(tools.run(TXNS, "describe", "--transactional-id", tid).stdout)
    assert len(described) == 1, described
    assert described[0]["TransactionState"] == "Ongoing", described
    assert described[0]["TopicPartitions"] == f"{topic}-0", described
    assert described[0]["ProducerId"] == pid, described

    producers = rows(tools.run(TXNS, "describe-producers", "--topic", topic, "--partition", "0").stdout)
    assert [(r["ProducerId"], r["CurrentTransactionStartOffset"]) for r in producers] == [(pid, "0")], producers

    # The coordinator knows the transaction: it is not hanging.
    for where in (["--topic", topic], ["--broker-id", str(leader(tools, topic))]):
        hanging = tools.run(TXNS, "find-hanging", *where).stdout
        assert not [r for r in rows(hanging) if r.get("Topic") == topic], hanging

    out = tools.run(TXNS, "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    assert out.returncode == 0, out

    def aborted():
        producers = rows(tools.run(TXNS, "describe-producers", "--topic", topic, "--partition", "0").stdout)
        assert [(r["ProducerId"], r["CurrentTransactionStartOffset"]) for r in producers] == [(pid, "None")], producers
    eventually(aborted)
    # The producer's own abort still goes through afterwards.
    p.abort_transaction(30)
    tools.run(TOPICS, "--delete", "--topic", topic)


def leader(tools, topic):
    out = tools.run(TOPICS, "--describe", "--topic", topic).stdout
    m = re.search(r"Partition: 0\s+Leader: (\d+)", out)
    assert m, out
    return int(m.group(1))
