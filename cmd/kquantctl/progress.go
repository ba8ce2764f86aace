package main

import (
	"fmt"
	"io"
	"time"

	"github.com/kquant/kquant/internal/bench"
)

// progressLine draws the engine's progress on one terminal line,
// redrawn at most every 100 ms so that a fast run does not flood a slow
// terminal. A nil *progressLine draws nothing.
type progressLine struct {
	w     io.Writer
	last  time.Time
	drawn bool
}

func (p *progressLine) update(pr bench.Progress) {
	now := time.Now()
	if pr.Stage != bench.StageDone && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	msg := fmt.Sprintf("shape %d/%d %dx%d: %s", pr.Shape+1, pr.Shapes, pr.Rows, pr.Cols, pr.Stage)
	if pr.Stage == bench.StageTiming && pr.Steps > 0 {
		msg += fmt.Sprintf(" %d/%d", pr.Step, pr.Steps)
	}
	// \r and erase-to-end-of-line redraw in place.
	fmt.Fprintf(p.w, "\r\x1b[K%s", msg)
	p.drawn = true
}

func (p *progressLine) clear() {
	if p != nil && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
