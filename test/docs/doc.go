// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package docs tests the documentation against the demo: every shell block
// of README.md and docs/*.md that `make demo` can run is run against it, and
// the output a `console` block shows is compared with what its command
// prints.
//
// A block is a shell block when its info string is sh, bash, shell or
// console, or when its first line is a "$ " prompt. An `sh` block runs as one
// bash script (set -euo pipefail) and must exit 0; its output is not
// compared. A `console` block is a transcript: each "$ " line (with its
// here-document, if any) is a command, the lines after it up to the next
// prompt are what it prints; its exit status is not checked (a transcript may
// show a refusal) unless the docs show no output for it, when it must succeed.
//
// The comparison is in spirit, so that docs survive measured numbers and new
// columns: a table (a first line of upper-case column names) must have every
// column the docs show, and each row the docs show must be there, found by its
// first cell, with equal cells except that numbers and ages only need to be
// numbers and ages too, and a cell the docs cut short with "..." only needs
// to start the same. Any other output must contain the docs' lines in
// order, compared word by word with every number a wildcard and "..." or "…"
// standing for any words.
//
// A block the demo cannot run is marked with an HTML comment on the line
// right before its fence, which the rendered page does not show:
//
//	<!-- docs-test: skip: needs a GPU node -->
//
// The reason is required and printed when the test skips the block.
//
// The test needs a running demo: `make demo-test` starts one and sets
// KQUANT_DOCS_DEMO to its state directory (.demo); without it the demo test
// skips, and only the parser and the comparison's own tests run.
package docs
