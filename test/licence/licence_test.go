// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package licence

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// headerLines is how many lines a header may sit below the top of a file:
// after a shebang, a build constraint and the blank lines around them.
const headerLines = 5

// comment is the comment marker of each kind of source the header covers.
var comment = map[string]string{
	".go": "//", ".cu": "//", ".cuh": "//",
	".sh": "#", ".py": "#",
}

// scripts are shell scripts without a .sh suffix.
var scripts = map[string]bool{".ci/run": true}

func TestSourcesCarryTheLicenceHeader(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("listing the repository's files needs git: %v", err)
	}
	var checked int
	for _, name := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		marker, ok := comment[filepath.Ext(name)]
		if scripts[name] {
			marker, ok = "#", true
		}
		if !ok {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, name)); os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		checked++
		if err := checkHeader(filepath.Join(root, name), marker); err != "" {
			t.Errorf("%s: %s", name, err)
		}
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}

func TestCheckHeader(t *testing.T) {
	good := "// Copyright 2026 The kquant Authors.\n// SPDX-License-Identifier: Apache-2.0\n\npackage x\n"
	cases := []struct {
		name, marker, text string
		ok                 bool
	}{
		{"go", "//", good, true},
		{"build constraint first", "//", "//go:build gpu\n\n" + good, true},
		{"shebang first", "#", "#!/usr/bin/env bash\n# Copyright 2027 The kquant Authors.\n# SPDX-License-Identifier: Apache-2.0\n", true},
		{"no header", "//", "package x\n", false},
		{"no SPDX line", "//", "// Copyright 2026 The kquant Authors.\npackage x\n", false},
		{"another licence", "//", "// Copyright 2026 The kquant Authors.\n// SPDX-License-Identifier: MIT\n", false},
		{"header too far down", "//", strings.Repeat("\n", headerLines) + good, false},
		{"wrong marker", "#", good, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := checkHeader(path, tc.marker) == ""; got != tc.ok {
				t.Errorf("checkHeader() ok = %v, want %v (%s)", got, tc.ok, checkHeader(path, tc.marker))
			}
		})
	}
}

// checkHeader returns what is wrong with path's licence header, "" if
// nothing: within its first headerLines lines, a copyright line followed by
// the SPDX line, both behind marker.
func checkHeader(path, marker string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	copyright := regexp.MustCompile(`^` + regexp.QuoteMeta(marker) + ` Copyright \d{4} The kquant Authors\.$`)
	spdx := marker + " SPDX-License-Identifier: Apache-2.0"
	s := bufio.NewScanner(f)
	for i := 0; i < headerLines && s.Scan(); i++ {
		if !copyright.MatchString(s.Text()) {
			continue
		}
		if s.Scan() && s.Text() == spdx {
			return ""
		}
		return "the copyright line is not followed by " + spdx
	}
	return "no licence header in its first lines (" + marker + " Copyright YEAR The kquant Authors. / " + spdx + ")"
}
