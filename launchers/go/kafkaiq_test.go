package kafkaiq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	kafkaiq "github.com/kafkaiq/kafkaiq/launchers/go"
)

// shared is one broker for the tests that need nothing of their own,
// started in TestMain as a package would with New.
var shared *kafkaiq.Cluster

func TestMain(m *testing.M) {
	// a consumer group forms at once instead of after Kafka's 3 s
	k, err := kafkaiq.New(kafkaiq.WithOverride("group.initial.rebalance.delay.ms", "0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = k
	code := m.Run()
	k.Stop()
	os.Exit(code)
}

// bound is how long any client operation of these tests may take: a hang
// fails the test instead of blocking the suite.
const bound = 25 * time.Second

func topicName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "launcher-" + hex.EncodeToString(b)
}

func client(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(bound),
		// a refused request's metadata refresh at once, not after 5 s
		kgo.MetadataMinAge(100 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// create makes a topic (a cluster places its replicas itself: MoveLeader
// picks a partition's leader).
func create(t *testing.T, cl *kgo.Client, topic string, partitions int32, rf int16) {
	t.Helper()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics, req.TimeoutMillis = []kmsg.CreateTopicsRequestTopic{rt}, 10000
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// produce sends values to partition 0 of topic (or the partitioner's
// choice with more partitions) and returns the first error.
func produce(cl *kgo.Client, topic string, values ...string) error {
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(v)}
	}
	return produceRecords(cl, recs...)
}

// produceRecords sends recs and returns the first error.
func produceRecords(cl *kgo.Client, recs ...*kgo.Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// consume reads n values of topic from the start, sorted.
func consume(t *testing.T, bootstrap, topic string, n int, opts ...kgo.Opt) []string {
	t.Helper()
	cl := client(t, bootstrap, append([]kgo.Opt{kgo.ConsumeTopics(topic)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var got []string
	var errs []kgo.FetchError
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s: %v (fetch errors %v)", len(got), n, topic, ctx.Err(), errs)
		}
		errs = append(errs, fs.Errors()...)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

// must(call())(t) is call's value, or the test's end with its error.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// refused checks that err is the control API refusing with this status
// and a message containing want.
func refused(t *testing.T, err error, status int, want string) {
	t.Helper()
	var e *kafkaiq.Error
	if !errors.As(err, &e) || e.Status != status || !strings.Contains(e.Message, want) {
		t.Fatalf("want a %d saying %q, got %v", status, want, err)
	}
}

// partitionState is a partition as one broker's /api/state shows it.
func partitionState(t *testing.T, k *kafkaiq.Cluster, broker int, topic string, partition int) map[string]any {
	t.Helper()
	st := must(k.State(broker))(t)
	topics, _ := st["topics"].(map[string]any)
	tp, _ := topics[topic].(map[string]any)
	parts, _ := tp["partitions"].(map[string]any)
	p, ok := parts[strconv.Itoa(partition)].(map[string]any)
	if !ok {
		t.Fatalf("broker %d's state has no %s-%d: %v", broker, topic, partition, tp)
	}
	return p
}

func TestOneBrokerServesARealClient(t *testing.T) {
	if !strings.HasPrefix(shared.Bootstrap, "127.0.0.1:") || len(shared.Brokers) != 1 || shared.PID <= 0 {
		t.Fatalf("ready line: %+v", shared)
	}
	topic := topicName()
	cl := client(t, shared.Bootstrap)
	create(t, cl, topic, 1, 1)
	if err := produce(cl, topic, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	group := "g-" + topic
	got := consume(t, shared.Bootstrap, topic, 3, kgo.ConsumerGroup(group))
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("consumed %q", got)
	}
	w := must(shared.Wait(kafkaiq.GroupState(group, "Stable"), 10*time.Second, 0))(t)
	if w.Value != "Stable" {
		t.Fatalf("group: %+v", w)
	}
}

func TestARetriableFaultIsRetriedAndTheRecordLandsOnce(t *testing.T) {
	topic := topicName()
	cl := client(t, shared.Bootstrap) // idempotent, as franz-go is by default
	create(t, cl, topic, 1, 1)
	id := must(shared.Fault(0, kafkaiq.Rule{API: "Produce", Topic: topic, Partition: new(0), Error: "NOT_LEADER_OR_FOLLOWER", Times: 1}))(t)
	if err := produce(cl, topic, "x"); err != nil {
		t.Fatal(err)
	}
	faults := must(shared.Faults(0))(t)
	i := slices.IndexFunc(faults, func(f kafkaiq.FaultState) bool { return f.ID == id })
	if i < 0 {
		t.Fatalf("rule %d not listed: %+v", id, faults)
	}
	// the refused request and its retry
	if f := faults[i]; f.Fired != 1 || f.Matched < 2 || f.Error != "NOT_LEADER_OR_FOLLOWER" {
		t.Fatalf("rule: %+v", f)
	}
	if got := consume(t, shared.Bootstrap, topic, 1); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("consumed %q", got)
	}
	if hw := partitionState(t, shared, 0, topic, 0)["high_watermark"]; hw != float64(1) {
		t.Fatalf("high watermark %v: the retry wrote the record twice", hw)
	}
	if removed := must(shared.RemoveFault(0, id))(t); !slices.Equal(removed, []int{id}) {
		t.Fatalf("removed %v", removed)
	}
}

func TestAFatalFaultReachesTheApplication(t *testing.T) {
	topic := topicName()
	create(t, client(t, shared.Bootstrap), topic, 1, 1)
	id := must(shared.Fault(0, map[string]any{"api": "Produce", "topic": topic, "error": "TOPIC_AUTHORIZATION_FAILED"}))(t)
	err := produce(client(t, shared.Bootstrap), topic, "y")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("want TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if removed := must(shared.RemoveFaults(0))(t); !slices.Equal(removed, []int{id}) {
		t.Fatalf("removed %v", removed)
	}
	if err := produce(client(t, shared.Bootstrap), topic, "z"); err != nil {
		t.Fatal(err)
	}
}

func TestTheControlAPIExplainsWhatItRefuses(t *testing.T) {
	_, err := shared.Fault(0, kafkaiq.Rule{API: "Produce", Error: "NOT_AN_ERROR"})
	refused(t, err, 400, "unknown error 'NOT_AN_ERROR'")
	_, err = shared.RemoveFault(0, 4242)
	refused(t, err, 404, "no fault rule 4242")
	_, err = shared.Wait(kafkaiq.HighWatermark("nothing", 0, 5), 100*time.Millisecond, 0)
	refused(t, err, 408, "waiting for high watermark 5 of nothing-0")
	if !strings.Contains(err.Error(), "GET /api/wait") || !strings.Contains(err.Error(), "408 timed out after") {
		t.Fatalf("the error does not say what it was: %v", err)
	}
	_, err = shared.Kill(0, 0)
	refused(t, err, 409, "this broker runs alone")
	_, err = shared.AdvanceClock(time.Second, 0)
	refused(t, err, 409, "the clock is the system's")
	if _, err = shared.State(3); err == nil || !strings.Contains(err.Error(), "no broker 3") {
		t.Fatalf("want no broker 3, got %v", err)
	}
}

func TestAClusterOfThreeReplicatesAcksAll(t *testing.T) {
	k := kafkaiq.Start(t, kafkaiq.WithBrokers(3))
	ports := map[int]bool{}
	for i, b := range k.Brokers {
		if b.ID != i || b.HTTP == "" || b.ControlPort == 0 {
			t.Fatalf("broker %d: %+v", i, b)
		}
		ports[b.Port] = true
	}
	if len(ports) != 3 || k.HTTP != k.Brokers[0].HTTP {
		t.Fatalf("brokers %+v, http %s", k.Brokers, k.HTTP)
	}
	topic := topicName()
	// each record names its partition: a round robin skips a partition
	// whose leader the client has not learned yet, and one would get fewer
	cl := client(t, k.Bootstrap, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	create(t, cl, topic, 3, 3)
	var values []string
	var recs []*kgo.Record
	for i := range 30 {
		values = append(values, fmt.Sprintf("r%02d", i))
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(values[i])})
	}
	if err := produceRecords(cl, recs...); err != nil {
		t.Fatal(err)
	}
	if got := consume(t, k.Bootstrap, topic, 30); !slices.Equal(got, values) {
		t.Fatalf("consumed %q", got)
	}
	for p := range 3 {
		must(k.Wait(kafkaiq.HighWatermark(topic, p, 10), 10*time.Second, 0))(t)
		// broker 1 holds a replica of each partition, and all of it
		if leo := partitionState(t, k, 1, topic, p)["log_end_offset"]; leo != float64(10) {
			t.Fatalf("broker 1's %s-%d ends at %v", topic, p, leo)
		}
	}
	if op := must(k.Pause(2, 0))(t); op != (kafkaiq.BrokerOp{Broker: 2, Op: "pause", Queued: false}) {
		t.Fatalf("pause: %+v", op)
	}
	var brokers struct {
		Brokers []struct {
			ID     int  `json:"id"`
			Paused bool `json:"paused"`
		} `json:"brokers"`
	}
	if err := k.Do("GET", "/api/brokers", nil, 0, &brokers); err != nil || !brokers.Brokers[2].Paused {
		t.Fatalf("broker 2 not paused: %+v %v", brokers, err)
	}
	must(k.Resume(2, 0))(t)
}

func TestAKilledBrokerComesBackAndTheDataWithIt(t *testing.T) {
	k := kafkaiq.Start(t, kafkaiq.WithBrokers(3), kafkaiq.WithOverride("min.insync.replicas", "2"))
	topic := topicName()
	cl := client(t, k.Bootstrap, kgo.RequiredAcks(kgo.AllISRAcks()))
	create(t, cl, topic, 1, 3)
	must(k.Wait(kafkaiq.ISR(topic, 0, 3), 20*time.Second, 0))(t)
	// broker 0 runs the one controller: broker 1 leads, and is the one killed
	must(k.MoveLeader(topic, 0, 1, 0))(t)
	must(k.Wait(kafkaiq.Leader(topic, 0, 1), 10*time.Second, 0))(t)
	if err := produce(cl, topic, "before"); err != nil {
		t.Fatal(err)
	}
	if op := must(k.Kill(1, 0))(t); !op.Queued {
		t.Fatalf("kill: %+v", op)
	}
	must(k.Wait(kafkaiq.BrokerState(1, "stopped"), 10*time.Second, 0))(t)
	if err := produce(cl, topic, "during"); err != nil {
		t.Fatal(err)
	}
	must(k.Restart(1, 0))(t)
	must(k.Wait(kafkaiq.BrokerState(1, "ready"), 20*time.Second, 0))(t)
	must(k.Wait(kafkaiq.ISR(topic, 0, 3), 30*time.Second, 0))(t)
	must(k.Wait(kafkaiq.HighWatermark(topic, 0, 2), 10*time.Second, 0))(t)
	if leo := partitionState(t, k, 1, topic, 0)["log_end_offset"]; leo != float64(2) {
		t.Fatalf("broker 1's log ends at %v, not 2", leo)
	}
	if moved := must(k.ElectPreferred(0))(t); moved != 1 {
		t.Fatalf("preferred election moved %d", moved)
	}
	must(k.Wait(kafkaiq.Leader(topic, 0, 1), 10*time.Second, 0))(t)
	if got := consume(t, k.Bootstrap, topic, 2); !slices.Equal(got, []string{"before", "during"}) {
		t.Fatalf("consumed %q", got)
	}
}

func TestLeadershipMovesOnlyToAReplica(t *testing.T) {
	k := kafkaiq.Start(t, kafkaiq.WithBrokers(3))
	topic := topicName()
	create(t, client(t, k.Bootstrap), topic, 1, 2)
	must(k.Wait(kafkaiq.ISR(topic, 0, 2), 20*time.Second, 0))(t)
	leader := int(must(k.Wait(kafkaiq.AnyLeader(topic, 0), 10*time.Second, 0))(t).Int())
	// the controller may name the leader before the leader hosts the
	// partition: a high watermark (any) through the leader's own listener
	must(k.Wait(kafkaiq.HighWatermark(topic, 0, 0), 10*time.Second, leader))(t)
	replicas := partitionState(t, k, leader, topic, 0)["replicas"].([]any)
	var follower, outsider int
	for id := range 3 {
		switch {
		case id == leader:
		case slices.Contains(replicas, any(float64(id))):
			follower = id
		default:
			outsider = id
		}
	}
	if moved := must(k.MoveLeader(topic, 0, follower, 0))(t); moved != follower {
		t.Fatalf("moved to %d, not %d", moved, follower)
	}
	if w := must(k.Wait(kafkaiq.Leader(topic, 0, follower), 10*time.Second, 0))(t); w.Int() != int64(follower) {
		t.Fatalf("leader %+v", w)
	}
	_, err := k.MoveLeader(topic, 0, outsider, 0)
	refused(t, err, 409, fmt.Sprintf("broker %d holds no replica of %s-0", outsider, topic))
	_, err = k.MoveLeader("nothing", 0, 1, 0)
	refused(t, err, 404, "no partition nothing-0")
}

func TestACutFollowerLeavesTheISRAndRejoinsWhenHealed(t *testing.T) {
	k := kafkaiq.Start(t, kafkaiq.WithBrokers(3), kafkaiq.WithOverride("replica.lag.time.max.ms", "1000"))
	topic := topicName()
	cl := client(t, k.Bootstrap, kgo.RequiredAcks(kgo.AllISRAcks()))
	create(t, cl, topic, 1, 3)
	must(k.Wait(kafkaiq.ISR(topic, 0, 3), 20*time.Second, 0))(t)
	leader := int(must(k.Wait(kafkaiq.AnyLeader(topic, 0), 10*time.Second, 0))(t).Int())
	follower := (leader + 1) % 3
	must(k.Link(leader, follower, "cut", 0, 0))(t)
	// acknowledged once the cut follower has left the ISR
	if err := produce(cl, topic, "a"); err != nil {
		t.Fatal(err)
	}
	must(k.Wait(kafkaiq.ISR(topic, 0, 2), 20*time.Second, 0))(t)
	must(k.Link(leader, follower, "heal", 0, 0))(t)
	must(k.Wait(kafkaiq.ISR(topic, 0, 3), 20*time.Second, 0))(t)
	slow := must(k.Link(leader, follower, "slow", 50*time.Millisecond, 0))(t)
	if slow.OnBroker != leader || slow.Fault <= 0 {
		t.Fatalf("slow link: %+v", slow)
	}
	must(k.RemoveFault(leader, slow.Fault))(t)
}

func TestADayAheadRetentionDeletesWhatItKept(t *testing.T) {
	k := kafkaiq.Start(t, kafkaiq.WithOverride("kafkaiq.clock", "manual"), kafkaiq.WithOverride("log.retention.hours", "1"))
	topic := topicName()
	cl := client(t, k.Bootstrap)
	create(t, cl, topic, 1, 1)
	if err := produce(cl, topic, "old-1", "old-2"); err != nil {
		t.Fatal(err)
	}
	must(k.Wait(kafkaiq.HighWatermark(topic, 0, 2), 10*time.Second, 0))(t)
	if first := firstSegment(t, k, topic); first["base_offset"] != float64(0) || first["next_offset"] != float64(2) {
		t.Fatalf("first segment %v", first)
	}
	_, err := k.Wait(kafkaiq.LogStartOffset(topic, 0, 2), 300*time.Millisecond, 0)
	refused(t, err, 408, "log start offset 2")
	clock := must(k.AdvanceClock(24*time.Hour, 0))(t)
	if clock.Mode != "manual" || clock.Ahead < 24*time.Hour {
		t.Fatalf("clock: %+v", clock)
	}
	must(k.Wait(kafkaiq.LogStartOffset(topic, 0, 2), 10*time.Second, 0))(t)
	// the segment holding both records is gone; a fresh one starts at 2
	if first := firstSegment(t, k, topic); first["base_offset"] != float64(2) {
		t.Fatalf("first segment %v", first)
	}
}

func firstSegment(t *testing.T, k *kafkaiq.Cluster, topic string) map[string]any {
	t.Helper()
	segments := partitionState(t, k, 0, topic, 0)["segments"].([]any)
	return segments[0].(map[string]any)
}

func TestABadStartSaysWhy(t *testing.T) {
	_, err := kafkaiq.New(kafkaiq.WithOverride("num.partitions", "many"))
	if err == nil || !strings.Contains(err.Error(), "num.partitions") {
		t.Fatalf("want the log naming num.partitions, got %v", err)
	}
	_, err = kafkaiq.New(kafkaiq.WithBinary(filepath.Join(t.TempDir(), "no-kafkaiq")))
	if err == nil || !strings.Contains(err.Error(), "no-kafkaiq") {
		t.Fatalf("want the missing binary named, got %v", err)
	}
}

// failing runs go test on testdata/failing, whose tests start brokers and
// then fail; it must fail, saying each of want.
func failing(t *testing.T, out string, env []string, want []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"test", "-count=1"}, append(args, "./testdata/failing")...)...)
	cmd.Env = append(append(os.Environ(), "KAFKAIQ_FAILING_OUT="+out), env...)
	output, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the failing tests passed:\n%s", output)
	}
	for _, w := range want {
		if !strings.Contains(string(output), w) {
			t.Fatalf("no %q in the output:\n%s", w, output)
		}
	}
}

// gone checks that the broker a failing test wrote down has ended and its
// directory been removed (when dirToo).
func gone(t *testing.T, out, name string, dirToo bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	pid, dir, _ := strings.Cut(string(data), "\n")
	n, _ := strconv.Atoi(pid)
	if alive(n) {
		t.Errorf("%s: kafkaiq serve (pid %d) still there", name, n)
	}
	if _, err := os.Stat(dir); dirToo && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %s still there: %v", name, dir, err)
	}
}

// TestTheBrokerIsStoppedWhenATestFails: a test that fails (t.Fatal), one
// whose Start fails, one that panics.
func TestTheBrokerIsStoppedWhenATestFails(t *testing.T) {
	out := t.TempDir()
	failing(t, out, nil, []string{"--- FAIL: TestFails", "the test fails on purpose", "--- FAIL: TestBadStart",
		"num.partitions", "--- FAIL: TestPanics", "panic: the test panics on purpose"})
	gone(t, out, "fails", true)
	gone(t, out, "panics", true)
}

// TestTheBrokerIsStoppedWhenATestTimesOut: no cleanup runs when go test's
// -timeout ends the test binary, but the kernel ends the broker with it
// (its directory stays behind).
func TestTheBrokerIsStoppedWhenATestTimesOut(t *testing.T) {
	out := t.TempDir()
	failing(t, out, []string{"KAFKAIQ_FAILING_HANG=1"}, []string{"panic: test timed out after 1s", "TestHangs"},
		"-run", "TestHangs", "-timeout", "1s")
	data, err := os.ReadFile(filepath.Join(out, "hangs"))
	if err != nil {
		t.Fatal(err)
	}
	pid, dir, _ := strings.Cut(string(data), "\n")
	defer os.RemoveAll(dir)
	// the kill is the kernel's, as the test binary exits: wait for it, bounded
	n, _ := strconv.Atoi(pid)
	for deadline := time.Now().Add(10 * time.Second); alive(n) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	gone(t, out, "hangs", false)
}

// alive: the process exists and has not ended (a zombie has, it waits to
// be reaped).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
