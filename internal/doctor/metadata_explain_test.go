package doctor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --explain missing-metadata said "Spark 4.0 and older silently create a new query id" and, two
// lines below, "Spark 4.1 and older: nothing". Real Spark decides: the newest release whose
// oracle golden restarts the case without error is the last that silently writes a new id, and
// every sentence of the entry names that line.
func TestMissingMetadataExplainMatchesSpark(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "spark-oracle", "*", "missing-metadata.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no oracle goldens: %v", err)
	}
	newestOK := ""
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g struct {
			Release string `json:"release"`
			Spark   struct {
				Outcome string `json:"outcome"`
			} `json:"spark"`
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		if g.Spark.Outcome == "ok" && g.Release > newestOK { // 3.5.7 < 4.0.0 < 4.1.1 as strings
			newestOK = g.Release
		}
	}
	line := strings.Join(strings.Split(newestOK, ".")[:2], ".")
	c, ok := Lookup(CodeMissingMetadata)
	if !ok {
		t.Fatal("no missing-metadata code")
	}
	want := "Spark " + line + " and older"
	for name, text := range map[string]string{"explanation": c.Explanation, "Spark error": c.SparkError} {
		if !strings.Contains(text, want) {
			t.Errorf("%s does not say %q (real Spark %s restarts without metadata):\n%s", name, want, newestOK, text)
		}
	}
}
