package storage

import "time"

// GCSTuneForTest sets a GCS store's listing page size (0: the server's default) and its wait
// before the first retry, so that tests can list many pages and retry quickly.
func GCSTuneForTest(s *GCS, pageSize int, backoff time.Duration) {
	s.pageSize, s.backoff = pageSize, backoff
}
