package repair

import (
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal"
	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
)

func execOpts() journal.Options {
	return journal.Options{Now: func() time.Time { return journaltest.Now }, Tool: "ckpt test"}
}
