// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

var (
	columnName = regexp.MustCompile(`^[A-Z][A-Z0-9/_.%-]*$`)
	number     = regexp.MustCompile(`[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?`)
	age        = regexp.MustCompile(`^([0-9]+[smhdy])+$|^<unknown>$`)
	field      = regexp.MustCompile(`\S+`)
)

// Alike compares what the docs show with what a command printed, in spirit
// (see the package comment). It returns nil when they agree, else an error
// that names the first difference.
func Alike(want, got string) error {
	gotSections := sections(got)
	for _, w := range sections(want) {
		if isTable(w) {
			if err := tableIn(w, gotSections); err != nil {
				return err
			}
			continue
		}
		if err := linesIn(w, gotSections); err != nil {
			return err
		}
	}
	return nil
}

// sections splits output at blank lines (kubectl get a,b prints one table per
// kind), dropping trailing spaces.
func sections(s string) [][]string {
	var out [][]string
	var cur []string
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" {
			if cur != nil {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, line)
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

func isTable(lines []string) bool {
	names := field.FindAllString(lines[0], -1)
	if len(names) < 2 {
		return false
	}
	for _, n := range names {
		if !columnName.MatchString(n) {
			return false
		}
	}
	return true
}

// table is a parsed kubectl-style table: each row maps a column name to its
// cell, cut at the header's column starts (cells may be empty).
type table struct {
	columns []string
	rows    []map[string]string
}

func parseTable(lines []string) table {
	locs := field.FindAllStringIndex(lines[0], -1)
	starts := make([]int, len(locs))
	var t table
	for i, loc := range locs {
		starts[i] = len([]rune(lines[0][:loc[0]]))
		t.columns = append(t.columns, lines[0][loc[0]:loc[1]])
	}
	for _, line := range lines[1:] {
		r := []rune(line)
		row := map[string]string{}
		for i, c := range t.columns {
			from, to := starts[i], len(r)
			if i+1 < len(starts) {
				to = min(starts[i+1], len(r))
			}
			if from < len(r) {
				row[c] = strings.TrimSpace(string(r[from:to]))
			}
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// tableIn checks that some table in got has every column of want and a row
// alike each of want's rows.
func tableIn(want []string, got [][]string) error {
	w := parseTable(want)
	closest := fmt.Errorf("no table with the columns %s in the output", strings.Join(w.columns, " "))
	for _, g := range got {
		if !isTable(g) {
			continue
		}
		t := parseTable(g)
		var missing []string
		for _, c := range w.columns {
			if !slices.Contains(t.columns, c) {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			closest = fmt.Errorf("the table has no column %s (it has %s)", strings.Join(missing, ", "), strings.Join(t.columns, " "))
			continue
		}
		if err := rowsIn(w, t); err != nil {
			closest = err
			continue
		}
		return nil
	}
	return closest
}

func rowsIn(want, got table) error {
	key := want.columns[0]
	for _, wr := range want.rows {
		found := false
		diff := fmt.Errorf("no row with %s %q", key, wr[key])
		for _, gr := range got.rows {
			if wr[key] != gr[key] {
				continue
			}
			if err := rowAlike(want.columns, wr, gr); err != nil {
				diff = fmt.Errorf("row %s %q: %w", key, wr[key], err)
				continue
			}
			found = true
			break
		}
		if !found {
			return diff
		}
	}
	return nil
}

func rowAlike(columns []string, want, got map[string]string) error {
	for _, c := range columns {
		if !cellAlike(want[c], got[c]) {
			return fmt.Errorf("column %s: the docs show %q, the command printed %q", c, want[c], got[c])
		}
	}
	return nil
}

// cellAlike: equal, or equal once every number is a wildcard, or both ages,
// or, for a cell the docs cut short with "..." or "…", what it starts with.
func cellAlike(want, got string) bool {
	if want == got {
		return true
	}
	for _, cut := range []string{"...", "…"} {
		if prefix, ok := strings.CutSuffix(want, cut); ok && strings.HasPrefix(got, prefix) {
			return true
		}
	}
	if age.MatchString(want) && age.MatchString(got) {
		return true
	}
	return number.ReplaceAllString(want, "#") == number.ReplaceAllString(got, "#")
}

// linesIn checks that want's lines appear, in order, in one section of got
// (or, for output without blank lines, across all of it).
func linesIn(want []string, got [][]string) error {
	all := slices.Concat(got...)
	i := 0
	for _, w := range want {
		for i < len(all) && !lineAlike(w, all[i]) {
			i++
		}
		if i == len(all) {
			return fmt.Errorf("the command printed no line like %q (it printed %q)", w, strings.Join(all, "\n"))
		}
		i++
	}
	return nil
}

func lineAlike(want, got string) bool {
	return wordsAlike(words(want), words(got))
}

func words(line string) []string {
	ws := field.FindAllString(line, -1)
	for i, w := range ws {
		ws[i] = number.ReplaceAllString(w, "#")
	}
	return ws
}

// wordsAlike matches word by word, "..." and "…" matching any run of words.
func wordsAlike(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." || want[0] == "…" {
		for k := 0; k <= len(got); k++ {
			if wordsAlike(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && wordsAlike(want[1:], got[1:])
}
