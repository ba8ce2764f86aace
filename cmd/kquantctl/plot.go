// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kquant/kquant/domain/summary"
)

// Plot colours: the boxes, the GPUs, the outliers.
var (
	boxColour     = color.RGBA{R: 0x9e, G: 0xc5, B: 0xe8, A: 0xff}
	pointColour   = color.RGBA{R: 0x1f, G: 0x4e, B: 0x79, A: 0xff}
	outlierColour = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// plotRows writes a PNG (or SVG, by the file's extension) of metric per
// group: a box (median, quartiles, whiskers) and every GPU's value as a
// point beside it, outliers in red, with a legend and the metric's unit on
// the y axis. An empty metric is the first of defaultMetricOrder the runs
// have.
func (a *app) plotRows(file, metric, by, title string, groups []group) error {
	var all []row
	for _, g := range groups {
		all = append(all, g.rows...)
	}
	col, err := pickMetric(metric, all)
	if err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s per %s, %s", col.label, by, title)
	p.Title.Padding = vg.Points(8)
	p.Y.Label.Text = fmt.Sprintf("%s (%s)", col.label, col.unit)
	p.X.Label.Text = by
	var names []string
	points := 0
	boxes := false
	var legendPoint, legendOutlier *plotter.Scatter
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
		box.FillColor = boxColour
		p.Add(box)
		boxes = true
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
			xys    plotter.XYs
			c      color.Color
			legend **plotter.Scatter
		}{{normal, pointColour, &legendPoint}, {odd, outlierColour, &legendOutlier}} {
			if len(set.xys) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(set.xys)
			if err != nil {
				return fmt.Errorf("plotting %s: %w", g.key, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Radius: vg.Points(3), Color: set.c}
			p.Add(sc)
			*set.legend = sc
		}
	}
	if points == 0 {
		return fmt.Errorf("--plot: no run has a value of %s; try --metric with one of %s", col.key, strings.Join(metricNames(), ", "))
	}
	if boxes {
		p.Legend.Add("median, quartiles and range", boxThumbnail{})
	}
	if legendPoint != nil {
		p.Legend.Add("one GPU", legendPoint)
	}
	if legendOutlier != nil {
		p.Legend.Add("outlier (more than 3 MADs worse)", legendOutlier)
	}
	p.Legend.Top = true
	p.Legend.Padding = vg.Points(4)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(groups))-0.4
	if col.key != "snr" {
		p.Y.Min = 0
	}
	// Headroom above the data for the legend, top right.
	p.Y.Max += (p.Y.Max - p.Y.Min) * 0.4
	p.Add(plotter.NewGrid())
	width := vg.Length(max(6, 1.6*float64(len(groups)))) * vg.Inch
	if err := savePlot(p, width, 4*vg.Inch, file); err != nil {
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

// boxThumbnail is the legend's sample of a box: the boxes' fill, outlined.
type boxThumbnail struct{}

func (boxThumbnail) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(boxColour, c.ClipPolygonXY(pts))
	outline := append(pts, pts[0])
	c.StrokeLines(draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}, c.ClipLinesXY(outline)...)
}

// plotMargin is the blank border around a picture: gonum draws the title
// against the top edge.
const plotMargin = 10 * vg.Millimeter / 4

// savePlot writes p to file (PNG, SVG or PDF by its extension) with a
// margin on every side.
func savePlot(p *plot.Plot, width, height vg.Length, file string) error {
	ext := strings.TrimPrefix(filepath.Ext(file), ".")
	w, err := p.WriterTo(width, height, ext)
	if err != nil {
		return err
	}
	c, ok := w.(vg.CanvasWriterTo)
	if !ok {
		return fmt.Errorf("no canvas for .%s", ext)
	}
	// Draw again on the same canvas, inside the margin.
	c.SetColor(color.White)
	c.Fill(rectangle(width, height))
	p.Draw(draw.Crop(draw.New(c), plotMargin, -plotMargin, plotMargin, -plotMargin))
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func rectangle(w, h vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{})
	p.Line(vg.Point{X: w})
	p.Line(vg.Point{X: w, Y: h})
	p.Line(vg.Point{Y: h})
	p.Close()
	return p
}
