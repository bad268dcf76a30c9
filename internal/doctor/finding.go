package doctor

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/recovery"
)

// Finding is one bad (or noteworthy) condition. Its JSON form is a public contract
// (docs/doctor.md).
type Finding struct {
	// Code is a stable id from Codes.
	Code string `json:"code"`
	// Severity is one of the code's Severities.
	Severity Severity `json:"severity"`
	// Batch is the batch id the finding is about, nil when it is about no single batch.
	Batch *int64 `json:"batch"`
	// Path is the file or directory the finding is about, relative to the checkpoint root
	// ("offsets/6"); files in the sink are prefixed "sink:".
	Path string `json:"path"`
	// Files are the other files involved (evidence), relative like Path.
	Files []string `json:"files"`
	// Message states this instance in one line.
	Message string `json:"message"`
	// Explanation says what Spark does with it and why it matters.
	Explanation string `json:"explanation"`
	// SparkError is what Spark prints for it, nil when Spark says nothing.
	SparkError *string `json:"sparkError"`
	// Fix says what to do.
	Fix string `json:"fix"`
	// Commands are the exact shell commands of the fix, with the checkpoint location
	// substituted and quoted.
	Commands []string `json:"commands"`
	// Kafka is the broker issue behind a broker finding (broker.go): partition, offsets,
	// records affected, Spark's message and what failOnDataLoss=false does. Omitted otherwise.
	Kafka *recovery.RestartIssue `json:"kafka,omitempty"`
	// Delta is the planner's verdict on a Delta source's table behind a Delta finding
	// (delta.go). Omitted otherwise.
	Delta *recovery.DeltaVerdict `json:"delta,omitempty"`
}

// Report is doctor's result: the findings and the planner's restart prediction they rest on.
type Report struct {
	Findings []Finding `json:"findings"`
	// Restart is recovery.Plan's result for the same options.
	Restart *recovery.Result `json:"restart"`
	// NotChecked are the checks left out for want of a flag (--bootstrap-server, --sink,
	// --deep): the findings say nothing about them.
	NotChecked []NotChecked `json:"notChecked"`
}

// Max returns the most serious severity among the findings, "" when there are none.
func (r *Report) Max() Severity {
	var m Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > m.Rank() {
			m = f.Severity
		}
	}
	return m
}

// Count returns how many findings have severity s.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Fails reports whether some finding is at or above threshold (--fail-on).
func (r *Report) Fails(threshold Severity) bool {
	for _, f := range r.Findings {
		if f.Severity.Rank() >= threshold.Rank() {
			return true
		}
	}
	return false
}

// Has reports whether some finding has code.
func (r *Report) Has(code string) bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Code == code })
}

// sortFindings orders by severity, then registry order, then batch, then path, so the output is
// stable for golden files and the first line is the most urgent.
func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		if c := cmp.Compare(b.Severity.Rank(), a.Severity.Rank()); c != 0 {
			return c
		}
		if c := cmp.Compare(order(a.Code), order(b.Code)); c != 0 {
			return c
		}
		ab, bb := int64(-1), int64(-1)
		if a.Batch != nil {
			ab = *a.Batch
		}
		if b.Batch != nil {
			bb = *b.Batch
		}
		if c := cmp.Compare(ab, bb); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}

func ptr[T any](v T) *T { return &v }
