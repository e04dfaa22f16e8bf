package certify

import (
	"testing"

	"github.com/convexnn/convexnn/solvers"
)

func TestDebugGap(t *testing.T) {
	ins := randomInstances(t, solvers.SquaredLoss, true, 6, 2)
	opts := oracleOptima(t, ins)
	for k, in := range ins {
		cert, _ := New(in.p, in.pert)
		sol := weightsOf(opts[k].V, opts[k].W)
		b, _ := cert.Bound(sol, nil)
		mu, _, _ := cert.pointDual(b.Feasible)
		v, _ := cert.negConj(mu, 1)
		t.Logf("%s: opt %.8g viol %.2g obj %.8g restored %d upper %.8g lower %.8g -l*(mu) %.8g", in.name, opts[k].Objective, opts[k].Violation, b.Objective, b.Restored, b.Upper, b.Lower, v)
	}
}
