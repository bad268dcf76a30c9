// Package demo sets up `ckpt run --demo`: an embedded Kafka broker (internal/embedkafka) with a
// generated topic, and a query on it. Set-up is in two steps so that the command validates every
// flag before anything starts: Prepare fills in the query without side effects, Start starts the
// broker and creates what the demo needs, and Close removes what Start created unless asked to
// keep it.
package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/query"
)

// Defaults of the demo.
const (
	Topic      = "demo"
	Partitions = 3
	Rate       = 5 // records per second
	Trigger    = "2s"
)

// Placeholders stand for what Start creates while the query is validated before it.
const (
	placeholderBroker     = "127.0.0.1:9092"
	placeholderCheckpoint = "ckpt-demo-checkpoint"
)

// Options are the demo's flags.
type Options struct {
	// Rate is --demo-rate: generated records per second. Default Rate.
	Rate int
	// Partitions is --demo-partitions: partitions of the demo topic. Default Partitions.
	Partitions int
	// Keep is --keep: leave the demo's checkpoint folder and broker data behind. Default false.
	Keep bool
}

// UsageError is a demo flag that cannot work; nothing was started.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Demo is a prepared demo: its query is filled in and, after Start, runs against its broker.
type Demo struct {
	opts Options
	q    *query.Query
	// tempCheckpoint is set when the demo chooses the checkpoint (the query names none).
	tempCheckpoint bool
	broker         *embedkafka.Broker
	// created are the folders Start made, removed by Close unless Keep.
	created []string
	info    func(string, ...any)
}

// Prepare checks the demo flags and fills in q for the demo (subscribe to the demo topic from
// the earliest offset, a trigger, a readable projection on the console) with placeholders for
// the broker address and, when q names none, the checkpoint. It starts nothing and writes
// nothing, so the caller validates the whole query next.
func Prepare(q *query.Query, o Options) (*Demo, error) {
	if o.Rate < 0 || o.Partitions <= 0 {
		return nil, &UsageError{"--demo-rate must be ≥ 0 and --demo-partitions > 0"}
	}
	if q.Options["kafka.bootstrap.servers"] != "" {
		return nil, &UsageError{"--demo runs its own broker: leave out kafka.bootstrap.servers"}
	}
	d := &Demo{opts: o, q: q, info: func(string, ...any) {}}
	if q.Options == nil {
		q.Options = map[string]string{}
	}
	q.Options["kafka.bootstrap.servers"] = placeholderBroker
	if q.Options["subscribe"] == "" && q.Options["subscribePattern"] == "" && q.Options["assign"] == "" {
		q.Options["subscribe"] = Topic
	}
	if q.Options["startingOffsets"] == "" {
		q.Options["startingOffsets"] = "earliest"
	}
	if q.Sink == query.SinkKafka && q.SinkOptions["kafka.bootstrap.servers"] == "" {
		if q.SinkOptions == nil {
			q.SinkOptions = map[string]string{}
		}
		q.SinkOptions["kafka.bootstrap.servers"] = placeholderBroker
	}
	if q.Trigger == "" {
		q.Trigger = Trigger
	}
	if len(q.Select) == 0 && (q.Sink == "" || q.Sink == query.SinkConsole) {
		q.Select = []string{"CAST(key AS STRING) AS key", `json(value, "amount") AS amount`, "partition", "offset", "CAST(value AS STRING) AS value"}
	}
	if q.Checkpoint == "" && q.SinkOptions["checkpointLocation"] == "" {
		q.Checkpoint, d.tempCheckpoint = placeholderCheckpoint, true
	}
	return d, nil
}

// Start starts the broker and creates the checkpoint folder when the demo chooses it, and puts
// their real addresses in the query (validate it again). info reports what was started. On
// error, what was started is stopped again.
func (d *Demo) Start(ctx context.Context, info func(string, ...any)) (err error) {
	d.info = info
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	bopts := embedkafka.Options{
		Topics:   []embedkafka.TopicSpec{{Name: Topic, Partitions: int32(d.opts.Partitions)}},
		Generate: &embedkafka.GeneratorSpec{Topic: Topic, Rate: d.opts.Rate},
	}
	if !d.tempCheckpoint {
		// A named checkpoint outlives this process, so the broker's log must too (with --keep):
		// otherwise a restart finds the topic empty and reports data loss, as Spark would.
		sum := sha256.Sum256([]byte(d.q.Checkpoint))
		bopts.DataDir = filepath.Join(os.TempDir(), "ckpt-demo-broker-"+hex.EncodeToString(sum[:6]))
		if _, serr := os.Stat(bopts.DataDir); errors.Is(serr, os.ErrNotExist) {
			d.created = append(d.created, bopts.DataDir)
		}
		info("broker data in %s", bopts.DataDir)
	}
	b, err := embedkafka.Start(context.WithoutCancel(ctx), bopts)
	if err != nil {
		return err
	}
	d.broker = b
	info("started an embedded Kafka broker on %s: topic %q (%d partitions), %d generated records/s", b.Addr(), Topic, d.opts.Partitions, d.opts.Rate)
	d.q.Options["kafka.bootstrap.servers"] = b.Addr()
	if d.q.SinkOptions["kafka.bootstrap.servers"] == placeholderBroker {
		d.q.SinkOptions["kafka.bootstrap.servers"] = b.Addr()
	}
	if d.tempCheckpoint {
		dir, err := os.MkdirTemp("", "ckpt-demo-")
		if err != nil {
			return err
		}
		d.created = append(d.created, dir)
		d.q.Checkpoint = dir
		if d.opts.Keep {
			info("checkpoint in %s (kept: inspect it later with ckpt doctor %s)", dir, dir)
		} else {
			info("checkpoint in %s (removed at the end; --keep keeps it)", dir)
		}
	}
	info("stop with Ctrl-C (or --max-batches N / --duration 30s)")
	return nil
}

// Created are the folders Start made.
func (d *Demo) Created() []string { return d.created }

// Close stops the broker and, unless Keep, removes the folders Start created.
func (d *Demo) Close() {
	if d.broker != nil {
		d.broker.Close()
		d.broker = nil
	}
	if d.opts.Keep {
		for _, dir := range d.created {
			d.info("kept %s", dir)
		}
		return
	}
	for _, dir := range d.created {
		if err := os.RemoveAll(dir); err != nil {
			d.info("could not remove %s: %v", dir, err)
			continue
		}
		d.info("removed %s (--keep keeps it)", dir)
	}
	d.created = nil
}
