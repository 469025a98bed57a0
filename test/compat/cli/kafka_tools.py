"""Runs Apache Kafka's command-line tools from the 4.3.0 jars that scripts/apache-kafka
fetches (APACHE_KAFKA may name another copy of that script)."""
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# Short-lived tool JVMs: a small heap, client compiler only, serial GC.
TOOL_JAVA_OPTS = "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

TOPICS = "org.apache.kafka.tools.TopicCommand"
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONFIGS = "kafka.admin.ConfigCommand"
PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"


class Tools:
    """Runs a Kafka tool class through scripts/apache-kafka with --bootstrap-server set."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.script = os.environ.get("APACHE_KAFKA") or str(ROOT / "scripts" / "apache-kafka")
        self.env = dict(os.environ, APACHE_KAFKA_JAVA_OPTS=TOOL_JAVA_OPTS)

    def run(self, cls, *args, stdin=None, timeout=90, check=True):
        cmd = [self.script, "run", cls, "--bootstrap-server", self.bootstrap, *args]
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout, env=self.env)
        if check and p.returncode != 0:
            raise AssertionError(f"{' '.join(cmd[2:4])} {' '.join(args)} exited {p.returncode}\n"
                                 f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
        return p
