package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/testport"
)

// TestServeScramUsersAndACLs: with the StandardAuthorizer on, a super
// user creates a SCRAM user through AlterUserScramCredentials, who can
// then authenticate but not produce until an ACL allows it; a
// credential in the metadata log wins over --add-scram's, and a deleted
// one no longer authenticates.
func TestServeScramUsersAndACLs(t *testing.T) {
	addr := testport.Addr(t)
	serveWithConfig(t, `
listeners=SASL_PLAINTEXT://`+addr+`
security.inter.broker.protocol=SASL_PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin="admin-secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
`, "--add-scram", "SCRAM-SHA-256=[name=alice,password=from-flag]")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	scramAs := func(user, pass string) kgo.Opt {
		return kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
	}
	produce := func(user, pass string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), scramAs(user, pass), kgo.RetryTimeout(3*time.Second),
			kgo.RecordRetries(2), kgo.DefaultProduceTopic("orders"))
		if err != nil {
			return err
		}
		defer cl.Close()
		// A failed authentication is retried until the deadline.
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr()
	}
	alter := func(upserts []kadm.UpsertSCRAM, deletes []kadm.DeleteSCRAM) {
		t.Helper()
		res, err := adm.AlterUserSCRAMs(ctx, deletes, upserts)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Error(); err != nil {
			t.Fatal(err)
		}
	}
	alter([]kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "carol-secret"}}, nil)
	// Authenticated, not authorized.
	if err := produce("carol", "carol-secret"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("carol without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce("carol", "wrong"); err == nil || errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("carol with a wrong password: %v, want an authentication failure", err)
	}
	acl := kadm.NewACLs().Allow("User:carol").Topics("orders").Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	if err := produce("carol", "carol-secret"); err != nil {
		t.Fatalf("carol allowed to write: %v", err)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || len(described[0].Described) != 1 || described[0].Described[0].Principal != "User:carol" {
		t.Fatalf("DescribeACLs: %v %+v", err, described)
	}

	// --add-scram serves alice until the metadata log has her credential.
	if err := produce("alice", "from-flag"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice from the flag: %v", err)
	}
	alter([]kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "from-log"}}, nil)
	if err := produce("alice", "from-flag"); err == nil || errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's flag password after the log's: %v", err)
	}
	if err := produce("alice", "from-log"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice from the log: %v", err)
	}

	described2, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || len(described2) != 2 || described2["carol"].CredInfos[0].Iterations != 8192 {
		t.Fatalf("DescribeUserSCRAMs: %v %+v", err, described2)
	}
	alter(nil, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}})
	if err := produce("carol", "carol-secret"); err == nil {
		t.Fatal("carol authenticated after her credential was deleted")
	}
}
