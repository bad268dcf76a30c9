package topicstate

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// At is a record position: a partition and an offset.
type At struct {
	Topic     string `json:"topic"`     // the topic
	Partition int32  `json:"partition"` // the partition number
	Offset    int64  `json:"offset"`    // the record's offset
}

// RecordTimestamps returns the timestamp of the record at each position: the record's own
// timestamp (CreateTime, or LogAppendTime when the topic is configured so). When no record has
// exactly that offset (compaction), the next record's is used. A control record (transaction
// marker) counts as a record here: its timestamp is when the transaction ended. Positions the
// broker cannot serve within wait (out of range, not yet written, an unreachable leader) are
// absent from the result; that is not an error.
//
// It fetches at most a few KB per position (one record batch), so it is cheap enough for every
// refresh of `ckpt lag`. Several positions in one partition are fetched in rounds, lowest
// first. cl must keep control records and not reset offsets, as clients from Flags.KgoClient
// do; calls on one client are serialized. wait defaults to 5s.
func RecordTimestamps(ctx context.Context, cl *kgo.Client, at []At, wait time.Duration) (map[At]time.Time, error) {
	if wait <= 0 {
		wait = 5 * time.Second
	}
	out := map[At]time.Time{}
	// Round r fetches the r-th lowest requested offset of every partition.
	byTP := map[tpKey][]At{}
	for _, a := range at {
		if a.Offset < 0 {
			continue
		}
		k := tpKey{a.Topic, a.Partition}
		byTP[k] = append(byTP[k], a)
	}
	var rounds [][]At
	for _, as := range byTP {
		slices.SortFunc(as, func(x, y At) int { return cmp.Compare(x.Offset, y.Offset) })
		as = slices.Compact(as)
		for i, a := range as {
			if i == len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[i] = append(rounds[i], a)
		}
	}
	if len(rounds) == 0 {
		return out, nil
	}
	unlock := lockClient(cl)
	defer unlock()
	for _, round := range rounds {
		if err := fetchRound(ctx, cl, round, wait, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fetchRound fetches one position per partition.
func fetchRound(ctx context.Context, cl *kgo.Client, round []At, wait time.Duration, out map[At]time.Time) error {
	pending := map[tpKey]At{}
	assign := map[string]map[int32]kgo.Offset{}
	for _, a := range round {
		pending[tpKey{a.Topic, a.Partition}] = a
		if assign[a.Topic] == nil {
			assign[a.Topic] = map[int32]kgo.Offset{}
		}
		assign[a.Topic][a.Partition] = kgo.NewOffset().At(a.Offset)
	}
	cl.AddConsumePartitions(assign)
	defer cl.RemoveConsumePartitions(partitionLists(assign))
	deadline := time.Now().Add(wait)
	for len(pending) > 0 && time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		pctx, cancel := context.WithDeadline(ctx, deadline)
		fetches := cl.PollFetches(pctx)
		cancel()
		fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
			k := tpKey{fp.Topic, fp.Partition}
			a, ok := pending[k]
			if !ok || fp.Err != nil {
				return
			}
			for _, r := range fp.Records {
				// A fetch returns whole batches; records before the position are skipped.
				if r.Offset >= a.Offset {
					out[a] = r.Timestamp
					delete(pending, k)
					return
				}
			}
		})
	}
	return ctx.Err()
}

type tpKey struct {
	topic     string
	partition int32
}

// clientLocks serializes the helpers that assign partitions on a shared client: two of them
// consuming the same partition at once would steal each other's records.
var clientLocks sync.Map // *kgo.Client → *sync.Mutex

func lockClient(cl *kgo.Client) func() {
	m, _ := clientLocks.LoadOrStore(cl, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// ClientOpts are the client settings the read helpers here (RecordTimestamps, CountExact) need
// on top of the connection settings: control records kept, offsets never reset, short fetch
// waits. cli.BrokerFlags.KgoClient adds them.
func ClientOpts() []kgo.Opt {
	return []kgo.Opt{
		// RecordTimestamps and CountExact position themselves: out of range means "gone".
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// Control records take offsets; seeing them tells where a range or a log ends.
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200 * time.Millisecond),
		// One batch is all a timestamp lookup needs; Kafka returns a larger first batch anyway.
		kgo.FetchMaxPartitionBytes(1 << 20),
	}
}
