// Package console is weir's built-in web console: an HTTP handler
// (Go's net/http and html/template, with its stylesheet and one small
// script embedded) showing a cluster's brokers, metadata quorum, topics,
// partitions, groups and skew, live, and taking the common admin actions.
//
// What it owns: the pages and their JSON/event-stream endpoints
// (http.go, templates/, static/), the parsing of every parameter they
// take (params.go), the views collected for them (views.go), the bounded
// histories behind their charts (series.go), the SVG charts themselves
// (chart.go) and the hub that collects views only while a page watches
// them (hub.go).
//
// What it does not own: the cluster. Every read and every action goes
// through Cluster, which NewKafkaCluster implements over weir's Go client
// as any Kafka client would (Metadata, DescribeCluster, ListOffsets,
// DescribeLogDirs, DescribeConfigs, ListGroups, DescribeGroups,
// ConsumerGroupDescribe, ShareGroupDescribe, OffsetFetch,
// DescribeShareGroupOffsets, Fetch and Produce through a consumer and a
// producer, CreateTopics, DeleteTopics, IncrementalAlterConfigs,
// OffsetCommit, AlterShareGroupOffsets, ElectLeaders,
// AlterPartitionAssignments, ListPartitionReassignments, DescribeQuorum),
// so the console is subject to the same authorization as its principal.
// With Config.Login (security on), each person logs in and gets a Cluster
// and a hub of their own, as their Kafka principal (login.go): the
// console then shows and does exactly what that principal may.
// What Kafka's protocol does not carry (bytes and requests per broker,
// share-partition state counts, ShareFetch waits) comes from each
// broker's Prometheus metrics through Metrics: the local broker's
// registry in process, others' /metrics endpoints over HTTP.
//
// Concurrency: one goroutine (the hub's run) owns the histories and the
// latest views; a collection runs on its own goroutine, one at a time per
// view, and hands its result back; HTTP handlers only ask the hub
// (Snapshot, Watch) and render what it answers. With no page open the hub
// holds no timer and sends no request: an unwatched console costs the
// broker nothing. A watched view is collected at most every Interval, and
// no sooner than ten times its last collection took (up to five
// Intervals), so a slow cluster is asked less often. Close
// stops the hub and waits for its collections.
package console
