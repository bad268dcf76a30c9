package render

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0 Kafka records", 1: "1 Kafka record", 3: "3 Kafka records"} {
		if got := Count(n, "Kafka record"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
