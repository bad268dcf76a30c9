package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/inspect"
	"github.com/ckpt-dev/ckpt/internal/lag"
	"github.com/ckpt-dev/ckpt/internal/render"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// summaryWithBroker is the summary of a checkpoint (its fields unchanged) plus, with
// --bootstrap-server, the broker's view of its Kafka partitions.
type summaryWithBroker struct {
	*inspect.Summary
	Broker *brokerView `json:"broker"`
}

// brokerView is the "broker" object: lag's computation for the checkpoint (ckpt lag -o json's
// checkpoint entry, without the lag in time), with the broker asked and when.
type brokerView struct {
	// BootstrapServers is the broker asked.
	BootstrapServers string `json:"bootstrapServers"`
	// ReadAt is when its offsets were listed; null when the checkpoint's position could not be
	// read (then Error says why and the broker was not asked).
	ReadAt *time.Time `json:"readAt"`
	lag.CheckpointLag
}

// readBroker reads the checkpoint's position (lag.ReadPosition: the latest commit's offsets and
// the batch in flight) and puts it next to the broker's offsets (lag.Compute). A position that
// cannot be read (a corrupt latest file, a commit without its offsets) is reported in the view,
// not as a failure: inspect shows damaged checkpoints. A broker that cannot be read fails.
func readBroker(ctx context.Context, opts *Options, store storage.Store) (*brokerView, error) {
	bv := &brokerView{BootstrapServers: opts.Broker.BootstrapServers}
	cp, err := checkpoint.Load(ctx, store)
	if err != nil {
		return nil, err
	}
	pos, err := lag.ReadPosition(ctx, cp, opts.Location)
	if err != nil {
		bv.CheckpointLag = lag.CheckpointLag{Checkpoint: opts.Location, Error: err.Error(), Partitions: []lag.PartitionLag{}}
		return bv, nil
	}
	st, err := opts.Broker.ReadTopics(ctx, pos.Topics())
	if err != nil {
		return nil, err
	}
	bv.ReadAt = &st.ReadAt
	bv.CheckpointLag = lag.Compute(pos, st, nil, st.ReadAt)
	return bv, nil
}

// renderBroker prints the broker's view: one row per partition, then the problems.
func renderBroker(r *render.Renderer, b *brokerView) {
	r.Println()
	title := "Kafka on the broker (" + b.BootstrapServers + ")"
	if b.Error != "" {
		r.Println(r.Bold(title))
		r.Println(r.Bad("cannot compare with the broker: ") + b.Error)
		return
	}
	if len(b.Partitions) == 0 {
		r.Println(r.Bold(title))
		r.Println("no Kafka source: the checkpoint has no batch yet, or its sources are not Kafka")
		return
	}
	t := render.Table{Title: title, Headers: []string{"source", "topic", "partition", "committed", "in-flight", "log start", "latest", "lag", "status"}}
	for _, p := range b.Partitions {
		status := p.Status
		switch status {
		case lag.StatusOK:
			status = r.Good(status)
		case lag.StatusNoCommit, "partitions-added":
			status = r.Warn(status)
		default:
			status = r.Bad(status)
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(p.Source), p.Topic, strconv.Itoa(int(p.Partition)),
			optOffset(p.Committed), optOffset(p.InFlight), optOffset(p.LogStart), optOffset(p.Latest), optOffset(p.LagRecords), status})
	}
	r.Table(t)
	r.Printf("lag: %d records\n", b.LagRecords)
	for _, is := range b.Issues {
		mark := r.Warn("!")
		if is.DataLoss || is.Fails {
			mark = r.Bad("!")
		}
		r.Printf("%s %s: %s\n", mark, is.Code, is.Message)
		if is.SparkMessage != "" {
			first, _, _ := strings.Cut(is.SparkMessage, "\n")
			r.Printf("  %s %s\n", r.Faint("Spark:"), strings.TrimSpace(first))
		}
	}
	if len(b.Issues) > 0 {
		r.Println(r.Faint(fmt.Sprintf("What the restart meets and what to do: ckpt doctor %s --bootstrap-server %s", b.Checkpoint, b.BootstrapServers)))
	}
}

func optOffset(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}
