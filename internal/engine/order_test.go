package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/embedkafka"
	"github.com/ckpt-dev/ckpt/internal/logformat"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// sparkWrittenOffsets are the Kafka offset lines of every offsets file real Spark wrote
// (testdata/spark-written/<release>/…: the Spark oracle's written checkpoints and the offsets
// files Spark wrote in its Kafka hand-over), by release ("4.0.0").
func sparkWrittenOffsets(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../../testdata/spark-written/*/*/checkpoint/offsets/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("../../testdata/spark-written/*/kafka-offset-order/offsets-[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range append(files, more...) {
		rel, _ := filepath.Rel("../../testdata/spark-written", f)
		release := strings.Split(filepath.ToSlash(rel), "/")[0]
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seq, err := logformat.ParseOffsets(rel, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seq.Sources {
			if !s.Void {
				out[release] = append(out[release], s.JSON)
			}
		}
	}
	return out
}

// The engine writes a Kafka offset byte for byte as the Spark release it targets does: every
// offsets file real Spark wrote is reproduced from its offsets alone, in the order of that
// release's line (Scala 2.12 for 3.5, 2.13 for 4.x), and orderOf recognises that order.
func TestKafkaOffsetOrderMatchesSpark(t *testing.T) {
	byRelease := sparkWrittenOffsets(t)
	for _, line := range []string{"3.5", "4.0", "4.1"} {
		n := 0
		for release, lines := range byRelease {
			if !strings.HasPrefix(release, line+".") {
				continue
			}
			e := &Engine{scala213: scala213(line)}
			for _, text := range lines {
				k, err := logformat.ParseKafkaOffsets("offsets", text)
				if err != nil {
					t.Fatal(err)
				}
				// From the offsets alone: the source hands them over in no particular order.
				shuffled := logformat.KafkaOffsets{Topics: k.Topics}
				if got := e.ordered(logformat.NewKafkaOffsets(shuffled.Map())).JSON(); got != text {
					t.Errorf("Spark %s wrote %s, the engine for --spark-version %s writes %s", release, text, line, got)
				}
				if is213, known := orderOf(k); known && is213 != scala213(line) {
					t.Errorf("orderOf(%s) = Scala 2.13 %v, Spark %s wrote it", text, is213, release)
				}
				n++
			}
		}
		if n == 0 {
			t.Errorf("no offsets file written by Spark %s in testdata/spark-written", line)
		}
	}
}

func TestScala213Releases(t *testing.T) {
	for v, want := range map[string]bool{"": false, "2.4": false, "3.5": false, "3.5.7": false, "4.0": true, "4.1.1": true, "4.2": true, "master": true} {
		if got := scala213(v); got != want {
			t.Errorf("scala213(%q) = %v, want %v", v, got, want)
		}
	}
	if err := checkOrderVersion("5.0"); err == nil {
		t.Error("SparkVersion 5.0 accepted")
	}
}

// runOrdered runs the Kafka query (availableNow) with Options.SparkVersion v on store.
func runOrdered(t *testing.T, addr string, store storage.Store, v string) string {
	t.Helper()
	q := kafkaQuery(addr, "subscribe=o", "maxOffsetsPerTrigger=30")
	q.Trigger = "availableNow"
	var log strings.Builder
	e, err := New(context.Background(), Options{Query: resolve(t, q), Store: store, Sink: &collectSink{}, Log: &log,
		Console: io.Discard, PollingDelay: time.Millisecond, SparkVersion: v})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	return log.String()
}

func offsetsLine(t *testing.T, store storage.Store, id int64) string {
	t.Helper()
	data, err := store.ReadFile(context.Background(), fmt.Sprintf("offsets/%d", id))
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(string(data), "\n")
	return ls[len(ls)-1]
}

// --spark-version 4.x writes Scala 2.13's order (offsets, initial offsets); a later run without
// it keeps the order the checkpoint has; a fresh run without it writes Spark 3.5's.
func TestRunWritesTargetReleaseOrder(t *testing.T) {
	b := startBroker(t, embedkafka.TopicSpec{Name: "o", Partitions: 3})
	for p := int32(0); p < 3; p++ {
		produce(t, b.Addr(), "o", p, 0, 10)
	}
	st := storage.NewMem()
	runOrdered(t, b.Addr(), st, "4.0")
	if got, want := offsetsLine(t, st, 0), `{"o":{"0":10,"1":10,"2":10}}`; got != want {
		t.Errorf("offsets/0 with --spark-version 4.0: %s, want %s", got, want)
	}
	k, err := checkpoint.ReadKafkaInitialOffsetsFrom(context.Background(), st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := k.Offsets.JSON(), `{"o":{"0":0,"1":0,"2":0}}`; got != want {
		t.Errorf("sources/0/0 with --spark-version 4.0: %s, want %s", got, want)
	}

	for p := int32(0); p < 3; p++ {
		produce(t, b.Addr(), "o", p, 10, 5)
	}
	log := runOrdered(t, b.Addr(), st, "")
	if got, want := offsetsLine(t, st, 1), `{"o":{"0":15,"1":15,"2":15}}`; got != want {
		t.Errorf("offsets/1 after a 4.0 checkpoint: %s, want %s (the checkpoint's order)", got, want)
	}
	if !strings.Contains(log, "Scala 2.13's key order, as offsets/0 has them") {
		t.Errorf("driver log does not say why it keeps 2.13's order:\n%s", log)
	}

	fresh := storage.NewMem()
	runOrdered(t, b.Addr(), fresh, "")
	if got, want := offsetsLine(t, fresh, 0), `{"o":{"2":10,"1":10,"0":10}}`; got != want {
		t.Errorf("offsets/0 of a fresh run: %s, want %s (Spark 3.5's order)", got, want)
	}
	// A 3.5 target on a 2.13 checkpoint writes 3.5's order: the flag wins.
	for p := int32(0); p < 3; p++ {
		produce(t, b.Addr(), "o", p, 15, 1)
	}
	runOrdered(t, b.Addr(), st, "3.5")
	if got, want := offsetsLine(t, st, 2), `{"o":{"2":16,"1":16,"0":16}}`; got != want {
		t.Errorf("offsets/2 with --spark-version 3.5: %s, want %s", got, want)
	}
}
