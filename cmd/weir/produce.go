package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"weir/client"
)

// stdin is where weir produce reads; tests replace it.
var stdin io.Reader = os.Stdin

func runProduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("produce", "produce --topic NAME [flags] < lines", stderr)
	cf := addClientFlags(fs, "producer property")
	topic := fs.String("topic", "", "topic to write to (required)")
	keySep := fs.String("key-separator", "", "split each line into key and value at the first occurrence of this string (default: no key)")
	headerSep := fs.String("headers-separator", "", "lines start with headers k:v,k2:v2 followed by this separator (default: no headers)")
	partition := fs.Int("partition", -1, "write every record to this partition (default: the partitioner chooses)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireFlag(fs, "topic", *topic); err != nil {
		return err
	}
	props, err := cf.config()
	if err != nil {
		return err
	}
	p, err := client.NewProducer(props)
	if err != nil {
		return err
	}
	var sent, failed atomic.Int64
	var firstErr error
	var mu sync.Mutex
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		rec := &client.Record{Topic: *topic}
		if *partition >= 0 {
			rec.Partition = client.PartitionOf(int32(*partition))
		}
		if *headerSep != "" {
			h, rest, ok := strings.Cut(line, *headerSep)
			if ok {
				line = rest
				for _, kv := range strings.Split(h, ",") {
					if k, v, ok := strings.Cut(kv, ":"); ok {
						rec.Headers = append(rec.Headers, client.Header{Key: k, Value: []byte(v)})
					}
				}
			}
		}
		if *keySep != "" {
			if k, v, ok := strings.Cut(line, *keySep); ok {
				rec.Key, line = []byte(k), v
			}
		}
		rec.Value = []byte(line)
		p.Send(ctx, rec, func(_ client.RecordMetadata, err error) {
			if err != nil {
				failed.Add(1)
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			sent.Add(1)
		})
	}
	closeCtx, cancel := cf.context(context.WithoutCancel(ctx))
	defer cancel()
	cerr := p.Close(closeCtx)
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	fmt.Fprintf(stderr, "%d records written to %s, %d failed\n", sent.Load(), *topic, failed.Load())
	if firstErr != nil {
		return firstErr
	}
	return cerr
}
