package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaNodes is Apache Kafka 4.3 as the benchmark runs it for comparison:
// three KRaft brokers on this machine through scripts/apache-kafka, node 1
// a combined broker and controller (the only voter), nodes 2 and 3 brokers.
// Ports: base, base+1, base+2 for the brokers, base+3 for the controller.
type kafkaNodes struct {
	script string
	dir    string
	base   int
	heap   string
	cid    string
}

func newKafkaNodes(script, dir string, base int, heap string) *kafkaNodes {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	// A Kafka cluster id: 16 bytes, URL-safe base64 without padding, not
	// starting with '-'.
	cid := base64.RawURLEncoding.EncodeToString(raw)
	if strings.HasPrefix(cid, "-") {
		cid = "A" + cid[1:]
	}
	return &kafkaNodes{script: script, dir: dir, base: base, heap: heap, cid: cid}
}

func (k *kafkaNodes) nodeDir(n int) string { return filepath.Join(k.dir, fmt.Sprintf("node-%d", n)) }

func (k *kafkaNodes) kafkaAddr(n int) string { return fmt.Sprintf("127.0.0.1:%d", k.base+n-1) }

func (k *kafkaNodes) bootstrap() string {
	return strings.Join([]string{k.kafkaAddr(1), k.kafkaAddr(2), k.kafkaAddr(3)}, ",")
}

// start starts node n (first start: formats its data with the cluster's
// id) and returns once it serves.
func (k *kafkaNodes) start(ctx context.Context, n int) error {
	args := []string{"start", "--dir", k.nodeDir(n), "--port", strconv.Itoa(k.base + n - 1),
		"--controller-port", strconv.Itoa(k.base + 3), "--cluster-id", k.cid, "--heap", k.heap, "--timeout", "600",
		"--prop", "node.id=" + strconv.Itoa(n),
		"--prop", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", k.base+3),
		"--prop", "offsets.topic.replication.factor=3",
		// Many partitions: room for their file handles and mappings.
		"--prop", "num.partitions=1"}
	if n > 1 {
		args = append(args, "--prop", "process.roles=broker", "--prop", "listeners=PLAINTEXT://"+k.kafkaAddr(n))
	}
	cmd := exec.CommandContext(ctx, k.script, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("start kafka node %d: %v\n%s", n, err, out)
	}
	return nil
}

func (k *kafkaNodes) up(ctx context.Context) error {
	for n := 1; n <= 3; n++ {
		if err := k.start(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func (k *kafkaNodes) pid(n int) int {
	raw, err := os.ReadFile(filepath.Join(k.nodeDir(n), "broker.pid"))
	if err != nil {
		return -1
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return pid
}

func (k *kafkaNodes) stopAll() {
	for n := 3; n >= 1; n-- {
		_ = exec.Command(k.script, "stop", "--dir", k.nodeDir(n), "--kill").Run()
	}
}

var heapUsed = regexp.MustCompile(`(?m)total \d+K, used (\d+)K`)

// jvmHeap is a node's live heap: used bytes after a full collection
// (jcmd GC.run, then GC.heap_info).
func jvmHeap(pid int) (int64, bool) {
	if err := exec.Command("jcmd", strconv.Itoa(pid), "GC.run").Run(); err != nil {
		return 0, false
	}
	out, err := exec.Command("jcmd", strconv.Itoa(pid), "GC.heap_info").Output()
	if err != nil {
		return 0, false
	}
	m := heapUsed.FindSubmatch(out)
	if m == nil {
		return 0, false
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10, true
}

// shutdownKafka SIGTERMs broker 3 (node 1 runs the controller) and times
// it: when Metadata from node 1 shows none of its leaderships left (the
// controller committed their move), and when the process exits.
func (b *bench) shutdownKafka(ctx context.Context, cl *kgo.Client) error {
	led, _, err := leaders(ctx, cl, 1)
	if err != nil {
		return err
	}
	victim := int32(3)
	b.r.victimLeads = led[victim]
	b.m("shutdown.victim_node", victim, "")
	b.m("shutdown.victim_leaderships", led[victim], "")
	pid := b.pid(int(victim))
	ss := b.sched()
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	moved := false
	for alive(pid) {
		if time.Since(start) > b.o.exitWait {
			syscall.Kill(pid, syscall.SIGKILL)
			b.r.shutdownStuck = true
			break
		}
		if !moved {
			if l, _, err := leaders(ctx, cl, 1); err == nil && l[victim] == 0 {
				moved = true
				b.r.shutdownCommitted = time.Since(start)
				b.m("shutdown.leaderships_moved_at", ms(b.r.shutdownCommitted), "ms")
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	ss.report("shutdown")
	if !b.r.shutdownStuck {
		b.r.shutdownExit = time.Since(start)
		b.m("shutdown.sigterm_to_exit", ms(b.r.shutdownExit), "ms")
	}
	start = time.Now()
	if err := b.k.start(ctx, int(victim)); err != nil {
		return err
	}
	b.r.restart = time.Since(start)
	b.m("shutdown.restart_ready", ms(b.r.restart), "ms")
	return nil
}
