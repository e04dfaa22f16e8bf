package cvx

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/convexnn/convexnn/internal/floatbits"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/batchnorm"
	"gonum.org/v1/gonum/mat"
)

// Loss names a training loss.
type Loss string

// Losses. Squared is ℓ(ŷ, y) = ½‖ŷ − y‖² (a sum); Hinge is
// (1/n) Σ_k max(0, 1 − y_k ŷ_k) (a mean); BCE is the paper's binary
// cross-entropy for a tanh output (1/n) Σ_k (−2ŷ_k t_k + log(e^{2ŷ_k} + 1))
// with t_k = (y_k + 1)/2 ∈ {0, 1}; Logistic is (1/n) Σ_k log(1 + e^{−y_k ŷ_k}).
// Classification labels are always given as −1/+1.
const (
	Squared  Loss = "squared"
	Hinge    Loss = "hinge"
	BCE      Loss = "bce"
	Logistic Loss = "logistic"
)

// Problem is a two-layer ReLU training problem under construction. Builder
// methods record the first error they meet; Err reports it, and every run
// built from the problem refuses to start with it.
type Problem struct {
	x       *mat.Dense
	y       []float64
	bias    bool
	beta    float64
	loss    Loss
	neurons int
	seed    uint64
	sampled bool
	// Activation patterns of the convex program (eq. convex_general):
	// patterns > 0 samples that many (Algorithm "practical convex
	// training"), exact enumerates all.
	patterns    int
	patternSeed uint64
	exact       bool
	classify    bool // labels −1/+1 (Classify), not regression targets
	// Robust training (section "Convex Adversarial Training"): the radius ε
	// and norm of the perturbation set (eps 0: the standard problem), and
	// with robustP > 0 the patterns are sampled by Algorithm adv_train with
	// P_a = robustP directions, S = robustS samples each and P_s = patterns.
	eps              float64
	norm             Norm
	robustP, robustS int
	// Batch normalization (appendix "One-Hidden-Layer Networks with Batch
	// Normalization"): the program's data is U′ of the whitening basis.
	bn    bool
	basis *batchnorm.Basis
	// A two-layer CNN (Conv): the convex program is solvers/cnn's.
	conv *convSpec
	// TwoHidden: sub-networks of twoHidden first-layer neurons.
	twoHidden int
	// The gated program (Gated, Multiclass): classes ≥ 2 outputs for a
	// multi-class problem (0: binary), its groups.
	gated   bool
	classes int
	groups  Groups
	err     error
	// digest memoizes dataDigest, designed the design matrix.
	digest   uint64
	designed *designMemo
}

// dataDigest is a digest of X, y and how the program's data derives from
// them (bias, batch normalization), computed once (floatbits): the data
// part of the fingerprint, and the key of set-up products a saved run
// keeps (admm.Gram).
func (p *Problem) dataDigest() uint64 {
	if p.digest == 0 {
		raw := p.x.RawMatrix()
		n, d := p.x.Dims()
		dg := floatbits.NewDigest()
		dg.WriteBytes([]byte(fmt.Sprintf("%016x|%v|%v|", floatbits.Rows(raw.Data, n, d, raw.Stride), p.bias, p.bn)))
		dg.Write(p.y)
		p.digest = max(dg.Sum64(), 1)
	}
	return p.digest
}

// Classify starts a binary classification problem on the rows of X (n×d) with
// labels y_k ∈ {−1, +1}. Defaults: squared loss, β = 1e-3, no bias.
func Classify(x *mat.Dense, y []float64) *Problem {
	p := &Problem{x: x, y: y, beta: 1e-3, loss: Squared, classify: true}
	p.err = validateData(x, y, true)
	return p
}

func validateData(x *mat.Dense, y []float64, labels bool) error {
	if x == nil {
		return errors.New("cvx: data matrix X is nil")
	}
	n, d := x.Dims()
	if n == 0 || d == 0 {
		return fmt.Errorf("cvx: data matrix X is empty (%d×%d)", n, d)
	}
	if len(y) != n {
		return fmt.Errorf("cvx: X has %d rows but y has %d labels", n, len(y))
	}
	if err := solvers.CheckFinite("cvx: X", x); err != nil {
		return err
	}
	for k, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("cvx: y[%d] is %v", k, v)
		}
		if labels && v != 1 && v != -1 {
			return fmt.Errorf("cvx: label y[%d] = %v; classification labels must be −1 or +1", k, v)
		}
	}
	return nil
}

// Beta sets the regularization strength β > 0.
func (p *Problem) Beta(beta float64) *Problem {
	if p.err == nil && (!(beta > 0) || math.IsInf(beta, 0)) {
		p.err = fmt.Errorf("cvx: Beta(%v): β must be positive and finite", beta)
	}
	p.beta = beta
	return p
}

// Bias appends a column of ones to X, giving every hidden neuron a bias.
func (p *Problem) Bias() *Problem { p.bias, p.digest, p.designed = true, 0, nil; return p }

// Squared selects the squared loss ½‖ŷ − y‖².
func (p *Problem) Squared() *Problem { p.loss = Squared; return p }

// Hinge selects the hinge loss (1/n) Σ max(0, 1 − y_k ŷ_k).
func (p *Problem) Hinge() *Problem { return p.classLoss(Hinge) }

// BCE selects the paper's binary cross-entropy loss for a tanh output
// (section "Binary Cross-Entropy Loss", Table 4), a mean over the points; the
// labels −1/+1 are used as t = (y + 1)/2 ∈ {0, 1}.
func (p *Problem) BCE() *Problem { return p.classLoss(BCE) }

// Logistic selects the logistic loss (1/n) Σ log(1 + e^{−y_k ŷ_k}).
func (p *Problem) Logistic() *Problem { return p.classLoss(Logistic) }

func (p *Problem) classLoss(l Loss) *Problem {
	if p.err == nil && !p.classify {
		p.err = fmt.Errorf("cvx: the %s loss is for classification: build the problem with Classify(X, y), labels −1/+1", l)
	}
	p.loss = l
	return p
}

// Loss returns the problem's loss.
func (p *Problem) Loss() Loss { return p.loss }

// targets returns the labels in the form the solver's loss takes: t = (y+1)/2
// for BCE, y otherwise.
func (p *Problem) targets() []float64 {
	if p.loss != BCE {
		return p.y
	}
	t := make([]float64, len(p.y))
	for k, v := range p.y {
		t[k] = (v + 1) / 2
	}
	return t
}

// SamplePatterns selects the convex program of eq. (prac_clean) with P
// distinct activation patterns D_h = diag(1[X a_h ≥ 0]), a_h ~ N(0, I),
// drawn with the seed (on X with its bias column, when Bias is set). It
// serves robust problems too (the clean patterns); RobustPatterns samples
// them by Algorithm adv_train instead.
func (p *Problem) SamplePatterns(P int, seed uint64) *Problem {
	if p.err == nil && P < 1 {
		p.err = fmt.Errorf("cvx: SamplePatterns(%d): need at least one pattern", P)
	}
	p.patterns, p.patternSeed, p.exact = P, seed, false
	p.robustP, p.robustS = 0, 0
	return p
}

// ExactPatterns selects the exact convex program of eq. (convex_general)
// with every activation pattern of the data (small problems only).
func (p *Problem) ExactPatterns() *Problem {
	p.exact, p.patterns = true, 0
	p.robustP, p.robustS = 0, 0
	return p
}

// Convex builds the convex program: X with the bias column when asked, the
// loss, β and the activation patterns (sampled by Algorithm adv_train after
// RobustPatterns). Sampling that finds fewer distinct patterns than asked
// proceeds with those found and says so. The program does not hold the
// perturbation set of a robust problem: see Perturbation.
func (p *Problem) Convex() (*solvers.Program, error) {
	if err := p.Err(); err != nil {
		return nil, err
	}
	if err := p.refuseGated("the convex program of activation patterns"); err != nil {
		return nil, err
	}
	if p.conv != nil {
		return nil, errors.New("cvx: a CNN problem (Conv) is an instance of eq. (ct_general): its program is ConvProgram(); run it with cvx.ADMM{} or cvx.Solve")
	}
	if p.twoHidden > 0 {
		return nil, errors.New("cvx: a TwoHidden problem is an instance of eq. (ct_general): its program is TwoHiddenProgram(); run it with cvx.ADMM{} or cvx.Solve")
	}
	loss, err := solvers.ParseLoss(string(p.loss))
	if err != nil {
		return nil, err
	}
	if p.bn && p.bias {
		return nil, errors.New("cvx: BatchNorm: batch normalization brings each neuron's shift α; drop Bias()")
	}
	if p.bn && p.robust() {
		return nil, errors.New("cvx: BatchNorm: robust training is not available with batch normalization (a perturbation of x is not a ball in the whitened features)")
	}
	x := p.design()
	var d solvers.Patterns
	switch {
	case p.exact:
		d, err = solvers.ExactPatterns(x, 0)
	case p.patterns > 0:
		if p.robustP > 0 {
			d, err = p.robustPatterns()
		} else if p.bn {
			d, err = batchnorm.SamplePatterns(p.x, p.patterns, p.patternSeed)
		} else {
			d, err = solvers.SamplePatterns(x, p.patterns, p.patternSeed, 0)
		}
		var few *solvers.FewPatternsError
		if errors.As(err, &few) {
			note(fmt.Sprintf("cvx: note: %v; using the %d found", err, len(d)))
			err = nil
		}
	default:
		return nil, errors.New("cvx: the convex program needs activation patterns: call SamplePatterns(P, seed) or ExactPatterns() on the problem")
	}
	if err != nil {
		return nil, err
	}
	prog := &solvers.Program{X: x, Y: p.targets(), Loss: loss, Beta: p.beta, D: d, Bias: p.bias}
	return prog, prog.Validate()
}

// SampleNeurons selects the sampled convex program of the appendix
// "SCP-based convex training": N hidden neurons drawn uniformly on the unit
// sphere with the given seed, and only the output layer trained, by the
// l1-regularized program eq. (SCP2).
func (p *Problem) SampleNeurons(n int, seed uint64) *Problem {
	if p.err == nil && n < 1 {
		p.err = fmt.Errorf("cvx: SampleNeurons(%d): need at least one neuron", n)
	}
	p.neurons, p.seed, p.sampled = n, seed, true
	return p
}

// Err returns the first error met while building the problem.
func (p *Problem) Err() error {
	if p == nil {
		return errors.New("cvx: nil problem")
	}
	return p.err
}

// Data returns the problem's X (without the bias column) and y.
func (p *Problem) Data() (*mat.Dense, []float64) { return p.x, p.y }

// BatchNorm trains a network with full-batch batch normalization of its
// hidden layer, eq. (BNregularizedtraining), through the convex program
// eq. (BNregularizedtrainingconvex): the program of eq. (convex_general) on
// the whitened data U′ = [U, 1/√n] of the compact SVD of the centred X
// (solvers/batchnorm). Patterns are sampled in the input space
// (batchnorm.SamplePatterns); every method solves it.
// BN brings the shift, so Bias is refused with it, and so is robust
// training (a perturbation of x is not a ball in the whitened features).
// BatchNormNetwork turns a run's network into the BN network.
func (p *Problem) BatchNorm() *Problem {
	if p.err == nil && p.bias {
		p.err = errors.New("cvx: BatchNorm: batch normalization brings each neuron's shift α; drop Bias()")
	}
	if p.err == nil && p.robust() {
		p.err = errors.New("cvx: BatchNorm: robust training is not available with batch normalization (a perturbation of x is not a ball in the whitened features)")
	}
	if p.err == nil {
		p.basis, p.err = batchnorm.NewBasis(p.x)
	}
	p.bn, p.digest, p.designed = true, 0, nil
	return p
}

// BatchNormNetwork returns the batch-normalized network of net, a network of
// a run of a BatchNorm problem (on the features U′): first-layer weights,
// BN scale γ and shift α, output weights, and the training batch statistics
// it predicts with (batchnorm.Network).
func (p *Problem) BatchNormNetwork(net *Network) (*batchnorm.Network, error) {
	if err := p.Err(); err != nil {
		return nil, err
	}
	if !p.bn {
		return nil, errors.New("cvx: BatchNormNetwork: the problem has no batch normalization (BatchNorm())")
	}
	return p.basis.Network(net)
}

// design returns X with the bias column appended when asked for, or the
// whitened U′ of a BatchNorm problem.
func (p *Problem) design() *mat.Dense {
	if p.bn {
		u, err := p.basis.Features(p.x)
		if err != nil {
			panic(err) // the basis was built from this X
		}
		return u
	}
	if !p.bias {
		return p.x
	}
	p.prefetchDesign()
	<-p.designed.done
	return p.designed.x
}

// designMemo is the design matrix [X 1] of a problem with a bias, computed
// once.
type designMemo struct {
	done chan struct{}
	x    *mat.Dense
}

// prefetchDesign starts computing the design matrix [X 1] in the
// background, once: Run's set-up asks for it first thing, so that it is
// built on the second core while the saved state is read and checked.
func (p *Problem) prefetchDesign() {
	if p.designed != nil || !p.bias || p.bn || p.x == nil {
		return
	}
	m := &designMemo{done: make(chan struct{})}
	p.designed = m
	x := p.x
	go func() {
		defer close(m.done)
		m.x = solvers.WithOnes(x)
	}()
}

// Summary describes a problem in a saved state, to say why a state does not
// fit the problem at hand.
type Summary struct {
	N, D        int
	Bias        bool
	Beta        float64
	Loss        Loss
	Neurons     int
	Seed        uint64
	Patterns    int    `json:",omitempty"`
	PatternSeed uint64 `json:",omitempty"`
	Exact       bool   `json:",omitempty"`
	// Robust training: the radius ε and norm, and the P_a and S of
	// Algorithm adv_train's sampling (Patterns is its P_s).
	Eps     float64 `json:",omitempty"`
	Norm    Norm    `json:",omitempty"`
	RobustP int     `json:",omitempty"`
	RobustS int     `json:",omitempty"`
	// BatchNorm: the program is on the whitened data U′.
	BatchNorm bool `json:",omitempty"`
	// Conv describes a two-layer CNN's architecture (empty: none).
	Conv string `json:",omitempty"`
	// TwoHidden is the first-layer width of two-hidden-layer sub-networks.
	TwoHidden int `json:",omitempty"`
}

func (s Summary) String() string {
	out := fmt.Sprintf("n=%d d=%d bias=%v β=%g loss=%s", s.N, s.D, s.Bias, s.Beta, s.Loss)
	switch {
	case s.Exact:
		out += " patterns=all"
	case s.Patterns > 0 && s.RobustP > 0:
		out += fmt.Sprintf(" patterns=%d (adv_train P_a=%d S=%d) seed=%d", s.Patterns, s.RobustP, s.RobustS, s.PatternSeed)
	case s.Patterns > 0:
		out += fmt.Sprintf(" patterns=%d seed=%d", s.Patterns, s.PatternSeed)
	default:
		out += fmt.Sprintf(" neurons=%d seed=%d", s.Neurons, s.Seed)
	}
	if s.Eps > 0 {
		out += fmt.Sprintf(" robust ε=%g ℓ_%s", s.Eps, s.Norm)
	}
	if s.BatchNorm {
		out += " batch-normalized"
	}
	if s.Conv != "" {
		out += " " + s.Conv
	}
	if s.TwoHidden > 0 {
		out += fmt.Sprintf(" two-hidden-layer sub-networks m1=%d", s.TwoHidden)
	}
	return out
}

func (p *Problem) summary() Summary {
	n, d := p.x.Dims()
	s := Summary{N: n, D: d, Bias: p.bias, Beta: p.beta, Loss: p.loss, Neurons: p.neurons, Seed: p.seed, Patterns: p.patterns, PatternSeed: p.patternSeed, Exact: p.exact,
		RobustP: p.robustP, RobustS: p.robustS, BatchNorm: p.bn, TwoHidden: p.twoHidden}
	if c := p.conv; c != nil {
		s.Conv = fmt.Sprintf("CNN on %d×%d×%d images, %d×%d filters, stride %d, padding %d, %v", c.shape.C, c.shape.H, c.shape.W, c.conv.Size, c.conv.Size, c.conv.Stride, c.conv.Pad, c.pool)
		if c.rounds > 0 {
			s.Conv += fmt.Sprintf(", patterns generated in %d rounds of %d", c.rounds, c.perRound)
		}
	}
	if p.robust() {
		s.Eps, s.Norm = p.eps, p.Perturbation().Norm
	}
	return s
}

// fingerprint hashes everything a saved state depends on. The robust part
// (ε, norm, Algorithm adv_train's P_a and S) is hashed only when set, so
// standard problems keep the fingerprints of earlier versions.
func (p *Problem) fingerprint(method string) string {
	h := sha256.New()
	var b [8]byte
	put := func(v float64) { binary.LittleEndian.PutUint64(b[:], math.Float64bits(v)); h.Write(b[:]) }
	n, d := p.x.Dims()
	fmt.Fprintf(h, "%s|%s|%d|%d|%v|%d|%d|%d|%d|%v|", method, p.loss, n, d, p.bias, p.neurons, p.seed, p.patterns, p.patternSeed, p.exact)
	put(p.beta)
	if p.robust() || p.robustP > 0 {
		fmt.Fprintf(h, "robust|%s|%d|%d|", p.Perturbation().Norm, p.robustP, p.robustS)
		put(p.eps)
	}
	if p.bn {
		// "anchored": the patterns are drawn through the raw data
		// (batchnorm.SamplePatterns); a state saved under the earlier
		// isotropic draws on U′ belongs to other patterns.
		fmt.Fprint(h, "batchnorm|anchored|")
	}
	if c := p.conv; c != nil {
		fmt.Fprintf(h, "cnn|%+v|%+v|%d|", c.shape, c.conv, c.pool)
		if c.rounds > 0 {
			fmt.Fprintf(h, "generate|%d|%d|", c.rounds, c.perRound)
		}
	}
	if p.twoHidden > 0 {
		fmt.Fprintf(h, "twohidden|%d|", p.twoHidden)
	}
	// The data are hashed by CRCs (floatbits.Digest): a fingerprint tells a
	// saved run's problem from another one a user built, and SHA-256 took
	// 0.2 s on Table 2's 74 MB.
	fmt.Fprintf(h, "|%016x", p.dataDigest())
	return fmt.Sprintf("%x", h.Sum(nil)[:16])
}
