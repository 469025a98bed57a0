package broker

import (
	"context"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeLogDirs v1-5: the one data directory, the size of each
// requested partition (all when Topics is null), and the file system's
// total and usable bytes (v4+); KAFKA_STORAGE_ERROR while the directory
// is offline (logdir.go). OffsetLag is 0: there are no future replicas
// being moved between directories.
var _ = register(handler{key: 35, min: 1, max: 5, serve: (*Broker).handleDescribeLogDirs})

func (b *Broker) handleDescribeLogDirs(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.DataDir
	if err := b.logDir.Err(); err != nil {
		dir.ErrorCode = errCode(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(b.cfg.DataDir, &st); err == nil {
		dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
		dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
	} else {
		dir.TotalBytes, dir.UsableBytes = -1, -1
	}
	add := func(t *topic, parts []*partition) {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = t.name
		for _, p := range parts {
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p.index
			dp.Size = p.log().Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		dir.Topics = append(dir.Topics, dt)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if r.Topics == nil {
		for _, t := range b.topics {
			add(t, localOnly(t.partitions))
		}
	} else {
		for _, rt := range r.Topics {
			t := b.topics[rt.Topic]
			if t == nil {
				continue
			}
			var parts []*partition
			for _, i := range rt.Partitions {
				if i >= 0 && int(i) < len(t.partitions) && t.partitions[i].rep != nil {
					parts = append(parts, t.partitions[i])
				}
			}
			add(t, parts)
		}
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return server.Ready(resp)
}
