// Sarama (IBM/sarama, pinned in go.mod) against kafkaiq brokers started by
// with_brokers.py, which sets KIQ_BOOTSTRAP: the admin client creates a topic
// with a config and reads it back, an idempotent sync producer with acks=all
// writes keyed records, a consumer group reads them once each while committing
// synchronously, a second run of the group resumes after its commits, and the
// group and topic are deleted. Run once with Sarama's default protocol version
// and once with Kafka 4.0's, whose requests are mostly newer.
package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

const (
	partitions  = 3
	firstRound  = 300
	secondRound = 90
	waitBound   = 60 * time.Second
)

func bootstrap(t *testing.T) []string {
	addrs := os.Getenv("KIQ_BOOTSTRAP")
	if addrs == "" {
		t.Fatal("KIQ_BOOTSTRAP is not set: run through tests/interop/go/with_brokers.py (see README)")
	}
	return strings.Split(addrs, ",")
}

func TestSarama(t *testing.T) {
	addrs := bootstrap(t)
	for _, v := range []sarama.KafkaVersion{sarama.DefaultVersion, sarama.V4_0_0_0} {
		t.Run("kafka-"+v.String(), func(t *testing.T) { scenario(t, addrs, v) })
	}
}

func config(v sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = "kafkaiq-sarama-test"
	return cfg
}

// waitFor polls cond until it returns nil or bound passes; the last error
// fails the test.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, waitBound, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func scenario(t *testing.T, addrs []string, v sarama.KafkaVersion) {
	suffix := fmt.Sprintf("%s-%d", strings.ReplaceAll(v.String(), ".", "_"), time.Now().UnixNano())
	topic, group := "sarama-"+suffix, "sarama-group-"+suffix

	admin, err := sarama.NewClusterAdmin(addrs, config(v))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer admin.Close()

	brokers, _, err := admin.DescribeCluster()
	if err != nil {
		t.Fatalf("describe cluster: %v", err)
	}
	rf := int16(min(len(brokers), 3))
	retention := "3600000"
	err = admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     partitions,
		ReplicationFactor: rf,
		ConfigEntries:     map[string]*string{"retention.ms": &retention},
	}, false)
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitFor(t, "topic in metadata", func() error {
		topics, err := admin.ListTopics()
		if err != nil {
			return err
		}
		if d, ok := topics[topic]; !ok || d.NumPartitions != partitions {
			return fmt.Errorf("topic %s listed as %+v", topic, d)
		}
		return nil
	})
	checkConfigs(t, admin, topic, retention)

	start := time.Now()
	produced := produce(t, addrs, v, topic, 0, firstRound)
	t.Logf("produced in %v", time.Since(start))
	consumeGroup(t, addrs, v, topic, group, produced)
	t.Logf("consumed in %v", time.Since(start))
	checkCommitted(t, admin, topic, group, produced)

	// The group resumes from its commits: only the new records come.
	more := produce(t, addrs, v, topic, firstRound, secondRound)
	consumeGroup(t, addrs, v, topic, group, more)
	for p, offs := range more {
		produced[p] = append(produced[p], offs...)
	}
	checkCommitted(t, admin, topic, group, produced)

	groups, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil || len(groups) != 1 || groups[0].State != "Empty" {
		t.Fatalf("describe group after its members left: %+v, %v", groups, err)
	}
	if err := admin.DeleteConsumerGroup(group); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	if err := admin.DeleteTopic(topic); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	waitFor(t, "topic gone from metadata", func() error {
		topics, err := admin.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[topic]; ok {
			return errors.New("still listed")
		}
		return nil
	})
}

// checkConfigs: the topic's own retention.ms is read back as set on the
// topic, and a setting it did not override as the default.
func checkConfigs(t *testing.T, admin sarama.ClusterAdmin, topic, retention string) {
	t.Helper()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	byName := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	if e, ok := byName["retention.ms"]; !ok || e.Value != retention || e.Source != sarama.SourceTopic || e.Default {
		t.Errorf("retention.ms described as %+v, want %s set on the topic", e, retention)
	}
	if e, ok := byName["cleanup.policy"]; !ok || e.Value != "delete" || e.Source == sarama.SourceTopic {
		t.Errorf("cleanup.policy described as %+v, want the default delete", e)
	}
}

// produce sends count records keyed key-first.. with an idempotent sync
// producer at acks=all, and returns each partition's offsets in the order
// they were acknowledged, which must be consecutive.
func produce(t *testing.T, addrs []string, v sarama.KafkaVersion, topic string, first, count int) map[int32][]int64 {
	t.Helper()
	cfg := config(v)
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 5
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("sync producer: %v", err)
	}
	defer p.Close()

	offsets := map[int32][]int64{}
	note := func(m *sarama.ProducerMessage) {
		prev := offsets[m.Partition]
		if n := len(prev); n > 0 && m.Offset != prev[n-1]+1 {
			t.Errorf("partition %d: offset %d acknowledged after %d", m.Partition, m.Offset, prev[n-1])
		}
		offsets[m.Partition] = append(prev, m.Offset)
	}
	msg := func(i int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
			Value: sarama.StringEncoder(fmt.Sprintf("value-%d", i))}
	}
	// half one at a time, half in one SendMessages call
	half := first + count/2
	for i := first; i < half; i++ {
		m := msg(i)
		if _, _, err := p.SendMessage(m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		note(m)
	}
	var batch []*sarama.ProducerMessage
	for i := half; i < first+count; i++ {
		batch = append(batch, msg(i))
	}
	if err := p.SendMessages(batch); err != nil {
		t.Fatalf("send messages: %v", err)
	}
	for _, m := range batch {
		note(m)
	}
	if len(offsets) != partitions {
		t.Fatalf("records went to %d partitions, want all %d", len(offsets), partitions)
	}
	return offsets
}

// collector marks each claimed record and commits synchronously whenever
// the claim has no more records buffered, before handing the record to the
// test, so once the test has them all, all are committed. (Committing each
// record would queue every commit behind the consumer's long-polling Fetch on
// the same connection, up to Consumer.MaxWaitTime each, as on any Kafka.)
type collector struct {
	got chan *sarama.ConsumerMessage
}

func (collector) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (collector) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (c collector) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			if len(claim.Messages()) == 0 {
				s.Commit()
			}
			select {
			case c.got <- m:
			case <-s.Context().Done():
				return nil
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// consumeGroup runs one member of group until it has read exactly the
// records of want (per partition, in offset order, each once).
func consumeGroup(t *testing.T, addrs []string, v sarama.KafkaVersion, topic, group string, want map[int32][]int64) {
	t.Helper()
	cfg := config(v)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Return.Errors = true
	cg, err := sarama.NewConsumerGroup(addrs, group, cfg)
	if err != nil {
		t.Fatalf("consumer group: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := collector{got: make(chan *sarama.ConsumerMessage)}
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, c); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()

	total := 0
	for _, offs := range want {
		total += len(offs)
	}
	got := map[int32][]int64{}
	deadline := time.After(waitBound)
	for n := 0; n < total; {
		select {
		case m := <-c.got:
			got[m.Partition] = append(got[m.Partition], m.Offset)
			if string(m.Value) != "value-"+strings.TrimPrefix(string(m.Key), "key-") {
				t.Errorf("partition %d offset %d: key %q with value %q", m.Partition, m.Offset, m.Key, m.Value)
			}
			n++
		case err := <-cg.Errors():
			t.Errorf("consumer group: %v", err)
		case err := <-done:
			t.Fatalf("consume ended early: %v", err)
		case <-deadline:
			t.Fatalf("consumed %d of %d records within %v", n, total, waitBound)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("consume: %v", err)
	}
	if err := cg.Close(); err != nil {
		t.Errorf("close consumer group: %v", err)
	}
	for p, offs := range want {
		if fmt.Sprint(got[p]) != fmt.Sprint(offs) {
			t.Errorf("partition %d: consumed offsets %v, produced %v", p, got[p], offs)
		}
	}
}

// checkCommitted: the group's committed offset on each partition is the one
// after the last record produced there.
func checkCommitted(t *testing.T, admin sarama.ClusterAdmin, topic, group string, produced map[int32][]int64) {
	t.Helper()
	parts := []int32{}
	for p := range int32(partitions) {
		parts = append(parts, p)
	}
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: parts})
	if err != nil {
		t.Fatalf("list group offsets: %v", err)
	}
	for _, p := range parts {
		b := resp.GetBlock(topic, p)
		offs := produced[p]
		if b == nil || b.Err != sarama.ErrNoError || len(offs) == 0 || b.Offset != offs[len(offs)-1]+1 {
			t.Errorf("partition %d: committed %+v, want %d", p, b, offs[len(offs)-1]+1)
		}
	}
}
