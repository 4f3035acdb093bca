// Package plot writes simple line charts as standalone SVG: stacked panels
// sharing one time axis, each with its own y axis, grid and legend. It has no
// dependency beyond the standard library.
package plot

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// ErrNoData is returned when a chart has nothing to draw.
var ErrNoData = errors.New("plot: no data to draw")

// Series is one line.
type Series struct {
	Name string
	X, Y []float64
}

// Panel is one chart with its own y axis.
type Panel struct {
	Title  string
	YLabel string
	Series []Series
	// YMax, when positive, fixes the top of the y axis (the bottom is 0 or
	// the lowest value), so that panels of several charts compare at a
	// glance; values above it are clipped to it.
	YMax float64
}

// Chart is a stack of panels over one x axis.
type Chart struct {
	Title  string
	XLabel string
	Panels []Panel
	// XMax, when positive, fixes the right end of the x axis (the left end
	// is the lowest x), for charts that must share their axes.
	XMax float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	width       = 900
	panelHeight = 220
	marginLeft  = 70
	marginRight = 150
	marginTop   = 40
	panelGap    = 50
)

// WriteSVG draws the chart as SVG to w.
func (c Chart) WriteSVG(w io.Writer) error {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	points := 0
	for _, p := range c.Panels {
		for _, s := range p.Series {
			for i := range min(len(s.X), len(s.Y)) {
				if finite(s.X[i]) && finite(s.Y[i]) {
					xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
					points++
				}
			}
		}
	}
	if points == 0 {
		return ErrNoData
	}
	if c.XMax > xmin {
		xmax = c.XMax
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	height := marginTop + len(c.Panels)*(panelHeight+panelGap) + 10
	b := bufio.NewWriter(w)
	// b keeps the first write error and the Flush below returns it, so the
	// writes in between need no check of their own.
	printf := func(format string, args ...any) { _, _ = fmt.Fprintf(b, format, args...) }
	printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	printf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	printf(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", marginLeft, esc(c.Title))
	plotW := float64(width - marginLeft - marginRight)
	xticks := ticks(xmin, xmax, 8)
	for i, p := range c.Panels {
		top := float64(marginTop + i*(panelHeight+panelGap) + 20)
		ymin, ymax := 0.0, math.Inf(-1)
		for _, s := range p.Series {
			for i := range min(len(s.X), len(s.Y)) {
				if finite(s.Y[i]) {
					ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
				}
			}
		}
		if p.YMax > ymin {
			ymax = p.YMax
		}
		if !finite(ymax) || ymax <= ymin {
			ymax = ymin + 1
		}
		yticks := ticks(ymin, ymax, 5)
		ymax = math.Max(ymax, yticks[len(yticks)-1])
		h := float64(panelHeight)
		sx := func(x float64) float64 { return marginLeft + (x-xmin)/(xmax-xmin)*plotW }
		sy := func(y float64) float64 { return top + h - (y-ymin)/(ymax-ymin)*h }
		printf(`<text x="%d" y="%.1f" font-weight="bold">%s</text>`+"\n", marginLeft, top-8, esc(p.Title))
		printf(`<rect x="%d" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", marginLeft, top, plotW, h)
		for _, t := range yticks {
			if t > ymax {
				continue
			}
			y := sy(t)
			printf(`<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", marginLeft, y, marginLeft+plotW, y)
			printf(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginLeft-6, y+4, num(t))
		}
		for _, t := range xticks {
			if t < xmin || t > xmax {
				continue
			}
			x := sx(t)
			printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, top, x, top+h)
			printf(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+h+15, num(t))
		}
		printf(`<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+h/2, esc(p.YLabel))
		for j, s := range p.Series {
			color := palette[j%len(palette)]
			var pts strings.Builder
			for i := range min(len(s.X), len(s.Y)) {
				if finite(s.X[i]) && finite(s.Y[i]) && s.X[i] <= xmax {
					fmt.Fprintf(&pts, "%.1f,%.1f ", sx(s.X[i]), sy(math.Min(s.Y[i], ymax)))
				}
			}
			printf(`<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.TrimSpace(pts.String()))
			ly := top + 14 + float64(j)*18
			lx := marginLeft + plotW + 12
			printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", lx, ly-4, lx+18, ly-4, color)
			printf(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+24, ly, esc(s.Name))
		}
		if i == len(c.Panels)-1 {
			printf(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", marginLeft+plotW/2, top+h+32, esc(c.XLabel))
		}
	}
	printf("</svg>\n")
	return b.Flush()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func esc(s string) string { return html.EscapeString(s) }

func num(v float64) string {
	if math.Abs(v-math.Round(v)) < 1e-9 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// ticks returns about n round tick values covering [lo, hi].
func ticks(lo, hi float64, n int) []float64 {
	span := hi - lo
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; v <= hi+step*0.999; v += step {
		out = append(out, v)
	}
	return out
}
