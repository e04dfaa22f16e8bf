package paper

import (
	"errors"
	"fmt"

	"github.com/convexnn/convexnn/cvx"
	"github.com/convexnn/convexnn/data"
)

// AdvRegression are the settings of figs. te and exp_sl (appendix "Squared
// Loss Convex Adversarial Training", notebooks/08-adversarial-regression):
// 1-D regression on data.Regression1D, the robust program eq. (SOCP3)
// against standard convex training, both solved by the interior-point
// method, over repeated draws of the data (trial t uses seed t for its data
// and its patterns).
type AdvRegression struct {
	// TrainPoints and TestPoints are drawn per trial (the paper's 8 and 100).
	TrainPoints, TestPoints int
	// Beta is β and Patterns P_s; the paper states neither: β = 1e-3, and
	// P_s = 16, all 2n patterns of n = 8 points on a line with a bias, so
	// standard training is the exact program eq. (convex_general).
	Beta     float64
	Patterns int
	// Directions and PerDirection are Algorithm adv_train's P_a and S for
	// the robust patterns (stopping at Patterns distinct ones).
	Directions, PerDirection int
	// StdTrials standard trials and RobTrials robust trials per radius in
	// Epsilons (the paper's 100 and 10; 5 and 3 otherwise).
	StdTrials, RobTrials int
	Epsilons             []float64
	// PaperBest is the radius at which the paper reports the lowest test
	// MSE (ε ≈ 0.3).
	PaperBest float64
}

// AdvRegressionSettings returns the settings at a size.
func AdvRegressionSettings(size Size) AdvRegression {
	a := AdvRegression{TrainPoints: 8, TestPoints: 100, Beta: 1e-3, Patterns: 16, Directions: 100, PerDirection: 8, StdTrials: 5, RobTrials: 3, PaperBest: 0.3}
	if size == SizePaper {
		a.StdTrials, a.RobTrials = 100, 10
	}
	for k := 1; k <= 9; k++ {
		a.Epsilons = append(a.Epsilons, float64(k)/10)
	}
	return a
}

// Data draws trial t's training and test sets.
func (a AdvRegression) Data(t int) (train, test *data.Set, err error) {
	return data.Regression1D(a.TrainPoints, a.TestPoints, uint64(t))
}

// Fit trains on trial t's data, standard convex training for eps = 0 and
// the robust program eq. (SOCP3) with patterns from Algorithm adv_train
// otherwise, and returns the solution and its test MSE. The interior-point
// method occasionally stalls just short of its default tolerance 1e-8 on
// these tiny SOCPs: Fit then retries at 1e-6 and, if that is still short,
// keeps the last iterate and says so in note.
func (a AdvRegression) Fit(t int, eps float64) (sol *cvx.Solution, mse float64, note string, err error) {
	train, test, err := a.Data(t)
	if err != nil {
		return nil, 0, "", err
	}
	prob := cvx.Regress(train.X, train.Y).Beta(a.Beta).Bias()
	if eps == 0 {
		prob = prob.SamplePatterns(a.Patterns, uint64(t))
	} else {
		adv := cvx.AdvTrain{Directions: a.Directions, PerDirection: a.PerDirection, Patterns: a.Patterns, Seed: uint64(t)}
		prob = prob.Robust(eps, cvx.LInf).RobustPatterns(adv)
	}
	sol, err = cvx.Solve(prob, cvx.IPM{})
	if err != nil && sol != nil {
		if s2, err2 := cvx.Solve(prob, cvx.IPM{Tol: 1e-6}); s2 != nil {
			sol, err = s2, err2
		}
		if err != nil {
			note = fmt.Sprintf("trial %d, ε = %g: %v; using the last iterate (constraint violation %.1e)", t, eps, err, sol.Violation)
			err = nil
		}
	}
	if err != nil {
		return nil, 0, "", err
	}
	if sol == nil {
		return nil, 0, "", errors.New("paper: the interior-point method returned no solution")
	}
	mse, err = cvx.MSE(sol.Network, test.X, test.Y)
	return sol, mse, note, err
}

// AdvSweep is fig. exp_sl's comparison (AdvRegression.Sweep): standard
// convex training on StdTrials trials against the robust program eq. (SOCP3)
// at every radius on the first RobTrials of them.
type AdvSweep struct {
	// Std[t−1] is trial t's standard test MSE; StdMean and StdSD are their
	// mean and standard deviation, PairedMean their mean over the trials
	// the robust program ran on.
	Std                        []float64
	StdMean, StdSD, PairedMean float64
	// For each radius Eps[k]: the robust test MSE's mean and standard
	// deviation over the trials, and in how many of them it beat the
	// standard one on the same data.
	Eps, RobMean, RobSD []float64
	Wins                []int
	// Notes are the fits that kept a stalled interior-point iterate (Fit).
	Notes []string
}

// Best returns the radius of the lowest robust mean test MSE and that MSE.
func (s *AdvSweep) Best() (eps, mse float64) {
	for k, m := range s.RobMean {
		if k == 0 || m < mse {
			eps, mse = s.Eps[k], m
		}
	}
	return eps, mse
}

// Sweep runs fig. exp_sl's comparison at a's settings.
func (a AdvRegression) Sweep() (*AdvSweep, error) {
	if a.RobTrials > a.StdTrials || a.RobTrials < 1 {
		return nil, fmt.Errorf("paper: %d robust trials against %d standard ones: the paired column needs 1 ≤ RobTrials ≤ StdTrials", a.RobTrials, a.StdTrials)
	}
	s := &AdvSweep{}
	note := func(n string) {
		if n != "" {
			s.Notes = append(s.Notes, n)
		}
	}
	for t := 1; t <= a.StdTrials; t++ {
		_, mse, n, err := a.Fit(t, 0)
		if err != nil {
			return nil, err
		}
		note(n)
		s.Std = append(s.Std, mse)
	}
	s.StdMean, s.StdSD = MeanSD(s.Std)
	s.PairedMean, _ = MeanSD(s.Std[:a.RobTrials])
	for _, e := range a.Epsilons {
		var m []float64
		wins := 0
		for t := 1; t <= a.RobTrials; t++ {
			_, mse, n, err := a.Fit(t, e)
			if err != nil {
				return nil, err
			}
			note(n)
			m = append(m, mse)
			if mse < s.Std[t-1] {
				wins++
			}
		}
		mean, sd := MeanSD(m)
		s.Eps, s.RobMean, s.RobSD, s.Wins = append(s.Eps, e), append(s.RobMean, mean), append(s.RobSD, sd), append(s.Wins, wins)
	}
	return s, nil
}
