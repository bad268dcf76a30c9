package storage

import "context"

// HDFSPublishForTest runs WriteFile's create-then-rename without its existence check, as a
// writer that lost the race between the check and the rename would.
func HDFSPublishForTest(ctx context.Context, s *HDFS, p string, data []byte) error {
	c, full, err := s.key(OpWrite, p, false)
	if err != nil {
		return err
	}
	return s.publish(ctx, c, full, BytesSource(data))
}
