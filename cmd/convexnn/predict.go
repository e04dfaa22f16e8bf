package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers/gated"
	"github.com/convexnn/convexnn/solvers/netfile"
	"gonum.org/v1/gonum/mat"
)

const predictUsage = "usage: convexnn predict -network FILE (.json/.npz network file, or a convexnn solve result) -data FILE.csv|.npy|.npz [-label-column NAME|INDEX] [-labels FILE.npy] [-delimiter C] [-no-header] [-out predictions.json]"

// predictionsJSON is what `convexnn predict` writes: per row the predicted
// class (or value) and the scores; with labels, the accuracy and the
// confusion matrix (rows: true class, columns: predicted class).
type predictionsJSON struct {
	Network   string      `json:"network"`
	Data      string      `json:"data"`
	Model     string      `json:"model"`
	Decision  string      `json:"decision"`
	Rows      int         `json:"rows"`
	Classes   []string    `json:"classes,omitempty"`
	Predicted []string    `json:"predicted,omitempty"`
	Values    []float64   `json:"values,omitempty"`
	Scores    [][]float64 `json:"scores"`
	Accuracy  *float64    `json:"accuracy,omitempty"`
	Confusion [][]int     `json:"confusion,omitempty"`
	// Unknown counts labelled rows whose label is none of the network's
	// classes (they count as errors in Accuracy).
	Unknown int `json:"unknown_labels,omitempty"`
}

// predictCommand scores a data file with a saved network.
func predictCommand(_ context.Context, args []string, stdout io.Writer) error {
	fs := quietFlags("predict")
	netPath := fs.String("network", "", "network file (.json or .npz, written by the cvx package or solve) or a convexnn solve result.json")
	dataPath := fs.String("data", "", "data to predict on: .csv, .npy or .npz")
	labelCol := fs.String("label-column", "", "the labels' column (CSV, 2-D .npy: a header name or a position, −1 the last; .npz: the labels' array name); without it every column is a feature")
	labels := fs.String("labels", "", "a separate .npy of labels")
	delim := fs.String("delimiter", ",", "CSV delimiter (one character; \\t for tab)")
	noHeader := fs.Bool("no-header", false, "the CSV's first row is data")
	out := fs.String("out", "", "predictions JSON file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return badInput("predict: %v\n%s", err, predictUsage)
	}
	if fs.NArg() > 0 {
		return badInput("predict: unexpected argument %q\n%s", fs.Arg(0), predictUsage)
	}
	if *netPath == "" || *dataPath == "" {
		return badInput("predict: -network and -data are required\n%s", predictUsage)
	}
	file, err := loadNetworkFile(*netPath)
	if err != nil {
		return err
	}
	d := *delim
	if d == `\t` {
		d = "\t"
	}
	if utf8.RuneCountInString(d) != 1 {
		return badInput("predict: -delimiter %q: give one character", *delim)
	}
	r, _ := utf8.DecodeRuneInString(d)
	labelled := *labelCol != "" || *labels != ""
	var set *data.Set
	switch strings.ToLower(filepath.Ext(*dataPath)) {
	case ".csv", ".tsv", ".txt":
		if *labels != "" {
			return badInput("predict: -labels is for NumPy data; a CSV's labels are its -label-column")
		}
		set, err = data.ReadCSV(*dataPath, data.CSV{Delimiter: r, NoHeader: *noHeader, Label: data.ParseColumn(*labelCol), Unlabelled: !labelled})
	case ".npy", ".npz":
		opt := data.NumPy{Labels: *labels, Unlabelled: !labelled}
		if strings.HasSuffix(strings.ToLower(*dataPath), ".npz") {
			opt.YKey = *labelCol
		} else if *labelCol != "" {
			opt.Label = data.ParseColumn(*labelCol)
		}
		set, err = data.ReadNumPy(*dataPath, opt)
	default:
		return badInput("predict: -data %s: read .csv, .npy or .npz files", *dataPath)
	}
	if err != nil {
		return badInput("predict: %v", err)
	}
	if _, dd := set.Dims(); dd != file.Input.Features {
		return badInput("predict: %s has %d features, the network in %s takes %d", *dataPath, dd, *netPath, file.Input.Features)
	}
	scores, err := file.Scores(set.X)
	if err != nil {
		return badInput("predict: %v", err)
	}
	n, _ := scores.Dims()
	res := predictionsJSON{Network: *netPath, Data: *dataPath, Model: file.Model.String(), Decision: file.Output.Decision.String(),
		Rows: n, Classes: file.Output.Classes, Scores: make([][]float64, n)}
	for k := range res.Scores {
		res.Scores[k] = scores.RawRowView(k)
	}
	cls := file.Classes(scores)
	if cls == nil {
		res.Values = make([]float64, n)
		for k := range res.Values {
			res.Values[k] = scores.At(k, 0)
		}
	} else {
		res.Predicted = make([]string, n)
		for k, c := range cls {
			res.Predicted[k] = file.Output.Classes[c]
		}
	}
	if labelled && cls != nil {
		truth := trueClasses(set, file.Output.Classes)
		c := len(file.Output.Classes)
		res.Confusion = make([][]int, c)
		for i := range res.Confusion {
			res.Confusion[i] = make([]int, c)
		}
		right := 0
		for k, t := range truth {
			if t < 0 {
				res.Unknown++
				continue
			}
			res.Confusion[t][cls[k]]++
			if t == cls[k] {
				right++
			}
		}
		acc := float64(right) / float64(n)
		res.Accuracy = &acc
	}
	return writeJSON(stdout, *out, res)
}

// trueClasses maps each row's label (its name in set.Classes) to the
// network's class index, −1 when the network has no such class. Numeric
// names match by value ("1" and "1.0"), and binary labels coded 0/1 match
// a network's −1/+1.
func trueClasses(set *data.Set, classes []string) []int {
	index := map[string]int{}
	value := map[float64]int{}
	for i, c := range classes {
		index[c] = i
		if v, err := strconv.ParseFloat(c, 64); err == nil {
			value[v] = i
		}
	}
	if len(classes) == 2 {
		neg, okNeg := value[-1]
		_, okPos := value[1]
		if _, has0 := value[0]; okNeg && okPos && !has0 {
			value[0] = neg // labels 0/1 for a ±1 network
		}
	}
	out := make([]int, len(set.Y))
	for k, y := range set.Y {
		name := set.Classes[int(y)]
		if i, ok := index[name]; ok {
			out[k] = i
		} else if v, err := strconv.ParseFloat(name, 64); err == nil {
			if i, ok := value[v]; ok {
				out[k] = i
			} else {
				out[k] = -1
			}
		} else {
			out[k] = -1
		}
	}
	return out
}

// loadNetworkFile reads a network file, or the network of a solve result
// (a two-layer ReLU network with classes −1 and +1).
func loadNetworkFile(path string) (*netfile.File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, badInput("predict: %v", err)
	}
	var probe struct {
		Format  string          `json:"format"`
		Network json.RawMessage `json:"network"`
		Gated   *gatedNetJSON   `json:"gated_network"`
		Classes int             `json:"classes"`
		Input   *dataInputJSON  `json:"input"`
	}
	if !bytes.HasPrefix(raw, []byte("PK")) && json.Unmarshal(raw, &probe) == nil && probe.Format == "" && probe.Gated != nil {
		f, err := gatedResultFile(probe.Gated, probe.Classes, probe.Input)
		if err != nil {
			return nil, badInput("predict: %s: %v", path, err)
		}
		return f, nil
	}
	if !bytes.HasPrefix(raw, []byte("PK")) && json.Unmarshal(raw, &probe) == nil && probe.Format == "" && probe.Network != nil {
		net, err := readNetwork(bytes.NewReader(raw))
		if err != nil {
			return nil, badInput("predict: %s: %v", path, err)
		}
		if net.U == nil {
			return nil, badInput("predict: %s: the solve result's network has no neurons", path)
		}
		f, err := probe.Input.file(net, 1)
		if err != nil {
			return nil, badInput("predict: %s: %v", path, err)
		}
		return f, nil
	}
	f, err := netfile.Parse(raw)
	if err != nil {
		return nil, badInput("predict: %s: %v", path, err)
	}
	return f, nil
}

// gatedResultFile is the network of a gated solve result: its gated
// network, deciding by sign (one output, classes −1 and 1) or by the
// largest output (classes "0" … "c−1").
func gatedResultFile(g *gatedNetJSON, classes int, input *dataInputJSON) (*netfile.File, error) {
	if len(g.Gates) == 0 || len(g.W) != len(g.Gates) {
		return nil, fmt.Errorf("field \"gated_network\": %d gates and %d weight blocks", len(g.Gates), len(g.W))
	}
	d := len(g.Gates[0])
	if d == 0 {
		return nil, errors.New("field \"gated_network\".\"gates\": the gate vectors are empty")
	}
	gates := mat.NewDense(d, len(g.Gates), nil)
	net := &gated.Network{Gates: gates, Bias: g.Bias}
	for i, row := range g.Gates {
		if len(row) != d {
			return nil, fmt.Errorf("field \"gated_network\".\"gates\"[%d] has %d entries, want %d", i, len(row), d)
		}
		gates.SetCol(i, row)
		blk := g.W[i]
		if len(blk) != d || len(blk) == 0 || len(blk[0]) == 0 {
			return nil, fmt.Errorf("field \"gated_network\".\"w\"[%d] is %d rows, want %d", i, len(blk), d)
		}
		b := mat.NewDense(d, len(blk[0]), nil)
		for l, r := range blk {
			if len(r) != len(blk[0]) {
				return nil, fmt.Errorf("field \"gated_network\".\"w\"[%d][%d] has %d entries", i, l, len(r))
			}
			b.SetRow(l, r)
		}
		net.W = append(net.W, b)
	}
	return input.file(net, max(classes, 1))
}

// writeJSON writes v as indented JSON to path, or to stdout when path is
// empty.
func writeJSON(stdout io.Writer, path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	return nil
}
