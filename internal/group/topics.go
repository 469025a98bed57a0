package group

import (
	"sort"
	"sync"
)

// TopicInfo describes one topic as the coordinator needs it.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// Internal topics (__consumer_offsets and friends) never match a
	// subscription regex.
	Internal bool
}

// Topics is the coordinator's read-only view of the cluster's topics. The
// broker implements it over its metadata image; the methods are called from
// the coordinator's goroutines and must be safe for concurrent use. When
// the topics change (created, deleted, partitions added) the broker calls
// Coordinator.TopicsChanged so consumer groups are reassigned.
type Topics interface {
	TopicByName(name string) (TopicInfo, bool)
	TopicByID(id [16]byte) (TopicInfo, bool)
	// EachTopic calls fn for every topic until fn returns false.
	EachTopic(fn func(TopicInfo) bool)
}

// MemTopics is a Topics held in memory, for tests and for wiring before the
// broker's metadata exists. It is safe for concurrent use.
type MemTopics struct {
	mu     sync.RWMutex
	byName map[string]TopicInfo
}

// NewMemTopics returns a MemTopics holding ts.
func NewMemTopics(ts ...TopicInfo) *MemTopics {
	m := &MemTopics{byName: make(map[string]TopicInfo)}
	for _, t := range ts {
		m.byName[t.Name] = t
	}
	return m
}

// Set adds or replaces a topic.
func (m *MemTopics) Set(t TopicInfo) {
	m.mu.Lock()
	m.byName[t.Name] = t
	m.mu.Unlock()
}

// Delete removes a topic.
func (m *MemTopics) Delete(name string) {
	m.mu.Lock()
	delete(m.byName, name)
	m.mu.Unlock()
}

// TopicByName implements Topics.
func (m *MemTopics) TopicByName(name string) (TopicInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t, ok := m.byName[name]
	return t, ok
}

// TopicByID implements Topics.
func (m *MemTopics) TopicByID(id [16]byte) (TopicInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, t := range m.byName {
		if t.ID == id {
			return t, true
		}
	}
	return TopicInfo{}, false
}

// EachTopic implements Topics, in name order.
func (m *MemTopics) EachTopic(fn func(TopicInfo) bool) {
	m.mu.RLock()
	ts := make([]TopicInfo, 0, len(m.byName))
	for _, t := range m.byName {
		ts = append(ts, t)
	}
	m.mu.RUnlock()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	for _, t := range ts {
		if !fn(t) {
			return
		}
	}
}

// noTopics is used when no Topics is configured: nothing exists, and
// commits are not checked against topic metadata.
type noTopics struct{}

func (noTopics) TopicByName(string) (TopicInfo, bool) { return TopicInfo{}, false }
func (noTopics) TopicByID([16]byte) (TopicInfo, bool) { return TopicInfo{}, false }
func (noTopics) EachTopic(func(TopicInfo) bool)       {}
