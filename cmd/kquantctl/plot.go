// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kquant/kquant/controllers/summary"
)

// plotRows writes a PNG of metric per group: a box (median, quartiles,
// whiskers) and every GPU's value as a point beside it, outliers in red.
func (a *app) plotRows(file, metric, by, title string, groups []group) error {
	col, ok := columnByKey(metric)
	if !ok || !col.numeric {
		return usagef("--metric %q: want one of %v", metric, columnKeys(true))
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s per %s, %s", col.title, by, title)
	p.Y.Label.Text = col.title
	p.X.Label.Text = by
	var names []string
	points := 0
	for i, g := range groups {
		var vals plotter.Values
		var runs []string
		for j := range g.rows {
			if v, err := strconv.ParseFloat(col.get(&g.rows[j]), 64); err == nil {
				vals = append(vals, v)
				runs = append(runs, g.rows[j].Name)
			}
		}
		names = append(names, fmt.Sprintf("%s (%d)", g.key, len(vals)))
		if len(vals) == 0 {
			continue
		}
		points += len(vals)
		outliers := outlierRuns(g, col.key)
		box, err := plotter.NewBoxPlot(vg.Points(40), float64(i), vals)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", g.key, err)
		}
		box.FillColor = color.RGBA{R: 0x9e, G: 0xc5, B: 0xe8, A: 0xff}
		p.Add(box)
		var normal, odd plotter.XYs
		for j, v := range vals {
			// Every GPU as a point in a band right of the box; outliers red.
			xy := plotter.XY{X: float64(i) + 0.22 + 0.16*float64(j%8)/8, Y: v}
			if outliers[runs[j]] {
				odd = append(odd, xy)
			} else {
				normal = append(normal, xy)
			}
		}
		for _, set := range []struct {
			xys plotter.XYs
			c   color.Color
		}{{normal, color.RGBA{R: 0x1f, G: 0x4e, B: 0x79, A: 0xff}}, {odd, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}}} {
			if len(set.xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(set.xys)
			if err != nil {
				return fmt.Errorf("plotting %s: %w", g.key, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Radius: vg.Points(3), Color: set.c}
			p.Add(sc)
		}
	}
	if points == 0 {
		return fmt.Errorf("--plot: no run has a value of %s", col.key)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	if col.key != "snr" {
		p.Y.Min = 0
	}
	p.Add(plotter.NewGrid())
	width := vg.Length(max(6, 1.6*float64(len(groups)))) * vg.Inch
	if err := p.Save(width, 4*vg.Inch, file); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	fmt.Fprintf(a.stderr, "%s: wrote %s\n", a.name, file)
	return nil
}

// outlierMetrics are the summary's outlier metrics by column key.
var outlierMetrics = map[string]string{"bandwidth": "bandwidthGBps", "eager": "hostEagerMicros", "graph": "hostGraphMicros"}

// outlierRuns are the runs of g that the job summary's rule calls outliers of
// metric (a column key).
func outlierRuns(g group, metric string) map[string]bool {
	out := map[string]bool{}
	name, ok := outlierMetrics[metric]
	if !ok {
		return out
	}
	if s := summary.Compute(summaryRuns(g)); s != nil {
		for _, o := range s.Outliers {
			if o.Metric == name {
				out[o.Run] = true
			}
		}
	}
	return out
}
