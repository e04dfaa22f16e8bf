package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/convexnn/convexnn/data"
)

type fileInfo struct {
	Path     string `json:"path"`
	Where    string `json:"where"`
	Location string `json:"location,omitempty"`
	Bytes    int64  `json:"bytes"`
	SHA256   string `json:"sha256,omitempty"`
	Verified bool   `json:"verified"`
	Problem  string `json:"problem,omitempty"`
}

type splitInfo struct {
	N       int            `json:"n"`
	Shape   []int          `json:"shape,omitempty"`
	Classes map[string]int `json:"classes"`
}

type paperInfo struct {
	Train      int            `json:"train"`
	Validation int            `json:"validation"`
	Holdout    int            `json:"holdout,omitempty"` // training records the subsampled training set leaves out
	D          int            `json:"d"`
	Classes    map[string]int `json:"train_classes"`
	Notes      string         `json:"notes"`
}

type dataInfo struct {
	Dataset string               `json:"dataset"`
	Dir     string               `json:"dir,omitempty"`
	Cache   string               `json:"cache"`
	Files   []fileInfo           `json:"files"`
	Splits  map[string]splitInfo `json:"splits"`
	Table   *tableInfo           `json:"table,omitempty"`
	Paper   map[string]paperInfo `json:"paper"`
}

type tableInfo struct {
	Rows            int            `json:"rows"`
	Columns         []string       `json:"columns"`
	CompleteRows    int            `json:"complete_rows"`
	Classes         map[string]int `json:"classes"`
	CompleteClasses map[string]int `json:"complete_classes"`
}

// paperOf lists the Paper data sets built from each loader's data set.
var paperOf = map[string][]string{
	"mnist":         {"mnist-2-8", "mnist-2-8-d100"},
	"fashion-mnist": {"fashion-pullover-bag", "fashion-pullover-bag-ds"},
	"cifar10":       {"cifar-bird-ship-ds", "cifar-bird-ship-600"},
	"mammographic":  {"mammographic"},
}

func dataCommand(ctx context.Context, args []string, w io.Writer) error {
	if len(args) == 0 || args[0] != "info" {
		return errors.New("usage: convexnn data info <mnist|fashion-mnist|cifar10|mammographic> [-dir D] [-download]")
	}
	fs := flag.NewFlagSet("data info", flag.ContinueOnError)
	dir := fs.String("dir", "", "folder laid out like shared/data (default $CONVEXNN_DATA, then the download cache)")
	download := fs.Bool("download", false, "download missing files into the cache")
	// Accept the name before or after the flags.
	rest := args[1:]
	var name string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		name, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if _, ok := paperOf[name]; !ok {
		return fmt.Errorf("data info: unknown data set %q: use mnist, fashion-mnist, cifar10 or mammographic", name)
	}
	src := data.DefaultSource()
	if *dir != "" {
		src.Dir = *dir
	}
	src.Offline = !*download
	info := dataInfo{Dataset: name, Dir: src.Dir, Cache: src.Cache, Splits: map[string]splitInfo{}, Paper: map[string]paperInfo{}}
	if name == "cifar10" {
		train, test, err := src.CIFARFiles(ctx)
		if err != nil {
			return err
		}
		for _, p := range append(train, test...) {
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			info.Files = append(info.Files, fileInfo{Path: p, Where: "found", Location: p, Bytes: st.Size(), Verified: st.Size()%3073 == 0})
		}
		trImg, teImg, err := data.CIFAR10(ctx, src)
		if err != nil {
			return err
		}
		info.Splits["train"], info.Splits["test"] = imageSplit(trImg), imageSplit(teImg)
	} else {
		files, err := data.Files(name)
		if err != nil {
			return err
		}
		for _, f := range files {
			st := src.Status(f)
			info.Files = append(info.Files, fileInfo{Path: f.Path, Where: st.Where, Location: st.Path, Bytes: st.Size, SHA256: st.SHA256, Verified: st.Verified, Problem: st.Problem})
		}
		switch name {
		case "mnist", "fashion-mnist":
			load := data.MNIST
			if name == "fashion-mnist" {
				load = data.FashionMNIST
			}
			tr, te, err := load(ctx, src)
			if err != nil {
				return err
			}
			info.Splits["train"], info.Splits["test"] = imageSplit(tr), imageSplit(te)
		case "mammographic":
			t, err := data.Mammographic(ctx, src)
			if err != nil {
				return err
			}
			c := t.Complete()
			info.Table = &tableInfo{Rows: len(t.Rows), Columns: t.Columns, CompleteRows: len(c.Rows), Classes: severity(t), CompleteClasses: severity(c)}
		}
	}
	for _, p := range paperOf[name] {
		sp, err := data.Paper(ctx, p, src, data.PlusMinus)
		if err != nil {
			return err
		}
		n, d := sp.Train.Dims()
		m, _ := sp.Test.Dims()
		info.Paper[p] = paperInfo{Train: n, Validation: m, Holdout: holdout(sp), D: d, Classes: setClasses(sp.Train), Notes: sp.Notes}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(info)
}

func imageSplit(im *data.Images) splitInfo {
	s := splitInfo{N: im.Len(), Shape: []int{im.Channels, im.Height, im.Width}, Classes: map[string]int{}}
	for _, l := range im.Labels {
		s.Classes[im.ClassName(l)]++
	}
	return s
}

func severity(t *data.Table) map[string]int {
	out := map[string]int{}
	for _, r := range t.Rows {
		switch v := r[len(r)-1]; {
		case v == 0:
			out["benign"]++
		case v == 1:
			out["malignant"]++
		case math.IsNaN(v):
			out["missing"]++
		}
	}
	return out
}

func setClasses(s *data.Set) map[string]int {
	out := map[string]int{}
	for v, c := range s.ClassCounts() {
		name := s.Classes[0]
		if v > 0 {
			name = s.Classes[1]
		}
		out[name] += c
	}
	return out
}

// holdout is the size of sp's held-out set (0: none).
func holdout(sp *data.Split) int {
	if sp.Holdout == nil {
		return 0
	}
	return len(sp.Holdout.Y)
}
