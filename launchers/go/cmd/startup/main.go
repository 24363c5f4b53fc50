// Command startup measures start-to-first-ack through the Go launcher:
// from starting kafkaiq serve until franz-go has its first record to a new
// topic acknowledged (auto-created, acks=all), for one broker and for
// three, N runs each (default 5); it prints the medians.
//
//	cd launchers/go && GOPROXY=off KAFKAIQ_BIN=../../build/kafkaiq go run ./cmd/startup [N]
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	kafkaiq "github.com/kafkaiq/kafkaiq/launchers/go"
)

// once returns how long the brokers took to be ready and to acknowledge.
func once(brokers, run int) (ready, acked time.Duration, err error) {
	began := time.Now()
	k, err := kafkaiq.New(kafkaiq.WithBrokers(brokers))
	if err != nil {
		return 0, 0, err
	}
	defer k.Stop()
	ready = time.Since(began)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(k.Bootstrap, ",")...),
		kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := fmt.Sprintf("first-%d-%d", brokers, run)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		return 0, 0, err
	}
	return ready, time.Since(began), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func main() {
	n := 5
	if len(os.Args) > 1 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil || v < 1 {
			fmt.Fprintln(os.Stderr, "usage: startup [runs]")
			os.Exit(2)
		}
		n = v
	}
	fmt.Println("brokers  ready_ms(median)  first_ack_ms(median)  first_ack_ms(all)")
	for _, brokers := range []int{1, 3} {
		var readies, acks []time.Duration
		for run := range n {
			ready, acked, err := once(brokers, run)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%d broker(s), run %d: %v\n", brokers, run+1, err)
				os.Exit(1)
			}
			readies, acks = append(readies, ready), append(acks, acked)
		}
		all := make([]string, len(acks))
		for i, a := range acks {
			all[i] = fmt.Sprintf("%.0f", ms(a))
		}
		fmt.Printf("%7d  %16.1f  %20.1f  %s\n", brokers, ms(median(readies)), ms(median(acks)), strings.Join(all, " "))
	}
}
