package iostreams

import "testing"

func TestColorFromEnv(t *testing.T) {
	cases := []struct {
		name string
		tty  bool
		env  map[string]string
		want bool
	}{
		{"terminal", true, nil, true},
		{"piped", false, nil, false},
		{"NO_COLOR wins on a terminal", true, map[string]string{"NO_COLOR": "1"}, false},
		{"NO_COLOR beats CLICOLOR_FORCE", true, map[string]string{"NO_COLOR": "1", "CLICOLOR_FORCE": "1"}, false},
		{"CLICOLOR_FORCE when piped", false, map[string]string{"CLICOLOR_FORCE": "1"}, true},
		{"CLICOLOR_FORCE=0 is off", false, map[string]string{"CLICOLOR_FORCE": "0"}, false},
		{"dumb terminal", true, map[string]string{"TERM": "dumb"}, false},
	}
	for _, c := range cases {
		got := colorFromEnv(c.tty, func(k string) string { return c.env[k] })
		if got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestConfirm(t *testing.T) {
	for answer, want := range map[string]bool{"y\n": true, "YES\n": true, "\n": false, "no\n": false, "yep\n": false, "": false} {
		s, in, out, _ := Test()
		s.SetStdinTTY(true)
		s.SetStdoutTTY(true)
		in.WriteString(answer)
		got, err := s.Confirm("Apply 3 changes?")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("answer %q: got %v, want %v", answer, got, want)
		}
		if out.String() != "Apply 3 changes? [y/N] " {
			t.Errorf("prompt %q", out.String())
		}
	}
	s, _, _, _ := Test()
	if _, err := s.Confirm("x"); err != ErrNoPrompt {
		t.Errorf("piped stdin: got %v, want ErrNoPrompt", err)
	}
}
