package state

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/sstable"
)

// TestMergeSSTs: per user key the entry with the highest sequence number wins, whichever file
// holds it; a deletion hides older values; keys come out in byte order.
func TestMergeSSTs(t *testing.T) {
	type e struct {
		k    string
		seq  uint64
		kind sstable.Kind
		v    string
	}
	tables := [][]e{
		{{"a", 1, sstable.KindValue, "a1"}, {"b", 2, sstable.KindValue, "b2"}, {"c", 3, sstable.KindValue, "c3"}, {"f", 4, sstable.KindValue, "f4"}},
		{{"a", 5, sstable.KindDeletion, ""}, {"b", 6, sstable.KindValue, "b6"}, {"d", 7, sstable.KindValue, "d7"}, {"f", 3, sstable.KindSingleDeletion, ""}},
		{{"e", 9, sstable.KindValue, "e9"}, {"e", 8, sstable.KindDeletion, ""}, {"g", 11, sstable.KindDeletion, ""}, {"g", 10, sstable.KindValue, "g10"}},
	}
	var its []*sstable.Iter
	for _, es := range tables {
		w := &sstable.Writer{}
		for _, x := range es {
			w.Add([]byte(x.k), x.seq, x.kind, []byte(x.v))
		}
		tb, err := OpenSST("t.sst", w.Finish())
		if err != nil {
			t.Fatal(err)
		}
		it := tb.Iter()
		if !it.Next() {
			t.Fatal(it.Err())
		}
		its = append(its, it)
	}
	var got []string
	err := mergeSSTs(its, func(k, v []byte, _ string) error {
		got = append(got, string(k)+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if g, want := strings.Join(got, " "), "b=b6 c=c3 d=d7 e=e9 f=f4"; g != want {
		t.Errorf("merged %s, want %s", g, want)
	}
}
