package iostreams

import "testing"

func TestPagerCommand(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"default", nil, DefaultPager},
		{"PAGER", map[string]string{"PAGER": "most"}, "most"},
		{"CKPT_PAGER wins", map[string]string{"PAGER": "most", "CKPT_PAGER": "less -S"}, "less -S"},
		{"PAGER empty", map[string]string{"PAGER": ""}, ""},
		{"CKPT_PAGER empty beats PAGER", map[string]string{"CKPT_PAGER": "", "PAGER": "most"}, ""},
		{"cat", map[string]string{"PAGER": "cat"}, ""},
		{"/bin/cat", map[string]string{"PAGER": "/bin/cat"}, ""},
	}
	for _, c := range cases {
		s, _, _, _ := Test()
		s.lookup = func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		if got := s.PagerCommand(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestNoPagerWithoutATerminal(t *testing.T) {
	s, _, out, _ := Test()
	s.lookup = func(k string) (string, bool) {
		return map[string]string{"PAGER": "sh -c 'echo paged'"}[k], k == "PAGER"
	}
	if err := s.StartPager(); err != nil {
		t.Fatal(err)
	}
	s.Out.Write([]byte("x\n"))
	s.StopPager()
	if out.String() != "x\n" {
		t.Errorf("paged without a terminal: %q", out.String())
	}
}
