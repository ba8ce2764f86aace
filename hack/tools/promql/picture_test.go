// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package promql

import (
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// TestDashboardPicture draws the chart's Grafana dashboard, panel by panel,
// from a scrape of the manager ($KQUANT_METRICS_IN, Prometheus text format,
// as controllers' TestDashboardData writes it), evaluating each panel's query
// with Prometheus' engine and the recording rules inlined, into
// $KQUANT_DASHBOARD_PNG (docs/dashboard.png). Grafana itself cannot be built
// here; the queries are the dashboard's own. The scrape is one instant: it is
// loaded as ten minutes of constant gauges and counters growing to their
// scraped values, so rates and histograms have data. Skipped without both.
func TestDashboardPicture(t *testing.T) {
	in, out := os.Getenv("KQUANT_METRICS_IN"), os.Getenv("KQUANT_DASHBOARD_PNG")
	if in == "" || out == "" {
		t.Skip("KQUANT_METRICS_IN and KQUANT_DASHBOARD_PNG not set")
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("parsing %s: %v", in, err)
	}
	storage := promqltest.LoadedStorage(t, loadScript(families))
	engine := promqltest.NewTestEngine(t, false, 0, 1e6)
	records, _ := rules(t)
	at := time.Unix(600, 0)
	query := func(expr string) promql.Vector {
		q, err := engine.NewInstantQuery(t.Context(), storage, nil, inline(expr, records), at)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		res := q.Exec(t.Context())
		if res.Err != nil {
			t.Fatalf("%s: %v", expr, res.Err)
		}
		v, err := res.Vector()
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	dash := readDashboard(t)
	img := drawDashboard(dash, query)
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := png.Encode(w, img); err != nil {
		t.Fatal(err)
	}
}

// loadScript is a promqltest load command holding families over ten minutes,
// ending at 600 s after the epoch, promqltest's clock. Timestamps in the
// values (*_timestamp_seconds) move with the clock: the scrape is taken to
// have happened at the latest run's completion.
func loadScript(families map[string]*dto.MetricFamily) string {
	var scraped float64
	for _, m := range families["kquant_gpu_run_completion_timestamp_seconds"].GetMetric() {
		scraped = max(scraped, m.GetGauge().GetValue())
	}
	var b strings.Builder
	b.WriteString("load 1m\n")
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	series := func(name string, labels []*dto.LabelPair, extra map[string]string, v float64, counter bool) {
		var ls []string
		for _, l := range labels {
			ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		for k, val := range extra {
			ls = append(ls, fmt.Sprintf("%s=%q", k, val))
		}
		if counter {
			fmt.Fprintf(&b, "  %s{%s} 0+%sx10\n", name, strings.Join(ls, ", "), num(v/10))
		} else {
			fmt.Fprintf(&b, "  %s{%s} %s+0x10\n", name, strings.Join(ls, ", "), num(v))
		}
	}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			switch fam.GetType() {
			case dto.MetricType_GAUGE:
				v := m.GetGauge().GetValue()
				if strings.HasSuffix(name, "_timestamp_seconds") {
					v -= scraped - 600
				}
				series(name, m.GetLabel(), nil, v, false)
			case dto.MetricType_COUNTER:
				series(name, m.GetLabel(), nil, m.GetCounter().GetValue(), true)
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, bk := range h.GetBucket() {
					series(name+"_bucket", m.GetLabel(), map[string]string{"le": num(bk.GetUpperBound())}, float64(bk.GetCumulativeCount()), true)
				}
				series(name+"_bucket", m.GetLabel(), map[string]string{"le": "+Inf"}, float64(h.GetSampleCount()), true)
				series(name+"_sum", m.GetLabel(), nil, h.GetSampleSum(), true)
				series(name+"_count", m.GetLabel(), nil, float64(h.GetSampleCount()), true)
			}
		}
	}
	return b.String()
}

type dashboard struct {
	Title      string
	Templating struct{ List []variable }
	Panels     []struct {
		Title   string
		Type    string
		GridPos struct{ H, W, X, Y int }
		Targets []struct {
			Expr         string
			LegendFormat string
		}
		FieldConfig struct {
			Defaults struct{ Unit string }
		}
	}
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

const (
	colW, rowH = 64, 30
	titleH     = 40
)

var (
	bg      = color.RGBA{0x11, 0x12, 0x17, 0xff}
	panelBg = color.RGBA{0x18, 0x1b, 0x1f, 0xff}
	border  = color.RGBA{0x2c, 0x32, 0x35, 0xff}
	text    = color.RGBA{0xd8, 0xd9, 0xda, 0xff}
	dim     = color.RGBA{0x8e, 0x8e, 0x8e, 0xff}
	palette = []color.RGBA{{0x73, 0xbf, 0x69, 0xff}, {0xf2, 0xcc, 0x0c, 0xff}, {0x57, 0x94, 0xf2, 0xff}, {0xff, 0x98, 0x30, 0xff}, {0xb8, 0x77, 0xd9, 0xff}}
	red     = color.RGBA{0xf2, 0x49, 0x5c, 0xff}
)

func drawDashboard(d dashboard, query func(string) promql.Vector) *image.RGBA {
	rows := 0
	for _, p := range d.Panels {
		rows = max(rows, p.GridPos.Y+p.GridPos.H)
	}
	img := image.NewRGBA(image.Rect(0, 0, 24*colW, titleH+rows*rowH))
	draw.Draw(img, img.Bounds(), &image.Uniform{bg}, image.Point{}, draw.Src)
	label(img, 10, 26, d.Title+"   (panels of charts/kquant/files/grafana/kquant-dashboard.json, queries evaluated by Prometheus' engine)", text, 1)
	for _, p := range d.Panels {
		r := image.Rect(p.GridPos.X*colW+4, titleH+p.GridPos.Y*rowH+4, (p.GridPos.X+p.GridPos.W)*colW-4, titleH+(p.GridPos.Y+p.GridPos.H)*rowH-4)
		draw.Draw(img, r, &image.Uniform{panelBg}, image.Point{}, draw.Src)
		outline(img, r, border)
		label(img, r.Min.X+8, r.Min.Y+16, p.Title, text, 1)
		var entries []entry
		for ti, tg := range p.Targets {
			for _, s := range query(d.grafanaExpr(tg.Expr)) {
				entries = append(entries, entry{legend(tg.LegendFormat, s), s.F, ti, s})
			}
		}
		body := image.Rect(r.Min.X+8, r.Min.Y+26, r.Max.X-8, r.Max.Y-6)
		switch p.Type {
		case "stat":
			v := "no data"
			c := text
			if len(entries) > 0 {
				v = format(entries[0].value, p.FieldConfig.Defaults.Unit)
				if entries[0].value > 0 {
					c = red
				} else {
					c = palette[0]
				}
			}
			label(img, body.Min.X+4, body.Min.Y+48, v, c, 4)
		case "table":
			drawTable(img, body, entries)
		default:
			drawBars(img, body, entries, p.FieldConfig.Defaults.Unit)
		}
	}
	return img
}

type entry struct {
	name   string
	value  float64
	target int
	sample promql.Sample
}

// legend fills a Grafana legend format ({{label}}) from a sample's labels.
func legend(format string, s promql.Sample) string {
	if format == "" {
		return s.Metric.String()
	}
	out := format
	s.Metric.Range(func(l labels.Label) {
		out = strings.ReplaceAll(out, "{{"+l.Name+"}}", l.Value)
	})
	return out
}

func drawBars(img *image.RGBA, r image.Rectangle, es []entry, unit string) {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].target != es[j].target {
			return es[i].target < es[j].target
		}
		return es[i].name < es[j].name
	})
	if len(es) == 0 {
		label(img, r.Min.X, r.Min.Y+14, "no data", dim, 1)
		return
	}
	top := 0.0
	for _, e := range es {
		if !math.IsNaN(e.value) {
			top = max(top, e.value)
		}
	}
	lineH := min(18, max(10, r.Dy()/len(es)))
	nameW := min(r.Dx()/2, 7*40)
	for i, e := range es {
		y := r.Min.Y + i*lineH
		if y+lineH > r.Max.Y {
			label(img, r.Min.X, r.Max.Y-2, fmt.Sprintf("... %d more", len(es)-i), dim, 1)
			break
		}
		name := e.name
		if len(name) > nameW/7 {
			name = name[:nameW/7-1] + "~"
		}
		label(img, r.Min.X, y+lineH-4, name, text, 1)
		barX := r.Min.X + nameW + 4
		valW := 80
		full := r.Max.X - barX - valW
		w := 0
		if top > 0 && !math.IsNaN(e.value) {
			w = int(float64(full) * e.value / top)
		}
		draw.Draw(img, image.Rect(barX, y+2, barX+max(w, 1), y+lineH-2), &image.Uniform{palette[e.target%len(palette)]}, image.Point{}, draw.Src)
		label(img, r.Max.X-valW+4, y+lineH-4, format(e.value, unit), text, 1)
	}
}

func drawTable(img *image.RGBA, r image.Rectangle, es []entry) {
	if len(es) == 0 {
		label(img, r.Min.X, r.Min.Y+14, "no data", dim, 1)
		return
	}
	var keys []string
	seen := map[string]bool{}
	for _, e := range es {
		e.sample.Metric.Range(func(l labels.Label) {
			if l.Name != "__name__" && !seen[l.Name] {
				seen[l.Name] = true
				keys = append(keys, l.Name)
			}
		})
	}
	sort.Strings(keys)
	rowsText := [][]string{keys}
	for _, e := range es {
		var row []string
		for _, k := range keys {
			row = append(row, e.sample.Metric.Get(k))
		}
		rowsText = append(rowsText, row)
	}
	sort.Slice(rowsText[1:], func(i, j int) bool { return strings.Join(rowsText[1+i], " ") < strings.Join(rowsText[1+j], " ") })
	widths := make([]int, len(keys))
	for _, row := range rowsText {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	for i, row := range rowsText {
		y := r.Min.Y + 12 + i*14
		if y > r.Max.Y {
			label(img, r.Min.X, r.Max.Y, fmt.Sprintf("... %d more rows", len(rowsText)-i), dim, 1)
			break
		}
		x := r.Min.X
		for j, c := range row {
			col := text
			if i == 0 {
				col = dim
			} else if c == "Fail" || c == "Unsupported" {
				col = red
			}
			if x < r.Max.X {
				label(img, x, y, c, col, 1)
			}
			x += (widths[j] + 2) * 7
		}
	}
}

// format writes v in the unit as Grafana would, roughly.
func format(v float64, unit string) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	switch unit {
	case "Bps":
		return fmt.Sprintf("%.1f GB/s", v/1e9)
	case "s":
		if v < 1e-3 {
			return fmt.Sprintf("%.2f us", v*1e6)
		}
		return fmt.Sprintf("%.3f s", v)
	case "dB":
		return fmt.Sprintf("%.1f dB", v)
	case "d":
		return fmt.Sprintf("%.2f d", v)
	case "percent":
		return fmt.Sprintf("%.0f%%", v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// label draws s at (x, y) (the baseline), scaled by an integer factor.
func label(img *image.RGBA, x, y int, s string, c color.Color, scale int) {
	if scale == 1 {
		d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
		d.DrawString(s)
		return
	}
	small := image.NewRGBA(image.Rect(0, 0, 7*len(s)+2, 16))
	d := &font.Drawer{Dst: small, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(1, 12)}
	d.DrawString(s)
	for sy := 0; sy < small.Bounds().Dy(); sy++ {
		for sx := 0; sx < small.Bounds().Dx(); sx++ {
			if _, _, _, a := small.At(sx, sy).RGBA(); a > 0 {
				draw.Draw(img, image.Rect(x+sx*scale, y-12*scale+sy*scale, x+(sx+1)*scale, y-12*scale+(sy+1)*scale), &image.Uniform{c}, image.Point{}, draw.Src)
			}
		}
	}
}

func outline(img *image.RGBA, r image.Rectangle, c color.Color) {
	for x := r.Min.X; x < r.Max.X; x++ {
		img.Set(x, r.Min.Y, c)
		img.Set(x, r.Max.Y-1, c)
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		img.Set(r.Min.X, y, c)
		img.Set(r.Max.X-1, y, c)
	}
}
