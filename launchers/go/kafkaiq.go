package kafkaiq

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Broker is one broker of a running kafkaiq serve, as its ready file says.
type Broker struct {
	ID          int    `json:"id"`
	Host        string `json:"host"`
	Port        int    `json:"port"`
	ControlPort int    `json:"control_port"`
	HTTP        string `json:"http"` // host:port of its control API
}

// Cluster is a running kafkaiq serve process: one broker, or several
// (WithBrokers) sharing the process, each on free ports.
type Cluster struct {
	Bootstrap  string   // host:port,host:port,... for a Kafka client
	Brokers    []Broker // indexed by broker id
	HTTP       string   // broker 0's control API, host:port
	PID        int
	Dir        string        // the temporary directory: data, log, ready file
	ReadyAfter time.Duration // from starting the process to its ready file

	cmd      *exec.Cmd
	exited   chan struct{} // closed once the process has been reaped
	logFile  *os.File
	client   *http.Client
	stopOnce sync.Once
}

type config struct {
	brokers      int
	overrides    [][2]string
	binary       string
	startTimeout time.Duration
}

// Option configures New and Start.
type Option func(*config)

// WithBrokers starts n brokers in the one process (serve --brokers n).
func WithBrokers(n int) Option { return func(c *config) { c.brokers = n } }

// WithOverride sets a broker configuration key (--override key=value),
// e.g. WithOverride("min.insync.replicas", "2").
func WithOverride(key, value string) Option {
	return func(c *config) { c.overrides = append(c.overrides, [2]string{key, value}) }
}

// WithBinary runs this kafkaiq binary instead of $KAFKAIQ_BIN or kafkaiq on PATH.
func WithBinary(path string) Option { return func(c *config) { c.binary = path } }

// WithStartTimeout bounds the wait for the ready file (default 30 s).
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// FindBinary returns $KAFKAIQ_BIN, else kafkaiq on PATH.
func FindBinary() (string, error) {
	if p := os.Getenv("KAFKAIQ_BIN"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("kafkaiq")
	if err != nil {
		return "", errors.New("kafkaiq: binary not found: install it (make install, or the Debian package) or set KAFKAIQ_BIN")
	}
	return p, nil
}

// Start starts kafkaiq serve for a test and stops it when the test and its
// subtests end, whether they pass, fail or call t.FailNow. A start that
// fails ends the test with the broker's log tail.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c, err := New(opts...)
	if err != nil {
		t.Fatal(err)
		return nil
	}
	t.Cleanup(c.Stop)
	return c
}

// New starts kafkaiq serve and returns once every broker serves; the
// caller stops it (Stop). For use outside a test, e.g. in TestMain.
func New(opts ...Option) (*Cluster, error) {
	cfg := config{brokers: 1, startTimeout: 30 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.binary == "" {
		p, err := FindBinary()
		if err != nil {
			return nil, err
		}
		cfg.binary = p
	}
	dir, err := os.MkdirTemp("", "kafkaiq-")
	if err != nil {
		return nil, fmt.Errorf("kafkaiq: %w", err)
	}
	ready := filepath.Join(dir, "ready.json")
	args := []string{"serve"}
	if cfg.brokers > 1 {
		args = append(args, "--brokers", strconv.Itoa(cfg.brokers))
	}
	args = append(args, "--ready-file", ready,
		"--override", "listeners=PLAINTEXT://127.0.0.1:0",
		"--override", "kafkaiq.http.listener=127.0.0.1:0",
		"--override", "log.dirs="+filepath.Join(dir, "data"))
	for _, kv := range cfg.overrides {
		args = append(args, "--override", kv[0]+"="+kv[1])
	}
	logFile, err := os.Create(filepath.Join(dir, "kafkaiq.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("kafkaiq: %w", err)
	}
	c := &Cluster{
		Dir:     dir,
		exited:  make(chan struct{}),
		logFile: logFile,
		// loopback only: never through a proxy from the environment
		client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}},
	}
	c.cmd = exec.Command(cfg.binary, args...)
	c.cmd.Stderr = logFile // stdout stays /dev/null: the ready line is in the file too
	began := time.Now()
	if err := start(c.cmd, c.exited); err != nil {
		logFile.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("kafkaiq: %w", err)
	}
	deadline := began.Add(cfg.startTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var line readyLine
	for {
		// the file may be seen half written: read until it parses
		if data, err := os.ReadFile(ready); err == nil && json.Unmarshal(data, &line) == nil && line.Bootstrap != "" {
			break
		}
		why := ""
		select {
		case <-c.exited:
			why = c.cmd.ProcessState.String()
		default:
			if time.Now().After(deadline) {
				why = fmt.Sprintf("no ready file after %v", cfg.startTimeout)
			}
		}
		if why != "" {
			tail := c.logTail(2000)
			c.Stop()
			return nil, fmt.Errorf("kafkaiq serve did not start (%s): %s", why, strings.TrimSpace(tail))
		}
		<-tick.C
	}
	c.ReadyAfter = time.Since(began)
	c.PID, c.Bootstrap, c.Brokers, c.HTTP = line.PID, line.Bootstrap, line.Brokers, line.HTTP
	return c, nil
}

// readyLine is what serve writes to its ready file once every broker serves.
type readyLine struct {
	PID       int      `json:"pid"`
	Bootstrap string   `json:"bootstrap"`
	Brokers   []Broker `json:"brokers"`
	HTTP      string   `json:"http"`
}

// Log returns what the brokers have logged so far.
func (c *Cluster) Log() string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, "kafkaiq.log"))
	return string(data)
}

func (c *Cluster) logTail(n int) string {
	log := c.Log()
	if len(log) > n {
		log = log[len(log)-n:]
	}
	return log
}

// Stop ends the process, cleanly (SIGTERM) or after 20 s with SIGKILL, and
// removes its directory. Safe to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-c.exited:
			case <-time.After(20 * time.Second):
				c.cmd.Process.Kill()
				<-c.exited
			}
		}
		c.client.CloseIdleConnections()
		c.logFile.Close()
		os.RemoveAll(c.Dir)
	})
}
