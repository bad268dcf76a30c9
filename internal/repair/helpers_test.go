package repair

import (
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
)

func execOpts() journal.ExecOptions {
	return journal.ExecOptions{Now: func() time.Time { return journaltest.Now }, Tool: "ckpt test"}
}
