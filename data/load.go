package data

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Class names of the image data sets, by label.
var (
	DigitClasses   = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	FashionClasses = []string{"T-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot"}
	CIFARClasses   = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}
)

// MNIST loads the MNIST training (60000) and test (10000) images, 28×28,
// labels 0–9, from src (see Source: a data folder, the cache, or a download
// verified against the published checksums).
func MNIST(ctx context.Context, src Source) (train, test *Images, err error) {
	return idxDataset(ctx, src, "mnist", DigitClasses)
}

// FashionMNIST loads Fashion-MNIST like MNIST; labels name the garments
// (FashionClasses: 2 is pullover, 8 is bag).
func FashionMNIST(ctx context.Context, src Source) (train, test *Images, err error) {
	return idxDataset(ctx, src, "fashion-mnist", FashionClasses)
}

func idxDataset(ctx context.Context, src Source, name string, classes []string) (train, test *Images, err error) {
	files, err := Files(name)
	if err != nil {
		return nil, nil, err
	}
	byBase := map[string]File{}
	for _, f := range files {
		byBase[filepath.Base(f.Path)] = f
	}
	load := func(images, labels string) (*Images, error) {
		fi, ok1 := byBase[images]
		fl, ok2 := byBase[labels]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("data: %s: registry lacks %s or %s", name, images, labels)
		}
		pi, err := src.Fetch(ctx, fi)
		if err != nil {
			return nil, err
		}
		pl, err := src.Fetch(ctx, fl)
		if err != nil {
			return nil, err
		}
		im, err := readFile(pi, func(f *os.File) (*Images, error) { return ReadIDXImages(f) })
		if err != nil {
			return nil, err
		}
		lab, err := readFile(pl, func(f *os.File) ([]uint8, error) { return ReadIDXLabels(f, uint8(len(classes)-1)) })
		if err != nil {
			return nil, err
		}
		if len(lab) != im.Len() {
			return nil, fmt.Errorf("data: %s: %s has %d images but %s has %d labels", name, fi.Path, im.Len(), fl.Path, len(lab))
		}
		im.Labels, im.Classes = lab, classes
		return im, nil
	}
	if train, err = load("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"); err != nil {
		return nil, nil, err
	}
	if test, err = load("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// readFile opens path and parses it, naming the file in any error.
func readFile[T any](path string, parse func(*os.File) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("data: %w", err)
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// CIFAR10 loads CIFAR-10 binary records: training and test images, 3×32×32,
// labels 0–9 (CIFARClasses: 2 is bird, 8 is ship). From a data folder laid
// out like shared/data it reads whatever .bin files are there (the bird/ship
// subset is accepted); the test set is empty when no test file is present.
func CIFAR10(ctx context.Context, src Source) (train, test *Images, err error) {
	tr, te, err := src.CIFARFiles(ctx)
	if err != nil {
		return nil, nil, err
	}
	cat := func(paths []string) (*Images, error) {
		out := &Images{Channels: 3, Height: 32, Width: 32, Classes: CIFARClasses}
		for _, p := range paths {
			im, err := readFile(p, func(f *os.File) (*Images, error) { return ReadCIFAR(f) })
			if err != nil {
				return nil, err
			}
			out.Pix = append(out.Pix, im.Pix...)
			out.Labels = append(out.Labels, im.Labels...)
		}
		return out, nil
	}
	if train, err = cat(tr); err != nil {
		return nil, nil, err
	}
	if len(train.Labels) == 0 {
		return nil, nil, fmt.Errorf("data: CIFAR-10: no training records found")
	}
	if test, err = cat(te); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// Mammographic loads the UCI mammographic masses table (961 rows, columns
// BI-RADS, Age, Shape, Margin, Density, Severity; missing values NaN).
func Mammographic(ctx context.Context, src Source) (*Table, error) {
	files, err := Files("mammographic")
	if err != nil {
		return nil, err
	}
	p, err := src.Fetch(ctx, files[0])
	if err != nil {
		return nil, err
	}
	return readFile(p, func(f *os.File) (*Table, error) { return ReadMammographic(f) })
}

// TenClassOptions trims the sets TenClasses returns: Train and Test keep
// that many images, a uniform random subset in their original order (seeds
// 1 and 2), 0 keeping all; Side > 0 resizes the images to Side×Side by area
// averaging (Set.Resize).
type TenClassOptions struct {
	Train, Test int
	Side        int
}

// TenClasses returns MNIST ("mnist") or Fashion-MNIST ("fashion-mnist")
// with all ten classes (Y the class index 0–9, Classes their names) and
// pixels scaled to [0, 1], training and test sets trimmed by o: the data of
// the ten-class experiments (notebook 14, the multi-class benchmarks).
func TenClasses(ctx context.Context, name string, src Source, o TenClassOptions) (train, test *Set, err error) {
	var load func(context.Context, Source) (*Images, *Images, error)
	switch name {
	case "mnist":
		load = MNIST
	case "fashion-mnist":
		load = FashionMNIST
	default:
		return nil, nil, fmt.Errorf("data: TenClasses(%q): the ten-class sets are \"mnist\" and \"fashion-mnist\"", name)
	}
	if o.Train < 0 || o.Test < 0 || o.Side < 0 {
		return nil, nil, fmt.Errorf("data: TenClasses(%q, %+v): the sizes must not be negative", name, o)
	}
	// Both sets are 28×28: a larger side is refused before loading them.
	if o.Side > 28 {
		return nil, nil, fmt.Errorf("data: TenClasses(%q, %+v): the side must be between 1 and the images' 28", name, o)
	}
	a, b, err := load(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	sets := [2]*Set{}
	for k, im := range []*Images{a, b} {
		s, err := im.Multiclass()
		if err != nil {
			return nil, nil, err
		}
		s = s.ScalePixels()
		if m := [2]int{o.Train, o.Test}[k]; m > 0 {
			if s, err = s.Subsample(m, uint64(k+1)); err != nil {
				return nil, nil, err
			}
		}
		if o.Side > 0 {
			if s, err = s.Resize(o.Side, o.Side); err != nil {
				return nil, nil, err
			}
		}
		sets[k] = s
	}
	return sets[0], sets[1], nil
}
