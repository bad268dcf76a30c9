package root

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ckpt-dev/ckpt/internal/iostreams"
	"github.com/ckpt-dev/ckpt/internal/render"
)

// helpWidth is the width help is wrapped at: the terminal's (COLUMNS first), or 80 when there is
// none, as gh does, so that piped help reads the same in a pager or a file.
func helpWidth(ios *iostreams.IOStreams) int {
	if w := ios.TerminalWidth(); w > 0 {
		return w
	}
	return 80
}

// setHelp makes cobra's help and usage wrap at helpWidth: descriptions, command summaries and
// flag descriptions break at spaces under their column instead of mid-word at the screen's edge.
func setHelp(cmd *cobra.Command, ios *iostreams.IOStreams) {
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		w := c.OutOrStdout()
		if text := strings.TrimRight(cmp(c.Long, c.Short), " \n"); text != "" {
			fmt.Fprintln(w, reflow(text, helpWidth(ios)))
			fmt.Fprintln(w)
		}
		if c.Runnable() || c.HasSubCommands() {
			_ = writeUsage(w, c, helpWidth(ios))
		}
	})
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		return writeUsage(c.OutOrStderr(), c, helpWidth(ios))
	})
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// writeUsage is cobra's usage text with every line wrapped at width.
func writeUsage(w io.Writer, c *cobra.Command, width int) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if len(c.Aliases) > 0 {
		b.WriteString("\n\nAliases:\n  " + c.NameAndAliases())
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	list := func(title string, cmds []*cobra.Command, name func(*cobra.Command) string, pad int) {
		if len(cmds) == 0 {
			return
		}
		b.WriteString("\n\n" + title + ":")
		for _, s := range cmds {
			b.WriteString("\n" + hang("  "+fmt.Sprintf("%-*s", pad, name(s))+" ", s.Short, width))
		}
	}
	var avail, topics []*cobra.Command
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() || s.Name() == "help" {
			avail = append(avail, s)
		}
		if s.IsAdditionalHelpTopicCommand() {
			topics = append(topics, s)
		}
	}
	if c.HasAvailableSubCommands() {
		list("Available Commands", avail, (*cobra.Command).Name, c.NamePadding())
	}
	if c.HasAvailableLocalFlags() {
		b.WriteString("\n\nFlags:\n" + strings.TrimRight(flagUsages(c.LocalFlags(), width), " \n"))
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\n\nGlobal Flags:\n" + strings.TrimRight(flagUsages(c.InheritedFlags(), width), " \n"))
	}
	pad := 0
	for _, t := range topics {
		pad = max(pad, len(t.CommandPath()))
	}
	list("Additional help topics", topics, (*cobra.Command).CommandPath, pad)
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	_, err := fmt.Fprintln(w, b.String())
	return err
}

// hang writes text after lead, its continuation lines indented under the text's first column.
func hang(lead, text string, width int) string {
	pad := len([]rune(lead))
	if width-pad < 20 {
		return lead + text
	}
	return lead + strings.ReplaceAll(render.WrapWhole(text, width-pad), "\n", "\n"+strings.Repeat(" ", pad))
}

// reflow wraps a command's description at width: the lines of a paragraph (not indented) are
// joined and wrapped as one, and indented lines (lists, exit codes, examples) are kept, each
// wrapped under its own indentation.
func reflow(text string, width int) string {
	var out, para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, render.WrapWhole(strings.Join(para, " "), width))
			para = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			out = append(out, "")
		case strings.HasPrefix(line, " "), strings.HasPrefix(line, "\t"):
			flush()
			if m := listItem.FindStringSubmatch(line); m != nil && lipgloss.Width(line) > width {
				// "  1  the location could not…": continuation lines under the text.
				out = append(out, hang(m[1], m[2], width))
				continue
			}
			out = append(out, render.WrapWhole(line, width))
		default:
			para = append(para, strings.TrimSpace(line))
		}
	}
	flush()
	return strings.Join(out, "\n")
}

// listItem is an indented line of a list or table in a description: its marker (a code, a
// flag) and two spaces or more, then the text.
var listItem = regexp.MustCompile(`^(\s+\S+\s{2,})(\S.*)$`)

// maxFlagColumn caps the column flag descriptions start at: a longer flag (with its value
// name) puts its description on the next line, so that one long flag does not squeeze them all.
const maxFlagColumn = 36

// flagUsages is pflag's FlagUsages laid out for width: "-s, --name value" then the description
// wrapped under its column, with the default when it is not the zero value.
func flagUsages(fs *pflag.FlagSet, width int) string {
	type row struct{ lead, usage string }
	var rows []row
	col := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		lead := "      --" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			lead = "  -" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if varname != "" {
			lead += " " + varname
		}
		if f.NoOptDefVal != "" && f.Value.Type() != "bool" {
			lead += fmt.Sprintf("[=%s]", f.NoOptDefVal)
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" && d != "[]" && d != "<nil>" {
			if f.Value.Type() == "string" {
				d = fmt.Sprintf("%q", d)
			}
			usage += fmt.Sprintf(" (default %s)", d)
		}
		if f.Deprecated != "" {
			usage += fmt.Sprintf(" (DEPRECATED: %s)", f.Deprecated)
		}
		rows = append(rows, row{lead, usage})
		if l := len([]rune(lead)) + 3; l <= maxFlagColumn {
			col = max(col, l)
		}
	})
	if col == 0 {
		col = maxFlagColumn
	}
	var b strings.Builder
	for _, r := range rows {
		pad := strings.Repeat(" ", col)
		text := r.usage
		if width-col >= 20 {
			text = strings.ReplaceAll(render.WrapWhole(text, width-col), "\n", "\n"+pad)
		}
		if n := len([]rune(r.lead)); n+2 <= col {
			b.WriteString(r.lead + strings.Repeat(" ", col-n) + text + "\n")
		} else {
			b.WriteString(r.lead + "\n" + pad + text + "\n")
		}
	}
	return b.String()
}
