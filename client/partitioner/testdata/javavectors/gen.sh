#!/usr/bin/env bash
# Regenerates the Java reference vectors the Go tests compare against:
#   testdata/murmur2_java.tsv     keyed partitioning (Utils.murmur2, BuiltInPartitioner.partitionForKey)
#   testdata/builtin_java.txt     KIP-794 sticky switching transcript (BuiltInPartitioner)
# Needs java (17+) and mvn; fetches org.apache.kafka:kafka-clients:4.3.0 from Maven Central.
# The outputs are committed; run this only after changing the programs beside this script.
set -euo pipefail
proj="$(cd "$(dirname "$0")" && pwd)"
here="$(cd "$proj/../.." && pwd)" # client/partitioner
mvn -q -B -f "$proj/pom.xml" compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
cp="$proj/target/classes:$(cat "$proj/target/classpath.txt")"
# -ea turns on the partitioner's own assertions, so a misuse in the driver fails loudly.
java -ea -cp "$cp" weirvectors.Murmur2Vectors >"$here/testdata/murmur2_java.tsv"
java -ea -cp "$cp" org.apache.kafka.clients.producer.internals.BuiltInTranscript >"$here/testdata/builtin_java.txt"
echo "wrote $here/testdata/murmur2_java.tsv ($(wc -l <"$here/testdata/murmur2_java.tsv") lines)"
echo "wrote $here/testdata/builtin_java.txt ($(wc -l <"$here/testdata/builtin_java.txt") lines)"
