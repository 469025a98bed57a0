package config

import (
	"testing"
)

// TestTables checks the invariants every table entry must keep: a
// description, a support level, broker synonyms that exist, and topic
// defaults equal to what a broker with no settings supplies, as in Kafka.
func TestTables(t *testing.T) {
	b := mustBroker(t, nil)
	for _, d := range TopicDefs() {
		if d.Doc == "" || d.Support == 0 || d.Type == 0 {
			t.Errorf("topic config %s lacks a doc, support level or type", d.Name)
		}
		for _, s := range d.Synonyms {
			bd, ok := BrokerDef(s.Name)
			if !ok {
				t.Errorf("topic config %s: synonym %s is not a broker config", d.Name, s.Name)
				continue
			}
			if s.Scale == 0 && bd.Type != d.Type && !(bd.Type == Int && d.Type == Long) {
				t.Errorf("topic config %s (%s): synonym %s has type %s", d.Name, typeName(d.Type), s.Name, typeName(bd.Type))
			}
		}
		if got, want := b.topicDefault(d.Name).String(), d.DefaultValue().String(); got != want {
			t.Errorf("topic config %s: broker default %q, topic default %q", d.Name, got, want)
		}
	}
	for _, d := range BrokerDefs() {
		if d.Doc == "" || d.Support == 0 || d.Type == 0 {
			t.Errorf("broker config %s lacks a doc, support level or type", d.Name)
		}
	}
	for name, group := range brokerSynonymGroups {
		for _, n := range append(group, name) {
			if _, ok := BrokerDef(n); !ok {
				t.Errorf("synonym group of %s names unknown broker config %s", name, n)
			}
		}
	}
}

// TestDynamicBrokerConfigs pins which broker configs may change at run
// time: Kafka's reconfigurable log configs are the first synonym of each
// topic config; the hours and minutes forms are read-only.
func TestDynamicBrokerConfigs(t *testing.T) {
	dynamic := map[string]bool{}
	for _, d := range TopicDefs() {
		if len(d.Synonyms) > 0 {
			dynamic[d.Synonyms[0].Name] = true
		}
	}
	for _, n := range []string{FaultProduceResponseMs, FaultFetchResponseMs, FaultProduceResponseConcurrentMs, FaultFetchResponseConcurrentMs, LeaderHints, ShareFetchElsewhereWaitMs,
		// Kafka's reconfigurable producer-state configs.
		ProducerIDExpiration, TransactionPartitionVerify,
		// Kafka's per-broker reconfigurable keystore and truststore.
		SslKeystoreType, SslKeystoreLocation, SslKeystorePassword, SslKeyPassword, SslKeystoreChain, SslKeystoreKey,
		SslTruststoreType, SslTruststoreLocation, SslTruststorePassword, SslTruststoreCerts,
		// Kafka's LogCleaner.ReconfigurableConfigs.
		CleanerThreads, CleanerDedupeBufferSize, CleanerIOBufferSize, CleanerIOBufferLoadFactor, CleanerIOMaxBytesPerSec, CleanerBackoffMs,
		// weir's cleaner settings.
		WeirLogCleanerNice} {
		dynamic[n] = true
	}
	for _, d := range BrokerDefs() {
		if d.Dynamic != dynamic[d.Name] {
			t.Errorf("broker config %s: Dynamic = %v, want %v", d.Name, d.Dynamic, dynamic[d.Name])
		}
	}
}

func TestDefLookupCopies(t *testing.T) {
	d, ok := TopicDef(RetentionMs)
	if !ok || d.Type != Long || d.Default != "604800000" {
		t.Fatalf("TopicDef(retention.ms) = %+v, %v", d, ok)
	}
	d.Synonyms[0].Name = "changed"
	if again, _ := TopicDef(RetentionMs); again.Synonyms[0].Name != "log.retention.ms" {
		t.Fatal("TopicDef returned a definition sharing the table's synonyms")
	}
	if _, ok := TopicDef("message.format.version"); ok {
		t.Fatal("message.format.version was removed in Kafka 4.0")
	}
	if _, ok := BrokerDef("no.such.config"); ok {
		t.Fatal("BrokerDef found an unknown name")
	}
	if Honoured.String() != "honoured" || Stored.String() != "stored only" {
		t.Fatal("Support strings changed")
	}
}
