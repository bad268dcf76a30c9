package state

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestSorter: rows of several partitions, past a budget of a few rows (runs merged three at a
// time, so in passes), come out of each partition in key order, as often as it is walked; a
// key added twice comes out once (the last added) and Added tells; Close removes the runs.
func TestSorter(t *testing.T) {
	for _, budget := range []int64{1 << 20, 300} {
		tmp := t.TempDir()
		s, err := NewSorter(context.Background(), 3, SortOptions{Budget: budget, TempDir: tmp, FanIn: 3})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		want := make([]map[string]string, 3)
		for i := range want {
			want[i] = map[string]string{}
		}
		for i := range 3000 {
			part := rng.IntN(3)
			k := fmt.Sprintf("k%06d", rng.IntN(100_000))
			v := fmt.Sprint(i)
			if err := s.Add(part, []byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[part][k] = v
		}
		if err := s.Finish(); err != nil {
			t.Fatal(err)
		}
		if (s.Runs() > 100) != (budget == 300) {
			t.Errorf("budget %d: %d runs", budget, s.Runs())
		}
		dups := int64(0)
		for part := range 3 {
			for range 2 {
				var keys []string
				err := s.Each(part, func(key, value []byte) error {
					if want[part][string(key)] != string(value) {
						t.Fatalf("budget %d partition %d: %s=%s, want %s", budget, part, key, value, want[part][string(key)])
					}
					keys = append(keys, string(key))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.IsSorted(keys) || len(keys) != len(want[part]) {
					t.Fatalf("budget %d partition %d: %d keys (sorted %v), want %d", budget, part, len(keys), slices.IsSorted(keys), len(want[part]))
				}
			}
			dups += s.Added(part) - int64(len(want[part]))
			s.Release(part)
		}
		if dups == 0 {
			t.Errorf("budget %d: no key was added twice; the test needs some", budget)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("budget %d: %d entries left in the temporary directory", budget, len(left))
		}
	}
}
