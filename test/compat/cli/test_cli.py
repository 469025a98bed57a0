"""Apache Kafka's own command-line tools against the broker."""
import re

from compat_helpers import eventually, unique
from kafka_tools import CONFIGS, CONSUMER, FEATURES, GROUPS, OFFSETS, PRODUCER, QUORUM, TOPICS


def describe_partitions(tools, topic):
    """Parses TopicCommand --describe: returns (partition count, {partition: leader})."""
    out = tools.run(TOPICS, "--describe", "--topic", topic).stdout
    m = re.search(rf"Topic: {re.escape(topic)}\s+TopicId: \S+\s+PartitionCount: (\d+)\s+ReplicationFactor: 1", out)
    assert m, f"no topic header in:\n{out}"
    leaders = {int(p): int(l) for p, l in re.findall(r"Partition: (\d+)\s+Leader: (-?\d+)", out)}
    return int(m.group(1)), leaders, out


def topic_listed(tools, topic):
    return topic in tools.run(TOPICS, "--list").stdout.split()


def test_topic_command_lifecycle(tools):
    topic = unique("topic")
    out = tools.run(TOPICS, "--create", "--topic", topic, "--partitions", "3",
                    "--replication-factor", "1", "--config", "retention.ms=3600000").stdout
    assert f"Created topic {topic}." in out

    def described(n):
        def check():
            count, leaders, text = describe_partitions(tools, topic)
            assert count == n and sorted(leaders) == list(range(n)), text
            assert all(l >= 0 for l in leaders.values()), f"partition without leader:\n{text}"
            assert "retention.ms=3600000" in text, text
        eventually(check)

    described(3)
    assert topic_listed(tools, topic)

    tools.run(TOPICS, "--alter", "--topic", topic, "--partitions", "5")
    described(5)

    dup = tools.run(TOPICS, "--create", "--topic", topic, "--partitions", "1", check=False)
    assert dup.returncode != 0 and "already exists" in dup.stdout + dup.stderr

    tools.run(TOPICS, "--delete", "--topic", topic)

    def gone():
        assert not topic_listed(tools, topic)
    eventually(gone)


def dynamic_configs(tools, topic):
    out = tools.run(CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--describe").stdout
    assert f"Dynamic configs for topic {topic} are:" in out, out
    return dict(re.findall(r"^\s+([\w.]+)=(\S*) sensitive=", out, re.M))


def test_config_command(tools):
    topic = unique("config")
    tools.run(TOPICS, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1",
              "--config", "retention.ms=3600000")
    try:
        eventually(lambda: _equal(dynamic_configs(tools, topic), {"retention.ms": "3600000"}))
        out = tools.run(CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--alter",
                        "--add-config", "retention.ms=7200000,max.message.bytes=2097152").stdout
        assert f"Completed updating config for topic {topic}." in out
        eventually(lambda: _equal(dynamic_configs(tools, topic),
                                  {"retention.ms": "7200000", "max.message.bytes": "2097152"}))
        tools.run(CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--alter",
                  "--delete-config", "retention.ms")
        eventually(lambda: _equal(dynamic_configs(tools, topic), {"max.message.bytes": "2097152"}))
    finally:
        tools.run(TOPICS, "--delete", "--topic", topic)


def _equal(got, want):
    assert got == want, f"got {got}, want {want}"


def test_console_round_trip_and_group_command(tools):
    """Lines piped into the console producer come back from the console consumer in a
    group; the group command then lists the group and shows it caught up."""
    n, topic, group = 200, unique("console"), unique("group")
    tools.run(TOPICS, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")
    try:
        # Metadata can name a leader before the leader has created the partition:
        # produce once GetOffsetShell (ListOffsets, answered by the partition) works.
        def ready():
            out = tools.run(OFFSETS, "--topic", topic).stdout
            assert sorted(out.split()) == [f"{topic}:0:0", f"{topic}:1:0"], out
        eventually(ready)

        lines = [f"seq:{i},src:cli\tk-{i}\tvalue-{i}" for i in range(n)]
        tools.run(PRODUCER, "--topic", topic, "--compression-codec", "zstd",
                  "--reader-property", "parse.key=true", "--reader-property", "parse.headers=true",
                  "--command-property", "acks=all", stdin="\n".join(lines) + "\n")

        out = tools.run(CONSUMER, "--topic", topic, "--group", group, "--from-beginning",
                        "--max-messages", str(n), "--timeout-ms", "30000",
                        "--formatter-property", "print.key=true",
                        "--formatter-property", "print.headers=true",
                        "--formatter-property", "print.partition=true",
                        "--formatter-property", "print.offset=true").stdout
        got = [l.split("\t") for l in out.splitlines() if l.startswith("Partition:")]
        assert sorted(l[2:] for l in got) == sorted(l.split("\t") for l in lines), out[:2000]
        by_partition = {}
        for part, off, *_ in got:
            by_partition.setdefault(int(part.split(":")[1]), []).append(int(off.split(":")[1]))
        assert sorted(by_partition) == [0, 1], f"records only in partitions {sorted(by_partition)}"
        for p, offs in by_partition.items():
            assert offs == list(range(len(offs))), f"partition {p} offsets {offs[:10]}..."

        assert group in tools.run(GROUPS, "--list").stdout.split()

        def caught_up():
            out = tools.run(GROUPS, "--describe", "--group", group).stdout
            rows = [r.split() for r in out.splitlines() if r.startswith(group + " ")]
            assert len(rows) == 2, out
            for r in rows:
                assert r[1] == topic and r[3] == r[4] == str(len(by_partition[int(r[2])])) and r[5] == "0", out
        eventually(caught_up)

        # Reading again from the group's committed position finds nothing new.
        again = tools.run(CONSUMER, "--topic", topic, "--group", group, "--max-messages", "1",
                          "--timeout-ms", "3000", check=False)
        assert "Processed a total of 0 messages" in again.stderr, again.stderr
    finally:
        tools.run(TOPICS, "--delete", "--topic", topic)


def test_metadata_quorum_describe(tools):
    """kafka-metadata-quorum describe: --status names a leader that is a voter and a high
    watermark; --replication lists the leader with its log end offset."""
    out = tools.run(QUORUM, "describe", "--status").stdout
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", out, re.M))
    for key in ("ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag",
                "CurrentVoters", "CurrentObservers"):
        assert key in fields, f"no {key} in:\n{out}"
    leader = int(fields["LeaderId"])
    assert int(fields["LeaderEpoch"]) >= 1 and int(fields["HighWatermark"]) >= 0, out
    voters = [int(v) for v in re.findall(r'"id": (\d+)', fields["CurrentVoters"])]
    assert leader in voters, out

    out = tools.run(QUORUM, "describe", "--replication").stdout
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    leaders = [r for r in rows if r[-1] == "Leader"]
    assert len(leaders) == 1 and int(leaders[0][0]) == leader, out
    assert int(leaders[0][2]) >= int(fields["HighWatermark"]), out


def test_features_describe(tools):
    """kafka-features describe lists the features clients gate on, each with its
    supported range and the finalized level inside it."""
    out = tools.run(FEATURES, "describe").stdout
    features = {}
    for m in re.finditer(r"Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)"
                         r"\s+FinalizedVersionLevel: (\S+)\s+Epoch: (\S+)", out):
        features[m.group(1)] = m.groups()[1:]
    for name in ("metadata.version", "group.version", "share.version", "kraft.version", "transaction.version"):
        assert name in features, f"no {name} in:\n{out}"
    assert features["group.version"][2] == "1", out
    assert features["share.version"][2] == "1", out
    assert features["metadata.version"][2].startswith("4."), out
