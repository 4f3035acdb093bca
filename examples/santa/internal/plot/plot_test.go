package plot

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteSVG(t *testing.T) {
	t.Parallel()

	t.Run("DrawsEveryPanelAndSeries", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		c := Chart{Title: "a <b> & c", XLabel: "time (s)", Panels: []Panel{
			{Title: "one", YLabel: "jobs", Series: []Series{{Name: "q", X: []float64{0, 1, 2}, Y: []float64{0, 5, math.NaN()}}}},
			{Title: "two", YLabel: "s", Series: []Series{{Name: "x", X: []float64{0, 2}, Y: []float64{1, 1}}, {Name: "y", X: []float64{1}, Y: []float64{3}}}},
		}}
		require.NoError(t, c.WriteSVG(&b))
		svg := b.String()
		require.True(t, strings.HasPrefix(svg, "<svg xmlns="))
		require.True(t, strings.HasSuffix(svg, "</svg>\n"))
		require.Equal(t, 3, strings.Count(svg, "<polyline"))
		require.Contains(t, svg, "a &lt;b&gt; &amp; c", "text is escaped")
		require.NotContains(t, svg, "NaN")
	})

	t.Run("FixedAxesAreKeptAndClip", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		c := Chart{XMax: 100, Panels: []Panel{{YMax: 50, Series: []Series{{Name: "q", X: []float64{0, 10, 200}, Y: []float64{0, 80, 1}}}}}}
		require.NoError(t, c.WriteSVG(&b))
		svg := b.String()
		require.Contains(t, svg, `text-anchor="middle">100</text>`, "the x axis ends at XMax")
		require.Contains(t, svg, `text-anchor="end">50</text>`, "the y axis ends at YMax")
		require.NotContains(t, svg, `text-anchor="end">80</text>`)
		// 80 is clipped to the top of the panel (y = 60), the point past XMax dropped.
		require.Contains(t, svg, `points="70.0,280.0 138.0,60.0"`)
	})

	t.Run("NoDataIsAnError", func(t *testing.T) {
		t.Parallel()
		err := Chart{Panels: []Panel{{Series: []Series{{X: []float64{math.NaN()}, Y: []float64{1}}}}}}.WriteSVG(&bytes.Buffer{})
		require.ErrorIs(t, err, ErrNoData)
	})
}

func TestTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		lo, hi float64
		want   []float64
	}{
		{name: "Unit", lo: 0, hi: 10, want: []float64{0, 2, 4, 6, 8, 10}},
		{name: "Hundreds", lo: 0, hi: 300, want: []float64{0, 100, 200, 300}},
		{name: "Small", lo: 0, hi: 1, want: []float64{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.InDeltaSlice(t, tt.want, ticks(tt.lo, tt.hi, 5), 1e-9)
		})
	}
}
