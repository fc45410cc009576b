package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sandboxrun/sandboxrun/skill"
)

// listEntry is one skill as `list` shows it: metadata only.
type listEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	WhenToUse   string `json:"when_to_use,omitempty"`
	Location    string `json:"location"`
}

func newListCmd(g *globals, s streams) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "list [--skills DIR[:DIR...]] [--format table|json|xml]",
		Short: "List the skills under the skills roots (metadata only)",
		Long: `list reads only the frontmatter of each skill under the skills roots.

Skills are found in the layouts collections use, below each root: a skill
folder per subfolder, plugins/<plugin>/skills/<skill>, .claude/skills/<skill>,
category folders, or a root that is itself one skill. A symlink is followed
only inside its root.

--format xml prints the <available_skills> block agent hosts put in a system
prompt. A skill that does not load is reported on stderr and left out; a name
used twice is reported and the first root's skill listed; a skill whose name
breaks a spec rule is listed with a warning (--strict leaves it out). Nothing
of that stops the listing.

json and xml are what a model is shown: a skill whose frontmatter sets
disable-model-invocation: true is left out of them (it still runs when a
host names it; the table lists it, marked "(hidden from models)"), and
when_to_use comes next to the description.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			write, ok := listFormats[format]
			if !ok {
				return usageError("unknown --format %q: use table, json or xml", format)
			}
			roots, err := g.existingRoots()
			if err != nil {
				return err
			}
			skills := discoverSkills(g, s, roots)
			if format != "table" {
				skills = skill.ForModel(skills)
			}
			entries := make([]listEntry, 0, len(skills))
			for _, sk := range skills {
				e := listEntry{
					Name:        sk.Manifest.Name,
					Description: sk.Manifest.Description,
					WhenToUse:   sk.Manifest.WhenToUse,
					Location:    sk.Path,
				}
				if !sk.Manifest.ModelVisible() {
					e.Description = "(hidden from models) " + e.Description
				}
				entries = append(entries, e)
			}
			return write(s.out, entries)
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, json or xml")
	return cmd
}

var listFormats = map[string]func(io.Writer, []listEntry) error{
	"table": writeListTable,
	"json":  writeListJSON,
	"xml":   writeListXML,
}

func writeListTable(w io.Writer, entries []listEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\n", e.Name, oneLine(e.Description, 80))
	}
	return tw.Flush()
}

func writeListJSON(w io.Writer, entries []listEntry) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(entries)
}

func writeListXML(w io.Writer, entries []listEntry) error {
	if _, err := fmt.Fprintln(w, "<available_skills>"); err != nil {
		return err
	}
	for _, e := range entries {
		when := ""
		if e.WhenToUse != "" {
			when = "<when_to_use>" + html.EscapeString(e.WhenToUse) + "</when_to_use>\n"
		}
		_, err := fmt.Fprintf(w, "<skill>\n<name>%s</name>\n<description>%s</description>\n%s<location>%s</location>\n</skill>\n",
			html.EscapeString(e.Name), html.EscapeString(e.Description), when, html.EscapeString(e.Location))
		if err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, "</available_skills>")
	return err
}

// oneLine folds s onto one line and cuts it to max runes.
func oneLine(s string, max int) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		out = append(out, r)
	}
	if len(out) > max {
		return string(out[:max-1]) + "…"
	}
	return string(out)
}
