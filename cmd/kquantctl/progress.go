// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kquant/kquant/internal/bench"
)

// barWidth is the progress bar's width in characters.
const barWidth = 24

// progressBar draws the engine's progress on one terminal line, a bar over
// the whole run and the current shape's stage, redrawn at most every 100 ms
// so that a fast run does not flood a slow terminal. A nil *progressBar
// draws nothing.
type progressBar struct {
	w     io.Writer
	last  time.Time
	drawn bool
}

func (p *progressBar) update(pr bench.Progress) {
	now := time.Now()
	if pr.Stage != bench.StageDone && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	// \r and erase-to-end-of-line redraw in place.
	fmt.Fprintf(p.w, "\r\x1b[K%s", progressText(pr))
	p.drawn = true
}

// progressText is one line: the bar, the percentage and the stage.
func progressText(pr bench.Progress) string {
	done := float64(pr.Shape)
	if pr.Stage == bench.StageDone {
		done++
	} else if pr.Stage == bench.StageTiming && pr.Steps > 0 {
		done += float64(pr.Step) / float64(pr.Steps)
	}
	frac := 0.0
	if pr.Shapes > 0 {
		frac = min(done/float64(pr.Shapes), 1)
	}
	n := int(frac * barWidth)
	msg := fmt.Sprintf("[%s%s] %3.0f%%  shape %d/%d %dx%d: %s", strings.Repeat("#", n), strings.Repeat(".", barWidth-n), frac*100,
		pr.Shape+1, pr.Shapes, pr.Rows, pr.Cols, pr.Stage)
	if pr.Stage == bench.StageTiming && pr.Steps > 0 {
		msg += fmt.Sprintf(" %d/%d", pr.Step, pr.Steps)
	}
	return msg
}

func (p *progressBar) clear() {
	if p != nil && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
