package recovery_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/scenario"
	"github.com/ckpt-dev/ckpt/internal/sparkoracle"
)

// sparkGoldens is where the Spark oracle's observations are (internal/sparkoracle).
const sparkGoldens = "../../testdata/spark-oracle"

// TestScenariosAgainstSpark: the planner's restart of every recovery scenario that real Spark
// restarted (testdata/spark-oracle/<release>/<scenario>[@async].json) agrees with Spark's, up
// to the explained divergences of divergences.json. This is the specification; the goldens of
// TestGolden (testdata/<scenario>/<variant>.json) are characterisation, written from the code.
func TestScenariosAgainstSpark(t *testing.T) {
	var known []sparkoracle.Divergence
	data, err := os.ReadFile(filepath.Join(sparkGoldens, "divergences.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &known); err != nil {
		t.Fatal(err)
	}
	explained := map[string]bool{}
	for _, d := range known {
		explained[d.Key()] = true
	}
	checked := 0
	for _, s := range scenario.Tagged("recovery") {
		for _, suffix := range []string{"", "@async"} {
			paths, _ := filepath.Glob(filepath.Join(sparkGoldens, "*", s.Name+suffix+".json"))
			for _, p := range paths {
				var g sparkoracle.Golden
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(data, &g); err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if g.Checkpoint != "scenario:"+s.Name {
					continue
				}
				opts := recovery.Options{Mode: recovery.Mode(g.Mode), SparkVersion: g.Release, Trigger: g.Trigger}
				if strings.HasPrefix(g.Trigger, "processingTime") {
					opts.Trigger = "" // the planner's default trigger
				}
				// The file sink's log as Spark's case laid it out (none with another sink).
				sc := s
				sc.SinkLatest = g.SinkLatest
				res := planScenario(t, sc, opts)
				raw, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				// The checkpoint's location as the oracle writes it (s.Mem's store).
				norm := sparkoracle.Normalize(string(raw), map[string]string{"mem://scenario-" + s.Name: "<checkpoint>"})
				var pred sparkoracle.Prediction
				if err := json.Unmarshal([]byte(norm), &pred); err != nil {
					t.Fatal(err)
				}
				checked++
				for _, d := range sparkoracle.Compare(g, pred) {
					if !explained[d.Key()] {
						t.Errorf("%s: %s", p, d.Line())
					}
				}
			}
		}
	}
	t.Logf("%d scenario restarts checked against Spark", checked)
	if checked < 50 {
		t.Errorf("only %d scenario restarts checked against Spark", checked)
	}
}
