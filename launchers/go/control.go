package kafkaiq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Error is the control API refusing a call: its HTTP status and the
// broker's own message (e.g. 408 "timed out after 100 ms waiting for ...").
type Error struct {
	Method  string
	Path    string
	Status  int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("kafkaiq: %s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

// callTimeout is how long any call may take beyond a wait's own bound.
const callTimeout = 30 * time.Second

// Do calls the control API of broker `via` (an index into Brokers): body,
// when not nil, is sent as JSON, and the answer decoded into out when not
// nil. The methods below are made of it; it reaches the rest of the API.
func (c *Cluster) Do(method, path string, body any, via int, out any) error {
	return c.do(method, path, body, via, out, callTimeout)
}

func (c *Cluster) do(method, path string, body any, via int, out any, timeout time.Duration) error {
	if via < 0 || via >= len(c.Brokers) {
		return fmt.Errorf("kafkaiq: %s %s: no broker %d (there are %d)", method, path, via, len(c.Brokers))
	}
	var payload io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("kafkaiq: %s %s: %w", method, path, err)
		}
		payload = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, "http://"+c.Brokers[via].HTTP+path, payload)
	if err != nil {
		return fmt.Errorf("kafkaiq: %s %s: %w", method, path, err)
	}
	// the listener takes control calls as JSON only (a foreign page cannot send it)
	req.Header.Set("Content-Type", "application/json")
	client := *c.client
	client.Timeout = timeout
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("kafkaiq: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("kafkaiq: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = string(bytes.TrimSpace(data))
		}
		return &Error{Method: method, Path: path, Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("kafkaiq: %s %s: answer %q: %w", method, path, data, err)
	}
	return nil
}

// ---- faults ----

// Rule is a fault rule: which requests it picks and what it does to them.
// Zero fields pick everything; Version, MinVersion, MaxVersion and
// Partition are pointers because 0 is a value (Partition: new(0)). Fault
// also takes a map[string]any with the API's own field names.
type Rule struct {
	API         string        // request name ("Produce") or key ("0")
	Version     *int          // exactly this request version
	MinVersion  *int          // versions from
	MaxVersion  *int          // versions up to
	ClientID    string        // requests from this client id
	Topic       string        // requests naming this topic
	Partition   *int          // and this partition
	Error       string        // answered with this Kafka error, name or code
	Delay       time.Duration // answered this much later
	Action      string        // error, delay, disconnect or drop_response
	Times       int           // fires at most this often (0: every time)
	After       int           // lets this many picked requests through first
	Probability float64       // fires with this probability (0: always)
	Seed        int64         // for Probability's draws
}

// MarshalJSON writes the rule as the control API takes it.
func (r Rule) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	set := func(key string, v any, present bool) {
		if present {
			m[key] = v
		}
	}
	set("api", r.API, r.API != "")
	set("version", r.Version, r.Version != nil)
	set("min_version", r.MinVersion, r.MinVersion != nil)
	set("max_version", r.MaxVersion, r.MaxVersion != nil)
	set("client_id", r.ClientID, r.ClientID != "")
	set("topic", r.Topic, r.Topic != "")
	set("partition", r.Partition, r.Partition != nil)
	set("error", r.Error, r.Error != "")
	set("delay_ms", r.Delay.Milliseconds(), r.Delay != 0)
	set("action", r.Action, r.Action != "")
	set("times", r.Times, r.Times != 0)
	set("after", r.After, r.After != 0)
	set("probability", r.Probability, r.Probability != 0)
	set("seed", r.Seed, r.Seed != 0)
	return json.Marshal(m)
}

// FaultState is a rule as a broker keeps it, with how many requests it
// picked (Matched) and how many it acted on (Fired).
type FaultState struct {
	ID      int    `json:"id"`
	API     string `json:"api"`
	Topic   string `json:"topic"`
	Action  string `json:"action"`
	Error   string `json:"error"`
	Times   int    `json:"times"`
	Matched int    `json:"matched"`
	Fired   int    `json:"fired"`
	// Rule is the whole of it as the broker answered, fields above included.
	Rule map[string]any `json:"-"`
}

// Fault adds a rule (a Rule, or a map with the API's field names) to one
// broker's requests; its id.
func (c *Cluster) Fault(broker int, rule any) (int, error) {
	var r struct {
		ID int `json:"id"`
	}
	err := c.Do("POST", "/api/faults", rule, broker, &r)
	return r.ID, err
}

// Faults returns one broker's rules with their counts.
func (c *Cluster) Faults(broker int) ([]FaultState, error) {
	var r struct {
		Faults []json.RawMessage `json:"faults"`
	}
	if err := c.Do("GET", "/api/faults", nil, broker, &r); err != nil {
		return nil, err
	}
	out := make([]FaultState, len(r.Faults))
	for i, raw := range r.Faults {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &out[i].Rule); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RemoveFault removes one rule of a broker; the ids removed.
func (c *Cluster) RemoveFault(broker, id int) ([]int, error) {
	return c.remove(broker, "/api/faults/"+strconv.Itoa(id))
}

// RemoveFaults removes every rule of a broker; the ids removed.
func (c *Cluster) RemoveFaults(broker int) ([]int, error) {
	return c.remove(broker, "/api/faults")
}

func (c *Cluster) remove(broker int, path string) ([]int, error) {
	var r struct {
		Removed []int `json:"removed"`
	}
	err := c.Do("DELETE", path, nil, broker, &r)
	return r.Removed, err
}

// ---- brokers, links and leaders (serve --brokers N) ----

// BrokerOp is what a broker operation answered. Kill, StopBroker and Restart
// are queued (done by the process's supervisor after the answer): Wait
// for the broker's state.
type BrokerOp struct {
	Broker int    `json:"broker"`
	Op     string `json:"op"`
	Queued bool   `json:"queued"`
}

func (c *Cluster) brokerOp(op string, id, via int) (BrokerOp, error) {
	var r BrokerOp
	err := c.Do("POST", fmt.Sprintf("/api/brokers/%d/%s", id, op), nil, via, &r)
	return r, err
}

// Kill stops broker id at once, without a clean shutdown, asking broker via.
// A broker's listener goes with it: wait for it through another one.
func (c *Cluster) Kill(id, via int) (BrokerOp, error) { return c.brokerOp("kill", id, via) }

// StopBroker shuts broker id down cleanly, asking broker via.
func (c *Cluster) StopBroker(id, via int) (BrokerOp, error) { return c.brokerOp("stop", id, via) }

// Restart stops broker id cleanly if it runs, then starts it on the same ports.
func (c *Cluster) Restart(id, via int) (BrokerOp, error) { return c.brokerOp("restart", id, via) }

// Pause makes broker id stop heartbeating and replicating, as SIGSTOP looks to the others.
func (c *Cluster) Pause(id, via int) (BrokerOp, error) { return c.brokerOp("pause", id, via) }

// Resume ends a Pause.
func (c *Cluster) Resume(id, via int) (BrokerOp, error) { return c.brokerOp("resume", id, via) }

// LinkChange is what a Link call answered; Fault is the id of the rule
// that slows or drops the fetches, on broker OnBroker (the leader).
type LinkChange struct {
	From     int    `json:"from"`
	To       int    `json:"to"`
	Action   string `json:"action"`
	Fault    int    `json:"fault"`
	OnBroker int    `json:"on_broker"`
}

// Link acts on replication from leader `from` to follower `to`: "cut",
// "heal", "slow" (delay per fetch) or "drop" (fetches unanswered).
func (c *Cluster) Link(from, to int, action string, delay time.Duration, via int) (LinkChange, error) {
	body := map[string]any{"from": from, "to": to, "action": action}
	if delay != 0 {
		body["delay_ms"] = delay.Milliseconds()
	}
	var r LinkChange
	err := c.Do("POST", "/api/links", body, via, &r)
	return r, err
}

// MoveLeader makes replica `to` lead the partition (it goes first in the
// replicas, so a preferred election keeps it); the new leader. The brokers
// learn it from the controller: Wait for Leader(topic, partition, to).
func (c *Cluster) MoveLeader(topic string, partition, to, via int) (int, error) {
	var r struct {
		Leader int `json:"leader"`
	}
	err := c.Do("POST", "/api/leaders", map[string]any{"topic": topic, "partition": partition, "to": to}, via, &r)
	return r.Leader, err
}

// ElectPreferred makes every partition's first replica lead again where it
// can; how many partitions moved.
func (c *Cluster) ElectPreferred(via int) (int, error) {
	var r struct {
		Moved int `json:"moved"`
	}
	err := c.Do("POST", "/api/leaders", map[string]any{"preferred": true}, via, &r)
	return r.Moved, err
}

// ---- waiting ----

// Cond is a condition for Wait, as the query parameters of GET /api/wait;
// the functions below make them.
type Cond map[string]string

// BrokerState holds when broker id is "ready", "running" (or ready) or "stopped".
func BrokerState(id int, state string) Cond {
	return Cond{"broker": strconv.Itoa(id), "state": state}
}

// AnyLeader holds when the partition has a leader; Wait's value is its id.
func AnyLeader(topic string, partition int) Cond {
	return Cond{"topic": topic, "partition": strconv.Itoa(partition), "leader": "any"}
}

// Leader holds when broker id leads the partition.
func Leader(topic string, partition, id int) Cond {
	return Cond{"topic": topic, "partition": strconv.Itoa(partition), "leader": strconv.Itoa(id)}
}

// ISR holds when exactly n replicas of the partition are in sync.
func ISR(topic string, partition, n int) Cond {
	return Cond{"topic": topic, "partition": strconv.Itoa(partition), "isr": strconv.Itoa(n)}
}

// HighWatermark holds when the partition's high watermark is at least offset.
func HighWatermark(topic string, partition int, offset int64) Cond {
	return Cond{"topic": topic, "partition": strconv.Itoa(partition), "high_watermark": strconv.FormatInt(offset, 10)}
}

// LogStartOffset holds when the partition's log starts at offset or later
// (retention or DeleteRecords moved it).
func LogStartOffset(topic string, partition int, offset int64) Cond {
	return Cond{"topic": topic, "partition": strconv.Itoa(partition), "log_start_offset": strconv.FormatInt(offset, 10)}
}

// GroupState holds when the consumer group is in this state (Kafka's
// name, e.g. "Stable").
func GroupState(group, state string) Cond { return Cond{"group": group, "state": state} }

// Waited is a condition met: what the broker saw then.
type Waited struct {
	Condition string        // the condition in the broker's words
	Waited    time.Duration // how long it took to hold
	Value     any           // a number (int64: leader id, ISR size, offset), a state, or nil
}

// Int is Value as a number (-1 when it is not one).
func (w Waited) Int() int64 {
	if n, ok := w.Value.(int64); ok {
		return n
	}
	return -1
}

// Wait asks broker via to answer once cond holds, or with a 408 *Error
// once timeout passes (0: the broker's default, 10 s).
func (c *Cluster) Wait(cond Cond, timeout time.Duration, via int) (Waited, error) {
	q := url.Values{}
	for k, v := range cond {
		q.Set(k, v)
	}
	bound := 10 * time.Second
	if timeout > 0 {
		q.Set("timeout_ms", strconv.FormatInt(timeout.Milliseconds(), 10))
		bound = timeout
	}
	var r struct {
		Condition string          `json:"condition"`
		WaitedMs  int64           `json:"waited_ms"`
		Value     json.RawMessage `json:"value"`
	}
	if err := c.do("GET", "/api/wait?"+q.Encode(), nil, via, &r, bound+callTimeout); err != nil {
		return Waited{}, err
	}
	w := Waited{Condition: r.Condition, Waited: time.Duration(r.WaitedMs) * time.Millisecond}
	var n int64
	var s string
	if json.Unmarshal(r.Value, &n) == nil {
		w.Value = n
	} else if json.Unmarshal(r.Value, &s) == nil {
		w.Value = s
	}
	return w, nil
}

// ---- the clock and state ----

// Clock is the process's clock after AdvanceClock.
type Clock struct {
	Mode  string        // "manual" or "system"
	Ahead time.Duration // how far it runs ahead of the system's
	Wall  time.Time     // its wall-clock time now
}

// AdvanceClock moves the process's clock d ahead, for all its brokers:
// retention, rolls, session and transaction timeouts and timestamps follow
// it. It needs WithOverride("kafkaiq.clock", "manual") (a 409 otherwise).
func (c *Cluster) AdvanceClock(d time.Duration, via int) (Clock, error) {
	var r struct {
		Clock   string `json:"clock"`
		AheadMs int64  `json:"ahead_ms"`
		WallMs  int64  `json:"wall_ms"`
	}
	if err := c.Do("POST", "/api/clock", map[string]any{"advance_ms": d.Milliseconds()}, via, &r); err != nil {
		return Clock{}, err
	}
	return Clock{Mode: r.Clock, Ahead: time.Duration(r.AheadMs) * time.Millisecond, Wall: time.UnixMilli(r.WallMs)}, nil
}

// State returns what /api/state shows for one broker: topics and their
// partitions (offsets, segments, replication), log directories, the
// network and request queues, the controller's view.
func (c *Cluster) State(broker int) (map[string]any, error) {
	var r map[string]any
	err := c.Do("GET", "/api/state", nil, broker, &r)
	return r, err
}
