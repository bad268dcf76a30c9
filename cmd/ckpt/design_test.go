package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ckpt-dev/ckpt/"

// goList runs `go list` from the module root with a template and returns one line per package.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// designRow is one row of docs/design.md's package table.
type designRow struct {
	pkg, mayImport string
}

var rowRE = regexp.MustCompile("^\\| `([^`]+)` \\|[^|]*\\|([^|]*)\\|\\s*$")

func designRows(t *testing.T) []designRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "## Packages\n")
	if !ok {
		t.Fatal(`docs/design.md has no "## Packages" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var rows []designRow
	for _, line := range strings.Split(table, "\n") {
		if m := rowRE.FindStringSubmatch(line); m != nil {
			rows = append(rows, designRow{m[1], strings.TrimSpace(m[2])})
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/design.md's package table has no rows")
	}
	return rows
}

// cmdPattern is the table's row for every command package without a row of its own.
const cmdPattern = "internal/cmd/<name>"

// docs/design.md's package table is the map of the code: every package `go list` reports has
// exactly one row (a command package may rely on the internal/cmd/<name> row), no row names a
// package that does not exist, and each package imports only the internal packages its row
// allows.
func TestDesignPackageTable(t *testing.T) {
	imports := map[string][]string{}
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		f := strings.Fields(strings.ReplaceAll(line, module, ""))
		var internal []string
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "internal/") {
				internal = append(internal, imp)
			}
		}
		imports[f[0]] = internal
	}
	rows := designRows(t)
	seen := map[string]int{}
	for _, r := range rows {
		seen[r.pkg]++
		if r.pkg == cmdPattern {
			continue
		}
		if _, ok := imports[r.pkg]; !ok {
			t.Errorf("docs/design.md lists %s, which is not a package (stale row)", r.pkg)
		}
	}
	for pkg, n := range seen {
		if n > 1 {
			t.Errorf("docs/design.md lists %s %d times", pkg, n)
		}
	}
	for pkg := range imports {
		if seen[pkg] == 0 && !(strings.HasPrefix(pkg, "internal/cmd/") && seen[cmdPattern] == 1) {
			t.Errorf("package %s has no row in docs/design.md's package table", pkg)
		}
	}
	// "may import" names internal packages by their path below internal/ ("kafka/dataloss");
	// rows whose column is prose about groups of packages are not checked.
	for _, r := range rows {
		if r.pkg == cmdPattern || strings.Contains(r.mayImport, "every") || strings.Contains(r.mayImport, "everything") {
			continue
		}
		allowed := map[string]bool{}
		for _, w := range regexp.MustCompile(`[a-z][a-z0-9/]*`).FindAllString(r.mayImport, -1) {
			allowed["internal/"+w] = true
		}
		for _, imp := range imports[r.pkg] {
			if !allowed[imp] {
				t.Errorf("%s imports %s, which its row in docs/design.md does not allow (%q)", r.pkg, imp, r.mayImport)
			}
		}
	}
}

// A command package never imports another (only the root wires them together), and the
// recovery planner needs no Kafka client.
func TestPackageBoundaries(t *testing.T) {
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./internal/cmd/...") {
		f := strings.Fields(strings.ReplaceAll(line, module, ""))
		if f[0] == "internal/cmd/root" {
			continue
		}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, "internal/cmd/") {
				t.Errorf("command package %s imports command package %s", f[0], imp)
			}
		}
	}
	deps := goList(t, "-deps", "./internal/recovery")
	if i := slices.IndexFunc(deps, func(d string) bool { return strings.Contains(d, "franz-go") }); i >= 0 {
		t.Errorf("internal/recovery depends on %s: the planner takes the broker's state as data", deps[i])
	}
}

// "What may cli import?" has one answer: cli's row in docs/design.md, which lists exactly what
// it imports (internal packages, and cobra and pflag by name). A new import must be argued in
// that line; one dropped must leave it. Everything else of a command goes in its own package.
func TestCLIImports(t *testing.T) {
	var row string
	for _, r := range designRows(t) {
		if r.pkg == "internal/cli" {
			row = r.mayImport
		}
	}
	if row == "" {
		t.Fatal("docs/design.md has no row for internal/cli")
	}
	allowed := map[string]bool{}
	for _, w := range strings.Split(row, ",") {
		allowed[strings.TrimSpace(w)] = true
	}
	got := map[string]bool{}
	for _, imp := range strings.Fields(goList(t, "-f", "{{join .Imports \" \"}}", "./internal/cli")[0]) {
		switch {
		case strings.HasPrefix(imp, module+"internal/"):
			got[strings.TrimPrefix(imp, module+"internal/")] = true
		case strings.HasSuffix(imp, "/cobra"):
			got["cobra"] = true
		case strings.HasSuffix(imp, "/pflag"):
			got["pflag"] = true
		}
	}
	for p := range got {
		if !allowed[p] {
			t.Errorf("internal/cli imports %s, which its line in docs/design.md does not list", p)
		}
	}
	for p := range allowed {
		if !got[p] {
			t.Errorf("docs/design.md lets internal/cli import %s, which it does not: cut the line", p)
		}
	}
}
