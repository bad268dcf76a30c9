package inspect

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/cli/brokerview"
	"github.com/ckpt-dev/ckpt/internal/inspect"
	"github.com/ckpt-dev/ckpt/internal/lag"
	"github.com/ckpt-dev/ckpt/internal/render"
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
func readBroker(ctx context.Context, opts *Options, cp *checkpoint.Checkpoint) (*brokerView, error) {
	bv := &brokerView{BootstrapServers: opts.Broker.BootstrapServers}
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
	t := render.Table{Title: title, Headers: []string{"source", "topic", "partition", "committed", "in-flight", "log start", "latest", "lag", "status"},
		Drop: []int{1, 0, 0, 5, 2, 3, 4, 0, 0}}
	for _, p := range b.Partitions {
		t.Rows = append(t.Rows, []string{strconv.Itoa(p.Source), p.Topic, strconv.Itoa(int(p.Partition)),
			brokerview.Offset(p.Committed), brokerview.Offset(p.InFlight), brokerview.Offset(p.LogStart), brokerview.Offset(p.Latest), brokerview.Offset(p.LagRecords),
			brokerview.Status(r, p.Status)})
	}
	r.Table(t)
	r.Println("lag: " + render.Count(int64(b.LagRecords), "record"))
	brokerview.PrintIssues(r, b.Issues)
	if len(b.Issues) > 0 {
		r.Println(r.Faint(fmt.Sprintf("What the restart meets and what to do: ckpt doctor %s --bootstrap-server %s", b.Checkpoint, b.BootstrapServers)))
	}
}
