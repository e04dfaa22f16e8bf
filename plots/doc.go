// Copyright ©2026 The convexnn Authors. All rights reserved.

// Package plots turns charts into HTML snippets that Jupyter notebooks,
// through GoNB's gonbui.DisplayHTML, display inline.
//
// Line, Scatter, Heatmap and Surface build a Figure: an interactive chart
// made with go-echarts (Surface with echarts-gl) and a static twin drawn
// with gonum/plot. Figure.HTML returns a snippet holding the static PNG as
// a fallback for viewers that run no JavaScript, and a script that loads
// echarts and draws the interactive chart in its place. ChartHTML does the
// same for any go-echarts chart, without the fallback.
//
// The snippets render in classic Jupyter Notebook (with RequireJS on the
// page), in JupyterLab, in VS Code and in nbconvert HTML exports. Where
// echarts comes from is set by Assets: embedded from a local directory, so
// that the output needs no network, or loaded from a URL. Any number of
// snippets may share a page; the library is loaded once, through the
// promises kept in window.__convexnnECharts.
package plots
