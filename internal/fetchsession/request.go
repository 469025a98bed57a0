package fetchsession

import "github.com/twmb/franz-go/pkg/kmsg"

// RequestBuilder fills a Fetch request's topics and forgotten topics
// from a Plan, one entry per topic.
type RequestBuilder struct {
	r         *kmsg.FetchRequest
	topics    map[TopicRef]int
	forgotten map[TopicRef]int
}

// NewRequestBuilder builds into r, whose session fields it sets from pl.
func NewRequestBuilder[K comparable](r *kmsg.FetchRequest, pl Plan[K]) *RequestBuilder {
	r.SessionID, r.SessionEpoch = pl.SessionID, pl.Epoch
	return &RequestBuilder{r: r, topics: map[TopicRef]int{}, forgotten: map[TopicRef]int{}}
}

// Add names a partition with the data asked of it.
func (b *RequestBuilder) Add(topic TopicRef, partition int32, d PartitionData) {
	i, ok := b.topics[topic]
	if !ok {
		i = len(b.r.Topics)
		b.topics[topic] = i
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic.Name, topic.ID
		b.r.Topics = append(b.r.Topics, t)
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = partition
	rp.CurrentLeaderEpoch = d.LeaderEpoch
	rp.FetchOffset = d.FetchOffset
	rp.LastFetchedEpoch = d.LastFetchedEpoch
	rp.LogStartOffset = d.LogStartOffset
	rp.PartitionMaxBytes = d.MaxBytes
	b.r.Topics[i].Partitions = append(b.r.Topics[i].Partitions, rp)
}

// Forget asks the session to drop a partition.
func (b *RequestBuilder) Forget(topic TopicRef, partition int32) {
	i, ok := b.forgotten[topic]
	if !ok {
		i = len(b.r.ForgottenTopics)
		b.forgotten[topic] = i
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID = topic.Name, topic.ID
		b.r.ForgottenTopics = append(b.r.ForgottenTopics, ft)
	}
	b.r.ForgottenTopics[i].Partitions = append(b.r.ForgottenTopics[i].Partitions, partition)
}
