// franz-go in the security client matrix (issue 28): it produces and
// consumes over SASL_SSL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and
// OAUTHBEARER (an unsecured token with the scope the broker requires), and
// over mutual TLS, and is refused a wrong credential: a wrong password with
// SASL_AUTHENTICATION_FAILED, a token without the scope with Kafka's
// insufficient_scope, no client certificate with TLS's certificate_required
// alert. The nodes come from with_brokers.py with KIQ_TEST_SECURITY=1.
package interop

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const matrixRecords = 20

// unsecuredToken is a JWT as Kafka's unsecured validator reads it: alg
// none, an empty signature.
func unsecuredToken(t *testing.T, claims map[string]any) string {
	body, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(body) + "."
}

func mechanism(t *testing.T, name string, wrong bool) sasl.Mechanism {
	password := "alice-secret"
	if wrong {
		password = "wrong"
	}
	switch name {
	case "PLAIN":
		return plain.Auth{User: "alice", Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: "alice", Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: "alice", Pass: password}.AsSha512Mechanism()
	}
	claims := map[string]any{"sub": "alice", "exp": time.Now().Add(10 * time.Minute).Unix(), "scope": "kafka"}
	if wrong {
		delete(claims, "scope")
	}
	return oauth.Auth{Token: unsecuredToken(t, claims)}.AsMechanism()
}

func tlsConfig(t *testing.T, certs string, clientCert bool) *tls.Config {
	ca, err := os.ReadFile(filepath.Join(certs, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate in ca.pem")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if clientCert {
		pair, err := tls.LoadX509KeyPair(filepath.Join(certs, "client.pem"), filepath.Join(certs, "client.key"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func matrixClient(t *testing.T, cell string, wrong bool, more ...kgo.Opt) *kgo.Client {
	certs := os.Getenv("KIQ_CERTS")
	opts := []kgo.Opt{kgo.RequestRetries(2)}
	if cell == "mTLS" {
		opts = append(opts, kgo.SeedBrokers(os.Getenv("KIQ_MTLS_BOOTSTRAP")),
			kgo.DialTLSConfig(tlsConfig(t, certs, !wrong)))
	} else {
		opts = append(opts, kgo.SeedBrokers(os.Getenv("KIQ_SASL_SSL_BOOTSTRAP")),
			kgo.DialTLSConfig(tlsConfig(t, certs, false)), kgo.SASL(mechanism(t, cell, wrong)))
	}
	cl, err := kgo.NewClient(append(opts, more...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func roundTrip(t *testing.T, cell string) {
	topic := "matrix-franz-" + strings.ToLower(cell)
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	p := matrixClient(t, cell, false, kgo.AllowAutoTopicCreation())
	defer p.Close()
	var sent []string
	for i := 0; i < matrixRecords; i++ {
		v := fmt.Sprintf("%s-%d", cell, i)
		sent = append(sent, v)
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	c := matrixClient(t, cell, false, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer c.Close()
	var got []string
	for len(got) < len(sent) {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), len(sent), ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != strings.Join(sent, ",") {
		t.Fatalf("consumed %v, produced %v", got, sent)
	}
}

func refusedWith(t *testing.T, cell string) error {
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	cl := matrixClient(t, cell, true)
	defer cl.Close()
	err := cl.Ping(ctx)
	if err == nil {
		t.Fatal("a wrong credential was let in")
	}
	return err
}

func TestSecurityMatrix(t *testing.T) {
	if os.Getenv("KIQ_SASL_SSL_BOOTSTRAP") == "" {
		t.Skip("KIQ_TEST_SECURITY=1 is not set for with_brokers.py")
	}
	for _, cell := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "mTLS"} {
		t.Run(cell, func(t *testing.T) {
			roundTrip(t, cell)
			err := refusedWith(t, cell)
			switch {
			case cell == "mTLS":
				if !strings.Contains(err.Error(), "certificate required") {
					t.Fatalf("no client certificate: %v", err)
				}
			case cell == "OAUTHBEARER":
				if !strings.Contains(err.Error(), "insufficient_scope") {
					t.Fatalf("a token without the scope: %v", err)
				}
			case !errors.Is(err, kerr.SaslAuthenticationFailed):
				t.Fatalf("a wrong password: %v", err)
			}
		})
	}
}
