package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/internal/testport"
)

// TestConsoleLoginAsPrincipal: with a SASL listener and the
// StandardAuthorizer on, the web console asks for a login, refuses a
// wrong password, and shows a logged-in user only the topics that user's
// principal may describe.
func TestConsoleLoginAsPrincipal(t *testing.T) {
	addr, consoleAddr := testport.Addr(t), testport.Addr(t)
	serveWithConfig(t, `
listeners=SASL_PLAINTEXT://`+addr+`
security.inter.broker.protocol=SASL_PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="admin" password="admin-secret" user_admin="admin-secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
`, "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]", "--console-listen", consoleAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, name := range []string{"visible", "hidden"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	acl := kadm.NewACLs().Allow("User:alice").Topics("visible").Operations(kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("ACL: %v %v", err, res)
	}

	jar, _ := cookiejar.New(nil)
	web := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	base := "http://" + consoleAddr
	fetch := func(method, path string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, base+path, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := web.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := fetch("GET", "/", nil); code != http.StatusOK || !strings.Contains(body, `name="password"`) {
		t.Fatalf("the console without a login: %d, want the login form", code)
	}
	if code, body := fetch("POST", "/login", url.Values{"user": {"alice"}, "password": {"wrong"}}); code != http.StatusUnauthorized || !strings.Contains(body, "login failed") {
		t.Fatalf("a wrong password: %d %s", code, body)
	}
	code, body := fetch("POST", "/login", url.Values{"user": {"alice"}, "password": {"alice-secret"}})
	if code != http.StatusOK || !strings.Contains(body, "visible") || strings.Contains(body, "hidden") {
		t.Fatalf("alice's overview: %d, shows visible %v, shows hidden %v", code, strings.Contains(body, "visible"), strings.Contains(body, "hidden"))
	}
}
