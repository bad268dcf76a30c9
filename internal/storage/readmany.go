package storage

import (
	"context"
	"sync"

	"github.com/ckpt-dev/ckpt/internal/progress"
)

// DefaultReadParallelism is ReadMany's parallelism when given 0 or less:
// enough to hide S3 round trips without opening hundreds of connections.
const DefaultReadParallelism = 16

// ReadMany reads paths concurrently, at most parallelism at a time
// (DefaultReadParallelism if parallelism <= 0), and returns the contents in
// the order of paths. On the first error it stops starting reads, cancels
// those in flight and returns that error (a missing file wraps
// fs.ErrNotExist like ReadFile).
func ReadMany(ctx context.Context, s Store, paths []string, parallelism int) ([][]byte, error) {
	if parallelism <= 0 {
		parallelism = DefaultReadParallelism
	}
	parallelism = min(parallelism, len(paths))
	out := make([][]byte, len(paths))
	meter := progress.From(ctx)
	meter.Expect(progress.Read, len(paths))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		next     = make(chan int)
	)
	for range parallelism {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				b, err := s.ReadFile(ctx, paths[i])
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				out[i] = b
				meter.Add(progress.Read, 1)
			}
		}()
	}
feed:
	for i := range paths {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
