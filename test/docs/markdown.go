// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package docs

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	// File and Line say where the block's opening fence is (Line counts from 1).
	File string
	Line int
	// Info is the fence's info string ("sh", "console", ...).
	Info string
	// Text is the block's content, without the fences.
	Text string
	// Skip is the reason given by a docs-test skip marker, or empty.
	Skip string
}

// shellInfos are the info strings of blocks that hold shell commands.
var shellInfos = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// Shell reports whether the block holds shell commands.
func (b Block) Shell() bool {
	return shellInfos[b.Info] || strings.HasPrefix(b.Text, "$ ")
}

// Transcript reports whether the block shows commands with their output.
func (b Block) Transcript() bool {
	return b.Info == "console" || strings.HasPrefix(b.Text, "$ ")
}

// Name is the block's place, file:line, for messages and subtest names.
func (b Block) Name() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var (
	fence  = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([^\\s`]*)")
	marker = regexp.MustCompile(`^<!--\s*docs-test:\s*(.*?)\s*-->\s*$`)
)

// ParseBlocks returns the fenced code blocks of a Markdown document, each
// with the skip reason of a marker on the line right before its fence (at
// the start of the line: an indented one is an example in a code block). A
// marker that is not "skip: <reason>", or one not followed by a fence, is an
// error: a misspelt marker must not silently run the block.
func ParseBlocks(file string, r io.Reader) ([]Block, error) {
	var (
		blocks  []Block
		cur     *Block
		closing string
		body    []string
		pending string
		pendAt  int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cur != nil {
			if strings.HasPrefix(strings.TrimSpace(line), closing) && strings.Trim(strings.TrimSpace(line), closing[:1]) == "" {
				cur.Text = strings.Join(body, "\n")
				blocks = append(blocks, *cur)
				cur, body = nil, nil
				continue
			}
			body = append(body, line)
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			cur = &Block{File: file, Line: n, Info: m[3], Skip: pending}
			closing, pending = m[2], ""
			continue
		}
		if pending != "" {
			return nil, fmt.Errorf("%s:%d: docs-test marker not followed by a code fence", file, pendAt)
		}
		if m := marker.FindStringSubmatch(line); m != nil {
			reason, ok := strings.CutPrefix(m[1], "skip:")
			if !ok || strings.TrimSpace(reason) == "" {
				return nil, fmt.Errorf("%s:%d: docs-test marker %q: want \"skip: <reason>\"", file, n, m[1])
			}
			pending, pendAt = strings.TrimSpace(reason), n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block never closed", file, cur.Line)
	}
	if pending != "" {
		return nil, fmt.Errorf("%s:%d: docs-test marker not followed by a code fence", file, pendAt)
	}
	return blocks, nil
}

// Step is one command of a transcript and the output the docs show for it.
type Step struct {
	Command string
	Want    string
}

var heredoc = regexp.MustCompile(`<<-?\s*['"]?(\w+)['"]?`)

// ParseTranscript splits a console block into its commands and their shown
// output. A command goes on over lines that end in a backslash and over its
// here-document.
func ParseTranscript(text string) ([]Step, error) {
	var steps []Step
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		cmd, ok := strings.CutPrefix(lines[i], "$ ")
		if !ok {
			if len(steps) == 0 {
				if strings.TrimSpace(lines[i]) == "" {
					continue
				}
				return nil, fmt.Errorf("line %d: output before the first \"$ \" command", i+1)
			}
			last := &steps[len(steps)-1]
			last.Want += lines[i] + "\n"
			continue
		}
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		if m := heredoc.FindStringSubmatch(cmd); m != nil {
			end := -1
			for j := i + 1; j < len(lines); j++ {
				if strings.TrimSpace(lines[j]) == m[1] {
					end = j
					break
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("line %d: here-document %s never ends", i+1, m[1])
			}
			cmd += "\n" + strings.Join(lines[i+1:end+1], "\n")
			i = end
		}
		steps = append(steps, Step{Command: cmd})
	}
	return steps, nil
}
