"""ACLs, SCRAM users and client quotas managed with Apache Kafka's own tools
(kafka-acls.sh, kafka-configs.sh) against a broker with Kafka's
StandardAuthorizer, checked with confluent-kafka clients, and a producer held
to a 1 MB/s quota (kafka-producer-perf-test.sh). The broker comes from
test/compat/authz/broker, through the authz suite."""
import os
import re
import sys

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from compat_helpers import eventually, unique  # noqa: E402
from kafka_tools import CONFIGS, GROUPS, TOPICS, Tools  # noqa: E402

ACLS = "org.apache.kafka.tools.AclCommand"
PERF = "org.apache.kafka.tools.ProducerPerformance"


def env(name):
    v = os.environ.get(name, "").strip()
    if not v:
        pytest.fail(f"{name} is not set: run this through test/compat/run --only authz")
    return v


@pytest.fixture(scope="module")
def tools():
    return Tools(env("WEIR_AUTHZ_BOOTSTRAP"))


@pytest.fixture(scope="module")
def admin():
    return env("WEIR_AUTHZ_ADMIN")


def user_properties(tmp_path, user, password):
    path = tmp_path / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="{user}" password="{password}";\n')
    return str(path)


def rdkafka(user, password, **extra):
    return {"bootstrap.servers": env("WEIR_AUTHZ_BOOTSTRAP"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": password, **extra}


def add_scram_user(tools, admin, user, password, iterations=8192):
    tools.run(CONFIGS, "--command-config", admin, "--alter", "--entity-type", "users", "--entity-name", user,
              "--add-config", f"SCRAM-SHA-512=[iterations={iterations},password={password}]")


def create_topic(tools, admin, topic):
    tools.run(TOPICS, "--command-config", admin, "--create", "--topic", topic, "--partitions", "1",
              "--replication-factor", "1")


def produce(user, password, topic):
    """Produces one record; returns the delivery error's code (None when it was written)."""
    p = Producer(rdkafka(user, password, **{"message.timeout.ms": 10000}))
    errors = []
    p.produce(topic, b"v", callback=lambda err, msg: errors.append(err))
    p.flush(20)
    assert errors, "no delivery report"
    return errors[0].code() if errors[0] else None


def acl_lines(out):
    return sorted(re.findall(r"\(principal=(\S+), host=(\S+), operation=(\w+), permissionType=(\w+)\)", out))


def test_scram_users(tools, admin, tmp_path):
    user = unique("scram")
    add_scram_user(tools, admin, user, "first-secret")
    out = tools.run(CONFIGS, "--command-config", admin, "--describe", "--entity-type", "users",
                    "--entity-name", user).stdout
    assert f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-512=iterations=8192" in out, out

    # Authenticated; the topic list shows what the user may describe: nothing.
    def listed():
        return tools.run(TOPICS, "--command-config", user_properties(tmp_path, user, "first-secret"), "--list")
    assert eventually(listed).stdout.strip() == ""
    wrong = tools.run(TOPICS, "--command-config", user_properties(tmp_path, user, "wrong"), "--list",
                      check=False, timeout=60)
    assert wrong.returncode != 0 and "Authentication failed" in wrong.stdout + wrong.stderr, wrong.stderr

    # A new password replaces the old one.
    add_scram_user(tools, admin, user, "second-secret", iterations=4096)
    eventually(lambda: tools.run(TOPICS, "--command-config", user_properties(tmp_path, user, "second-secret"), "--list"))
    old = tools.run(TOPICS, "--command-config", user_properties(tmp_path, user, "first-secret"), "--list",
                    check=False, timeout=60)
    assert old.returncode != 0, old.stdout

    tools.run(CONFIGS, "--command-config", admin, "--alter", "--entity-type", "users", "--entity-name", user,
              "--delete-config", "SCRAM-SHA-512")
    out = tools.run(CONFIGS, "--command-config", admin, "--describe", "--entity-type", "users",
                    "--entity-name", user).stdout
    assert "SCRAM-SHA-512" not in out, out
    gone = tools.run(CONFIGS, "--command-config", admin, "--alter", "--entity-type", "users", "--entity-name", user,
                     "--delete-config", "SCRAM-SHA-512", check=False)
    assert gone.returncode != 0 and "Attempt to delete a user credential that does not exist" in gone.stdout + gone.stderr

    bad = tools.run(CONFIGS, "--command-config", admin, "--alter", "--entity-type", "users", "--entity-name", user,
                    "--add-config", "SCRAM-SHA-512=[iterations=20000,password=x]", check=False)
    assert bad.returncode != 0 and "UnacceptableCredentialException: Too many iterations" in bad.stdout + bad.stderr, bad.stdout + bad.stderr


def test_acls(tools, admin, tmp_path):
    user = unique("acl")
    topic, group = unique("acl-topic"), unique("acl-group")
    add_scram_user(tools, admin, user, "secret")
    create_topic(tools, admin, topic)
    principal = f"User:{user}"

    assert eventually(lambda: produce(user, "secret", topic)) == KafkaError.TOPIC_AUTHORIZATION_FAILED

    tools.run(ACLS, "--command-config", admin, "--add", "--allow-principal", principal,
              "--operation", "Write", "--topic", topic)
    out = tools.run(ACLS, "--command-config", admin, "--list", "--topic", topic).stdout
    assert f"name={topic}, patternType=LITERAL" in out, out
    assert acl_lines(out) == [(principal, "*", "WRITE", "ALLOW")], out
    assert eventually(lambda: produce(user, "secret", topic)) is None

    # The consumer shortcut: READ and DESCRIBE on the topic, READ on the group.
    tools.run(ACLS, "--command-config", admin, "--add", "--allow-principal", principal, "--consumer",
              "--topic", topic, "--group", group)
    out = tools.run(ACLS, "--command-config", admin, "--list", "--principal", principal).stdout
    assert sorted(op for _, _, op, _ in acl_lines(out)) == ["DESCRIBE", "READ", "READ", "WRITE"], out
    c = Consumer(rdkafka(user, "secret", **{"group.id": group, "auto.offset.reset": "earliest"}))
    try:
        c.subscribe([topic])
        msg = None
        for _ in range(60):
            msg = c.poll(1.0)
            if msg is not None:
                break
        assert msg is not None and msg.error() is None and msg.value() == b"v", msg and msg.error()
        c.commit(message=msg, asynchronous=False)
    finally:
        c.close()

    # Deny wins over allow; hosts are matched.
    tools.run(ACLS, "--command-config", admin, "--add", "--deny-principal", principal,
              "--deny-host", "127.0.0.1", "--operation", "Write", "--topic", topic)
    assert eventually(lambda: produce(user, "secret", topic)) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    tools.run(ACLS, "--command-config", admin, "--remove", "--force", "--deny-principal", principal,
              "--deny-host", "127.0.0.1", "--operation", "Write", "--topic", topic)
    assert eventually(lambda: produce(user, "secret", topic)) is None

    # Prefixed patterns.
    prefix = topic[:-4]
    tools.run(ACLS, "--command-config", admin, "--add", "--allow-principal", principal, "--operation", "Describe",
              "--topic", prefix, "--resource-pattern-type", "prefixed")
    out = tools.run(ACLS, "--command-config", admin, "--list", "--topic", prefix,
                    "--resource-pattern-type", "prefixed").stdout
    assert f"name={prefix}, patternType=PREFIXED" in out and acl_lines(out) == [(principal, "*", "DESCRIBE", "ALLOW")], out
    # A "match" filter finds the literal and the prefixed ACLs that apply to the topic.
    out = tools.run(ACLS, "--command-config", admin, "--list", "--topic", topic, "--resource-pattern-type", "match").stdout
    assert f"patternType=PREFIXED" in out and f"patternType=LITERAL" in out, out

    # A user without CLUSTER ALTER cannot change ACLs.
    denied = tools.run(ACLS, "--command-config", user_properties(tmp_path, user, "secret"), "--add",
                       "--allow-principal", principal, "--operation", "All", "--topic", "*", check=False)
    assert "ClusterAuthorizationException" in denied.stdout + denied.stderr, denied.stdout + denied.stderr

    tools.run(ACLS, "--command-config", admin, "--remove", "--force", "--topic", topic)
    tools.run(ACLS, "--command-config", admin, "--remove", "--force", "--group", group)
    tools.run(ACLS, "--command-config", admin, "--remove", "--force", "--topic", prefix,
              "--resource-pattern-type", "prefixed")
    out = tools.run(ACLS, "--command-config", admin, "--list", "--principal", principal).stdout
    assert acl_lines(out) == [], out
    assert eventually(lambda: produce(user, "secret", topic)) == KafkaError.TOPIC_AUTHORIZATION_FAILED


def quota_describe(tools, admin, *entity):
    return tools.run(CONFIGS, "--command-config", admin, "--describe", *entity).stdout


def test_client_quotas(tools, admin):
    user, client = unique("quota-user"), unique("quota-client")
    alter = ["--command-config", admin, "--alter"]
    tools.run(CONFIGS, *alter, "--entity-type", "users", "--entity-name", user,
              "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
    tools.run(CONFIGS, *alter, "--entity-type", "clients", "--entity-name", client,
              "--add-config", "request_percentage=50")
    tools.run(CONFIGS, *alter, "--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
              "--entity-name", client, "--add-config", "producer_byte_rate=4096")
    tools.run(CONFIGS, *alter, "--entity-type", "users", "--entity-default", "--add-config", "producer_byte_rate=8192")

    out = quota_describe(tools, admin, "--entity-type", "users", "--entity-name", user)
    assert f"Quota configs for user-principal '{user}' are" in out, out
    assert "producer_byte_rate=1048576.0" in out and "consumer_byte_rate=2097152.0" in out, out
    out = quota_describe(tools, admin, "--entity-type", "clients", "--entity-name", client)
    assert f"Quota configs for client-id '{client}' are request_percentage=50.0" in out, out
    out = quota_describe(tools, admin, "--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
                         "--entity-name", client)
    assert f"Quota configs for user-principal '{user}', client-id '{client}' are producer_byte_rate=4096.0" in out, out
    out = quota_describe(tools, admin, "--entity-type", "users", "--entity-default")
    assert "Quota configs for the default user-principal are producer_byte_rate=8192.0" in out, out
    out = quota_describe(tools, admin, "--entity-type", "users")
    assert f"user-principal '{user}'" in out and "the default user-principal" in out, out

    bad = tools.run(CONFIGS, *alter, "--entity-type", "clients", "--entity-name", client,
                    "--add-config", "producer_byte_rate=-1", check=False)
    assert bad.returncode != 0, bad.stdout

    tools.run(CONFIGS, *alter, "--entity-type", "users", "--entity-default", "--delete-config", "producer_byte_rate")
    tools.run(CONFIGS, *alter, "--entity-type", "users", "--entity-name", user,
              "--delete-config", "producer_byte_rate,consumer_byte_rate")
    tools.run(CONFIGS, *alter, "--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
              "--entity-name", client, "--delete-config", "producer_byte_rate")
    tools.run(CONFIGS, *alter, "--entity-type", "clients", "--entity-name", client, "--delete-config", "request_percentage")
    for entity in (["--entity-type", "users", "--entity-name", user], ["--entity-type", "clients", "--entity-name", client],
                   ["--entity-type", "users", "--entity-default"]):
        out = quota_describe(tools, admin, *entity)
        assert "_rate=" not in out and "request_percentage" not in out, out


QUOTA = 1 << 20  # bytes per second


def test_producer_held_to_quota(tools, admin):
    """kafka-producer-perf-test.sh with a 1 MiB/s producer_byte_rate on its client id and no
    throughput limit of its own, for about a minute. Kafka's rate is measured over ten
    one-second samples, so a new client sends a whole window at once and then, each time
    old samples expire, another burst: any one 30 s span can be a burst more or less than
    the quota. Over every 30 s span after the first 10 s, the mean rate stays within 10% of
    the quota."""
    topic, client = unique("quota-topic"), unique("perf")
    create_topic(tools, admin, topic)
    tools.run(CONFIGS, "--command-config", admin, "--alter", "--entity-type", "clients", "--entity-name", client,
              "--add-config", f"producer_byte_rate={QUOTA}")
    records, size = 60_000, 1000
    out = tools.run(PERF, "--topic", topic, "--num-records", str(records), "--record-size", str(size),
                    "--throughput", "-1", "--reporting-interval", "1000", "--command-config", admin,
                    "--command-property", f"bootstrap.servers={env('WEIR_AUTHZ_BOOTSTRAP')}", f"client.id={client}",
                    "acks=1", timeout=240).stdout
    # "N records sent, R records/sec (M MB/sec), ..." per interval (N / R seconds), then the run's.
    lines = [(int(n), float(r)) for n, r in re.findall(r"^(\d+) records sent, ([\d.]+) records/sec", out, re.M)]
    assert len(lines) >= 3 and lines[-1][0] == records, out
    # Records acknowledged by the end of each whole second.
    acked, t, sent = [0], 0.0, 0
    for n, r in lines[:-1]:
        t += n / r
        sent += n
        while len(acked) <= int(t):
            acked.append(acked[-1])
        acked[int(t)] = sent
    print("acked per second:", [acked[i + 1] - acked[i] for i in range(len(acked) - 1)])
    rates = [(acked[s + 30] - acked[s]) * size / 30 for s in range(10, len(acked) - 30)]
    assert len(rates) >= 10, out
    mean = sum(rates) / len(rates)
    print(f"\nrate over 30 s spans from {min(rates) / QUOTA:.2f} to {max(rates) / QUOTA:.2f} of the quota, "
          f"mean {mean / QUOTA:.3f} ({len(rates)} spans); whole run: {lines[-1][1] * size / QUOTA:.3f}")
    assert 0.9 * QUOTA <= mean <= 1.1 * QUOTA, out


TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"


def init_transactions(user, password, txn_id):
    """A transactional producer that got its producer id, or the code InitProducerId was refused with."""
    p = Producer(rdkafka(user, password, **{"transactional.id": txn_id, "transaction.timeout.ms": 60000}))
    try:
        p.init_transactions(30)
    except KafkaException as e:
        return e.args[0].code()
    return p


def test_transactional_id_acls(tools, admin, tmp_path):
    """A transactional producer is refused without WRITE on its transactional id and allowed by
    kafka-acls --producer --transactional-id; its committed records, and not its aborted ones, reach a
    read_committed consumer; sending offsets needs READ on the group; kafka-transactions lists and
    describes only the transactional ids a user may describe."""
    user, other = unique("txn"), unique("txn-other")
    topic, txn_id, group = unique("txn-topic"), unique("txn-id"), unique("txn-group")
    for u in (user, other):
        add_scram_user(tools, admin, u, "secret")
    create_topic(tools, admin, topic)
    principal = f"User:{user}"
    tools.run(ACLS, "--command-config", admin, "--add", "--allow-principal", principal,
              "--operation", "Write", "--topic", topic)
    assert init_transactions(user, "secret", txn_id) == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    tools.run(ACLS, "--command-config", admin, "--add", "--allow-principal", principal, "--producer",
              "--topic", topic, "--transactional-id", txn_id)
    out = tools.run(ACLS, "--command-config", admin, "--list", "--transactional-id", txn_id).stdout
    assert acl_lines(out) == [(principal, "*", "DESCRIBE", "ALLOW"), (principal, "*", "WRITE", "ALLOW")], out
    p = init_transactions(user, "secret", txn_id)
    assert isinstance(p, Producer), KafkaError(p)
    for value, commit in ((b"committed", True), (b"aborted", False)):
        p.begin_transaction()
        p.produce(topic, value)
        p.flush(20)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)

    # Offsets sent to the transaction need READ on the group.
    reader = unique("txn-read")
    c = Consumer(rdkafka(user, "secret", **{"group.id": group, "enable.auto.commit": False}))
    try:
        offsets = [TopicPartition(topic, 0, 1)]
        p.begin_transaction()
        with pytest.raises(KafkaException) as e:
            p.send_offsets_to_transaction(offsets, c.consumer_group_metadata(), 30)
        assert e.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED, e.value
        p.abort_transaction(30)
        tools.run(ACLS, "--command-config", admin, "--add", "--allow-principal", principal, "--consumer",
                  "--topic", topic, "--group", group, "--group", reader)
        p.begin_transaction()
        p.send_offsets_to_transaction(offsets, c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        assert c.committed([TopicPartition(topic, 0)], 30)[0].offset == 1
    finally:
        c.close()

    read = Consumer(rdkafka(user, "secret", **{"group.id": reader, "auto.offset.reset": "earliest",
                                                "isolation.level": "read_committed"}))
    try:
        read.subscribe([topic])
        values = []
        for _ in range(30):
            msg = read.poll(1.0)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
            elif values:
                break
        assert values == [b"committed"], values
    finally:
        read.close()

    def listed(who):
        props = user_properties(tmp_path, who, "secret")
        return tools.run(TRANSACTIONS, "--command-config", props, "list").stdout
    out = listed(user)
    assert txn_id in out, out
    out = listed(other)
    assert txn_id not in out, out
    denied = tools.run(TRANSACTIONS, "--command-config", user_properties(tmp_path, other, "secret"), "describe",
                       "--transactional-id", txn_id, check=False)
    # Refused when the tool looks for the transaction's coordinator.
    assert denied.returncode != 0 and "failed due to authorization failure" in denied.stdout + denied.stderr, \
        denied.stdout + denied.stderr
    out = tools.run(TRANSACTIONS, "--command-config", user_properties(tmp_path, user, "secret"), "describe",
                    "--transactional-id", txn_id).stdout
    assert txn_id in out and "CompleteCommit" in out, out


def test_regex_subscription_sees_only_describable_topics(tools, admin):
    """A consumer-protocol (KIP-848) member subscribing by regex is assigned only the matching topics
    its user may describe: the group coordinator resolves the regex and filters it with the member's
    principal (Kafka's TopicRegexResolver). The admin describes the group's assignment."""
    user = unique("rx")
    prefix, group = unique("rx-topic"), unique("rx-group")
    readable, hidden = f"{prefix}-open", f"{prefix}-closed"
    add_scram_user(tools, admin, user, "secret")
    for topic in (readable, hidden):
        create_topic(tools, admin, topic)
    tools.run(ACLS, "--command-config", admin, "--add", "--allow-principal", f"User:{user}", "--consumer",
              "--topic", readable, "--group", group)
    c = Consumer(rdkafka(user, "secret", **{"group.id": group, "group.protocol": "consumer"}))
    try:
        c.subscribe([f"^{prefix}-.*"])

        def assigned():
            c.poll(0.5)
            out = tools.run(GROUPS, "--command-config", admin, "--describe", "--group", group, "--members",
                            "--verbose").stdout
            assert readable in out, out
            return out
        out = eventually(assigned, timeout=60)
        assert hidden not in out, out
        assert {tp.topic for tp in c.assignment()} == {readable}, c.assignment()
    finally:
        c.close()
