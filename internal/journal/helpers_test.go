package journal

import (
	"time"

	"github.com/ckpt-dev/ckpt/internal/journal/journaltest"
)

func execOpts() ExecOptions {
	return ExecOptions{Now: func() time.Time { return journaltest.Now }, Tool: "ckpt test"}
}
