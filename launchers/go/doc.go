// Package kafkaiq starts KafkaIQ brokers for Go tests and drives them
// through their control API: faults, broker kills and restarts,
// replication links, leadership, a clock that jumps, and waits for a
// condition without sleeping. It uses only the standard library; any
// Kafka client talks to Cluster.Bootstrap.
//
// The binary is $KAFKAIQ_BIN, else kafkaiq on PATH, unless WithBinary
// names one. Each Cluster is one `kafkaiq serve` process on free ports
// with its data in a temporary directory, both gone after Stop.
//
// In a test, Start stops the brokers when the test ends, also when it
// fails, calls t.FailNow or panics (and, on Linux, when go test's -timeout
// kills the test binary before any cleanup: the kernel ends the process
// with it, its directory stays):
//
//	func TestRetry(t *testing.T) {
//		k := kafkaiq.Start(t)
//		// the next Produce to "orders" is answered NOT_LEADER_OR_FOLLOWER, once
//		id, err := k.Fault(0, kafkaiq.Rule{API: "Produce", Topic: "orders", Error: "NOT_LEADER_OR_FOLLOWER", Times: 1})
//		...  // produce to k.Bootstrap: the client retries and succeeds
//		faults, err := k.Faults(0) // faults[0].Fired == 1, Matched >= 2
//	}
//
//	func TestFailover(t *testing.T) {
//		k := kafkaiq.Start(t, kafkaiq.WithBrokers(3), kafkaiq.WithOverride("min.insync.replicas", "2"))
//		...  // create "orders" with replication factor 3
//		k.Wait(kafkaiq.ISR("orders", 0, 3), 20*time.Second, 0)
//		// broker 0 runs the controller: the leader killed is another one
//		k.MoveLeader("orders", 0, 1, 0)
//		k.Wait(kafkaiq.Leader("orders", 0, 1), 10*time.Second, 0)
//		k.Kill(1, 0)
//		k.Wait(kafkaiq.BrokerState(1, "stopped"), 10*time.Second, 0)
//		...  // produce with acks=all: brokers 2 and 0 acknowledge
//		k.Restart(1, 0)
//		k.Wait(kafkaiq.ISR("orders", 0, 3), 30*time.Second, 0)
//	}
//
// Outside a test (one broker for a whole package, in TestMain), New starts
// one and Stop ends it:
//
//	func TestMain(m *testing.M) {
//		k, err := kafkaiq.New(kafkaiq.WithOverride("num.partitions", "3"))
//		if err != nil {
//			log.Fatal(err)
//		}
//		code := m.Run()
//		k.Stop()
//		os.Exit(code)
//	}
//
// The control calls name the broker whose listener answers them: broker
// for its own faults and state, via for what the process does (a killed
// broker's listener goes down with it, so wait for its restart through
// another). A call the broker refuses returns an *Error with the HTTP
// status and the broker's message; a Wait whose bound passes is a 408.
package kafkaiq
