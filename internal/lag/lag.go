package lag

import (
	"cmp"
	"slices"
	"time"

	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/topicstate"
)

// Report is one refresh: every checkpoint's lag against the broker. Its JSON form is `ckpt lag
// -o json` (docs/lag.md).
type Report struct {
	// Time is when the refresh ended.
	Time time.Time `json:"time"`
	// Checkpoints are in the order given.
	Checkpoints []CheckpointLag `json:"checkpoints"`
	// CommitGroup reports the consumer-group mirror (--commit-group); nil without it.
	CommitGroup *GroupMirror `json:"commitGroup,omitempty"`
}

// CheckpointLag is one checkpoint's lag.
type CheckpointLag struct {
	// Checkpoint is the location as given.
	Checkpoint string `json:"checkpoint"`
	// Error is why the checkpoint could not be read ("" when it was); the other fields are
	// then empty.
	Error string `json:"error,omitempty"`
	// LastCommitBatch is the latest commits/ id; null before the first commit.
	LastCommitBatch *int64 `json:"lastCommitBatch"`
	// LastCommitTime is when that commit file was written (its modification time).
	LastCommitTime *time.Time `json:"lastCommitTime"`
	// LastCommitAgeSeconds is the time since LastCommitTime.
	LastCommitAgeSeconds *float64 `json:"lastCommitAgeSeconds"`
	// CorruptCommits are commit files newer than LastCommitBatch that cannot be read, newest
	// first (omitted when there is none): Spark's restart reads the latest one and fails.
	CorruptCommits []CommitProblem `json:"corruptCommits,omitempty"`
	// InFlightBatch is the latest offsets/ id when it has no commit: running now, or re-run by
	// the next restart; null when the latest batch is committed.
	InFlightBatch *int64 `json:"inFlightBatch"`
	// LagRecords is the sum of the partitions' lag.
	LagRecords int64 `json:"lagRecords"`
	// LagSeconds is the largest partition lag in time; null when no partition has one.
	LagSeconds *float64 `json:"lagSeconds"`
	// Partitions are by source, topic and partition.
	Partitions []PartitionLag `json:"partitions"`
	// Issues are recovery.CheckBroker's findings for the committed offsets (failOnDataLoss=true):
	// what the next batch hits.
	Issues []recovery.BrokerIssue `json:"issues"`
	// Restart is the planner's verdict on a restart now; null when the checkpoint could not be
	// read. When it fails, no partition is "ok".
	Restart *RestartVerdict `json:"restart,omitempty"`
}

// RestartVerdict is recovery.Plan's prediction in brief.
type RestartVerdict struct {
	// Outcome is "resume" or "fail"; Reason the planner's stable reason when it fails.
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// Verdict is the one-line summary ("Restart will FAIL: …").
	Verdict string `json:"verdict"`
	// Fails is set when the checkpoint stops the restart (recovery.Result.Blocked).
	Fails bool `json:"fails"`
}

// PartitionLag is one partition of one Kafka source.
type PartitionLag struct {
	// Source is the source index (sources/<i>/).
	Source int `json:"source"`
	// Topic and Partition name the partition.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"` // see Topic
	// Committed is the next offset the query reads (the latest commit's end offset); null for
	// a partition the checkpoint does not have yet, or before the first commit.
	Committed *int64 `json:"committed"`
	// InFlight is the end offset of the uncommitted batch; null when none.
	InFlight *int64 `json:"inFlight"`
	// LogStart and Latest are the broker's earliest and latest offsets; null when the
	// partition does not exist.
	LogStart *int64 `json:"logStart"`
	Latest   *int64 `json:"latest"` // see LogStart
	// LagRecords is Latest − Committed (never negative), as kafka-consumer-groups computes
	// it; for a new partition Latest − LogStart (the query reads it from the earliest offset).
	// Null when either side is unknown.
	LagRecords *int64 `json:"lagRecords"`
	// LagSeconds is LatestTimestamp − CommittedTimestamp: how much record time the query has
	// still to read; 0 with no lag; null when a timestamp is unavailable.
	LagSeconds *float64 `json:"lagSeconds"`
	// CommittedTimestamp is the timestamp of the first record the query has not read (at
	// Committed, or at LogStart when that is higher).
	CommittedTimestamp *time.Time `json:"committedTimestamp"`
	// LatestTimestamp is the timestamp of the last record (at Latest − 1).
	LatestTimestamp *time.Time `json:"latestTimestamp"`
	// Status is "ok", "no-commit" (nothing committed yet) or the code of the partition's
	// issue (offsets-out-of-range, topic-recreated, partitions-removed, partitions-added,
	// topic-missing).
	Status string `json:"status"`
}

// The statuses that are not issue codes.
const (
	StatusOK       = "ok"
	StatusNoCommit = "no-commit"
	// StatusRestartFails: the partition has no issue of its own, but the restart fails
	// (CheckpointLag.Restart says why), so the query reads nothing more.
	StatusRestartFails = "restart-fails"
)

// TimestampPositions are the records whose timestamps lag in time needs: the first unread
// record of each partition with lag, and the last record of each non-empty partition.
func (p *Position) TimestampPositions(st *recovery.BrokerState) []topicstate.At {
	var out []topicstate.At
	for _, s := range p.Sources {
		for _, tp := range partitionsFor(s, st) {
			bp, ok := st.Lookup(tp.Topic, tp.Partition)
			if !ok || bp.End <= bp.Start {
				continue
			}
			out = append(out, topicstate.At{Topic: tp.Topic, Partition: tp.Partition, Offset: bp.End - 1})
			from := bp.Start
			if s.Committed != nil {
				if c, ok := s.Committed.Map()[tp]; ok {
					from = max(c, bp.Start)
				}
			}
			if from < bp.End {
				out = append(out, topicstate.At{Topic: tp.Topic, Partition: tp.Partition, Offset: from})
			}
		}
	}
	return out
}

// partitionsFor lists a source's partitions: those in its offsets and, for the topics it
// reads, those the broker has (new partitions).
func partitionsFor(s SourcePosition, st *recovery.BrokerState) []logformat.TopicPartition {
	seen := map[logformat.TopicPartition]bool{}
	var out []logformat.TopicPartition
	add := func(tp logformat.TopicPartition) {
		if !seen[tp] {
			seen[tp] = true
			out = append(out, tp)
		}
	}
	var topics []string
	for _, o := range []*logformat.KafkaOffsets{s.Committed, s.InFlight} {
		if o == nil {
			continue
		}
		for tp := range o.Map() {
			add(tp)
		}
		topics = append(topics, recovery.KafkaTopics(*o)...)
	}
	for _, name := range topics {
		if t := st.Topic(name); t != nil {
			for _, p := range t.Partitions {
				add(logformat.TopicPartition{Topic: name, Partition: p.Partition})
			}
		}
	}
	slices.SortFunc(out, func(a, b logformat.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Compute puts a checkpoint's position next to the broker's offsets. ts holds the record
// timestamps fetched for TimestampPositions (nil: no lag in time); now dates the commit age.
func Compute(p *Position, st *recovery.BrokerState, ts map[topicstate.At]time.Time, now time.Time) CheckpointLag {
	cl := CheckpointLag{Checkpoint: p.Location, LastCommitBatch: p.LastCommit, CorruptCommits: p.CorruptCommits, InFlightBatch: p.InFlight,
		Partitions: []PartitionLag{}, Issues: []recovery.BrokerIssue{}}
	fails := false
	if res := p.Restart; res != nil {
		fails = res.Blocked()
		cl.Restart = &RestartVerdict{Outcome: res.Outcome, Reason: res.Reason, Verdict: res.Verdict(), Fails: fails}
	}
	if !p.LastCommitTime.IsZero() {
		t := p.LastCommitTime
		age := max(0, now.Sub(t).Seconds())
		cl.LastCommitTime, cl.LastCommitAgeSeconds = &t, &age
	}
	for _, s := range p.Sources {
		status := map[logformat.TopicPartition]string{}
		var committed map[logformat.TopicPartition]int64
		if s.Committed != nil {
			committed = s.Committed.Map()
			issues := recovery.CheckBroker(*s.Committed, st, true)
			for _, is := range issues {
				status[logformat.TopicPartition{Topic: is.Topic, Partition: is.Partition}] = is.Code
			}
			cl.Issues = append(cl.Issues, issues...)
		}
		var inFlight map[logformat.TopicPartition]int64
		if s.InFlight != nil {
			inFlight = s.InFlight.Map()
		}
		for _, tp := range partitionsFor(s, st) {
			pl := PartitionLag{Source: s.Index, Topic: tp.Topic, Partition: tp.Partition, Status: StatusOK}
			if c, ok := committed[tp]; ok {
				pl.Committed = ptr(c)
			}
			if f, ok := inFlight[tp]; ok {
				pl.InFlight = ptr(f)
			}
			switch code, ok := status[tp]; {
			case ok:
				pl.Status = code
			case st.IsMissing(tp.Topic):
				pl.Status = recovery.ReasonTopicMissing
			case fails:
				pl.Status = StatusRestartFails
			case s.Committed == nil:
				pl.Status = StatusNoCommit
			}
			bp, onBroker := st.Lookup(tp.Topic, tp.Partition)
			if onBroker {
				pl.LogStart, pl.Latest = ptr(bp.Start), ptr(bp.End)
				from, known := bp.Start, s.Committed != nil
				if pl.Committed != nil {
					from = *pl.Committed
				}
				if known {
					pl.LagRecords = ptr(max(0, bp.End-from))
					cl.LagRecords += *pl.LagRecords
				}
				if ts != nil && pl.LagRecords != nil {
					pl.LagSeconds, pl.CommittedTimestamp, pl.LatestTimestamp = timeLag(tp, bp, from, *pl.LagRecords, ts)
					if pl.LagSeconds != nil && (cl.LagSeconds == nil || *pl.LagSeconds > *cl.LagSeconds) {
						cl.LagSeconds = ptr(*pl.LagSeconds)
					}
				}
			}
			cl.Partitions = append(cl.Partitions, pl)
		}
	}
	return cl
}

// timeLag is the record time between the first unread record and the last record.
func timeLag(tp logformat.TopicPartition, bp recovery.BrokerPartition, from, lag int64, ts map[topicstate.At]time.Time) (*float64, *time.Time, *time.Time) {
	var first, last *time.Time
	if bp.End > bp.Start {
		if t, ok := ts[topicstate.At{Topic: tp.Topic, Partition: tp.Partition, Offset: bp.End - 1}]; ok {
			last = &t
		}
	}
	if at := max(from, bp.Start); at < bp.End {
		if t, ok := ts[topicstate.At{Topic: tp.Topic, Partition: tp.Partition, Offset: at}]; ok {
			first = &t
		}
	}
	if lag == 0 {
		return ptr(0.0), first, last
	}
	if first == nil || last == nil {
		return nil, first, last
	}
	// Timestamps need not increase (CreateTime is the producer's clock): never negative.
	return ptr(max(0, last.Sub(*first).Seconds())), first, last
}

func ptr[T any](v T) *T { return &v }
