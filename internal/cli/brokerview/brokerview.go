// Package brokerview is the broker views ckpt lag and ckpt inspect --bootstrap-server share (a
// command package never imports another): a partition's lag status, the broker's issues under a
// partition table, an optional offset.
package brokerview

import (
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/internal/lag"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// Status styles a partition's lag status (lag.PartitionLag.Status): ok as good, no-commit and
// partitions-added as warnings, any other as bad. ckpt lag and ckpt inspect's broker table share it.
func Status(r *render.Renderer, status string) string {
	switch status {
	case lag.StatusOK:
		return r.Good(status)
	case lag.StatusNoCommit, recovery.ReasonPartitionsAdded:
		return r.Warn(status)
	default:
		return r.Bad(status)
	}
}

// PrintIssues prints the broker's problems below a partition table, one line each ("!" code:
// message), with the first line of Spark's exception under it. ckpt lag and ckpt inspect share it.
func PrintIssues(r *render.Renderer, issues []recovery.BrokerIssue) {
	for _, is := range issues {
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
}

// Offset renders an optional offset or count: "-" when unknown.
func Offset(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}
