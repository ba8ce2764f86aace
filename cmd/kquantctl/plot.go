package main

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotRows writes a PNG of metric per group: a box (median, quartiles,
// whiskers) and every GPU's value as a point beside it.
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
		for j := range g.rows {
			if v, err := strconv.ParseFloat(col.get(&g.rows[j]), 64); err == nil {
				vals = append(vals, v)
			}
		}
		names = append(names, fmt.Sprintf("%s (%d)", g.key, len(vals)))
		if len(vals) == 0 {
			continue
		}
		points += len(vals)
		box, err := plotter.NewBoxPlot(vg.Points(40), float64(i), vals)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", g.key, err)
		}
		box.FillColor = color.RGBA{R: 0x9e, G: 0xc5, B: 0xe8, A: 0xff}
		p.Add(box)
		xys := make(plotter.XYs, len(vals))
		for j, v := range vals {
			// Spread the points in a column right of the box.
			xys[j] = plotter.XY{X: float64(i) + 0.3 + 0.1*float64(j%5)/5, Y: v}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", g.key, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Shape: draw.CircleGlyph{}, Radius: vg.Points(2.5), Color: color.RGBA{R: 0x1f, G: 0x4e, B: 0x79, A: 0xff}}
		p.Add(sc)
	}
	if points == 0 {
		return fmt.Errorf("--plot: no run has a value of %s", col.key)
	}
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	width := vg.Length(max(6, 1.6*float64(len(groups)))) * vg.Inch
	if err := p.Save(width, 4*vg.Inch, file); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	fmt.Fprintf(a.stderr, "%s: wrote %s\n", a.name, file)
	return nil
}
