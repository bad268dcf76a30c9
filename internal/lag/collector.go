package lag

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/storage"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

// DefaultTimestampWait is how long a refresh waits for record timestamps.
const DefaultTimestampWait = 3 * time.Second

// Collector refreshes the lag of a set of checkpoints against one broker: the checkpoints are
// listed again and the broker asked again on every refresh (Collect), so a long-running
// `ckpt lag --watch` or `--serve` follows the query. It is safe for concurrent use; refreshes
// are serialized and a result younger than CacheTTL is reused, so Prometheus scrapes from
// several servers cost one refresh.
type Collector struct {
	// Locations are the checkpoints (paths or URIs). Required.
	Locations []string
	// Open opens a location (cli.Env.OpenStore). Required.
	Open func(ctx context.Context, uri string) (storage.Store, error)
	// Client is the broker connection, from cli.BrokerFlags.KgoClient. Required.
	Client *kgo.Client
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// Timeout bounds one refresh. Default: topicstate.DefaultTimeout.
	Timeout time.Duration
	// NoTimeLag skips the record-timestamp fetches (no lag in time). Default: false.
	NoTimeLag bool
	// TimestampWait bounds the wait for a record timestamp. Default: DefaultTimestampWait.
	TimestampWait time.Duration
	// CacheTTL is how long a refresh is reused. Default: 0 (every Collect refreshes).
	CacheTTL time.Duration
	// CommitGroup, when set, mirrors the committed offsets into this consumer group after
	// each refresh in which they changed (see Mirror). Default: "" (the broker is only read).
	CommitGroup string

	mu       sync.Mutex
	last     *Report
	lastErr  error
	lastAt   time.Time
	mirrored map[string]int64 // what the group holds, "topic\x00partition" → offset
}

// Collect returns the lag now, or the cached result when it is younger than CacheTTL. An error
// means the broker could not be read; a checkpoint that cannot be read is reported in its
// CheckpointLag.Error instead.
func (c *Collector) Collect(ctx context.Context) (*Report, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.lastAt.IsZero() || c.CacheTTL <= 0 || now.Sub(c.lastAt) >= c.CacheTTL {
		c.last, c.lastErr = c.refresh(ctx)
		c.lastAt = c.now()
	}
	return c.last, c.lastErr
}

func (c *Collector) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Collector) refresh(ctx context.Context) (*Report, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = topicstate.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	positions := make([]*Position, len(c.Locations))
	errs := make([]error, len(c.Locations))
	var wg sync.WaitGroup
	for i, loc := range c.Locations {
		wg.Go(func() { positions[i], errs[i] = c.position(ctx, loc) })
	}
	wg.Wait()
	var topics []string
	for _, p := range positions {
		if p != nil {
			topics = append(topics, p.Topics()...)
		}
	}
	st, err := topicstate.Read(ctx, kadm.NewClient(c.Client), topics)
	if err != nil {
		return nil, err
	}
	for i, p := range positions {
		if p != nil {
			if err := p.Replan(ctx, st); err != nil {
				positions[i], errs[i] = nil, err
			}
		}
	}
	var ts map[topicstate.At]time.Time
	if !c.NoTimeLag {
		var at []topicstate.At
		for _, p := range positions {
			if p != nil {
				at = append(at, p.TimestampPositions(st)...)
			}
		}
		wait := c.TimestampWait
		if wait <= 0 {
			wait = DefaultTimestampWait
		}
		if ts, err = topicstate.RecordTimestamps(ctx, c.Client, at, wait); err != nil {
			return nil, fmt.Errorf("kafka: read record timestamps: %w", err)
		}
	}
	now := c.now()
	r := &Report{Time: now, Checkpoints: make([]CheckpointLag, len(c.Locations))}
	for i, p := range positions {
		if errs[i] != nil {
			r.Checkpoints[i] = CheckpointLag{Checkpoint: c.Locations[i], Error: errs[i].Error(), Partitions: []PartitionLag{}, Issues: []recovery.BrokerIssue{}}
			continue
		}
		r.Checkpoints[i] = Compute(p, st, ts, now)
	}
	if c.CommitGroup != "" {
		r.CommitGroup = c.mirror(ctx, positions)
	}
	return r, nil
}

func (c *Collector) position(ctx context.Context, loc string) (*Position, error) {
	store, err := c.Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	// A typo must not read as "no batch yet": a new query has at least its metadata file.
	at, err := checkpoint.Require(ctx, store, checkpoint.RequireOptions{Command: "ckpt lag"})
	if err != nil {
		return nil, err
	}
	cp, err := checkpoint.LoadAt(ctx, store, at) // the root listed once
	if err != nil {
		return nil, err
	}
	return ReadPosition(ctx, cp, loc)
}
