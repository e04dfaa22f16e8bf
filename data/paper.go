package data

import (
	"context"
	"fmt"
	"sort"
)

// Split is a training set and its validation set.
type Split struct {
	Name        string
	Train, Test *Set
	// Holdout, when not nil, holds records of the source's training split
	// that Train leaves out (a subsampled training set): a second
	// validation set, disjoint from Train and larger than Test where the
	// source's test split is incomplete.
	Holdout *Set
	// Notes says how the split was made (source files, preprocessing).
	Notes string
}

// Paper builds the training and validation matrices of one of the paper's
// experiments, named as in PaperSets, from src, with labels coded by l
// (PlusMinus for the squared and hinge losses, ZeroOne for binary
// cross-entropy). Pixels are scaled to [0, 1]; no bias column is added (the
// problem builders add it). Where the paper is silent the choice is stated
// in Notes.
func Paper(ctx context.Context, name string, src Source, l Labels) (*Split, error) {
	p, ok := paperSets[name]
	if !ok {
		return nil, fmt.Errorf("data: unknown paper data set %q; known: %v", name, PaperSets())
	}
	sp, err := src.cachedBuild(fmt.Sprintf("%s-labels%d", name, int(l)), func(src Source) (*Split, error) { return p.build(ctx, src, l) })
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	sp.Name, sp.Notes = name, p.notes
	sp.Train.Name, sp.Test.Name = name+" train", name+" validation"
	if sp.Holdout != nil {
		sp.Holdout.Name = name + " held out"
	}
	return sp, nil
}

// PaperSets lists the names Paper accepts.
func PaperSets() []string {
	var names []string
	for n := range paperSets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type paperSet struct {
	notes string
	build func(context.Context, Source, Labels) (*Split, error)
}

// imagePair selects two classes of an image data set and applies resize
// (nil for none) to both splits.
func imagePair(load func(context.Context, Source) (*Images, *Images, error), neg, pos uint8, resize func(*Set) (*Set, error)) func(context.Context, Source, Labels) (*Split, error) {
	return func(ctx context.Context, src Source, l Labels) (*Split, error) {
		trImg, teImg, err := load(ctx, src)
		if err != nil {
			return nil, err
		}
		tr, err := trImg.Binary(neg, pos, l)
		if err != nil {
			return nil, err
		}
		var te *Set
		if teImg.Len() == 0 {
			// No official test records in the source: hold out a sixth of
			// the training records (CIFAR-10's own 50000/10000 ratio).
			if tr, te, err = tr.Split(5.0/6, 0); err != nil {
				return nil, err
			}
		} else if te, err = teImg.Binary(neg, pos, l); err != nil {
			return nil, fmt.Errorf("validation split: %w", err)
		}
		tr, te = tr.ScalePixels(), te.ScalePixels()
		if resize != nil {
			if tr, err = resize(tr); err != nil {
				return nil, err
			}
			if te, err = resize(te); err != nil {
				return nil, err
			}
		}
		return &Split{Train: tr, Test: te}, nil
	}
}

func stride2(s *Set) (*Set, error) { return s.Stride(2) }
func area(h, w int) func(*Set) (*Set, error) {
	return func(s *Set) (*Set, error) { return s.Resize(h, w) }
}

var paperSets = map[string]paperSet{
	"mnist-2-8": {
		notes: "MNIST digits 2 (negative) vs 8 (positive), 28×28 (d = 784): the official training split (n = 11809) for training, the official test split (2006) for validation; Table 2.",
		build: imagePair(MNIST, 2, 8, nil),
	},
	"mnist-2-8-d100": {
		notes: "MNIST 2 vs 8 downsampled to 10×10 (d = 100) by area averaging (fig. ADMMCom; the paper does not say how it downsampled).",
		build: imagePair(MNIST, 2, 8, area(10, 10)),
	},
	"fashion-pullover-bag": {
		notes: "Fashion-MNIST pullover (negative) vs bag (positive), d = 784, 12000 training and 2000 validation images from the official splits; Table 3.",
		build: imagePair(FashionMNIST, 2, 8, nil),
	},
	"fashion-pullover-bag-ds": {
		notes: "Fashion-MNIST pullover vs bag downsampled with stride 2 to 14×14 (d = 196), the \"DS\" of Table 3.",
		build: imagePair(FashionMNIST, 2, 8, stride2),
	},
	"cifar-bird-ship-ds": {
		notes: "CIFAR-10 bird (negative) vs ship (positive) downsampled with stride 2 to 16×16×3 (d = 768), Table 3. Validation: the test records present in the source (the shared folder holds only 206 of the 2000 bird/ship test records); with no test records, a seeded sixth of the training records is held out.",
		build: imagePair(CIFAR10, 2, 8, stride2),
	},
	"cifar-bird-ship-600": {
		notes: "Table 5: 600 CIFAR-10 bird/ship training images chosen at random (seed 0), downsampled to 7×7×3 = 147 by area averaging; validation: the bird/ship test records present in the source, downsampled alike; held out: the other 9400 bird/ship training records, downsampled alike.",
		build: func(ctx context.Context, src Source, l Labels) (*Split, error) {
			sp, err := imagePair(CIFAR10, 2, 8, area(7, 7))(ctx, src, l)
			if err != nil {
				return nil, err
			}
			if sp.Train, sp.Holdout, err = sp.Train.SubsampleHoldout(600, 0); err != nil {
				return nil, err
			}
			return sp, nil
		},
	},
	"mammographic": {
		notes: "UCI mammographic masses: rows with a missing value dropped (830 left), all five attributes as features (d = 5, BI-RADS included, as the paper's d = 5 implies), label Severity (benign negative, malignant positive), a seeded 70/30 split (seed 0): 581 training and 249 validation rows, standardized with training statistics.",
		build: func(ctx context.Context, src Source, l Labels) (*Split, error) {
			t, err := Mammographic(ctx, src)
			if err != nil {
				return nil, err
			}
			s, err := t.Complete().Binary("Severity", l)
			if err != nil {
				return nil, err
			}
			tr, te, err := s.Split(0.7, 0)
			if err != nil {
				return nil, err
			}
			tr, others, err := tr.Standardize(te)
			if err != nil {
				return nil, err
			}
			tr.Classes, others[0].Classes = []string{"benign", "malignant"}, []string{"benign", "malignant"}
			return &Split{Train: tr, Test: others[0]}, nil
		},
	},
}
