package lag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/internal/cli/brokerview"
	"github.com/ckpt-dev/ckpt/internal/lag"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// printReport writes one table per checkpoint, its problems below it, then the group mirror.
func printReport(r *render.Renderer, rep *lag.Report) {
	for i, c := range rep.Checkpoints {
		if i > 0 {
			r.Println()
		}
		printCheckpoint(r, c)
	}
	if g := rep.CommitGroup; g != nil {
		r.Println()
		if g.Error != "" {
			r.Println(r.Bad("consumer group "+g.Group+": ") + g.Error)
		} else {
			r.Printf("consumer group %s: %s mirrored (%d updated now). %s\n", g.Group, render.Count(int64(g.Partitions), "partition"), g.Committed,
				r.Faint("Spark never reads this group: it is a copy for lag tools."))
		}
	}
}

func printCheckpoint(r *render.Renderer, c lag.CheckpointLag) {
	if c.Error != "" {
		r.Println(r.Bold(c.Checkpoint) + ": " + r.Bad("error: ") + c.Error)
		return
	}
	var head []string
	switch {
	case c.LastCommitBatch == nil:
		head = append(head, "no commit yet")
	case c.LastCommitAgeSeconds != nil:
		head = append(head, fmt.Sprintf("last commit: batch %d, %s ago", *c.LastCommitBatch, seconds(*c.LastCommitAgeSeconds)))
	default:
		head = append(head, fmt.Sprintf("last commit: batch %d", *c.LastCommitBatch))
	}
	if c.InFlightBatch != nil {
		head = append(head, fmt.Sprintf("batch %d in flight", *c.InFlightBatch))
	}
	if n := len(c.CorruptCommits); n > 0 {
		head = append(head, render.Count(int64(n), "newer commit file")+" corrupt")
	}
	total := "lag: " + render.Count(int64(c.LagRecords), "record")
	if c.LagSeconds != nil {
		total += ", " + seconds(*c.LagSeconds)
	}
	head = append(head, total)
	title := c.Checkpoint + "  " + r.Faint(strings.Join(head, "; "))
	if len(c.Partitions) == 0 {
		r.Println(r.Bold(c.Checkpoint) + "  " + r.Faint(strings.Join(head[:len(head)-1], "; ")))
		r.Println("no Kafka source: the checkpoint has no batch yet, or its sources are not Kafka")
		printCorrupt(r, c)
		return
	}
	// At 80 columns the table drops the source index first and keeps topic, partition, lag and
	// status (never cut): -o wide shows every column.
	t := render.Table{Title: title, Headers: []string{"source", "topic", "partition", "committed", "in-flight", "latest", "lag", "lag-time", "status"},
		Drop: []int{1, 0, 0, 5, 2, 3, 0, 4, 0}}
	for _, p := range c.Partitions {
		lt := "-"
		if p.LagSeconds != nil {
			lt = seconds(*p.LagSeconds)
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(p.Source), p.Topic, strconv.Itoa(int(p.Partition)),
			brokerview.Offset(p.Committed), brokerview.Offset(p.InFlight), brokerview.Offset(p.Latest), brokerview.Offset(p.LagRecords), lt, brokerview.Status(r, p.Status)})
	}
	r.Table(t)
	if c.Restart != nil && c.Restart.Fails {
		r.Println(r.Bad(strings.TrimSpace(c.Restart.Verdict)) + " (ckpt doctor " + c.Checkpoint + " says why)")
	}
	printCorrupt(r, c)
	brokerview.PrintIssues(r, c.Issues)
}

// printCorrupt names the commit files that could not be read: the restart reads the latest
// and fails, so the last commit shown is the newest readable one.
func printCorrupt(r *render.Renderer, c lag.CheckpointLag) {
	for _, p := range c.CorruptCommits {
		r.Println(r.Bad(fmt.Sprintf("batch %d's commit is corrupt: ", p.Batch)) + p.Problem + " (ckpt doctor " + c.Checkpoint + " says what a restart does)")
	}
}

// seconds renders a duration for people: 0s, 850ms, 4.2s, 3m20s, 2h5m0s.
func seconds(s float64) string {
	d := time.Duration(math.Round(s * float64(time.Second)))
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// printDeltaReport prints the Delta sources' lag: one row per source.
func printDeltaReport(r *render.Renderer, rep *lag.DeltaReport) {
	r.Printf("%s %s\n", r.Bold("Checkpoint:"), rep.Checkpoint)
	rows := [][]string{}
	for _, d := range rep.Sources {
		committed, behind := "-", "-"
		if d.Committed != nil {
			committed = deltaPos(*d.Committed)
		}
		if d.VersionsBehind != nil {
			behind = strconv.FormatInt(*d.VersionsBehind, 10)
		}
		inflight := "-"
		if d.InFlight != nil {
			inflight = deltaPos(*d.InFlight)
		}
		status := d.Status
		if status != "ok" {
			status = r.Bad(status)
		}
		rows = append(rows, []string{strconv.Itoa(d.Source), d.Location, committed, inflight, strconv.FormatInt(d.LatestVersion, 10), behind, status})
	}
	r.Table(render.Table{Headers: []string{"SOURCE", "TABLE", "COMMITTED", "IN-FLIGHT", "LATEST", "VERSIONS-BEHIND", "STATUS"}, Rows: rows})
	for _, d := range rep.Sources {
		if d.Status != "ok" {
			r.Printf("source %d: %s\n", d.Source, d.Message)
		}
	}
}

// deltaPos renders a Delta offset as version/index, "v3" for the start of version 3.
func deltaPos(o logformat.DeltaSourceOffset) string {
	s := fmt.Sprintf("v%d", o.ReservoirVersion)
	if o.Index != logformat.DeltaBaseIndex {
		s += fmt.Sprintf("#%d", o.Index)
	}
	if o.IsStartingVersion {
		s += " (snapshot)"
	}
	return s
}
