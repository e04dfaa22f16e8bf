package paper

import (
	"fmt"
	"math"
	"sort"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Trial is one method in one run.
type Trial struct {
	Seed               int      `json:"seed"`
	ValidationAccuracy float64  `json:"validation_accuracy"`
	FGSMAccuracy       *float64 `json:"fgsm_accuracy,omitempty"`
	PGDAccuracy        *float64 `json:"pgd_accuracy,omitempty"`
	// Holdout is the evaluation on the held-out set (data.Split.Holdout).
	Holdout *Accuracies `json:"holdout,omitempty"`
	// PeakValidation is the highest validation accuracy over the
	// iterations, reached at iteration PeakIteration (1-based).
	PeakValidation float64 `json:"peak_validation_accuracy"`
	PeakIteration  int     `json:"peak_validation_iteration"`
	TrainingLoss   float64 `json:"training_loss"`
	Objective      float64 `json:"objective"`
	// CertifiedGap is the certified relative gap of the convex program's
	// optimum at the run's last certified iterate (cvx.Run.Gap); nil for
	// back-propagation.
	CertifiedGap *float64 `json:"certified_gap,omitempty"`
	// Optimum is the row's convex program solved to a certified optimum
	// (Method.Optimum), for comparison with Objective.
	Optimum          *Optimum `json:"certified_optimum,omitempty"`
	WallSeconds      float64  `json:"wall_seconds"`
	SetupSeconds     float64  `json:"setup_seconds"`
	IterationSeconds float64  `json:"iteration_seconds"`
	Iterations       int      `json:"iterations"`
	PeakRSSBytes     int64    `json:"peak_rss_bytes"`
	PeakHeapBytes    uint64   `json:"peak_heap_bytes"`
	// Curve is one point per validated iteration (in result.json only for
	// run 1, as MethodResult.Curve).
	Curve []CurvePoint `json:"-"`
}

// Optimum is a convex program solved to a certified relative gap by
// cvx.Optimum: Objective is the value at the returned point, Lower a
// certified lower bound on the optimum.
type Optimum struct {
	Objective  float64 `json:"objective"`
	Lower      float64 `json:"lower_bound"`
	Gap        float64 `json:"gap"`
	Seconds    float64 `json:"seconds"`
	Iterations int     `json:"iterations"`
}

// Accuracies are a network's accuracy on one set: clean and, in the
// adversarial experiments, under the FGSM and PGD attacks.
type Accuracies struct {
	Accuracy   float64  `json:"accuracy"`
	AccuracySD float64  `json:"accuracy_std,omitempty"` // over the runs (MethodResult)
	FGSM       *float64 `json:"fgsm_accuracy,omitempty"`
	PGD        *float64 `json:"pgd_accuracy,omitempty"`
}

// cells are a's table cells: the clean accuracy (with its standard
// deviation over runs > 1) and, when adv, the FGSM and PGD Accuracies.
func (a *Accuracies) cells(runs int, adv bool) []string {
	c := fmt.Sprintf("%.2f %%", 100*a.Accuracy)
	if runs > 1 {
		c += fmt.Sprintf(" (%.3g)", 100*a.AccuracySD)
	}
	out := []string{c}
	if adv {
		out = append(out, fmt.Sprintf("%.2f %%", 100**a.FGSM), fmt.Sprintf("%.2f %%", 100**a.PGD))
	}
	return out
}

func (a *Accuracies) String() string {
	s := fmt.Sprintf("%.2f%%", 100*a.Accuracy)
	if a.FGSM != nil {
		s += fmt.Sprintf(" (FGSM %.2f%%, PGD %.2f%%)", 100**a.FGSM, 100**a.PGD)
	}
	return s
}

// CurvePoint is one iteration: wall time since the method started
// (validation excluded), training objective, validation accuracy.
type CurvePoint struct {
	Seconds    float64 `json:"seconds"`
	Objective  float64 `json:"objective"`
	Validation float64 `json:"validation_accuracy"`
}

// MethodResult is one row of the table: means over the runs.
type MethodResult struct {
	Name                 string      `json:"name"`
	ValidationAccuracy   float64     `json:"validation_accuracy"`
	ValidationAccuracySD float64     `json:"validation_accuracy_std,omitempty"`
	FGSMAccuracy         *float64    `json:"fgsm_accuracy,omitempty"`
	PGDAccuracy          *float64    `json:"pgd_accuracy,omitempty"`
	Holdout              *Accuracies `json:"holdout,omitempty"`          // means over the runs
	PeakValidation       float64     `json:"peak_validation_accuracy"`   // mean over the runs
	PeakIterations       []int       `json:"peak_validation_iterations"` // per run
	TrainingLoss         float64     `json:"training_loss"`
	Objective            float64     `json:"objective"`
	CertifiedGap         *float64    `json:"certified_gap,omitempty"` // largest over the runs
	// OptimumObjective and OptimumGap summarize the runs' Optimum: the mean
	// objective and the largest certified gap (nil without Method.Optimum).
	OptimumObjective  *float64     `json:"certified_optimum,omitempty"`
	OptimumGap        *float64     `json:"certified_optimum_gap,omitempty"`
	WallSeconds       float64      `json:"wall_seconds"`        // mean over the runs
	WallSecondsMedian float64      `json:"wall_seconds_median"` // median over the runs
	IterationSeconds  float64      `json:"iteration_seconds"`
	Iterations        int          `json:"iterations"`
	PeakRSSBytes      int64        `json:"peak_rss_bytes"`
	PeakHeapBytes     uint64       `json:"peak_heap_bytes"`
	Runs              []Trial      `json:"runs"`
	Curve             []CurvePoint `json:"curve"` // run 1
}

// Result is result.json.
type Result struct {
	Experiment  string   `json:"experiment"`
	Title       string   `json:"title"`
	Size        string   `json:"size"`
	Runs        int      `json:"runs"`
	Settings    Settings `json:"settings"`
	TrainImages int      `json:"train_images_used"`
	ValImages   int      `json:"validation_images"`
	HoldImages  int      `json:"holdout_images,omitempty"`
	// Partial is true while the experiment runs: result.json then holds the
	// runs finished so far, and an interrupted experiment leaves them there.
	Partial     bool              `json:"partial,omitempty"`
	Dim         int               `json:"d"`
	DataNotes   string            `json:"data_notes"`
	Methods     []MethodResult    `json:"methods"`
	Paper       Reported          `json:"paper"`
	Started     time.Time         `json:"started"`
	WallSeconds float64           `json:"wall_seconds"`
	Host        Host              `json:"host"`
	Definitions map[string]string `json:"definitions"`
}

// Reported is a table as the paper prints it: header and rows.
type Reported struct {
	Head []string   `json:"head"`
	Rows [][]string `json:"rows"`
}

// Host describes the machine a result was measured on.
type Host struct {
	GOOS, GOARCH string
	CPUs         int    `json:"cpus"`
	GoVersion    string `json:"go"`
}

var definitions = map[string]string{
	"validation_accuracy":      "fraction of the validation images classified correctly (f(x) ≥ 0 predicts +1)",
	"peak_validation_accuracy": "the highest validation accuracy over the iterations (epochs) of a run, and (in the table, per run) the iteration where it occurred: what stopping on the validation set would report, the paper's protocol for Tables 2–4 (\"we prematurely terminate the algorithm once the validation accuracy becomes satisfactory\"); optimistic, since it selects the iterate on the set it is scored on",
	"holdout":                  "the same evaluation (clean, and FGSM/PGD for Table 5) on the held-out set: training records of the source left out of a subsampled training set (Table 5: the 9400 CIFAR bird/ship training records not among the 600), disjoint from the training set and far larger than the 206 CIFAR test records at hand",
	"training_loss":            "the loss alone of the trained network on the training set, in the paper's units: squared ½Σ(ŷ−y)², BCE the sum Σ(−2ŷt + log(e^{2ŷ}+1)), hinge the mean",
	"objective":                "Tables 2–4: l^{u,α}, the loss of the trained network plus its regularization (our loss convention: BCE and hinge as means); Table 5: as notebook 09 (GD-FGSM/PGD: the objective on their adversarial data, convex methods: the convex program's objective)",
	"certified_gap":            "the certified relative gap (upper − lower)/|upper| of the convex program's optimum at the run's last certified iterate (solvers/certify, every 25 ADMM iterations and at the end; FISTA: its duality gap), the largest over the runs; none for back-propagation",
	"certified_optimum":        "Table 5's convex rows: the same convex program (the run's patterns) solved to a certified relative gap of 1e-6 by cvx.Optimum (the interior-point method of ipm.SolveRobust for the robust program, ipm.Solve for the standard one), the mean over the runs, with the largest certified gap: the true optimum that the row's ADMM objective approaches",
	"wall_seconds":             "wall time of the training: cvx.Start (pattern sampling, factorizations) and all iterations; data loading and the per-iteration validation evaluation excluded",
	"iteration_seconds":        "the iterations alone (cvx Run history)",
	"peak_rss_bytes":           "max RSS of the process (getrusage) at the end of the method: a peak over the process so far, so over this and the earlier methods of the experiment",
	"peak_heap_bytes":          "largest Go heap in use (runtime.MemStats.HeapAlloc, sampled every 20 ms) during the method, the data set included; it can exceed the RSS, as pages of large allocations count here before they are touched",
}

// summarize fills a method's means from its runs.
func summarize(m *MethodResult) {
	n := float64(len(m.Runs))
	var val, ho []*Accuracies
	for _, t := range m.Runs {
		val = append(val, &Accuracies{Accuracy: t.ValidationAccuracy, FGSM: t.FGSMAccuracy, PGD: t.PGDAccuracy})
		if t.Holdout != nil {
			ho = append(ho, t.Holdout)
		}
		m.TrainingLoss += t.TrainingLoss / n
		m.Objective += t.Objective / n
		if t.CertifiedGap != nil && (m.CertifiedGap == nil || *t.CertifiedGap > *m.CertifiedGap) {
			g := *t.CertifiedGap
			m.CertifiedGap = &g
		}
		if o := t.Optimum; o != nil {
			if m.OptimumObjective == nil {
				m.OptimumObjective, m.OptimumGap = new(float64), new(float64)
			}
			*m.OptimumObjective += o.Objective / n
			*m.OptimumGap = math.Max(*m.OptimumGap, o.Gap)
		}
		m.WallSeconds += t.WallSeconds / n
		m.IterationSeconds += t.IterationSeconds / n
		m.Iterations = max(m.Iterations, t.Iterations)
		m.PeakRSSBytes = max(m.PeakRSSBytes, t.PeakRSSBytes)
		m.PeakHeapBytes = max(m.PeakHeapBytes, t.PeakHeapBytes)
		m.PeakValidation += t.PeakValidation / n
		m.PeakIterations = append(m.PeakIterations, t.PeakIteration)
	}
	if len(val) > 0 {
		v := meanAccuracies(val)
		m.ValidationAccuracy, m.ValidationAccuracySD, m.FGSMAccuracy, m.PGDAccuracy = v.Accuracy, v.AccuracySD, v.FGSM, v.PGD
	}
	if len(ho) == len(m.Runs) && len(ho) > 0 {
		m.Holdout = meanAccuracies(ho)
	}
	walls := make([]float64, 0, len(m.Runs))
	for _, t := range m.Runs {
		walls = append(walls, t.WallSeconds)
	}
	sort.Float64s(walls)
	if k := len(walls); k > 0 {
		m.WallSecondsMedian = (walls[(k-1)/2] + walls[k/2]) / 2
	}
}

// meanAccuracies averages evaluations over runs (the clean accuracy with its
// standard deviation).
func meanAccuracies(runs []*Accuracies) *Accuracies {
	var clean []float64
	var fgsm, pgd float64
	for _, a := range runs {
		clean = append(clean, a.Accuracy)
		if a.FGSM != nil {
			fgsm += *a.FGSM / float64(len(runs))
			pgd += *a.PGD / float64(len(runs))
		}
	}
	m := &Accuracies{}
	m.Accuracy, m.AccuracySD = MeanSD(clean)
	if runs[0].FGSM != nil {
		m.FGSM, m.PGD = &fgsm, &pgd
	}
	return m
}

// MeanSD returns the mean of v and its sample standard deviation (with the
// n − 1 denominator; 0 for a single value), as the paper's tables report
// runs.
func MeanSD(v []float64) (mean, sd float64) {
	if len(v) < 2 {
		return stat.Mean(v, nil), 0
	}
	return stat.MeanStdDev(v, nil)
}
