# shellcheck shell=bash
# Three-node clusters for the bench/replication scripts, sourced by them:
# weir (`weir cluster up --nodes 3`) or Apache Kafka 4.3 (three KRaft
# brokers through scripts/apache-kafka: node 1 broker and controller,
# nodes 2 and 3 brokers). The caller sets KAFKA (scripts/apache-kafka) and
# BIN (where the weir binary is); up_weir and up_kafka set BS (the
# bootstrap string), PIDS (the three broker processes) and CL_SIDE.

BS="" CL_PID="" CL_DIR="" CL_SIDE="" PIDS=()

# A base with n consecutive free ports below the ephemeral range.
free_base() {
	python3 - "$1" <<'EOF'
import random, socket, sys, time
n = int(sys.argv[1])
for i in range(3000):
    if i and i % 100 == 0:
        time.sleep(1)
    base = random.randrange(20000, 32700 - n)
    socks = []
    try:
        for p in range(base, base + n):
            s = socket.socket(); s.bind(("127.0.0.1", p)); socks.append(s)
        print(base); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
else:
    sys.exit("no free port range")
EOF
}

# up_weir DIR [cluster up flags] [-- serve flags]: three weir nodes on six
# consecutive free ports.
up_weir() {
	CL_DIR=$1 CL_SIDE=weir
	shift
	local base
	base=$(free_base 6)
	"$BIN/weir" cluster up --nodes 3 --dir "$CL_DIR" --base-port "$base" "$@" >"$CL_DIR.out" 2>"$CL_DIR.err" &
	CL_PID=$!
	for _ in $(seq 1 600); do
		if [ -s "$CL_DIR.out" ]; then
			BS=$(head -n 1 "$CL_DIR.out")
			PIDS=()
			for n in 1 2 3; do PIDS+=("$(cat "$CL_DIR/node-$n/pid")"); done
			return 0
		fi
		kill -0 "$CL_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$CL_DIR.err" >&2
	return 1
}

# up_kafka DIR [--prop k=v]...: three Kafka 4.3 nodes, heap 1g each, the
# props given to every node.
up_kafka() {
	CL_DIR=$1 CL_SIDE=kafka
	shift
	local base cid n voters
	base=$(free_base 4)
	cid=$(head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=' | sed 's/^-/A/')
	voters="1@127.0.0.1:$((base + 3))"
	mkdir -p "$CL_DIR"
	BS=""
	PIDS=()
	for n in 1 2 3; do
		local extra=(--prop "node.id=$n" --prop "controller.quorum.voters=$voters"
			--prop "offsets.topic.replication.factor=3" --prop "min.insync.replicas=1")
		if [ "$n" -gt 1 ]; then
			extra+=(--prop "process.roles=broker" --prop "listeners=PLAINTEXT://127.0.0.1:$((base + n - 1))")
		fi
		"$KAFKA" start --dir "$CL_DIR/node-$n" --port "$((base + n - 1))" --controller-port "$((base + 3))" \
			--cluster-id "$cid" --heap 1g "${extra[@]}" "$@" >/dev/null
		PIDS+=("$(cat "$CL_DIR/node-$n/broker.pid")")
		BS="${BS:+$BS,}127.0.0.1:$((base + n - 1))"
	done
}

# down stops the cluster up_weir or up_kafka started, if any.
down() {
	case $CL_SIDE in
	weir)
		[ -n "$CL_PID" ] && kill -INT "$CL_PID" 2>/dev/null || true
		[ -n "$CL_PID" ] && wait "$CL_PID" 2>/dev/null || true
		;;
	kafka)
		for n in 3 2 1; do "$KAFKA" stop --dir "$CL_DIR/node-$n" >/dev/null 2>&1 || true; done
		;;
	esac
	CL_PID="" CL_DIR="" CL_SIDE=""
}

# CPU seconds (user+system) of each node's process, space-separated.
node_cpu() {
	local hz out="" p
	hz=$(getconf CLK_TCK)
	for p in "${PIDS[@]}"; do
		out+=" $(awk -v hz="$hz" '{sub(/.*\) /, ""); split($0, f, " "); printf "%.2f", (f[12] + f[13]) / hz}' "/proc/$p/stat" 2>/dev/null || echo 0)"
	done
	echo "$out"
}
