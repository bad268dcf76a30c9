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
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
	if len(q.Select) == 0 && len(q.GroupBy) == 0 && (q.Sink == "" || q.Sink == query.SinkConsole) {
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
		_, serr := os.Stat(bopts.DataDir)
		freshBroker := errors.Is(serr, os.ErrNotExist)
		if freshBroker {
			d.created = append(d.created, bopts.DataDir)
		}
		info("broker data in %s", bopts.DataDir)
		if err := d.checkpointFor(freshBroker, info); err != nil {
			return err
		}
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

// MarkerPath is the file, inside a checkpoint the demo ran on, that says it is the demo's own:
// a later --demo on the same checkpoint whose broker data is gone may then start it afresh.
const MarkerPath = "_ckpt/demo.json"

// localDir is the checkpoint as a local directory, "" for a store URI (the demo leaves those alone).
func localDir(loc string) string {
	if strings.HasPrefix(loc, "file://") {
		return strings.TrimPrefix(loc, "file://")
	}
	if strings.Contains(loc, "://") {
		return ""
	}
	return loc
}

// checkpointFor prepares a named checkpoint for a broker that is new (freshBroker: its data
// was removed at the end of an earlier run without --keep) or kept. The offsets of an earlier
// demo's checkpoint name records that a new broker does not have, and the restart would fail
// ("Partition demo-0's offset was changed from 11 to 3"): the demo's own checkpoint (its marker)
// is started afresh, said as such; another checkpoint with batches is refused with what to do.
func (d *Demo) checkpointFor(freshBroker bool, info func(string, ...any)) error {
	dir := localDir(d.q.Checkpoint)
	if dir == "" {
		return nil
	}
	hasBatches := false
	if ents, err := os.ReadDir(filepath.Join(dir, "offsets")); err == nil && len(ents) > 0 {
		hasBatches = true
	}
	_, merr := os.Stat(filepath.Join(dir, MarkerPath))
	ours := merr == nil
	switch {
	case freshBroker && hasBatches && ours:
		info("%s is an earlier demo's checkpoint and its broker data is gone (removed at its end; --keep keeps it): starting it afresh", dir)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	case freshBroker && hasBatches:
		return &UsageError{fmt.Sprintf("--demo starts a new broker, but %s holds batches read from another one: the restart would fail on offsets the new topic does not have. Give a new --checkpoint, or remove %s", dir, dir)}
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(MarkerPath)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, MarkerPath), []byte(`{"demo":true,"topic":"`+Topic+`"}`+"\n"), 0o644)
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
