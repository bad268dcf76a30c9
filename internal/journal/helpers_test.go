package journal

import (
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
)

func execOpts() Options {
	return Options{Now: func() time.Time { return journaltest.Now }, Tool: "ckpt test"}
}
