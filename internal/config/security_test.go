package config

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestSecurityConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"both inter-broker names", map[string]string{InterBrokerListenerName: "PLAINTEXT", SecurityInterBrokerProto: "PLAINTEXT"},
			"Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."},
		{"inter-broker listener not advertised", map[string]string{Listeners: "SASL_SSL://:9093"},
			"inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are SASL_SSL"},
		{"unknown protocol", map[string]string{SecurityInterBrokerProto: "TLS"}, "Invalid value TLS for configuration security.inter.broker.protocol"},
		{"inter-broker mechanism not enabled", map[string]string{Listeners: "SASL_SSL://:9093", SecurityInterBrokerProto: "SASL_SSL", SaslEnabledMechanisms: "PLAIN"},
			"sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms"},
		{"controller listener unknown", map[string]string{ControllerListenerNames: "CONTROLLER"}, "CONTROLLER is not one of the listeners"},
		{"bad prefixed value", map[string]string{"listener.name.plaintext.ssl.client.auth": "maybe"},
			"Invalid value maybe for configuration listener.name.plaintext.ssl.client.auth"},
		{"bad prefixed mechanism value", map[string]string{"listener.name.sasl_ssl.plain.connections.max.reauth.ms": "-1"},
			"listener.name.sasl_ssl.plain.connections.max.reauth.ms"},
	} {
		props := map[string]string{NodeID: "1"}
		for k, v := range tc.props {
			props[k] = v
		}
		_, err := NewBroker(props)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestListenerValues(t *testing.T) {
	b, err := NewBroker(map[string]string{
		NodeID:                                   "1",
		Listeners:                                "INTERNAL://:9092,EXTERNAL://:9093",
		ListenerSecurityMap:                      "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SSL",
		InterBrokerListenerName:                  "internal",
		SaslEnabledMechanisms:                    "SCRAM-SHA-512",
		SaslMechanismInterBroker:                 "SCRAM-SHA-512",
		SslClientAuth:                            "requested",
		"listener.name.external.ssl.client.auth": "required",
		"listener.name.internal.scram-sha-512.sasl.jaas.config":          "x required;",
		"listener.name.internal.connections.max.reauth.ms":               "1000",
		"listener.name.internal.scram-sha-512.connections.max.reauth.ms": "2000",
		"listener.name.internal.not.a.security.config":                   "kept as unknown",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.ListenerValue("EXTERNAL", SslClientAuth).Str(); got != "required" {
		t.Errorf("EXTERNAL ssl.client.auth = %q", got)
	}
	if got := b.ListenerValue("INTERNAL", SslClientAuth).Str(); got != "requested" {
		t.Errorf("INTERNAL ssl.client.auth = %q, want the broker-wide value", got)
	}
	if got := b.ListenerMechanismValue("INTERNAL", "SCRAM-SHA-512", SaslJaasConfig).Str(); got != "x required;" {
		t.Errorf("jaas = %q", got)
	}
	if got := b.ListenerMechanismValue("INTERNAL", "SCRAM-SHA-512", ConnectionsMaxReauthMs).Int64(); got != 2000 {
		t.Errorf("per-mechanism reauth = %d", got)
	}
	if got := b.ListenerMechanismValue("INTERNAL", "PLAIN", ConnectionsMaxReauthMs).Int64(); got != 1000 {
		t.Errorf("per-listener reauth = %d", got)
	}
	if got := b.ListenerMechanismValue("EXTERNAL", "PLAIN", SaslJaasConfig); !got.IsNull() {
		t.Errorf("EXTERNAL jaas = %v, want null", got)
	}
	if ib := b.InterBrokerListener(); ib.Name != "INTERNAL" || ib.Port != 9092 || ib.SecurityProtocol != "SASL_PLAINTEXT" {
		t.Errorf("inter-broker listener %+v", ib)
	}
	if cl := b.ControllerListener(); cl.Name != "INTERNAL" {
		t.Errorf("controller listener %+v", cl)
	}
	if got := b.UnknownKeys(); len(got) != 1 || got[0] != "listener.name.internal.not.a.security.config" {
		t.Errorf("unknown keys %v", got)
	}
	if got := b.ListenerConfigs("internal"); len(got) != 3 {
		t.Errorf("INTERNAL's prefixed configs %v", got)
	}
}

func TestDynamicKeystoreIsPerBroker(t *testing.T) {
	b, err := NewBroker(map[string]string{NodeID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	v := "/new/keystore.p12"
	op := []IncrementalOp{{Name: "listener.name.plaintext.ssl.keystore.location", Op: kmsg.IncrementalAlterConfigOpSet, Value: &v}}
	if _, e := b.IncrementalAlterBroker("", op); e == nil || !strings.Contains(e.Message, "broker id must be specified") {
		t.Fatalf("cluster-wide keystore: %+v", e)
	}
	next, e := b.IncrementalAlterBroker("1", op)
	if e != nil || next["listener.name.plaintext.ssl.keystore.location"] != v {
		t.Fatalf("per-broker keystore: %v %+v", next, e)
	}
	ro := []IncrementalOp{{Name: "listener.name.plaintext.ssl.client.auth", Op: kmsg.IncrementalAlterConfigOpSet, Value: &v}}
	if _, e := b.IncrementalAlterBroker("1", ro); e == nil || !strings.Contains(e.Message, "Cannot update these configs dynamically") {
		t.Fatalf("read-only prefixed config: %+v", e)
	}
	nb, dropped := b.WithDynamic(nil, map[string]string{"listener.name.plaintext.ssl.keystore.location": v})
	if len(dropped) != 0 || nb.ListenerValue("PLAINTEXT", SslKeystoreLocation).Str() != v {
		t.Fatalf("WithDynamic: dropped %v, value %v", dropped, nb.ListenerValue("PLAINTEXT", SslKeystoreLocation))
	}
}
